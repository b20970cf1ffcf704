"""How to redo what a page shows: the command line that produces a target's evidence, as a user
types it, and for a target's page the versions its evidence was produced with, each row's XLA flags
as passed, and the command lines that rerun one row or rebuild the page."""

from __future__ import annotations

from typing import Any

from offload_repro.core.containers import unpinned_containers
from offload_repro.core.data import Row, Target
from offload_repro.core.optional_stages import SNAKEMAKE


def snakemake_command(target: Target) -> str:
    """The command line that produces a target's evidence (the report and the README print these;
    a test dry-runs every one). Local targets run with --cores; SLURM targets through the cluster
    profile. A one-GPU target is also its own compile target, so its scaled rows are compiled for
    the GPU that runs them."""
    if target.launcher == "slurm":
        command = f"{SNAKEMAKE} --workflow-profile workflow/profiles/slurm --config target={target.name}"
        if target.kind == "gpu" and unpinned_containers():
            # until envs/containers.yaml has digests, a GPU run must say that it accepts tags
            command += " allow_unpinned_container=True"
        return command
    if target.kind == "gpu":  # rows and the probe hold the GPU one at a time
        gpus, name = target.spec["hardware"]["devices"], target.name
        return f"{SNAKEMAKE} --cores all --resources gpu={gpus} --config target={name} compile_target={name}"
    return f"{SNAKEMAKE} --cores all --config target={target.name}"


def versions(*provenances: dict[str, Any] | None) -> dict[str, str]:
    """Every package version the runs and the compiles recorded, once each ({} when neither did)."""
    found: dict[str, str] = {}
    for recorded in provenances:
        if recorded and recorded.get("python"):
            found.setdefault("Python", recorded["python"])
        for name, version in ((recorded or {}).get("versions") or {}).items():
            if version:
                found.setdefault(name, version)
    return found


def rerun(
    target: Target, rows: list[Row], page: str, run: dict[str, Any] | None, compile: dict[str, Any] | None
) -> dict[str, Any]:
    return {
        "versions": versions(run, compile),
        "everything": snakemake_command(target),
        # the report rule alone, from the verdicts already in results/
        "page": f"{SNAKEMAKE} --cores all results/report/{page} --forcerun report",
        "rows": [
            {
                "row": row,
                "flags": row.xla_flags,
                "unstated": row.unstated_xla_flags,
                # the main job limited to the row: its run, its compile, its prediction, its verdicts
                "command": f"{snakemake_command(target)} 'rows=[\"{row.id}\"]'",
            }
            for row in rows
        ],
    }
