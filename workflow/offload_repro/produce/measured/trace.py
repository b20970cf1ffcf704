"""Overlap evidence from a JAX profiler trace (Chrome trace events, as jax.profiler writes to
perfetto_trace.json.gz): how long host copies ran on the GPU, how long compute ran, and how
much of the copy time was hidden under compute."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

DEVICE_PROCESS = re.compile(r"/device:(GPU|TPU)|(GPU|TPU):\d|\bGPU\b")
HOST_COPY = re.compile(r"memcpy\s*(dtoh|htod|d2h|h2d)|\b(dtoh|htod|d2h|h2d)\b|MemcpyDtoH|MemcpyHtoD", re.IGNORECASE)


def read_events(path: str | Path) -> list[dict[str, Any]]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    return data["traceEvents"] if isinstance(data, dict) else data


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(intervals):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _length(intervals: list[tuple[float, float]]) -> float:
    return sum(end - start for start, end in intervals)


def _intersection(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        low, high = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, high - low)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def summarize(events: list[dict[str, Any]], steps: int = 1) -> dict[str, Any]:
    """Seconds per step of host copies, compute, and copy time hidden under compute (GPU only)."""
    processes = [e for e in events if e.get("ph") == "M" and e.get("name") == "process_name"]
    names = {e["pid"]: e.get("args", {}).get("name", "") for e in processes}
    device_pids = {pid for pid, name in names.items() if DEVICE_PROCESS.search(name)}
    copies, compute = [], []
    for event in events:
        if event.get("ph") != "X" or event.get("pid") not in device_pids:
            continue
        interval = (float(event["ts"]), float(event["ts"]) + float(event.get("dur", 0)))
        (copies if HOST_COPY.search(event.get("name", "")) else compute).append(interval)
    copy_union, compute_union = _union(copies), _union(compute)
    copy_us, compute_us = _length(copy_union), _length(compute_union)
    hidden_us = _intersection(copy_union, compute_union)
    per_step = 1e-6 / steps  # trace timestamps are microseconds
    return {
        "steps": steps,
        "device_processes": sorted(names[pid] for pid in device_pids),
        "host_copies": len(copies),
        "copy_s_per_step": copy_us * per_step,
        "compute_s_per_step": compute_us * per_step,
        "hidden_copy_s_per_step": hidden_us * per_step,
        "exposed_copy_s_per_step": (copy_us - hidden_us) * per_step,
        "hidden_fraction": hidden_us / copy_us if copy_us else None,
    }


# XLA:TPU's host copies are asynchronous pairs whose start is not traced; its "-done" op is the time
# the core waits for one (the offload's loads: dynamic-slice-done; its stores: dynamic-update-slice-done).
TPU_COPY_WAIT = re.compile(r"^(dynamic-slice|dynamic-update-slice|copy)-done(\.\d+)?$")


def tpu_waits(event_names: dict[str, list[dict[str, Any]]], steps: int) -> dict[str, Any] | None:
    """From one TPU trace's events by name (`event_names`): seconds per step the core waited for host
    copies, that is, the copy time not hidden under compute. None where the trace has no TPU ops line."""
    ops = next((events for where, events in event_names.items() if re.search(r"TPU:\d+ / XLA Ops$", where)), None)
    if ops is None:
        return None
    waits = [e for e in ops if TPU_COPY_WAIT.match(e["name"])]
    per_step = 1e-6 / steps
    return {
        "steps": steps,
        "device_processes": sorted({where.split(" / ")[0] for where in event_names if "TPU" in where}),
        "host_copies": sum(e["count"] for e in waits),
        "exposed_copy_s_per_step": sum(e["total_us"] for e in waits) * per_step,
        # the copies themselves run on DMA engines the trace does not show: their length, and so the
        # share hidden under compute, is not measured here
        "copy_s_per_step": None,
        "hidden_copy_s_per_step": None,
        "hidden_fraction": None,
        "waits": {e["name"]: e["total_us"] * per_step for e in waits},
    }


def event_names(events: list[dict[str, Any]], top: int = 60) -> dict[str, Any]:
    """Per process (and thread), the events that took the most time: name, count and total
    microseconds. What to read when a new device names its copies in words this module does not
    know yet."""
    names = {
        e["pid"]: e.get("args", {}).get("name", "")
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name"
    }
    threads = {
        (e["pid"], e.get("tid")): e.get("args", {}).get("name", "")
        for e in events
        if e.get("ph") == "M" and e.get("name") == "thread_name"
    }
    totals: dict[str, dict[str, list[float]]] = {}
    for event in events:
        if event.get("ph") != "X":
            continue
        pid, tid = event.get("pid"), event.get("tid")
        where = f"{names.get(pid, pid)} / {threads.get((pid, tid), tid)}"
        entry = totals.setdefault(where, {}).setdefault(event.get("name", ""), [0, 0.0])
        entry[0] += 1
        entry[1] += float(event.get("dur", 0))
    return {
        where: [
            {"name": n, "count": c, "total_us": round(t, 1)}
            for n, (c, t) in sorted(by.items(), key=lambda i: -i[1][1])[:top]
        ]
        for where, by in sorted(totals.items())
    }


if __name__ == "__main__":
    import sys

    print(json.dumps({path: event_names(read_events(path)) for path in sys.argv[1:]}, indent=1))
