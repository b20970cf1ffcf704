"""The one place memory arithmetic lives: byte units, and what a compiled program needs per device."""

from __future__ import annotations

from typing import Any

MIB = 1024**2
GIB = 1024**3
GB = 10**9  # host memory is sold in GB


def device_bytes(memory: dict[str, int] | None) -> int | None:
    """Per-device peak estimate from XLA's memory analysis: arguments + outputs not aliased + temporaries."""
    if not memory:
        return None
    return (
        memory["argument_size_in_bytes"]
        + memory["output_size_in_bytes"]
        - memory["alias_size_in_bytes"]
        + memory["temp_size_in_bytes"]
    )


def program_peak_bytes(memory: dict[str, int] | None, platform: str | None) -> int | None:
    """What XLA says a program needs on one device. On a TPU, its own peak of the scheduled program:
    there temporaries reuse the room of donated arguments, so arguments + outputs + temporaries
    overstate it (by 3.3 GiB on a DeepSeek row that trained in 13.1 GiB of a 15.75 GiB chip).
    Elsewhere, `device_bytes`."""
    if platform == "tpu" and memory and memory.get("peak_memory_in_bytes"):
        return memory["peak_memory_in_bytes"]
    return device_bytes(memory)


def runtime_peak_bytes(stats: dict[str, int] | None, platform: str | None) -> int | None:
    """The most a run held on its device, from the runtime's own counters. On a TPU the step's
    temporaries are a reservation (peak_bytes_reserved) beside the buffers in use (weights and
    optimizer state: peak_bytes_in_use), so the peak is their sum; elsewhere peak_bytes_in_use."""
    if not stats or "peak_bytes_in_use" not in stats:
        return None
    if platform == "tpu":
        return stats["peak_bytes_in_use"] + stats.get("peak_bytes_reserved", 0)
    return stats["peak_bytes_in_use"]


def host_bytes(memory: dict[str, int] | None) -> int | None:
    """Host (pinned) memory the program holds per device: its host arguments, outputs and temporaries."""
    if not memory:
        return None
    total = sum(memory.get(f"host_{kind}_size_in_bytes", 0) for kind in ("argument", "output", "temp"))
    return total - memory.get("host_alias_size_in_bytes", 0)


def gib(value: int | float | None) -> float | None:
    return None if value is None else value / GIB


def mib(value: int | float | None) -> float | None:
    return None if value is None else value / MIB


def fit(used_bytes: int, capacity_bytes: int) -> dict[str, Any]:
    """Fits or not, with the margin (negative: by how much it does not)."""
    return {"fits": used_bytes <= capacity_bytes, "margin_gib": (capacity_bytes - used_bytes) / GIB}


def remat_warning_explained(reported_gib: float, device_gib: float, host_gib: float) -> bool:
    """XLA's rematerialisation pass counts buffers about to be offloaded as device memory, so its
    'only reduced to N GiB' is about device + host of an offload row; within 1% that is what it is."""
    return host_gib > 0 and abs(reported_gib - (device_gib + host_gib)) <= 0.01 * reported_gib


def host_fit(host_bytes_used: int, capacity_gb: float | None) -> dict[str, Any]:
    """Does the pinned host memory a program needs fit the host memory per GPU? (None: unknown)"""
    if capacity_gb is None:
        return {"host_capacity_bytes": None, "host_fits": None}
    capacity = int(capacity_gb * GB)
    return {"host_capacity_bytes": capacity, "host_fits": host_bytes_used <= capacity}
