"""How a row runs on a SLURM cluster: what its job asks for, and how its ranks are launched.

Submission is Snakemake's SLURM executor plugin's job (from the resources below); inside the
job, the runner starts one MaxText process per GPU with `srun`, in the row's pinned container
(pyxis `--container-image`, or `apptainer exec --nv`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from offload_repro.core.data import DataError, Row, Target, validate
from offload_repro.core.files import REPO_ROOT, read_yaml
from offload_repro.produce import maxtext_args

CONTAINERS_FILE = REPO_ROOT / "envs" / "containers.yaml"
RUNTIMES = ("pyxis", "apptainer")
# A CPU row submitted to SLURM: one task on one node (the test cluster has 2 cores).
CPU_JOB = {"nodes": 1, "tasks": 1, "cpus_per_task": 2, "mem_mb": 6000, "runtime": 30}


class ContainerError(DataError):
    """An image without a digest, where one is required."""


@dataclass(frozen=True)
class Container:
    name: str
    reference: str
    digest: str | None

    def image(self, runtime: str, allow_unpinned: bool) -> str:
        """The image as the runtime names it, pinned by digest (or by tag if allowed)."""
        if self.digest is None and not allow_unpinned:
            raise ContainerError(
                f"{CONTAINERS_FILE}: container '{self.name}' ({self.reference}): field 'digest' is null; "
                "record it with envs/resolve_containers.py, or run with --config allow_unpinned_container=True"
            )
        repository, _tag = self.reference.rsplit(":", 1)
        pinned = f"{repository}@{self.digest}" if self.digest else self.reference
        if runtime == "pyxis":  # enroot writes the registry before a '#'
            registry, path = pinned.split("/", 1)
            return f"{registry}#{path}"
        return f"docker://{pinned}"


@cache
def containers() -> dict[str, Any]:
    data = read_yaml(CONTAINERS_FILE)
    validate(data, "containers", CONTAINERS_FILE)
    return data


def container_for(row: Row) -> Container:
    data = containers()
    name = data["families"].get(row.family)
    if name is None or name not in data["containers"]:
        raise DataError(f"{CONTAINERS_FILE}: field 'families.{row.family}': no container for this model family")
    entry = data["containers"][name]
    return Container(name, entry["reference"], entry["digest"])


def job_resources(target: Target) -> dict[str, Any]:
    """Snakemake resources of one row's job on this target (rendered to sbatch by the plugin)."""
    cluster = target.spec.get("cluster")
    if target.kind == "cpu" or cluster is None:
        return dict(CPU_JOB)
    resources: dict[str, Any] = {
        "nodes": cluster["nodes"],
        "gres": f"gpu:{cluster['gpus_per_node']}",
        "tasks_per_gpu": 1,
        "runtime": cluster["runtime_minutes"],
    }
    if "cpus_per_gpu" in cluster:
        resources["cpus_per_gpu"] = cluster["cpus_per_gpu"]
    if cluster.get("exclusive"):
        resources["slurm_extra"] = "--exclusive"
    if "partition" in cluster:
        resources["slurm_partition"] = cluster["partition"]
    return resources


def rank_environment(row: Row, target: Target) -> dict[str, str]:
    """What every rank's environment carries: the row's XLA flags and the target's memory limits."""
    return {
        "XLA_FLAGS": maxtext_args.xla_flags(row),
        "PYTHONPATH": str(REPO_ROOT / "workflow"),
        **target.spec.get("cluster", {}).get("environment", {}),
    }


def launch_prefix(row: Row, target: Target, runtime: str, allow_unpinned: bool, work_dir: Path) -> list[str]:
    """`srun ...` that starts one process per GPU in the row's container; the Python command follows."""
    if runtime not in RUNTIMES:
        raise DataError(f"config 'container_runtime': '{runtime}' is not one of {RUNTIMES}")
    cluster = target.spec["cluster"]
    image = container_for(row).image(runtime, allow_unpinned)
    srun = [
        "srun",
        "--overlap",
        "--kill-on-bad-exit=1",
        "--export=ALL",
        f"--nodes={cluster['nodes']}",
        f"--ntasks-per-node={cluster['gpus_per_node']}",
        f"--gpus-per-node={cluster['gpus_per_node']}",
    ]
    if runtime == "pyxis":
        return [
            *srun,
            f"--container-image={image}",
            f"--container-mounts={REPO_ROOT}:{REPO_ROOT}",
            f"--container-workdir={work_dir}",
            "python3",
        ]
    return [*srun, "apptainer", "exec", "--nv", "--bind", str(REPO_ROOT), "--pwd", str(work_dir), image, "python3"]
