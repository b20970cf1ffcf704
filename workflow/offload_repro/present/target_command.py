"""The command line that produces a target's evidence, as a user types it."""

from __future__ import annotations

from offload_repro.core.containers import unpinned_containers
from offload_repro.core.data import Target
from offload_repro.core.optional_stages import SNAKEMAKE


def snakemake_command(target: Target) -> str:
    """The command line that produces a target's evidence, as a user types it (the report and the
    README print these; a test dry-runs every one). Local targets run with --cores; SLURM targets
    through the cluster profile. A one-GPU target is also its own compile target, so its scaled
    rows are compiled for the GPU that runs them."""
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
