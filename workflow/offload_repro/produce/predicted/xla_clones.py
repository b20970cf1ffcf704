"""What XLA's rematerialisation pass added to a compiled program, found and named.

When a program does not fit XLA's memory limit, its rematerialisation pass clones instructions so
that their results are recomputed near their uses instead of kept alive; each clone is named after
its original with `.remat` and a number (`gemm_fusion_dot.60.remat2`, `all-gather.16.2.remat2`).
It counts the buffers about to be offloaded to the host as device memory, so in an offload row it
misses a limit it cannot meet and clones work that a program compiled without the pass (as
NVIDIA's MaxText recipes compile) never runs. JAX's own checkpoint recompute is another thing:
labelled `rematted_computation` in the metadata, never named so.

Per kind of clone (GEMM: compute with FLOPs; collective; other: memory-bound work, bitcasts and
tuple reads), per step: the instructions, how many times they run, their FLOPs, HBM bytes and
collective buffer bytes, each computation as many times as it runs. XLA's own warning gives the
limit it aimed at and how far it got.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from offload_repro.produce.compiled.hlo_text import Computation
from offload_repro.produce.predicted.hlo_flops import executions
from offload_repro.produce.predicted.hlo_schedule import Event

CLONE = re.compile(r"\.remat\d*(?:\.|$)")
KINDS = ("gemm", "collective", "other")
# XLA's warning when the pass cannot meet its limit (produce/compiled/aot_compile.MEMORY_WARNING)
MISSED = re.compile(
    r"Can't reduce memory use below [\d.]+\w+ \((\d+) bytes\) by rematerialization;"
    r" only reduced to [\d.]+\w+ \((\d+) bytes\), down from [\d.]+\w+ \((\d+) bytes\) originally"
)


@dataclass
class Clones:
    instructions: int = 0
    runs_per_step: int = 0
    flops: int = 0
    hbm_bytes: int = 0
    collective_bytes: int = 0


def is_clone(name: str) -> bool:
    return bool(CLONE.search(name))


def kind_of(events: list[Event]) -> str:
    if any(event.channel == "collective" for event in events):
        return "collective"
    if any(event.kind == "compute" and event.flops for event in events):
        return "gemm"
    return "other"


def count(computations: dict[str, Computation], timeline: dict[str, list[list[Event]]]) -> dict[str, dict[str, int]]:
    """Each kind's clones in the scheduled computations (a fused computation's insides are its
    fusion's), per step, from their instructions' events (`hlo_schedule.timelines`)."""
    runs, _ = executions(computations)
    found = {kind: Clones() for kind in KINDS}
    for name, per_instruction in timeline.items():
        times = runs.get(name, 0)
        for instruction, events in zip(computations[name].instructions, per_instruction, strict=True):
            if not is_clone(instruction.name):
                continue
            clones = found[kind_of(events)]
            clones.instructions += 1
            clones.runs_per_step += times
            clones.flops += times * sum(e.flops for e in events if e.kind == "compute")
            clones.hbm_bytes += times * sum(e.bytes for e in events if e.kind == "compute")
            clones.collective_bytes += times * sum(e.buffer for e in events if e.channel == "collective")
    return {kind: asdict(clones) for kind, clones in found.items()}


DISABLED = "--xla_disable_hlo_passes=rematerialization"


def limit(warnings: list[str], xla_flags: str = "") -> dict[str, Any]:
    """The pass's limit and whether it was met, from XLA's warning (none: met); `met` is None where
    the compile's flags turned the pass off."""
    met = None if DISABLED in xla_flags.split() else True
    for warning in warnings if met else ():
        if missed := MISSED.search(warning):
            aimed, reached, original = (int(group) for group in missed.groups())
            return {"met": False, "limit_bytes": aimed, "reached_bytes": reached, "original_bytes": original}
    return {"met": met, "limit_bytes": None, "reached_bytes": None, "original_bytes": None}
