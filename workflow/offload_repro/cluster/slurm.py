"""How a row runs on a SLURM cluster: what its job asks for, and how its ranks are launched.

Submission is Snakemake's SLURM executor plugin's job (from the resources below); inside the
job, the runner starts one MaxText process per GPU (per task, on CPUs) with `srun`, in the
row's pinned container on GPUs (pyxis `--container-image`, or `apptainer exec --nv`).
"""

from __future__ import annotations

import datetime
import os
import re
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from offload_repro.core import maxtext_args
from offload_repro.core.containers import CONTAINERS_FILE, containers
from offload_repro.core.data import DataError, Row, Target
from offload_repro.core.files import REPO_ROOT
from offload_repro.core.image_digest import DigestError, resolve_digest

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

    def resolved(self, runtime: str, allow_unpinned: bool) -> dict[str, Any]:
        """The image to run, pinned by the digest `skopeo inspect` gives now when only a tag is
        recorded, and a record of what ran."""
        record = asdict(self) | {"runtime": runtime, "digest_at_run_time": self.digest, "digest_error": None}
        image = self.image(runtime, allow_unpinned)
        if self.digest is None:
            try:
                digest = resolve_digest(self.reference, wait_seconds=30)  # the job's nodes are waiting
            except DigestError as err:  # the tag runs; the record says why its digest is unknown
                record["digest_error"] = str(err)
            else:
                record["digest_at_run_time"] = digest
                image = Container(self.name, self.reference, digest).image(runtime, allow_unpinned)
        return record | {"image": image}


def container_for(row: Row) -> Container:
    data = containers()
    name = data["families"].get(row.family)
    if name is None or name not in data["containers"]:
        raise DataError(f"{CONTAINERS_FILE}: field 'families.{row.family}': no container for this model family")
    entry = data["containers"][name]
    return Container(name, entry["reference"], entry["digest"])


def cpu_task_resources(cluster: dict[str, Any]) -> dict[str, Any]:
    """CPUs per task and the job's memory on a CPU target."""
    memory = {"mem_mb": cluster["mem_mb"]} if "mem_mb" in cluster else {}
    return {"cpus_per_task": cluster.get("cpus_per_task", 1), **memory}


def job_resources(target: Target) -> dict[str, Any]:
    """Snakemake resources of one row's job on this target (rendered to sbatch by the plugin).

    A job of several tasks is marked `mpi`: the plugin's job step then runs the runner once, in
    the batch step, and the runner's own `srun` starts one process per task.
    """
    cluster = target.spec.get("cluster")
    if cluster is None:
        return dict(CPU_JOB)
    if target.kind == "cpu":
        resources: dict[str, Any] = {
            "nodes": cluster["nodes"],
            "tasks_per_node": cluster["tasks_per_node"],
            "runtime": cluster["runtime_minutes"],
            **cpu_task_resources(cluster),
        }
        if target.processes > 1:
            resources["mpi"] = "srun"
        return resources
    resources = {
        "nodes": cluster["nodes"],
        "gres": f"gpu:{cluster['gpus_per_node']}",
        "tasks_per_gpu": 1,
        "runtime": cluster["runtime_minutes"],
    }
    if cluster["gpus_per_node"] > 1:  # the plugin's MPI geometry wants more than one task per node
        resources.update(mpi="srun", tasks_per_node=cluster["gpus_per_node"])
    if "cpus_per_gpu" in cluster:
        resources["cpus_per_gpu"] = cluster["cpus_per_gpu"]
    if cluster.get("exclusive"):
        resources["slurm_extra"] = "--exclusive"
    if "partition" in cluster:
        resources["slurm_partition"] = cluster["partition"]
    return resources


# The preflight is short: image start, a probe, a distributed start.
PREFLIGHT_MINUTES = 15


def preflight_resources(target: Target) -> dict[str, Any]:
    """The preflight's job: up to two nodes, one probe task on each (two on a one-node target)."""
    cluster = target.spec["cluster"]
    nodes = min(2, cluster["nodes"])
    resources: dict[str, Any] = {"nodes": nodes, "tasks": 2, "mpi": "srun", "runtime": PREFLIGHT_MINUTES}
    if target.kind == "cpu":
        return resources | cpu_task_resources(cluster)
    # All of a node's GPUs, to count them; tasks_per_gpu 0 keeps the plugin from deriving one from tasks.
    resources.update(gres=f"gpu:{cluster['gpus_per_node']}", tasks_per_gpu=0)
    if "partition" in cluster:
        resources["slurm_partition"] = cluster["partition"]
    return resources


def rank_environment(row: Row, target: Target) -> dict[str, str]:
    """What every rank's environment carries: the row's XLA flags and the target's memory limits."""
    return {
        "XLA_FLAGS": maxtext_args.xla_flags(row),
        "PYTHONPATH": str(REPO_ROOT / "workflow"),
        **target.run_environment,
    }


SRUN = [
    "srun",
    "--overlap",  # also inside a one-task job, whose step the plugin already started
    "--kill-on-bad-exit=1",  # a rank that dies takes the others down, instead of leaving them waiting
    "--export=ALL",
]


def rank_log_pattern(work_dir: Path) -> Path:
    """Each rank's own log (srun expands %t to the task id)."""
    return work_dir / "ranks" / "rank-%t.log"


def launch_prefix(target: Target, image: str | None, runtime: str, work_dir: Path, python: str) -> list[str]:
    """`srun` with one task per GPU (per CPU task), each rank's output in its own log, starting one
    process per rank (in `image` on GPUs); the module follows."""
    cluster, per_node = target.spec["cluster"], target.tasks_per_node
    if target.kind == "gpu":
        per_task = f"--gpus-per-node={per_node}"
    else:
        per_task = f"--cpus-per-task={cluster.get('cpus_per_task', 1)}"
    return [
        *SRUN,
        f"--nodes={cluster['nodes']}",
        f"--ntasks-per-node={per_node}",
        f"--output={rank_log_pattern(work_dir)}",
        per_task,
        *interpreter(image, runtime, work_dir, python),
    ]


def interpreter(image: str | None, runtime: str, work_dir: Path, python: str) -> list[str]:
    """What follows srun's own options: Python in the image, or this checkout's (CPU targets have no image);
    `runtime`: pyxis, else apptainer (the config's schema and the command line allow no other)."""
    if image is None:
        return [python]
    if runtime == "pyxis":
        mounts = f"--container-mounts={REPO_ROOT}:{REPO_ROOT}"
        return [f"--container-image={image}", mounts, f"--container-workdir={work_dir}", "python3"]
    return ["apptainer", "exec", "--nv", "--bind", str(REPO_ROOT), "--pwd", str(work_dir), image, "python3"]


@dataclass(frozen=True)
class TimeLimit:
    """The running job's time limit, as SLURM holds it (a --set-resources override included)."""

    job_id: str
    limit_s: float
    ends_at: float  # epoch seconds


def parse_duration(text: str) -> float:
    """SLURM's `[days-]hours:minutes:seconds` (or `minutes:seconds`) -> seconds."""
    days, _, clock = text.rpartition("-")
    seconds = sum(float(part) * 60**power for power, part in enumerate(reversed(clock.split(":"))))
    return float(days or 0) * 86400 + seconds


def job_field(format_code: str) -> str | None:
    """One `squeue -o` field of this job; None outside SLURM or when SLURM cannot say. Asked of
    SLURM by job id: the plugin's job step keeps only the id of SLURM's variables."""
    job_id = os.environ.get("SLURM_JOB_ID")
    if not job_id:
        return None
    try:
        command = ["squeue", "-h", "-j", job_id, "-o", format_code]
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def time_limit() -> TimeLimit | None:
    """This job's time limit and end; None outside SLURM or without a limit."""
    field = job_field("%l|%e")
    if field is None:
        return None
    try:
        limit, end = field.split("|")
        limit_s, ends_at = parse_duration(limit), datetime.datetime.fromisoformat(end).timestamp()
    except ValueError:  # UNLIMITED, or no end time yet
        return None
    return TimeLimit(os.environ["SLURM_JOB_ID"], limit_s, ends_at)


def node_list() -> list[str] | None:
    """The job's nodes, one name each (SLURM's compact `node[01-04]` expanded); None outside SLURM."""
    field = job_field("%N")
    if field is None:
        return None
    try:
        names = subprocess.run(["scontrol", "show", "hostnames", field], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return [field]
    return names.stdout.split() or [field]


MEMORY_UNITS = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def job_memory_bytes() -> int | None:
    """Memory SLURM granted the job per node (`squeue %m`, e.g. 8000M); None if unknown or unset."""
    field = job_field("%m")
    found = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT])", field) if field else None
    if found is None:
        return None
    return int(float(found[1]) * MEMORY_UNITS[found[2]]) or None  # 0: unset
