"""A private copy of the workflow for tests that run Snakemake, so they never touch results/."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]


def copy_workflow(destination: Path) -> Path:
    for name in ("Snakefile", "workflow", "experiments", "envs", "report"):
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif source.exists():
            shutil.copy2(source, destination / name)
    return destination


def snakemake(directory: Path, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*SNAKEMAKE, "--directory", str(directory), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=directory,
    )
