"""Where and from what a result came: host, project commit, time."""

from __future__ import annotations

import datetime
import os
import socket
import subprocess
from importlib import metadata

from offload_repro.core.files import REPO_ROOT

# The packages whose versions every result records (and a compiled program is keyed by): one list.
VERSIONED = ("jax", "jaxlib", "jax-cuda12-plugin", "maxtext", "flax")


def versions() -> dict[str, str | None]:
    """The installed version of each package of VERSIONED; None where it is not installed."""
    found: dict[str, str | None] = {}
    for name in VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def project_commit() -> str | None:
    """HEAD of this checkout, with '-dirty' when tracked files differ from it."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True, check=True)
        return done.stdout.strip()

    try:
        head, dirty = git("rev-parse", "HEAD"), git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("-dirty" if dirty else "")


def stamp() -> dict[str, str | None]:
    return {
        "host": socket.gethostname(),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "project_commit": project_commit(),
        "finished_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
