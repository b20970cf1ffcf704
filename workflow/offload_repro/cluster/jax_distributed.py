"""One rank of a multi-process run: join the JAX distributed system and leave a record of itself.

`srun` starts `offload_repro.produce.measured.launch` once per task; each task finds its place from
SLURM's environment (JAX's own SLURM cluster detection), so the same code serves a 2-task CPU
job and a 128-GPU job. The only difference the hardware forces: CPUs need gloo collectives
(GPUs use NCCL, JAX's default there). MaxText then sees the system initialised and skips its own.

Every rank writes `ranks/rank-<i>.json` in the row's work directory twice: when it has joined,
and when it ends (with its exception, if any). A rank killed outright leaves only the first; the
runner, which outlives the ranks, reads them all.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

from offload_repro.core.files import write_json

RANKS_DIR_VARIABLE = "OFFLOAD_REPRO_RANKS_DIR"


def task_count() -> int:
    """Tasks in this SLURM step (1 outside SLURM)."""
    return int(os.environ.get("SLURM_STEP_NUM_TASKS") or os.environ.get("SLURM_NTASKS") or 1)


def rank_file(ranks_dir: str | Path, task: int) -> Path:
    return Path(ranks_dir) / f"rank-{task}.json"


def identity() -> dict[str, Any]:
    """Where this rank runs, as SLURM and the OS see it."""
    return {
        "task": int(os.environ.get("SLURM_PROCID", 0)),
        "local_task": int(os.environ.get("SLURM_LOCALID", 0)),
        "node": os.environ.get("SLURMD_NODENAME"),
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
        "slurm_step_id": os.environ.get("SLURM_STEP_ID"),
    }


def start() -> dict[str, Any] | None:
    """Join the distributed system when this process is one of several tasks; None when alone."""
    if task_count() < 2:
        return None
    import jax

    if os.environ.get("JAX_PLATFORMS", "").split(",")[0] == "cpu":
        jax.config.update("jax_cpu_collectives_implementation", "gloo")
    try:
        jax.distributed.initialize()
    except Exception as err:  # the runner reports which rank could not join, and why
        write_rank(identity() | {"state": "ended", "exit_status": 1, "exception": exception_record(err)})
        raise
    record = identity() | {
        "process_index": jax.process_index(),
        "process_count": jax.process_count(),
        "local_devices": [str(device) for device in jax.local_devices()],
        "state": "joined",
    }
    write_rank(record)
    return record


def exception_record(err: BaseException) -> dict[str, str]:
    return {"type": type(err).__name__, "message": str(err)[-4000:]}


def write_rank(record: dict[str, Any]) -> None:
    ranks_dir = os.environ.get(RANKS_DIR_VARIABLE)
    if ranks_dir:
        write_json(rank_file(ranks_dir, record["task"]), record)


def finish(record: dict[str, Any] | None, status: int, exception: dict[str, Any] | None) -> None:
    """The rank's last word: how it ended."""
    if record is not None:
        write_rank(record | {"state": "ended", "exit_status": status, "exception": exception})
