"""A private copy of the workflow for tests that run Snakemake, so they never touch results/."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def copy_workflow(destination: Path, root: Path = REPO) -> Path:
    """The workflow's files from `root` (this checkout by default) into `destination`."""
    for name in ("Snakefile", "workflow", "experiments", "envs", "report"):
        source = root / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif source.exists():
            shutil.copy2(source, destination / name)
    return destination


def snakemake(directory: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    """Snakemake on a workflow copy, under umask 022 (what result modes are tested against)."""
    return subprocess.run(
        [*SNAKEMAKE, "--directory", str(directory), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=directory,
        preexec_fn=lambda: os.umask(0o022),
    )
