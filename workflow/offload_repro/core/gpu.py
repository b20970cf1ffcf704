"""The one reader of XLA's GPU target descriptions (envs/gpu-targets/*.txtpb): the single source of
each GPU's device memory, its bandwidth, compute capability and declared cuDNN version."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from offload_repro.core.data import DataError, Target
from offload_repro.core.files import REPO_ROOT


@cache
def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def description_path(target: Target) -> Path | None:
    """The target's XLA GPU description, if it has one (GPU targets do; the CPU target does not)."""
    compile_spec = target.spec.get("compile")
    return REPO_ROOT / compile_spec["description_file"] if compile_spec else None


def description(target: Target) -> str:
    path = description_path(target)
    if path is None:
        raise DataError(f"experiments/targets/{target.name}.yaml: field 'compile.description_file': missing")
    return _text(path)


def _field(text: str, pattern: str, what: str) -> re.Match[str]:
    found = re.search(pattern, text)
    if not found:
        raise ValueError(f"GPU description has no {what}")
    return found


MEMORY_FIELD = r"device_memory_size:\s*(\d+)"  # the device's memory, bytes


def capacity_bytes_of(text: str) -> int:
    return int(_field(text, MEMORY_FIELD, "device_memory_size").group(1))


def capacity_bytes(target: Target) -> int | None:
    """Device memory per GPU as XLA describes it, a TPU's as its file states it (None for the CPU)."""
    if target.kind == "tpu":
        return target.spec["hardware"]["device_memory_bytes"]
    return capacity_bytes_of(description(target)) if description_path(target) else None


def memory_bandwidth(target: Target) -> int | None:
    """Device-memory (HBM) bandwidth, bytes per second, as XLA describes it, a TPU's as its file
    states it (None for the CPU)."""
    if target.kind == "tpu":
        return round(target.spec["hardware"]["hbm_bandwidth_gb_s"] * 1e9)
    if description_path(target) is None:
        return None
    return int(_field(description(target), r"memory_bandwidth:\s*(\d+)", "memory_bandwidth").group(1))


def cudnn_version(text: str) -> int:
    """'dnn_version: "9.15.0"' -> 91500, the integer jax's cuDNN check returns."""
    found = _field(text, r'dnn_version:\s*"(\d+)\.(\d+)\.(\d+)"', "dnn_version")
    major, minor, patch = (int(part) for part in found.groups())
    return major * 10000 + minor * 100 + patch


def compute_capability(text: str) -> tuple[int, int]:
    found = _field(text, r"cuda_compute_capability\s*{\s*major:\s*(\d+)(?:\s*minor:\s*(\d+))?", "compute capability")
    return int(found.group(1)), int(found.group(2) or 0)


# The share of a GPU's memory JAX's allocator takes where XLA_PYTHON_CLIENT_MEM_FRACTION is unset
# (JAX, docs/gpu_memory_allocation.rst: "instead of the default 75%").
JAX_DEFAULT_FRACTION = 0.75
FRACTION_VARIABLE = "XLA_PYTHON_CLIENT_MEM_FRACTION"
# Where no allocator states the module's device memory (a compile without a GPU), XLA takes this share
# of the description's memory (xla/service/gpu/gpu_hlo_schedule.cc, GetSchedulerMemoryLimit).
DESCRIPTION_SHARE = 0.80


def allocator_fraction(row_fraction: float | None, target: Target) -> float:
    """The share of each GPU's memory JAX's allocator takes on a run of the row on the target: the
    row's own (an assumption's alternative, or a published run's environment), else what the target's
    runs set (its cluster's environment for a cluster target, its own otherwise), else JAX's default."""
    if row_fraction is not None:
        return float(row_fraction)
    return float(target.run_environment.get(FRACTION_VARIABLE, JAX_DEFAULT_FRACTION))


def as_run_allocates(text: str, fraction: float) -> str:
    """The description a compile without a GPU is given so that XLA plans the program under the
    memory a run gives it. On a GPU, JAX hands XLA its allocator's limit (the fraction of the GPU's
    memory) as the module's device memory; without one XLA takes 80% of the description's memory.
    XLA's latency-hiding scheduler overlaps transfers only within that memory (less the program's
    arguments and outputs), and the rematerialisation pass aims at it, so a compile-only program
    scheduled under 80% serialises transfers a run would overlap. The description's memory is scaled
    so that its 80% is the run's limit; the device's capacity is read from the file itself."""
    memory = capacity_bytes_of(text)
    scaled = round(memory * fraction / DESCRIPTION_SHARE)
    return re.sub(MEMORY_FIELD, f"device_memory_size: {scaled}", text, count=1)
