"""A copy of the workflow's files, for the tests and the benchmark that run Snakemake on a copy.
No stage imports it, so that editing it replans no rule."""

from __future__ import annotations

import shutil
from pathlib import Path

from offload_repro.core.files import REPO_ROOT

# What a copy of the workflow needs to run anywhere.
WORKFLOW_FILES = ("Snakefile", "workflow", "experiments", "envs", "report")


def copy_workflow(destination: Path, root: Path = REPO_ROOT) -> Path:
    """The workflow's files from `root` (this checkout by default) into `destination`."""
    for name in WORKFLOW_FILES:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, destination / name, ignore=shutil.ignore_patterns("__pycache__"))
        elif source.exists():
            shutil.copy2(source, destination / name)
    return destination
