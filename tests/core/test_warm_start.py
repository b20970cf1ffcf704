"""A process forked from a warm server is the process `python -m` would start: its own environment
(XLA_FLAGS above all), working directory, arguments, log and exit status; it ends with the job that
asked for it. Here with a server that imports only the standard library (the slow tier compiles
MaxText rows both ways: tests/workflow/test_workflow.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from offload_repro.core import warm_start
from offload_repro.core.process import package_environment

PROBE = """
import json, os, sys, time
print("probe", json.dumps({"argv": sys.argv[1:], "cwd": os.getcwd(), "xla": os.environ.get("XLA_FLAGS"),
      "pid": os.getpid(), "parent": os.getppid()}))
sys.stdout.flush()
what = sys.argv[1]
if what == "exit":
    sys.exit(int(sys.argv[2]))
if what == "raise":
    raise RuntimeError("the module failed")
if what == "sleep":
    open(sys.argv[2], "w").write(str(os.getpid()))
    time.sleep(60)
if what == "kill":
    os.kill(os.getpid(), 9)
"""


@pytest.fixture()
def probe(tmp_path) -> tuple[dict[str, str], Path]:
    """A module of its own on the path (so a server of its own: the path is in the key), and its env."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib/warm_probe.py").write_text(textwrap.dedent(PROBE))
    env = package_environment()
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "lib"), env["PYTHONPATH"]])
    return env, tmp_path


def warm(env: dict[str, str], cwd: Path, *arguments: str, flags: str = "") -> tuple[int, str]:
    log = cwd / "log.txt"
    command = [sys.executable, "-m", "warm_probe", *arguments]
    returncode, _ = warm_start.run_warm(command, env | {"XLA_FLAGS": flags}, cwd, log, ("json",), idle_s=10)
    return returncode, log.read_text()


def said(log: str) -> dict:
    import json

    return json.loads(next(line for line in log.splitlines() if line.startswith("probe ")).removeprefix("probe "))


def test_each_forked_process_has_its_own_flags_directory_arguments_log_and_status(probe):
    env, tmp_path = probe
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir(), second.mkdir()
    code, log = warm(env, first, "exit", "0", flags="--xla_one")
    assert code == 0 and said(log)["xla"] == "--xla_one" and said(log)["cwd"] == str(first)
    code, log = warm(env, second, "exit", "3", flags="--xla_two")
    assert code == 3 and said(log) | {"pid": 0, "parent": 0} == {
        "argv": ["exit", "3"],
        "cwd": str(second),
        "xla": "--xla_two",
        "pid": 0,
        "parent": 0,
    }
    # both were forked, each by a supervisor forked from one server: not children of this process
    key = warm_start.server_key(sys.executable, env, ("json",))
    assert (warm_start.runtime_dir() / f"{key}.sock").exists()
    assert said(log)["parent"] != os.getpid()


def test_a_failure_is_the_exit_status_a_subprocess_would_give(probe):
    env, tmp_path = probe
    code, log = warm(env, tmp_path, "raise")
    assert code == 1 and "RuntimeError: the module failed" in log
    code, _ = warm(env, tmp_path, "kill")
    assert code == -signal.SIGKILL
    cold = subprocess.run([sys.executable, "-m", "warm_probe", "kill"], env=env, cwd=tmp_path, capture_output=True)
    assert cold.returncode == code


def test_a_command_that_is_not_this_pythons_module_starts_cold(probe, tmp_path):
    env, _ = probe
    log = tmp_path / "cold.txt"
    code, _ = warm_start.run_warm(["/bin/sh", "-c", "echo $XLA_FLAGS; exit 4"], env | {"XLA_FLAGS": "x"}, tmp_path, log)
    assert code == 4 and log.read_text() == "x\n"


def test_another_environment_is_another_server_and_the_process_flags_are_not_part_of_it(probe):
    env, _ = probe
    key = warm_start.server_key(sys.executable, env, ("json",))
    assert warm_start.server_key(sys.executable, env | {"XLA_FLAGS": "--other"}, ("json",)) == key
    assert warm_start.server_key(sys.executable, env | {"OFFLOAD_REPRO_RAGGED_DOT": "tiled"}, ("json",)) == key
    assert warm_start.server_key(sys.executable, env | {"JAX_PLATFORMS": "tpu"}, ("json",)) != key


def test_a_process_ends_with_the_job_that_asked_for_it(probe):
    env, tmp_path = probe
    pid_file = tmp_path / "worker.pid"
    client = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from offload_repro.core import warm_start
        env = {env!r}
        warm_start.run_warm([sys.executable, "-m", "warm_probe", "sleep", {str(pid_file)!r}], env,
                            Path({str(tmp_path)!r}), Path({str(tmp_path / "log.txt")!r}), ("json",), idle_s=10)
    """)
    job = subprocess.Popen([sys.executable, "-c", client], env=env)
    deadline = time.monotonic() + 30
    while not pid_file.exists() or not pid_file.read_text():
        assert time.monotonic() < deadline and job.poll() is None
        time.sleep(0.1)
    worker = int(pid_file.read_text())
    job.kill()
    job.wait()
    deadline = time.monotonic() + 10
    while alive(worker):
        assert time.monotonic() < deadline, "the forked process outlived the job that asked for it"
        time.sleep(0.1)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_an_idle_server_exits_and_takes_its_socket_with_it(probe):
    env, tmp_path = probe
    env = env | {"WARM_PROBE_IDLE": "1"}  # a server of its own
    log = tmp_path / "log.txt"
    command = [sys.executable, "-m", "warm_probe", "exit", "0"]
    assert warm_start.run_warm(command, env, tmp_path, log, ("json",), idle_s=0.5)[0] == 0
    socket_path = warm_start.runtime_dir() / f"{warm_start.server_key(sys.executable, env, ('json',))}.sock"
    deadline = time.monotonic() + 10
    while socket_path.exists():
        assert time.monotonic() < deadline, "an idle server left its socket behind"
        time.sleep(0.1)
