"""`--fork-server`, taken by the commands that start MaxText processes, and the launcher it chooses.

Kept apart from `arguments.py` so that only these commands' stages depend on the fork server."""

from __future__ import annotations

import argparse

from offload_repro.core import forkserver
from offload_repro.core.process import Launcher

FORK_SERVER = argparse.ArgumentParser(add_help=False)
FORK_SERVER.add_argument(
    "--fork-server",
    nargs="?",
    const="",
    metavar="DIR",
    help="fork the MaxText processes from a server that imported MaxText once (core/forkserver.py), its"
    " sockets in DIR (without DIR: a per-user directory in the temp directory); absent: plain processes",
)


def launcher(args: argparse.Namespace) -> Launcher:
    """How the command starts its MaxText processes, from --fork-server."""
    return forkserver.launcher(args.fork_server)
