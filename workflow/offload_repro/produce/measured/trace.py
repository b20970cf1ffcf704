"""Overlap evidence from a JAX profiler trace (Chrome trace events, as jax.profiler writes to
perfetto_trace.json.gz): how long host copies ran on the GPU, how long compute ran, and how
much of the copy time was hidden under compute."""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path
from typing import Any

from offload_repro.core.hlo_arrays import ARRAY, ELEMENT_BYTES, HOST_MEMORY

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
    """Seconds per step of host copies, compute, and copy time hidden under compute; a TPU trace is
    read as `tpu_copies` reads it."""
    tpu = tpu_copies(events, steps)
    if tpu is not None:
        return tpu
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


# XLA:TPU's host copies are asynchronous pairs on the core's ops line: a start (`async-start` of a
# dynamic-slice or dynamic-update-slice, or `copy-start`) issues the DMA and its done is where the core
# waits for it. A pinned-host buffer is in memory space 5 (`S(5)` in its layout).
TPU_COPY_WAIT = re.compile(r"^(dynamic-slice|dynamic-update-slice|copy)-done(\.\d+)?$")
COPY_START = re.compile(r"^%(?P<name>\S+) = .*? (?:async-start|copy-start)\(")
COPY_DONE = re.compile(r" (?:async-done|copy-done)\(.*%(?P<start>[\w.-]+)\)$")


def _moved_bytes(long_name: str) -> int:
    """The bytes one host copy moves: its largest array outside host memory (the slice loaded, the
    update stored, or the buffer copied), read from the done's HLO text."""
    sizes = [0]
    for element, dims, layout in ARRAY.findall(long_name):
        if dims and element in ELEMENT_BYTES and HOST_MEMORY not in layout:
            sizes.append(math.prod(int(d) for d in dims.split(",")) * ELEMENT_BYTES[element])
    return max(sizes)


def tpu_copies(events: list[dict[str, Any]], steps: int) -> dict[str, Any] | None:
    """Per step, from a TPU trace's ops line: each direction's host copies (bytes, the time from issue
    to completion, `in_flight`, and the time the core waited at their dones, `exposed`). The DMA's own
    time is not traced: a copy ran somewhere inside its window, so the share of the in-flight time the
    core spent computing (`hidden_fraction_at_most`) bounds from above the share of copy time hidden.
    None where the trace has no TPU ops line."""
    pids = {
        e["pid"]
        for e in events
        if e.get("ph") == "M"
        and e.get("name") == "process_name"
        and re.search(r"/device:TPU:\d+$", e.get("args", {}).get("name", ""))
    }
    line = {
        (e["pid"], e.get("tid"))
        for e in events
        if e.get("ph") == "M"
        and e.get("name") == "thread_name"
        and e.get("pid") in pids
        and e.get("args", {}).get("name") == "XLA Ops"
    }
    if not line:
        return None
    ops = sorted(
        (e for e in events if e.get("ph") == "X" and (e.get("pid"), e.get("tid")) in line), key=lambda e: e["ts"]
    )
    issued: dict[str, list[dict[str, Any]]] = {}
    copies: dict[str, list[tuple[float, float, float, float, int]]] = {"to_host": [], "from_host": []}
    for event in ops:
        text = event.get("args", {}).get("long_name", "")
        if HOST_MEMORY not in text:
            continue
        if started := COPY_START.match(text):
            issued.setdefault(started["name"], []).append(event)
        elif (done := COPY_DONE.search(text)) and issued.get(done["start"]):
            start = issued[done["start"]].pop(0)
            result = event.get("args", {}).get("shape_with_layout", text.split(" = ", 1)[-1])
            direction = "to_host" if HOST_MEMORY in result.split("}", 1)[0] + "}" else "from_host"
            end = event["ts"] + event.get("dur", 0.0)
            copies[direction].append((start["ts"], end, event["ts"], end, _moved_bytes(text)))
    per_step = 1e-6 / steps  # trace timestamps are microseconds

    def seconds(intervals: list[tuple[float, float]]) -> float:
        return _length(_union(intervals)) * per_step

    by_direction = {
        direction: {
            "copies": len(found),
            "bytes_per_step": sum(c[4] for c in found) / steps,
            "in_flight_s_per_step": seconds([(c[0], c[1]) for c in found]),
            "exposed_s_per_step": seconds([(c[2], c[3]) for c in found]),
        }
        for direction, found in copies.items()
    }
    every = [c for found in copies.values() for c in found]
    in_flight, exposed = seconds([(c[0], c[1]) for c in every]), seconds([(c[2], c[3]) for c in every])
    return {
        "steps": steps,
        "device_processes": sorted(
            {
                e["args"]["name"]
                for e in events
                if e.get("ph") == "M" and e.get("pid") in pids and e.get("name") == "process_name"
            }
        ),
        "host_copies": len(every),
        "exposed_copy_s_per_step": exposed,
        "in_flight_s_per_step": in_flight,
        "hidden_fraction_at_most": 1 - exposed / in_flight if in_flight else None,
        # the copies' own time is not in the profile: these stay unmeasured on a TPU
        "copy_s_per_step": None,
        "hidden_copy_s_per_step": None,
        "hidden_fraction": None,
        "by_direction": by_direction,
    }


def tpu_waits(event_names: dict[str, list[dict[str, Any]]], steps: int) -> dict[str, Any] | None:
    """From one TPU trace's events by name (`event_names`): seconds per step the core waited for host
    copies, that is, the copy time not hidden under compute. None where the trace has no TPU ops line.
    What a tier kept before it summarised the trace itself (`tpu_copies`)."""
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
