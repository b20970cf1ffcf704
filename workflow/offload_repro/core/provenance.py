"""Where and from what a result came: host, project commit, time."""

from __future__ import annotations

import datetime
import os
import socket
import subprocess

from offload_repro.core.files import REPO_ROOT


def project_commit() -> str | None:
    """HEAD of this checkout, with '-dirty' when tracked files differ from it."""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
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
