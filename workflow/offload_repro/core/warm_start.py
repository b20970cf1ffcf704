"""MaxText's processes started warm: forked from one interpreter that has imported MaxText once.

Each compile and each local training run is a Python process of its own (the GPU plugin reads
XLA_FLAGS once per process), and importing MaxText takes about 6 s of the 15 to 30 s such a
process takes on 2 cores. A server imports it once; each process is then forked from it, takes its
own environment, working directory and log, runs its module as `python -m` would, and is waited
for as a subprocess is (`run_warm` is a `Launcher`).

The server decides nothing JAX decides at start-up: it has created no backend when it forks (it
checks), so each process reads its own XLA_FLAGS at its first compile (a slow test compiles rows
that differ only in XLA flags both ways and compares the programs byte for byte). It is keyed by
the interpreter, the package's code, the main libraries' versions and the environment less the
variables each process sets for itself (`OWN_VARIABLES`): a process whose key has no server starts
one and waits for it; a server idle for `IDLE_S` exits. A command that is not `python -m` of this
interpreter, or any failure to reach a server, starts the process cold; `OFFLOAD_REPRO_COLD_START=1`
starts every process cold.

    python -m offload_repro.core.warm_start SOCKET IDLE_S MODULE ...   (the server; run_warm starts it)
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import importlib
import json
import os
import runpy
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
from functools import cache
from importlib import metadata
from pathlib import Path

from offload_repro.core.files import REPO_ROOT
from offload_repro.core.process import run_subprocess

COLD_VARIABLE = "OFFLOAD_REPRO_COLD_START"
# What a MaxText process reads only once it runs (never at import): set per process, not in the key.
# XLA_FLAGS is read by XLA when the process creates its first backend; the package's own variables
# by its modules' main functions.
OWN_VARIABLES = ("XLA_FLAGS",)
OWN_PREFIX = "OFFLOAD_REPRO_"
# What a shell sets for where and how deep it runs: no import reads it.
SHELL_VARIABLES = ("PWD", "OLDPWD", "SHLVL", "_")
# What the server imports: the MaxText that the package's compile and training processes import
# inside their functions (so that the import happens once, in the server; their own modules are
# quick to import in each process).
PRELOAD = (
    "maxtext.trainers.pre_train.train",
    "maxtext.trainers.pre_train.train_compile",
    "maxtext.configs.pyconfig",
    "maxtext.utils.maxtext_utils",
    "maxtext.utils.sharding",
    "flax.core.spmd",
    "jax.experimental.topologies",
)
LIBRARIES = ("jax", "jaxlib", "maxtext", "flax")
IDLE_S = 60.0  # a main job asks every few seconds; a server left behind holds about 0.8 GB
START_S = 90.0  # how long a process waits for the server it started to listen
POLL_S = 0.2


def own(name: str) -> bool:
    return name in OWN_VARIABLES or name.startswith(OWN_PREFIX)


def server_key(python: str, env: dict[str, str], preload: tuple[str, ...]) -> str:
    """What decides a server: the interpreter, the package's code, the libraries' versions, the
    modules it imports and the environment it imports them in."""
    decided = {
        "python": str(Path(python).resolve()),
        "code": package_code(),
        "versions": library_versions(),
        "preload": list(preload),
        "env": {name: value for name, value in sorted(env.items()) if not own(name) and name not in SHELL_VARIABLES},
    }
    return hashlib.sha256(json.dumps(decided, sort_keys=True).encode()).hexdigest()[:16]


@cache
def package_code() -> str:
    """The digest of the package's code, read once per process (a stage launches many processes)."""
    code = hashlib.sha256()
    for path in sorted((REPO_ROOT / "workflow/offload_repro").rglob("*.py")):
        code.update(path.read_bytes())
    return code.hexdigest()


@cache
def library_versions() -> dict[str, str | None]:
    return {name: _version(name) for name in LIBRARIES}


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def runtime_dir() -> Path:
    path = Path(tempfile.gettempdir()) / f"offload-repro-warm-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


def warm_module(command: list[str]) -> tuple[str, list[str]] | None:
    """(module, its arguments) where `command` is `python -m MODULE ...` of this interpreter, else None."""
    if len(command) < 3 or command[1] != "-m" or Path(command[0]).resolve() != Path(sys.executable).resolve():
        return None
    return command[2], command[3:]


def run_warm(
    command: list[str],
    env: dict[str, str],
    cwd: Path,
    log_file: Path,
    preload: tuple[str, ...] = PRELOAD,
    idle_s: float = IDLE_S,
) -> tuple[int, float]:
    """A `Launcher`: the command forked from a warm server where it can be, else as a subprocess
    (`preload`: what the server imports; `idle_s`: how long a server it starts waits for work)."""
    found = warm_module(command)
    if found is None or os.environ.get(COLD_VARIABLE) or env.get(COLD_VARIABLE):
        return run_subprocess(command, env, cwd, log_file)
    started = time.monotonic()
    connection = connect(server_key(command[0], env, preload), env, preload, idle_s)
    if connection is None:
        return run_subprocess(command, env, cwd, log_file)
    module, arguments = found
    request = {"module": module, "argv": arguments, "env": env, "cwd": str(cwd), "log": str(Path(log_file).resolve())}
    with connection, connection.makefile("rwb") as stream:
        stream.write(json.dumps(request).encode() + b"\n")
        stream.flush()
        reply = stream.readline()
    if not reply:  # the server's side ended without a word: nothing ran that can be trusted
        with open(log_file, "a", encoding="utf-8") as log:
            log.write("\nwarm start: the server ended the process without its exit status\n")
        return -int(signal.SIGKILL), time.monotonic() - started
    return int(json.loads(reply)["returncode"]), time.monotonic() - started


def connect(key: str, env: dict[str, str], preload: tuple[str, ...], idle_s: float = IDLE_S) -> socket.socket | None:
    """A connection to the server of `key`, started here (once, under a lock) where none listens;
    None where none comes up."""
    directory = runtime_dir()
    path = directory / f"{key}.sock"
    if (connection := _try_connect(path)) is not None:
        return connection
    with open(directory / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (connection := _try_connect(path)) is not None:
            return connection
        server_env = {name: value for name, value in env.items() if not own(name)}
        with open(directory / f"{key}.log", "w") as log:
            server = subprocess.Popen(
                [sys.executable, "-m", "offload_repro.core.warm_start", str(path), str(idle_s), *preload],
                env=server_env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # it outlives this process, and no signal to this job reaches it
                cwd=directory,  # it holds no work directory of a run
            )
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline and server.poll() is None:
            if (connection := _try_connect(path)) is not None:
                return connection
            time.sleep(POLL_S)
        with contextlib.suppress(ProcessLookupError):
            server.kill()
        return None


def _try_connect(path: Path) -> socket.socket | None:
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(str(path))
    except OSError:
        connection.close()
        return None
    return connection


# The server's side.


def serve(path: Path, preload: list[str], idle_s: float = IDLE_S) -> None:
    for module in preload:
        importlib.import_module(module)
    if "jax" in sys.modules:
        from jax._src import xla_bridge

        if xla_bridge._backends:  # a backend has read XLA_FLAGS: a fork would inherit its reading
            raise SystemExit("warm start: a backend was created while importing; not serving")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    staging = path.with_name(path.name + f".{os.getpid()}")
    listener.bind(str(staging))
    listener.listen(16)
    os.replace(staging, path)  # it appears only once it listens
    bound = os.stat(path).st_ino  # the path is unlinked at the end only if no later server took it over
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # each process's supervisor is reaped by the kernel
    listener.settimeout(idle_s)
    try:
        while True:
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                break
            sys.stdout.flush()
            sys.stderr.flush()
            if os.fork() == 0:
                listener.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                _supervise(connection)
            connection.close()
    finally:
        with contextlib.suppress(FileNotFoundError):
            if os.stat(path).st_ino == bound:
                path.unlink()
        listener.close()


def _supervise(connection: socket.socket) -> None:
    """In a fork of the server: fork the process asked for, wait for it, say how it ended. A client
    that goes away (its job was stopped) takes its process with it."""
    status = 1
    try:
        with connection.makefile("rb") as stream:
            request = json.loads(stream.readline())
        worker = os.fork()
        if worker == 0:
            connection.close()
            _become(request)
        status = _wait(worker, connection)
        connection.sendall(json.dumps({"returncode": status}).encode() + b"\n")
    finally:
        os._exit(0)


def _wait(worker: int, connection: socket.socket) -> int:
    while True:
        pid, wait_status = os.waitpid(worker, os.WNOHANG)
        if pid:
            return os.waitstatus_to_exitcode(wait_status)
        readable, _, _ = select.select([connection], [], [], POLL_S)
        if readable and not connection.recv(1, socket.MSG_PEEK):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(worker, signal.SIGKILL)
            os.waitpid(worker, 0)
            os._exit(0)


def _become(request: dict) -> None:
    """In a fork of the supervisor: become `python -m MODULE ARGV...` in the asked environment,
    working directory and log, and exit as it would."""
    code: int = 1
    try:
        os.setpgid(0, 0)  # its own group: stopping it stops what it started
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        sys.argv = [request["module"], *request["argv"]]
        sys.path[0] = request["cwd"]  # as `python -m` puts the working directory first
        try:
            runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as stop:
            if stop.code is None or isinstance(stop.code, int):
                code = stop.code or 0
            else:
                print(stop.code, file=sys.stderr)
        atexit._run_exitfuncs()
    except BaseException:
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: python -m offload_repro.core.warm_start SOCKET IDLE_S [MODULE ...]")
    serve(Path(sys.argv[1]), sys.argv[3:], float(sys.argv[2]))
