"""Running one training or compile process for a row: a clean work directory, the package on
its path, its output in a log file."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

from offload_repro.core.files import REPO_ROOT


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


def run_logged(command: list[str], env: dict[str, str], cwd: Path, log_file: Path) -> tuple[int, float]:
    """(exit status, wall seconds) of `command`, its stdout and stderr in `log_file`."""
    if env.get("OFFLOAD_REPRO_FORKSERVER"):  # opt-in: fork from a process that imported MaxText once
        from offload_repro.core import forkserver

        return forkserver.run_logged(command, env, cwd, log_file)
    return run_subprocess(command, env, cwd, log_file)


def run_subprocess(
    command: list[str], env: dict[str, str], cwd: Path, log_file: Path, mode: str = "w"
) -> tuple[int, float]:
    started = time.monotonic()
    with open(log_file, mode, encoding="utf-8") as log:
        returncode = subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd).returncode
    return returncode, time.monotonic() - started
