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


def capacity_bytes_of(text: str) -> int:
    return int(_field(text, r"device_memory_size:\s*(\d+)", "device_memory_size").group(1))


def capacity_bytes(target: Target) -> int | None:
    """Device memory per GPU as XLA describes it (None for a target without a GPU description)."""
    return capacity_bytes_of(description(target)) if description_path(target) else None


def memory_bandwidth_of(text: str) -> int:
    """Device-memory (HBM) bandwidth, bytes per second, as XLA describes it."""
    return int(_field(text, r"memory_bandwidth:\s*(\d+)", "memory_bandwidth").group(1))


def memory_bandwidth(target: Target) -> int | None:
    return memory_bandwidth_of(description(target)) if description_path(target) else None


def cudnn_version(text: str) -> int:
    """'dnn_version: "9.15.0"' -> 91500, the integer jax's cuDNN check returns."""
    found = _field(text, r'dnn_version:\s*"(\d+)\.(\d+)\.(\d+)"', "dnn_version")
    major, minor, patch = (int(part) for part in found.groups())
    return major * 10000 + minor * 100 + patch


def compute_capability(text: str) -> tuple[int, int]:
    found = _field(text, r"cuda_compute_capability\s*{\s*major:\s*(\d+)(?:\s*minor:\s*(\d+))?", "compute capability")
    return int(found.group(1)), int(found.group(2) or 0)
