"""A compiled program read as the schedule the step-time model replays: each scheduled computation's
instructions as events (compute, host copies, collectives, loops), in the order XLA scheduled
them and in an ideal overlap.

The instructions of a scheduled computation appear in the order XLA scheduled them, so an async
`*-start` / `*-done` pair spans exactly the instructions printed between them. An instruction's
FLOPs are counted as `hlo_flops` counts them, its HBM bytes as `memory_traffic`, a collective's
bytes as `collective_traffic`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace

from offload_repro.core.grouped_matmul import SCOPE as GROUPED_MATMUL
from offload_repro.produce.compiled.hlo_text import (
    HOST_MEMORY,
    Computation,
    Instruction,
    array_bytes,
    balanced,
    called,
    device_shape_bytes,
    shape_bytes,
    trip_count,
)
from offload_repro.produce.predicted import collective_traffic, memory_traffic
from offload_repro.produce.predicted.hlo_flops import FusedFlops, flops_of, fused_flops

# Where the devices span NVLink domains: (devices per domain, NICs a ring's crossings spread over,
# NICs per GPU); None for one domain.
type Network = tuple[int, int, int] | None


@dataclass(frozen=True)
class Event:
    """One step of a scheduled computation, as the step-time model replays it.
    kind: compute (flops, of which attention and unspent: not the source's; HBM bytes read and
    written) | start / done (async transfer `key` on `channel`, bytes) | transfer (synchronous) |
    loop (`body` repeated `times`). A collective's bytes are its bus bytes (NVLink), and it names
    the bytes per NIC that cross between NVLink domains at either end of their band."""

    kind: str
    flops: int = 0
    unspent: int = 0
    channel: str = ""
    bytes: int = 0
    key: str = ""
    body: str = ""
    times: int = 1
    what: str = ""  # a collective's kind (all-gather, ...)
    attention: int = 0
    network_ring: float = 0.0
    network_floor: float = 0.0
    buffer: int = 0  # a collective's size (nccl-tests' S) and the members of its group
    group: int = 0
    element: str = ""  # a collective's element type


def _host_side(computation: Computation, instruction: Instruction) -> str | None:
    """'to_host' / 'from_host' for a copy between device and host memory, else None."""
    out_host = [host for _, _, host in instruction.arrays]
    operand_host = [HOST_MEMORY in computation.shapes.get(op, "") for op in instruction.operands]
    base = instruction.op.removesuffix("-start")
    if instruction.op == "fusion-start" or base in ("dynamic-update-slice", "dynamic-slice", "copy"):
        name = instruction.name
        if any(operand_host) and (name.startswith("dynamic-slice") or base == "dynamic-slice"):
            return "from_host"
        if any(out_host) and (name.startswith("dynamic-update-slice") or base == "dynamic-update-slice"):
            return "to_host"
        if base == "copy" and any(operand_host) != any(out_host):
            return "to_host" if any(out_host) else "from_host"
    return None


def _copy_bytes(computation: Computation, instruction: Instruction, side: str) -> int:
    if side == "to_host":  # the update written into the host buffer: the largest device operand
        shapes = [computation.shapes.get(op, "") for op in instruction.operands]
        return max((shape_bytes(shape) for shape in shapes if HOST_MEMORY not in shape), default=0)
    arrays = [array_bytes(d, dims) for d, dims, host in instruction.arrays if not host]
    return max(arrays, default=0)  # the slice read back into device memory


def _collective(
    computation: Computation, instruction: Instruction, network: Network
) -> collective_traffic.Collective | None:
    """The collective an instruction is, None where it is none."""
    if collective_traffic.kind_of(instruction.op) is None:
        return None
    if instruction.op.endswith("-start") and instruction.shape.startswith("(("):
        shapes = [instruction.shape[1 : balanced(instruction.shape, 1)]]  # (operands, results): the operands
    else:
        shapes = [computation.shapes.get(operand, "") for operand in instruction.operands]
    per_domain, channels, nics = network or (None, 1, 1)
    return collective_traffic.collective(instruction.op, shapes, instruction.attributes, per_domain, channels, nics)


def _is_grouped_gemm(instruction: Instruction) -> bool:
    """A loop in core/grouped_matmul.py's name scope, which JAX's transforms wrap ('jvp(tiled_gmm)')."""
    if instruction.op != "while":
        return False
    return any(part.rstrip(")").split("(")[-1] == GROUPED_MATMUL for part in instruction.op_name.split("/"))


def _grouped_gemm(
    computations: dict[str, Computation], loop: Instruction, body: str, memo: dict[str, FusedFlops]
) -> Event:
    """A grouped matmul written as a loop over token tiles (core/grouped_matmul.py), charged as the
    grouped GEMM kernel it stands for: its FLOPs as the loop does them (partial tiles included), its
    HBM bytes as such a kernel moves them, the loop's state once: every expert's weights and the
    sorted tokens read, the result written. The loop reads an expert's weights once per visit, a
    kernel once per expert (its tiles of one expert share them through L2)."""
    visits = trip_count(loop) or 1
    per_visit = fused_flops(computations, body, memo)  # one visit: the body and the fusions it calls
    return Event(
        "compute",
        flops=visits * per_visit.total,
        unspent=visits * per_visit.unspent,
        bytes=device_shape_bytes(loop.shape),
    )


def instruction_events(
    computations: dict[str, Computation],
    computation: Computation,
    instruction: Instruction,
    memo: dict[str, FusedFlops],
    network: Network = None,
) -> list[Event]:
    """What one scheduled instruction is to the step-time model: a loop, a host copy or a
    collective (async start or synchronous), the done an async start waits for, or compute (its
    FLOPs and the HBM bytes it reads and writes)."""
    if instruction.op == "while":
        body = next((callee for how, callee in called(instruction) if how == "body"), "")
        if _is_grouped_gemm(instruction):
            return [_grouped_gemm(computations, instruction, body, memo)]
        return [Event("loop", body=body, times=trip_count(instruction) or 1)]
    if instruction.op in ("call", "conditional"):
        return [Event("loop", body=callee, times=1) for _, callee in called(instruction)]
    kind = "start" if instruction.op.endswith("-start") else "transfer"
    if side := _host_side(computation, instruction):
        moved = _copy_bytes(computation, instruction, side)
        return [Event(kind, channel=side, bytes=moved, key=instruction.name)]
    if collective := _collective(computation, instruction, network):
        return [
            Event(
                kind,
                channel="collective",
                bytes=int(collective.bus_bytes),
                key=instruction.name,
                what=collective.kind,
                network_ring=collective.network_ring_bytes,
                network_floor=collective.network_floor_bytes,
                buffer=collective.buffer_bytes,
                group=collective.group,
                element=collective.element,
            )
        ]
    if instruction.op.endswith("-done") and instruction.operands:
        return [Event("done", key=instruction.operands[0])]
    found = flops_of(computation, instruction)
    for how, callee in called(instruction):
        if how == "calls" and instruction.op != "fusion-start":
            found += fused_flops(computations, callee, memo)
    moved = memory_traffic.instruction_bytes(computations, computation, instruction)
    if not found.total and not moved:
        return []
    return [Event("compute", flops=found.total, unspent=found.unspent, attention=found.attention, bytes=moved)]


# Instructions that only rename a result: its first real use is its users' first use.
RENAMING = ("bitcast", "get-tuple-element")


def first_uses(computation: Computation) -> dict[str, int]:
    """Per result, the index of the first instruction that reads it for real, looking through
    renamings; a result nothing reads is needed at the computation's end."""
    users: dict[str, list[int]] = defaultdict(list)
    for index, instruction in enumerate(computation.instructions):
        for operand in instruction.operands:
            users[operand].append(index)
    end = len(computation.instructions)
    found: dict[str, int] = {}
    for index in reversed(range(end)):  # a renaming is read after it is defined: its users are known
        instruction = computation.instructions[index]
        uses = [
            found[computation.instructions[user].name] if computation.instructions[user].op in RENAMING else user
            for user in users.get(instruction.name, [])
        ]
        found[instruction.name] = min(uses, default=end)
    return found


def availability(computation: Computation) -> dict[str, int]:
    """Per result, the index of the first instruction that may follow it: just after the
    instruction that computes it, looking through renamings; a parameter's, the start."""
    found: dict[str, int] = {}
    for index, instruction in enumerate(computation.instructions):
        if instruction.op == "parameter":
            found[instruction.name] = 0
        elif instruction.op in RENAMING:
            found[instruction.name] = max((found.get(op, 0) for op in instruction.operands), default=0)
        else:
            found[instruction.name] = index + 1
    return found


def ideal_overlap(computation: Computation, timeline: list[list[Event]]) -> list[Event]:
    """The computation's events with every transfer started as soon as its operands are ready and
    awaited only where its result is first used (a synchronous one, an async pair XLA scheduled
    with nothing between and then made synchronous, made async): what a scheduler with a perfect
    cost model and no memory limit could reach from the same program, its instructions in their
    order."""
    uses, ready = first_uses(computation), availability(computation)
    end = len(timeline)
    starts: dict[int, list[Event]] = defaultdict(list)
    dones: dict[int, list[Event]] = defaultdict(list)
    stay: dict[int, list[Event]] = defaultdict(list)
    for index, (instruction, events) in enumerate(zip(computation.instructions, timeline, strict=True)):
        earliest = min(index, max((ready.get(op, 0) for op in instruction.operands), default=0))
        awaited = max(uses.get(instruction.name, end), index + 1)
        for event in events:
            if event.kind == "done":
                dones[awaited].append(event)
            elif event.kind == "start":
                starts[earliest].append(event)
            elif event.kind == "transfer":
                starts[earliest].append(replace(event, kind="start"))
                dones[awaited].append(Event("done", key=event.key))
            else:
                stay[index].append(event)
    return [e for index in range(end + 1) for e in (*starts[index], *dones[index], *stay[index])]


def timelines(computations: dict[str, Computation], network: Network = None) -> dict[str, list[list[Event]]]:
    """Each scheduled computation (the entry and what it runs in sequence), as the events of each of
    its instructions in order."""
    memo: dict[str, FusedFlops] = {}
    sequenced = {c.name for c in computations.values() if c.entry}
    for computation in reversed(list(computations.values())):
        for instruction in computation.instructions:
            if _is_grouped_gemm(instruction):  # one compute event (_grouped_gemm), its body not replayed
                continue
            for how, name in called(instruction):
                if how in ("body", "branch_computations") or instruction.op == "call":
                    sequenced.add(name)
    return {
        name: [
            instruction_events(computations, computations[name], instruction, memo, network)
            for instruction in computations[name].instructions
        ]
        for name in computations  # in printed order, so that everything read from it is in one order
        if name in sequenced
    }


def schedules(
    computations: dict[str, Computation], timeline: dict[str, list[list[Event]]]
) -> tuple[dict[str, list[Event]], dict[str, list[Event]]]:
    """The events of each scheduled computation in order, as XLA scheduled them and in the ideal
    overlap (`ideal_overlap`), from its instructions' events (`timelines`)."""
    scheduled = {name: [event for events in per for event in events] for name, per in timeline.items()}
    ideal = {name: ideal_overlap(computations[name], per) for name, per in timeline.items()}
    return scheduled, ideal


def schedule(
    computations: dict[str, Computation], network: Network = None, ideal: bool = False
) -> dict[str, list[Event]]:
    """The events of each scheduled computation in order (`timelines`); `ideal`: in the ideal overlap."""
    return schedules(computations, timelines(computations, network))[1 if ideal else 0]
