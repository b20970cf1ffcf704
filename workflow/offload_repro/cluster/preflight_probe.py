"""What one task of the preflight job sees, printed as one JSON line: run inside the row's container
(on GPU targets) by `srun`, so it reports the image's MaxText, the node's GPUs and memory limits.

    python -m offload_repro.cluster.preflight_probe facts KEYS_JSON
    python -m offload_repro.cluster.preflight_probe distributed
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from offload_repro.cluster import jax_distributed


def maxtext_facts(keys: list[str]) -> dict[str, Any]:
    """MaxText's version in this image and which of `keys` its config refuses."""
    try:
        version = metadata.version("maxtext")
        # The fields MaxText's pyconfig checks every key=value against (it refuses any other).
        from maxtext.configs import types

        fields = set(types.MaxTextConfig.model_fields)
    except Exception as err:  # no MaxText, or one without this config class
        return {"maxtext_version": None, "maxtext_error": f"{type(err).__name__}: {err}", "refused_keys": None}
    return {"maxtext_version": version, "maxtext_error": None, "refused_keys": sorted(set(keys) - fields)}


def gpus() -> list[dict[str, Any]] | None:
    """The node's GPUs as nvidia-smi lists them; None where there is no nvidia-smi."""
    if shutil.which("nvidia-smi") is None:
        return None
    query = ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"]
    done = subprocess.run(query, capture_output=True, text=True, timeout=60)
    lines = (line.rsplit(",", 1) for line in done.stdout.strip().splitlines())
    return [{"name": name.strip(), "memory_mib": int(memory_mib)} for name, memory_mib in lines]


def memory_limits() -> dict[str, int | None]:
    """Host memory this task may use: the node's, its cgroup's limit, and what SLURM granted the job."""
    cgroup = None
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < (1 << 60):  # "max" or a huge number: no limit
            cgroup = int(text)
        break
    slurm_mb = os.environ.get("SLURM_MEM_PER_NODE")
    return {
        "node_bytes": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"),  # /proc/meminfo's MemTotal
        "cgroup_bytes": cgroup,
        "slurm_job_bytes": int(slurm_mb) * 2**20 if slurm_mb and slurm_mb.isdigit() else None,
    }


def facts(keys_file: str) -> dict[str, Any]:
    keys = json.loads(Path(keys_file).read_text())
    return {"host": socket.gethostname(), **maxtext_facts(keys), "gpus": gpus(), "memory": memory_limits()}


def distributed_start() -> dict[str, Any]:
    """Join the job's distributed system and add one number per process across all of them."""
    rank = jax_distributed.start()
    import jax
    import jax.numpy as jnp
    from jax.experimental import multihost_utils

    values = multihost_utils.process_allgather(jnp.array([jax.process_index() + 1.0]))
    return {
        "host": socket.gethostname(),
        "task": (rank or jax_distributed.identity())["task"],
        "process_count": jax.process_count(),
        "sum": float(values.sum()),
        "backend": jax.devices()[0].platform,
    }


if __name__ == "__main__":
    mode = sys.argv[1]
    print(json.dumps(facts(sys.argv[2]) if mode == "facts" else distributed_start()), flush=True)
