"""What a step moves, from its schedule's events: bytes to and from the host, per collective kind and
of HBM, each computation as many times as it runs, and each host copy with the FLOPs it spans.
"""

from __future__ import annotations

from typing import Any

from offload_repro.produce.compiled.hlo_text import Computation
from offload_repro.produce.predicted.hlo_flops import executions
from offload_repro.produce.predicted.hlo_schedule import Event

# Per collective kind, per step: runs, buffer, bus bytes (NVLink), bytes per NIC between NVLink domains
# at each end of their band, and the runs and buffer XLA left synchronous.
COLLECTIVE_TOTALS = (
    "count",
    "bytes",
    "bus_bytes",
    "network_ring_bytes",
    "network_floor_bytes",
    "synchronous",
    "synchronous_bytes",
)


def loop_flops(events: dict[str, list[Event]], name: str) -> int:
    """FLOPs of one run of a scheduled computation, its loops included."""
    return sum(
        e.flops if e.kind == "compute" else e.times * loop_flops(events, e.body) if e.kind == "loop" else 0
        for e in events.get(name, [])
    )


def transfers(computations: dict[str, Computation], events: dict[str, list[Event]]) -> dict[str, Any]:
    """Bytes per step to the host, back from it, per collective kind (COLLECTIVE_TOTALS and the group
    sizes) and of HBM; each host copy with whether it is asynchronous and the FLOPs scheduled between
    its start and done; from the schedule's events, each computation as many times as it runs."""
    runs, _ = executions(computations)
    host = {"to_host": 0, "from_host": 0}
    collectives: dict[str, dict[str, Any]] = {}
    copies: list[dict[str, Any]] = []
    memory_bytes = 0
    for name, timeline in events.items():
        times = runs.get(name, 0)
        open_copies: dict[str, dict[str, Any]] = {}
        for event in timeline if times else ():
            if event.channel in host:
                host[event.channel] += event.bytes * times
                copy = {
                    "name": event.key,
                    "direction": event.channel,
                    "bytes": event.bytes,
                    "runs_per_step": times,
                    "asynchronous": event.kind == "start",
                    "flops_between": 0,
                }
                copies.append(copy)
                if copy["asynchronous"]:
                    open_copies[event.key] = copy
            elif event.channel == "collective":
                entry = collectives.setdefault(event.what, dict.fromkeys(COLLECTIVE_TOTALS, 0))
                entry["count"] += times
                entry["bytes"] += event.buffer * times
                if event.kind == "transfer":  # XLA runs it on the compute stream: nothing hides it
                    entry["synchronous"] += times
                    entry["synchronous_bytes"] += event.buffer * times
                entry["bus_bytes"] += event.bytes * times
                entry["network_ring_bytes"] += int(event.network_ring * times)
                entry["network_floor_bytes"] += int(event.network_floor * times)
                entry["groups"] = sorted(set(entry.get("groups", [])) | {event.group})
            elif event.kind == "done":
                open_copies.pop(event.key, None)
            else:
                memory_bytes += event.bytes * times if event.kind == "compute" else 0
                spanned = event.flops if event.kind == "compute" else event.times * loop_flops(events, event.body)
                for copy in open_copies.values():
                    copy["flops_between"] += spanned
    return {"host_bytes": host, "collectives": collectives, "host_copies": copies, "memory_bytes": memory_bytes}
