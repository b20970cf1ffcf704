"""The fork server on tiny modules (tests/fixtures/forkserver): concurrency, crashes, fallback,
the lazy-start race, the refusal to fork beside a thread; the launcher the command line builds;
and, slow, XLA_FLAGS per child of a server that imported jax and MaxText."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conftest import FIXTURES, REPO
from offload_repro import cli
from offload_repro.core import forkserver, process

TINY_MODULES = FIXTURES / "forkserver"
PRELOAD = ("fs_preload",)


@pytest.fixture
def sockets() -> Iterator[Path]:
    """The fork servers' directory, a short one (socket paths are short); its servers stop after."""
    directory = Path(tempfile.mkdtemp(prefix="fs-", dir="/tmp"))
    yield directory
    for pid in server_pids(directory):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def env() -> dict[str, str]:
    """A row's environment: the package and the fixture modules importable."""
    return dict(os.environ, PYTHONPATH=f"{REPO / 'workflow'}{os.pathsep}{TINY_MODULES}")


def server_pids(directory: Path) -> list[int]:
    text = "".join(log.read_text() for log in directory.glob("*.log"))
    return [int(pid) for pid in re.findall(r"^server pid (\d+) preloaded", text, re.MULTILINE)]


def task(sockets: Path, env: dict[str, str], work: Path, name: str, *args: str, **options: Any) -> tuple[int, Path]:
    """`python -m fs_task ARGS` through the fork server's launcher (`options`: its fields)."""
    (work / name).mkdir(parents=True, exist_ok=True)
    log = work / f"{name}.log"
    command = [sys.executable, "-m", "fs_task", *args]
    launch = forkserver.ForkServerLauncher(sockets, **{"preload": PRELOAD, **options})
    returncode, _ = launch(command, env, work / name, log)
    return returncode, log


def report(log: Path) -> dict[str, Any]:
    lines = [line for line in log.read_text().splitlines() if line.startswith("REPORT ")]
    assert lines, log.read_text()
    return json.loads(lines[-1].removeprefix("REPORT "))


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):  # procfs answers ESRCH while a process exits
        return False
    return state not in ("Z", "X")


def wait_for(condition: Any, wait_seconds: float = 20.0) -> None:
    deadline = time.monotonic() + wait_seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def in_thread(function: Any, *args: Any) -> tuple[threading.Thread, list[Any]]:
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(function(*args)))
    thread.start()
    return thread, result


def test_two_requests_run_concurrently_with_their_own_env_cwd_and_log(sockets, env, tmp_path):
    assert task(sockets, env, tmp_path, "warm", "sleep", "0")[0] == 0  # starts the server
    runs = [in_thread(task, sockets, env | {"FS_ROW": row}, tmp_path, row, "sleep", "1.5") for row in ("a", "b")]
    for thread, _ in runs:
        thread.join()
    reports = {}
    for row, (_, [(returncode, log)]) in zip(("a", "b"), runs, strict=True):
        assert returncode == 0
        reports[row] = report(log)
        assert reports[row]["row"] == row
        assert reports[row]["cwd"] == str(tmp_path / row)
        assert reports[row]["argv"][1:] == ["sleep", "1.5"]
        assert reports[row]["preloaded"]  # forked from the server, which imported it
        assert reports[row]["set_by_import"] == "1"  # what the import set in the server, a child sees
        assert reports[row]["same_stderr"]  # so absl's app.run drops the import-time handler
        assert "to stderr" in log.read_text()
    a, b = reports["a"], reports["b"]
    assert a["server"] == b["server"] == a["parent"] == b["parent"] != os.getpid()
    assert a["started"] < b["ended"] and b["started"] < a["ended"]  # they overlapped


def test_crashing_children_give_negative_returncodes_and_the_server_serves_on(sockets, env, tmp_path):
    assert task(sockets, env, tmp_path, "abort", "abort")[0] == -signal.SIGABRT
    assert task(sockets, env, tmp_path, "sigkill", "sigkill")[0] == -signal.SIGKILL
    pid_file = tmp_path / "pid"
    thread, result = in_thread(task, sockets, env | {"FS_PID_FILE": str(pid_file)}, tmp_path, "killed", "sleep", "60")
    wait_for(lambda: pid_file.exists() and pid_file.read_text())
    os.kill(int(pid_file.read_text()), signal.SIGKILL)  # as the kernel's OOM killer would
    thread.join()
    assert result[0][0] == -signal.SIGKILL
    assert task(sockets, env, tmp_path, "exit", "exit", "3")[0] == 3
    returncode, log = task(sockets, env, tmp_path, "raise", "raise")
    assert returncode == 1 and "ValueError: raised on purpose" in log.read_text()
    returncode, log = task(sockets, env, tmp_path, "after", "sleep", "0")
    assert returncode == 0 and report(log)["preloaded"]
    assert len(server_pids(sockets)) == 1


def test_the_command_line_setting_chooses_the_launcher():
    assert forkserver.launcher(None) is process.run_subprocess
    assert forkserver.launcher("") == forkserver.ForkServerLauncher(forkserver.default_socket_directory())
    assert forkserver.launcher("/tmp/fs-x") == forkserver.ForkServerLauncher(Path("/tmp/fs-x"))
    common = ["--tables", "t.yaml", "--row", "r", "--target", "cpu", "--out", "o.json", "--work-dir", "w"]
    for given, setting in (([], None), (["--fork-server"], ""), (["--fork-server", "/tmp/fs-x"], "/tmp/fs-x")):
        for command in ("run", "compile"):
            assert cli.parser().parse_args([command, *given, *common]).fork_server == setting


def test_without_a_server_the_command_runs_as_a_subprocess(sockets, env, tmp_path):
    log = tmp_path / "plain.log"
    plain = forkserver.launcher(None)
    returncode, _ = plain([sys.executable, "-m", "fs_task", "sleep", "0"], env, tmp_path, log)
    assert returncode == 0 and not report(log)["preloaded"] and report(log)["parent"] == os.getpid()

    not_a_module = [sys.executable, str(TINY_MODULES / "fs_task.py"), "sleep", "0"]
    returncode, _ = forkserver.ForkServerLauncher(sockets, PRELOAD)(not_a_module, env, tmp_path, log)
    assert returncode == 0 and not report(log)["preloaded"]
    assert not list(sockets.glob("*.sock"))

    returncode, log = task(sockets, env, tmp_path, "unstartable", "exit", "4", preload=("no_such_module",))
    assert returncode == 4
    assert "[offload_repro.core.forkserver] not used (RuntimeError: fork server did not start" in log.read_text()


def test_a_server_dying_mid_request_reruns_the_command_as_a_subprocess(sockets, env, tmp_path):
    pid_file = tmp_path / "pid"
    thread, result = in_thread(
        task, sockets, env | {"FS_PID_FILE": str(pid_file)}, tmp_path, "t", "sleep-if-forked", "60"
    )
    wait_for(lambda: pid_file.exists() and pid_file.read_text())
    forked = int(pid_file.read_text())
    [server] = server_pids(sockets)
    os.kill(server, signal.SIGKILL)
    thread.join(timeout=30)
    returncode, log = result[0]
    assert returncode == 0
    text = log.read_text()
    assert "not used (server closed the connection while the child ran)" in text
    assert not report(log)["preloaded"]  # the rerun, as a subprocess
    wait_for(lambda: not alive(forked))  # the forked child died with its server


def test_two_clients_at_once_start_exactly_one_server(sockets, env, tmp_path):
    client = (
        "import sys; from pathlib import Path; from offload_repro.core import forkserver; "
        "import os; work = Path(sys.argv[1]); work.mkdir(); "
        "launch = forkserver.ForkServerLauncher(Path(sys.argv[2]), ('fs_preload',)); "
        "code, _ = launch([sys.executable, '-m', 'fs_task', 'sleep', '0'], dict(os.environ), work, work / 'log'); "
        "sys.exit(code)"
    )
    clients = [
        subprocess.Popen([sys.executable, "-c", client, str(tmp_path / name), str(sockets)], env=env) for name in "ab"
    ]
    assert [c.wait(timeout=60) for c in clients] == [0, 0]
    reports = [report(tmp_path / name / "log") for name in "ab"]
    assert all(r["preloaded"] for r in reports)
    assert reports[0]["server"] == reports[1]["server"]
    assert len(server_pids(sockets)) == 1 and len(list(sockets.glob("*.sock"))) == 1


def test_a_client_that_goes_away_takes_its_child_with_it_and_nonsense_is_refused(sockets, env, tmp_path):
    assert task(sockets, env, tmp_path, "warm", "sleep", "0")[0] == 0
    key = forkserver.environment_key(sys.executable, PRELOAD, env)
    message = {"module": "fs_task", "args": ["sleep", "60"], "env": env, "cwd": str(tmp_path),
               "log": str(tmp_path / "gone.log"), "key": key}  # fmt: skip
    path = str(sockets / f"{key}.sock")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(path)
        sock.sendall(json.dumps(message).encode() + b"\n")
        pid = json.loads(sock.makefile().readline())["pid"]
        assert alive(pid)
    wait_for(lambda: not alive(pid))
    with socket.socket(socket.AF_UNIX) as sock:  # nonsense is refused, and the server serves on
        sock.connect(path)
        sock.sendall(b"{not json\n")
        assert "error" in json.loads(sock.makefile().readline())
    assert task(sockets, env, tmp_path, "after", "sleep", "0")[0] == 0


def test_environment_key_holds_what_is_read_at_import_and_not_xla_flags(sockets, env, tmp_path):
    key = forkserver.environment_key(sys.executable, PRELOAD, env)
    assert forkserver.environment_key(sys.executable, PRELOAD, env | {"XLA_FLAGS": "--xla_x=1", "ROW": "r"}) == key
    for changed in ({"JAX_PLATFORMS": "tpu"}, {"PYTHONPATH": "/elsewhere"}, {"JAX_ENABLE_X64": "1"}):
        assert forkserver.environment_key(sys.executable, PRELOAD, env | changed) != key
    assert forkserver.environment_key(sys.executable, ("other",), env) != key
    assert forkserver.environment_key("/other/python", PRELOAD, env) != key

    # Each environment key gets a server of its own.
    assert task(sockets, env, tmp_path, "one", "sleep", "0")[0] == 0
    assert task(sockets, env | {"JAX_PLATFORMS": "cpu,tpu"}, tmp_path, "two", "sleep", "0")[0] == 0
    assert len(server_pids(sockets)) == 2
    # A variable the import sets, set otherwise by the row: the server refuses, the row runs alone.
    returncode, log = task(sockets, env | {"FS_SET_BY_IMPORT": "2"}, tmp_path, "three", "sleep", "0")
    assert returncode == 0 and "variables the import sets differ: ['FS_SET_BY_IMPORT']" in log.read_text()
    assert report(log)["set_by_import"] == "2" and not report(log)["preloaded"]


def test_an_idle_server_exits_and_removes_its_socket(sockets, env, tmp_path):
    assert task(sockets, env, tmp_path, "one", "sleep", "0", idle_seconds=0.5)[0] == 0
    [server] = server_pids(sockets)
    wait_for(lambda: not alive(server))
    assert not list(sockets.glob("*.sock"))
    assert task(sockets, env, tmp_path, "two", "sleep", "0", idle_seconds=0.5)[0] == 0  # a new one starts
    assert len(server_pids(sockets)) == 2


def test_a_server_beside_a_thread_refuses_to_fork_and_the_log_says_why(sockets, env, tmp_path):
    """The preload leaves a thread that Python's threading module does not know of: the server
    counts the process's threads, refuses, and the row runs as a subprocess, the count in its log."""
    returncode, log = task(sockets, env, tmp_path, "t", "sleep", "0", preload=(*PRELOAD, "fs_thread"))
    assert returncode == 0 and not report(log)["preloaded"]
    note = log.read_text().splitlines()[0]
    assert note.startswith("[offload_repro.core.forkserver] not used (RuntimeError: the server runs 2 threads")
    assert "(1 known to Python's threading)" in note  # the OS count saw it
    assert note.endswith("running the command as a subprocess")
    server_log = "".join(path.read_text() for path in sockets.glob("*.log"))
    assert "threads: 2 after the import, 2 after a first fork" in server_log
    assert "every request will be refused: the server runs 2 threads" in server_log


def test_worker_threads_that_stop_at_a_fork_leave_the_server_forking(sockets, env, tmp_path):
    """OpenBLAS's pool (numpy; MaxText's import starts it too) ends at the server's first fork."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU to run on: OpenBLAS starts no worker thread, so there is no pool to stop")
    # One worker whatever the caller's environment asks of OpenBLAS (its variable outranks OMP's).
    env = env | {"OPENBLAS_NUM_THREADS": "2"}
    returncode, log = task(sockets, env, tmp_path, "t", "sleep", "0", preload=(*PRELOAD, "fs_blas"))
    assert returncode == 0 and report(log)["preloaded"]
    server_log = "".join(path.read_text() for path in sockets.glob("*.log"))
    found = re.search(r"threads: (\d+) after the import, (\d+) after a first fork", server_log)
    assert found, server_log
    assert int(found[1]) > 1 and found[2] == "1"


@pytest.mark.slow
def test_xla_flags_take_effect_per_child_of_a_server_that_imported_jax_and_maxtext(sockets, env, tmp_path):
    """XLA parses XLA_FLAGS when a backend or compiler is first made, in the child: so one server
    serves rows with different flags. Both XLA:CPU and the CUDA plugin's AOT compiler."""
    env = env | {"JAX_PLATFORMS": "cpu"}
    target = str(REPO / "envs" / "gpu-targets" / "NVIDIA_GB200.txtpb")
    dump = tmp_path / "dump"
    cases = {
        "bogus": (["cpu"], "--xla_bogus_flag=1"),
        "three_devices": (["cpu"], "--xla_force_host_platform_device_count=3"),
        "plain": (["cpu"], ""),
        "gpu_dump": (["gpu", target], f"--xla_dump_to={dump}"),
        "gpu_plain": (["gpu", target], ""),
    }

    def run(name: str) -> tuple[int, str]:
        args, flags = cases[name]
        log = tmp_path / f"{name}.log"
        command = [sys.executable, "-m", "fs_xla", *args]
        returncode, _ = forkserver.ForkServerLauncher(sockets)(command, env | {"XLA_FLAGS": flags}, tmp_path, log)
        return returncode, log.read_text()

    run("plain")  # starts the server: imports MaxText
    runs = {name: in_thread(run, name) for name in cases}  # siblings, concurrently
    for thread, _ in runs.values():
        thread.join()
    results = {name: result[0] for name, (_, result) in runs.items()}
    assert results["bogus"][0] != 0 and "Unknown flag in XLA_FLAGS: --xla_bogus_flag=1" in results["bogus"][1]
    assert results["three_devices"][0] == 0 and "devices 3" in results["three_devices"][1]
    assert results["plain"][0] == 0 and "devices 1" in results["plain"][1]
    assert results["gpu_dump"][0] == 0 and "gpu compiled" in results["gpu_dump"][1]
    assert results["gpu_plain"][0] == 0
    assert list(dump.glob("*jit__lambda*"))  # only the child given --xla_dump_to dumped
    assert all("not used" not in text for _, text in results.values())  # all forked, none fell back
    assert len(server_pids(sockets)) == 1
