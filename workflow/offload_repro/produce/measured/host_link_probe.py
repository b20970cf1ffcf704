"""Transfer probe: device-to-host and host-to-device bandwidth with pinned host memory, at the
sizes of the tensors a target's rows offload, against the host link's physical limit."""

from __future__ import annotations

import statistics
import time
import traceback
from typing import Any

from offload_repro.core.accounting import row_accounting
from offload_repro.core.data import Row, Target
from offload_repro.core.failure import failure_of
from offload_repro.core.memory import GB
from offload_repro.core.results import write_result


def offloaded_sizes(rows: list[Row]) -> list[int]:
    """Distinct per-layer byte sizes of every tensor any row offloads (what one copy moves)."""
    sizes = set()
    for row in rows:
        for tensor in row_accounting(row)["tensors"].values():
            if tensor["placement"] == "offload":
                sizes.update(tensor["bytes_per_layer"].values())
    return sorted(sizes)


def _timed(copy, repeats: int) -> float:
    copy().block_until_ready()  # warm-up: allocation and first-touch
    seconds = []
    for _ in range(repeats):
        started = time.perf_counter()
        copy().block_until_ready()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds)


def measure(sizes: list[int], limit_gb_s: float | None, repeats: int = 5) -> dict[str, Any]:
    import jax
    import jax.numpy as jnp
    from jax.sharding import SingleDeviceSharding

    device = jax.devices()[0]
    on_device = SingleDeviceSharding(device, memory_kind="device")
    pinned = SingleDeviceSharding(device, memory_kind="pinned_host")
    results = []
    for size in sizes:
        array = jax.device_put(jnp.zeros((size // 2,), jnp.bfloat16), on_device)
        on_host = jax.device_put(array, pinned)
        d2h = _timed(lambda a=array: jax.device_put(a, pinned), repeats)
        h2d = _timed(lambda h=on_host: jax.device_put(h, on_device), repeats)
        line = {"bytes": size, "d2h_gb_s": size / d2h / GB, "h2d_gb_s": size / h2d / GB}
        if limit_gb_s:
            line |= {"d2h_of_limit": line["d2h_gb_s"] / limit_gb_s, "h2d_of_limit": line["h2d_gb_s"] / limit_gb_s}
        results.append(line)
        del array, on_host
    return {
        "device_kind": device.device_kind,
        "platform": device.platform,
        "link_limit_gb_s_per_direction": limit_gb_s,
        "repeats": repeats,
        "transfers": results,
    }


def write_probe(target: Target, rows: list[Row], out_json: str, repeats: int) -> dict[str, Any]:
    """The probe's result; one the device refused (out of memory, no pinned host memory) is an
    error with the device's own words (it runs in this process: its traceback is in the rule's log)."""
    limit = target.host_link_gb_s_per_direction
    try:  # per-layer tensor sizes: one-GPU scale rules keep width, batch and sequence
        measured = measure(offloaded_sizes(rows), limit, repeats) | {"status": "ok", "message": None, "failure": None}
    except Exception as err:
        traceback.print_exc()  # the whole of it, in the rule's log
        cause = failure_of(None, "", None, {"type": type(err).__name__, "message": str(err)})
        measured = {"device_kind": None, "platform": None, "link_limit_gb_s_per_direction": limit, "repeats": repeats}
        measured |= {"transfers": [], "status": "error", "message": cause.cause, "failure": cause.record()}
    return write_result(out_json, "probe", {"target": target.name, **measured})
