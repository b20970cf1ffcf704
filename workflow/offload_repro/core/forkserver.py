"""Import MaxText once, fork per row: a fork server for `python -m MODULE ARGS` processes.

A row's process spends ~15 s importing MaxText before 2-40 s of work. A server process imports
the preload modules once and forks a child per request; the child takes the request's
environment, working directory, log file and argv, and runs the module as `__main__`.

Server: `python -m offload_repro.core.forkserver serve SOCKET --preload mod1,mod2 --idle-timeout 120`.
Single-threaded (a selector loop, no threads), and it checks that it still is before each fork:
a child gets a copy of the memory with the forking thread alone in it, so a lock another thread
held stays held there. A library may keep worker threads that it stops itself before a fork
(pthread_atfork): OpenBLAS, which numpy loads, keeps one per extra core, and importing MaxText
starts them. So after the preload the server forks once, a child that exits at once: those
threads end (they start again only when BLAS is used, which the server never does), and any
thread left after that makes the server refuse every request, naming the count.
Protocol, one JSON line each way: request {"module", "args", "env", "cwd", "log", "key"};
replies {"pid": N} once the child is forked, then {"returncode": N} (negative: killed by that
signal, as subprocess reports it), or {"error": "..."} if the server refuses.

Client: `ForkServerLauncher(directory)`, a `process.Launcher` like `process.run_subprocess`.
- Opt-in: an explicit setting, never the environment. The workflow's `fork_server` (config) makes
  the rules that start MaxText processes pass `--fork-server` to the command line, which builds
  the launcher with `launcher(setting)` and hands it to the stage; without it a stage runs plain
  subprocesses. The setting names the directory for sockets ("": a per-user directory in the
  temp dir).
- Socket name: `<dir>/<key>.sock`, key = sha256 of the Python executable's absolute path, the
  preload list and the variables read when those modules are imported or the interpreter
  starts (IMPORT_TIME_PREFIXES: JAX_* config, PYTHONPATH, loader and thread-pool settings). A
  row whose key differs gets another server, never a mismatched one; the server re-checks.
  XLA_FLAGS is not in the key: XLA parses it when a backend is first made, in the child
  (tests/core/test_forkserver.py proves this).
- Lazy start: if nothing answers at the socket, the client takes fcntl.flock on
  `<dir>/<key>.lock`, tries again, and otherwise starts the server detached
  (start_new_session) and waits for its socket, which appears (by rename) only once the preload
  is imported. Racing clients wait on the lock and then find the socket.
- Fallback: command not `[python, -m, module, ...]`, server not startable, refusal (another
  environment key, or threads in the server), or server gone mid-request: the subprocess runs
  exactly as without a server, with a note at the top of the log saying why. A child whose
  server dies is killed with it (PR_SET_PDEATHSIG), so a rerun never overlaps it.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import ctypes
import fcntl
import gc
import hashlib
import importlib
import json
import os
import runpy
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from offload_repro.core.process import Launcher

# MaxText's train step and its AOT compile (which imports train): both row kinds, one server.
PRELOAD = ("maxtext.trainers.pre_train.train_compile",)
IDLE_SECONDS = 120.0
START_WAIT_SECONDS = 300.0  # importing MaxText takes ~15 s alone, minutes on a loaded machine
# Read at interpreter start or at import (jax.config takes JAX_* then), so a child can't change them.
IMPORT_TIME_PREFIXES = (
    *("JAX_", "PYTHON", "TF_CPP_", "LD_", "OPENBLAS_", "OMP_", "MKL_", "MALLOC_", "GLIBC_TUNABLES"),
    *("LANG", "LC_"),  # the interpreter picks its stdio encoding at start
)
POLL_S = 0.05
PR_SET_PDEATHSIG = 1
PROBE_WAIT_SECONDS = 10.0  # the probe's child only exits; one that hangs shows a thread held a lock


def environment_key(python: str, preload: tuple[str, ...], env: dict[str, str]) -> str:
    fixed = {name: value for name, value in env.items() if name.startswith(IMPORT_TIME_PREFIXES)}
    text = json.dumps([os.path.abspath(python), list(preload), sorted(fixed.items())])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def default_socket_directory() -> Path:
    """Resolved where the job runs: a cluster node's temp dir is not the submitting machine's."""
    return Path(tempfile.gettempdir()) / f"offload-repro-forkserver-{os.getuid()}"


def launcher(setting: str | None) -> Launcher:
    """The launcher for the command line's `--fork-server [DIR]`: None (absent) plain subprocesses;
    otherwise a fork server's, its sockets in DIR ("": `default_socket_directory()`)."""
    from offload_repro.core.process import run_subprocess  # see ForkServerLauncher.__call__

    if setting is None:
        return run_subprocess
    return ForkServerLauncher(Path(setting) if setting else default_socket_directory())


# ---------------------------------------------------------------- threads


def thread_count() -> int:
    """The process's OS threads, native ones included (Linux lists them in /proc/self/task)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except FileNotFoundError:
        return threading.active_count()


def fork_hazard() -> str | None:
    """Why forking now is unsafe (a thread besides this one), or None."""
    threads, python_threads = thread_count(), threading.active_count()
    if max(threads, python_threads) <= 1:
        return None
    return (
        f"the server runs {max(threads, python_threads)} threads ({python_threads} known to Python's threading):"
        " a fork copies only the forking one, so a lock another holds would stay held in the child"
    )


def end_threads_that_stop_at_fork() -> tuple[int, int]:
    """(threads after the preload, threads left after a first fork). The fork's child exits at
    once; the libraries' fork handlers stop their own worker pools on the way (module docstring)."""
    before = thread_count()
    if before <= 1:
        return before, before
    with warnings.catch_warnings():  # Python's warning on forking with threads: this fork is the check
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        os._exit(0)
    deadline = time.monotonic() + PROBE_WAIT_SECONDS
    while os.waitpid(pid, os.WNOHANG)[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            break
        time.sleep(POLL_S / 10)
    return before, thread_count()


# ---------------------------------------------------------------- server


@dataclass
class Connection:
    sock: socket.socket
    buffer: bytes = b""
    pid: int | None = None
    closed: bool = False


@dataclass
class Server:
    listener: socket.socket
    path: Path
    inode: int
    key: str
    idle_seconds: float
    # (before, after) of each variable the preload's import set: MaxText sets six of them.
    import_changes: dict[str, tuple[str | None, str | None]]
    selector: selectors.BaseSelector = field(default_factory=selectors.DefaultSelector)
    connections: dict[int, Connection] = field(default_factory=dict)  # by socket fd
    children: dict[int, Connection] = field(default_factory=dict)  # by pid

    def serve(self) -> None:
        self.selector.register(self.listener, selectors.EVENT_READ)
        idle_since = time.monotonic()
        while True:
            for selected, _ in self.selector.select(timeout=POLL_S):
                if selected.fileobj is self.listener:
                    self.accept()
                else:
                    self.receive(self.connections[selected.fd])
            self.reap()
            if self.connections or self.children:
                idle_since = time.monotonic()
            elif time.monotonic() - idle_since > self.idle_seconds and self.retire():
                return

    def accept(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except BlockingIOError:
            return
        connection = Connection(sock)
        self.connections[sock.fileno()] = connection
        self.selector.register(sock, selectors.EVENT_READ)

    def receive(self, connection: Connection) -> None:
        try:
            data = connection.sock.recv(65536)
        except OSError:
            data = b""
        if not data:  # client gone: its child is not wanted any more
            if connection.pid is not None:
                kill_group(connection.pid)
            self.close(connection)
            return
        if connection.pid is not None:
            return  # nothing more is expected from a client whose child runs
        connection.buffer += data
        if b"\n" in connection.buffer:
            try:
                self.start(connection, json.loads(connection.buffer.split(b"\n", 1)[0]))
            except (ValueError, KeyError, TypeError, OSError) as err:  # a bad request, or fork failed (ENOMEM)
                self.refuse(connection, f"{type(err).__name__}: {err}")

    def refuse(self, connection: Connection, message: str) -> None:
        """The client runs the command as a plain subprocess, this message at the top of its log."""
        print(f"refused: {message}", flush=True)
        reply(connection.sock, {"error": message})
        self.close(connection)

    def start(self, connection: Connection, request: dict[str, Any]) -> None:
        env = request["env"]
        differ = [name for name, (before, _) in self.import_changes.items() if env.get(name) != before]
        if request.get("key") != self.key or differ:
            self.refuse(
                connection, f"key {request.get('key')}, server's {self.key}; variables the import sets differ: {differ}"
            )
            return
        if (hazard := fork_hazard()) is not None:
            self.refuse(connection, hazard)
            return
        # What importing the preload did to the environment, a fresh process's import does too.
        for name, (_, after) in self.import_changes.items():
            if after is None:
                env.pop(name, None)
            else:
                env[name] = after
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # or the child inherits, and writes, the server's buffered output
        server_pid = os.getpid()
        pid = os.fork()
        if pid == 0:
            sockets = [self.listener, *(c.sock for c in self.connections.values())]
            child(request, server_pid, sockets, self.selector)
        with contextlib.suppress(OSError):  # here too, or a kill could come before the child's own call
            os.setpgid(pid, pid)
        connection.pid = pid
        self.children[pid] = connection
        print(f"pid {pid}: {request['module']} in {request['cwd']}", flush=True)
        reply(connection.sock, {"pid": pid})

    def reap(self) -> None:
        for pid in list(self.children):
            try:
                done, status = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done, status = pid, 255 << 8
            if done == 0:
                continue
            connection = self.children.pop(pid)
            returncode = os.waitstatus_to_exitcode(status)
            print(f"pid {pid}: returncode {returncode}", flush=True)
            if not connection.closed:
                reply(connection.sock, {"returncode": returncode})
                self.close(connection)

    def close(self, connection: Connection) -> None:
        if connection.closed:
            return
        del self.connections[connection.sock.fileno()]
        self.selector.unregister(connection.sock)
        connection.sock.close()
        connection.closed = True

    def retire(self) -> bool:
        """Remove the socket under the start lock, so no client starting a new server races it."""
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if self.selector.select(timeout=0):
                return False  # a client connected just now: serve it
            with contextlib.suppress(FileNotFoundError):
                if self.path.stat().st_ino == self.inode:
                    self.path.unlink()
        self.listener.close()
        print("idle: exiting", flush=True)
        return True


def reply(sock: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the client left; its child is killed when the server reads the EOF
        sock.sendall(json.dumps(message).encode() + b"\n")


def kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def child(
    request: dict[str, Any], server_pid: int, sockets: list[socket.socket], selector: selectors.BaseSelector
) -> None:
    """The forked child: become the requested process, run the module, never return."""
    code = 1
    try:
        os.setpgid(0, 0)  # its own group, so a kill takes whatever it started too
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != server_pid:
            os._exit(1)  # the server died before prctl took effect
        selector.close()  # no EPOLL_CTL_DEL: the parent's registrations are untouched
        for sock in sockets:
            sock.close()
        os.environ.clear()
        os.environ.update(request["env"])  # putenv: C code calling getenv (XLA_FLAGS) sees it too
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        # sys.stdout and sys.stderr stay the same objects, now writing to the log: handlers made
        # at import hold them, and absl's app.run drops a root handler only if `h.stream ==
        # sys.stderr` (a new object left every absl line logged twice).
        os.chdir(request["cwd"])
        sys.argv = [request["module"], *request["args"]]
        sys.path[0] = request["cwd"]  # as `python -m` run in cwd has it
        try:
            runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as done:
            code = exit_code(done.code)
        except BaseException:
            traceback.print_exc()
        atexit._run_exitfuncs()  # as interpreter exit would
    except BaseException:
        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


def exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def serve(path: Path, preload: tuple[str, ...], idle_seconds: float) -> None:
    started, before = time.monotonic(), dict(os.environ)
    key = environment_key(sys.executable, preload, before)
    for module in preload:
        importlib.import_module(module)
    after = dict(os.environ)
    changed = [name for name in before | after if before.get(name) != after.get(name)]
    changes = {name: (before.get(name), after.get(name)) for name in changed}
    gc.freeze()  # imported objects stay out of collections: fewer copy-on-write pages per child
    took = time.monotonic() - started
    print(f"server pid {os.getpid()} preloaded {', '.join(preload)} in {took:.1f} s; key {key}", flush=True)
    print(f"the import set {sorted(changes)}", flush=True)
    threads, left = end_threads_that_stop_at_fork()
    if threads > 1:
        print(f"threads: {threads} after the import, {left} after a first fork", flush=True)
    if (hazard := fork_hazard()) is not None:
        print(f"every request will be refused: {hazard}", flush=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.setblocking(False)
    staging = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
    staging.unlink(missing_ok=True)
    listener.bind(str(staging))
    listener.listen(64)
    os.replace(staging, path)  # the socket appears only when it is ready to serve
    inode = path.stat().st_ino
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # children die with it (PR_SET_PDEATHSIG)
    try:
        Server(listener, path, inode, key, idle_seconds, changes).serve()
    finally:
        with contextlib.suppress(FileNotFoundError):
            if path.stat().st_ino == inode:  # not a successor's socket
                path.unlink()


# ---------------------------------------------------------------- client


class ServerGone(Exception):
    """The server closed the connection; `started` says whether a child had been forked."""

    def __init__(self, started: bool) -> None:
        super().__init__("server closed the connection" + (" while the child ran" if started else ""))
        self.started = started


def module_command(command: list[str]) -> tuple[str, str, list[str]] | None:
    """(python, module, args) for `[python, -m, module, *args]`, else None."""
    if len(command) >= 3 and command[1] == "-m" and Path(command[0]).name.startswith("python"):
        return command[0], command[2], command[3:]
    return None


def connect(path: Path) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:  # absent, refused (stale socket of a dead server), or path too long
        sock.close()
        return None
    return sock


def start_server(python: str, path: Path, env: dict[str, str], preload: tuple[str, ...], idle_seconds: float) -> None:
    """Under the lock: start a detached server unless one answers, and wait for its socket."""
    with open(path.with_suffix(".lock"), "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (sock := connect(path)) is not None:
            sock.close()
            return
        path.unlink(missing_ok=True)  # stale: its server is gone
        server_env = {name: value for name, value in env.items() if name != "XLA_FLAGS"}  # a row's, not the server's
        with open(path.with_suffix(".log"), "a") as log:
            process = subprocess.Popen(
                [python, "-m", "offload_repro.core.forkserver", "serve", str(path), "--preload", ",".join(preload),
                 "--idle-timeout", str(idle_seconds)],
                env=server_env, cwd="/", stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + START_WAIT_SECONDS
        while time.monotonic() < deadline and process.poll() is None:
            if (sock := connect(path)) is not None:
                sock.close()
                return
            time.sleep(0.1)
        if process.poll() is None:
            process.kill()
        raise RuntimeError(f"fork server did not start (see {path.with_suffix('.log')})")


def request(sock: socket.socket, message: dict[str, Any]) -> int:
    """Send one request and wait for the child's return code."""
    started = False
    try:
        sock.sendall(json.dumps(message).encode() + b"\n")
        for line in sock.makefile("rb"):
            answer = json.loads(line)
            if "error" in answer:
                raise RuntimeError(answer["error"])
            started = started or "pid" in answer
            if "returncode" in answer:
                return int(answer["returncode"])
    except (ConnectionError, BrokenPipeError):
        pass
    raise ServerGone(started)


@dataclass(frozen=True)
class ForkServerLauncher:
    """A `process.Launcher` that forks `python -m module` commands from the server for their
    environment key, its socket in `directory`, started on first use; otherwise, or when that
    fails, a plain subprocess."""

    directory: Path
    preload: tuple[str, ...] = PRELOAD
    idle_seconds: float = IDLE_SECONDS

    def __call__(self, command: list[str], env: dict[str, str], cwd: Path, log_file: Path) -> tuple[int, float]:
        # Imported here, not at the top: the server imports this module, and whatever it imports from
        # the package its children inherit, from the checkout that started it.
        from offload_repro.core.process import run_subprocess

        started = time.monotonic()
        parsed = module_command(command)
        if parsed is None:
            return run_subprocess(command, env, cwd, log_file)
        python, module, args = parsed
        python = shutil.which(python) or python  # the server's sys.executable is absolute
        key = environment_key(python, self.preload, env)
        path = self.directory / f"{key}.sock"
        message = {"module": module, "args": args, "env": env, "cwd": str(Path(cwd).resolve()),
                   "log": str(Path(log_file).resolve()), "key": key}  # fmt: skip
        note = ""
        for _attempt in range(2):  # twice: a server may retire between our connect and its accept
            try:
                sock = connect(path)
                if sock is None:
                    self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                    start_server(python, path, env, self.preload, self.idle_seconds)
                    sock = connect(path)
                if sock is None:
                    raise RuntimeError(f"no fork server at {path}")
                with sock:
                    return request(sock, message), time.monotonic() - started
            except ServerGone as gone:
                note = str(gone)
                if gone.started:
                    break  # its child died with it: rerun the command on its own, below
            except (OSError, RuntimeError, ValueError) as err:
                note = f"{type(err).__name__}: {err}"
                break
        with open(log_file, "w", encoding="utf-8") as log:
            print(f"[offload_repro.core.forkserver] not used ({note}); running the command as a subprocess", file=log)
        returncode, _ = run_subprocess(command, env, cwd, log_file, mode="a")
        return returncode, time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve", help="import the preload modules, then fork per request")
    serve_parser.add_argument("socket", type=Path)
    serve_parser.add_argument("--preload", default=",".join(PRELOAD))
    serve_parser.add_argument("--idle-timeout", type=float, default=IDLE_SECONDS)
    options = parser.parse_args()
    serve(options.socket, tuple(filter(None, options.preload.split(","))), options.idle_timeout)


if __name__ == "__main__":
    main()
