"""A private copy of the workflow for tests that run Snakemake, so they never touch results/."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from offload_repro.core.checkout_copy import copy_workflow

__all__ = ["copy_workflow", "snakemake"]


def snakemake(
    directory: Path, *args: str, timeout: float = 900, python: str = sys.executable
) -> subprocess.CompletedProcess[str]:
    """Snakemake on a workflow copy, under umask 022 (what result modes are tested against), started
    by `python` (by default this interpreter)."""
    return subprocess.run(
        [python, "-m", "snakemake", "--directory", str(directory), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=directory,
        preexec_fn=lambda: os.umask(0o022),
    )
