"""Running one training or compile process for a row: a clean work directory, the package on
its path, its output in a log file.

How a local process is started is a `Launcher`: `run_subprocess` here; a stage takes another
as an argument (tests hand the compile a stand-in process).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from offload_repro.core.files import REPO_ROOT


class Launcher(Protocol):
    """Runs `command` in `cwd` with exactly `env`, its stdout and stderr in `log_file` (replaced);
    returns (exit status, wall seconds), a status below zero meaning killed by that signal."""

    def __call__(self, command: list[str], env: dict[str, str], cwd: Path, log_file: Path) -> tuple[int, float]: ...


def fresh_work_dir(work_dir: Path) -> Path:
    """An empty work directory, as an absolute path (the process runs inside it)."""
    work_dir = work_dir.resolve()
    shutil.rmtree(work_dir, ignore_errors=True)
    work_dir.mkdir(parents=True)
    return work_dir


def package_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment with the package importable, plus `extra`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT / "workflow"), env.get("PYTHONPATH")]))
    env.update(extra or {})
    return env


def run_subprocess(command: list[str], env: dict[str, str], cwd: Path, log_file: Path) -> tuple[int, float]:
    """The plain `Launcher`: (exit status, wall seconds) of `command` as a subprocess, its stdout
    and stderr in `log_file`."""
    started = time.monotonic()
    with open(log_file, "w", encoding="utf-8") as log:
        returncode = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd).returncode
    return returncode, time.monotonic() - started


@dataclass(frozen=True)
class Supervised:
    """How a supervised process ended: its exit status, wall time, and who ended it.

    `ended_by` is "exit" (it ended by itself), "deadline" (stopped here before the job's time
    limit, so the result can still be written) or "terminated" (this process was sent SIGTERM:
    the cluster cancelled, preempted or lost the job).
    """

    returncode: int
    wall_s: float
    ended_by: str


def run_supervised(
    command: list[str],
    env: dict[str, str],
    cwd: Path,
    log_file: Path,
    deadline: float | None,
    grace_s: float = 30,
) -> Supervised:
    """Run `command` (an `srun`), stopping it at `deadline` (epoch seconds) and on SIGTERM.

    srun passes a SIGTERM on to every task; after `grace_s` it is killed.
    """
    terminated = threading.Event()

    def on_sigterm(_signum: int, _frame: object) -> None:
        terminated.set()

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    started = time.monotonic()
    ended_by = "exit"
    try:
        with open(log_file, "w", encoding="utf-8") as log:
            child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd)
            while child.poll() is None:
                if terminated.is_set() or (deadline is not None and time.time() >= deadline):
                    ended_by = "terminated" if terminated.is_set() else "deadline"
                    child.terminate()
                    try:
                        child.wait(timeout=grace_s)
                    except subprocess.TimeoutExpired:
                        child.kill()
                    break
                terminated.wait(0.5)
            returncode = child.wait()
    finally:
        signal.signal(signal.SIGTERM, previous)
    return Supervised(returncode, time.monotonic() - started, ended_by)
