"""Overlap evidence from a JAX profiler trace (Chrome trace events, as jax.profiler writes to
perfetto_trace.json.gz): how long host copies ran on the GPU, how long compute ran, and how
much of the copy time was hidden under compute."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

DEVICE_PROCESS = re.compile(r"/device:GPU|GPU:\d|\bGPU\b")
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
