"""A compiled XLA program read as a schedule: what it computes, copies and communicates, and in
which order, from its optimized HLO text (kept by the compile, `produce.compiled.aot_compile.HLO_FILE`).

Deviceless GPU compiles give no cost analysis, and XLA's generic one counts a while body once,
so the FLOPs are counted here, every computation as many times as it runs:
- the entry runs once; a while body runs its `known_trip_count` times per run of its caller (the
  layer scan); a fused, called or async-wrapped computation runs once per run of its caller;
- dots (inside Triton GEMM fusions when autotuning is off): 2 x output elements x contracted size;
- cuBLAS GEMM custom calls: the same, from their dot dimension numbers;
- cuDNN flash attention (`__cudnn$fmhaSoftmax*`): each of its matmuls is 2 x batch x heads x
  query length x key length x head dim (the query-key or the value head dim, which MLA makes
  differ), halved under a causal mask; the forward pass has two (QK^T, PV), the backward pass
  five (QK^T again, dV, dP, dQ, dK).
Each FLOP is labelled by the op that produced it: `rematted_computation` in its metadata is
JAX's checkpoint recompute; `/dispatch/` and `/combine/` are MaxText's dense MoE dispatch.

The instructions of a scheduled computation appear in the order XLA scheduled them, so an async
`*-start` / `*-done` pair spans exactly the instructions printed between them.
"""

from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from offload_repro.produce.compiled.host_offload_hlo import ELEMENT_BYTES
from offload_repro.produce.predicted import collective_traffic, memory_traffic

ARRAY = re.compile(r"(\w+)\[([\d,]*)\](\{[^}]*\})?")
HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s+\(.*\{\s*$")
ASSIGN = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*")
OP_NAME = re.compile(r'op_name="([^"]*)"')
TRIP_COUNT = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')
CALLED = re.compile(
    r"\b(calls|body|condition|to_apply|branch_computations|async_execution_thread)=\{?([^,}]+(?:,\s*%[\w.\-]+)*)\}?"
)
CONTRACTING = re.compile(r"lhs_contracting_dims=\{([\d,]*)\}")
REMAT_LABEL = "rematted_computation"
UNSPENT_LABELS = ("/dispatch/", "/combine/")  # MaxText's dense MoE dispatch; the source used TE's permutation


@dataclass
class Instruction:
    name: str
    shape: str
    op: str
    operands: list[str]
    attributes: str
    op_name: str

    @property
    def arrays(self) -> list[tuple[str, list[int], bool]]:
        """(dtype, dims, in host memory) of each array in the result shape."""
        return [(d, _dims(dims), bool(layout and "S(5)" in layout)) for d, dims, layout in ARRAY.findall(self.shape)]


@dataclass
class Computation:
    name: str
    entry: bool
    instructions: list[Instruction] = field(default_factory=list)
    shapes: dict[str, str] = field(default_factory=dict)


def _dims(text: str) -> list[int]:
    return [int(d) for d in text.split(",") if d]


def array_bytes(dtype: str, dims: list[int]) -> int:
    return ELEMENT_BYTES.get(dtype, 0) * math.prod(dims)


def shape_bytes(shape: str) -> int:
    return sum(array_bytes(d, _dims(dims)) for d, dims, _ in ARRAY.findall(shape))


def _balanced(text: str, start: int) -> int:
    """Index just past the bracket group opening at `start`."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def _split_top(text: str) -> list[str]:
    parts, depth, current = [], 0, []
    for char in text:
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if current:
        parts.append("".join(current))
    return parts


def parse_instruction(line: str) -> Instruction | None:
    assigned = ASSIGN.match(line)
    if not assigned:
        return None
    rest = re.sub(r"/\*index=\d+\*/", "", line[assigned.end() :])
    shape_end = _balanced(rest, 0) if rest.startswith("(") else rest.find(" ")
    shape = rest[:shape_end]
    after = rest[shape_end:].lstrip()
    open_at = after.find("(")
    if open_at < 0:
        return None
    op = after[:open_at]
    close = _balanced(after, open_at)
    operands = [
        part.strip().split()[-1].lstrip("%") for part in _split_top(after[open_at + 1 : close - 1]) if part.strip()
    ]
    attributes = after[close:]
    found = OP_NAME.search(attributes)
    return Instruction(assigned.group(1), shape, op, operands, attributes, found.group(1) if found else "")


def parse(text: str) -> dict[str, Computation]:
    """The program's computations in printed order (callees before their callers)."""
    computations: dict[str, Computation] = {}
    current: Computation | None = None
    for line in text.splitlines():
        if current is None:
            header = HEADER.match(line)
            if header:
                current = computations.setdefault(header.group(2), Computation(header.group(2), bool(header.group(1))))
            continue
        if line.strip() == "}":
            current = None
            continue
        instruction = parse_instruction(line)
        if instruction:
            current.instructions.append(instruction)
            current.shapes[instruction.name] = instruction.shape
    return computations


def called(instruction: Instruction) -> list[tuple[str, str]]:
    """(how, computation) for each computation the instruction calls."""
    found = []
    for how, names in CALLED.findall(instruction.attributes):
        for name in names.split(","):
            name = name.strip().lstrip("%")
            if name and re.fullmatch(r"[\w.\-]+", name):
                found.append((how, name))
    return found


def trip_count(instruction: Instruction) -> int | None:
    found = TRIP_COUNT.search(instruction.attributes)
    return int(found.group(1)) if found else None


def executions(computations: dict[str, Computation]) -> tuple[dict[str, int], list[str]]:
    """How many times each computation runs per step, and the while loops of unknown trip count
    (counted once, and said so)."""
    runs: dict[str, int] = defaultdict(int)
    unknown: list[str] = []
    for computation in computations.values():
        if computation.entry:
            runs[computation.name] = 1
    for computation in reversed(list(computations.values())):  # callers are printed after their callees
        count = runs.get(computation.name, 0)
        if not count:
            continue
        for instruction in computation.instructions:
            for how, name in called(instruction):
                if how == "to_apply":
                    continue  # scalar reductions: no FLOPs counted
                if how == "body":
                    trips = trip_count(instruction)
                    if trips is None:
                        unknown.append(instruction.name)
                    runs[name] += count * (trips or 1)
                elif how == "condition":
                    runs[name] += count * ((trip_count(instruction) or 1) + 1)
                else:
                    runs[name] += count
    return dict(runs), unknown


def _operand_dims(computation: Computation, operand: str) -> list[int]:
    arrays = ARRAY.findall(computation.shapes.get(operand, ""))
    return _dims(arrays[0][1]) if arrays else []


def dot_flops(computation: Computation, instruction: Instruction) -> int:
    out = instruction.arrays
    contracting = CONTRACTING.search(instruction.attributes)
    lhs = _operand_dims(computation, instruction.operands[0]) if instruction.operands else []
    if not out or not contracting or not lhs:
        return 0
    contracted = math.prod(lhs[int(d)] for d in contracting.group(1).split(",") if d)
    return 2 * math.prod(out[0][1]) * contracted


def _backend_config(instruction: Instruction) -> dict[str, Any]:
    start = instruction.attributes.find("backend_config=")
    if start < 0:
        return {}
    brace = instruction.attributes.find("{", start)
    try:
        return json.loads(instruction.attributes[brace : _balanced(instruction.attributes, brace)])
    except ValueError:
        return {}


def attention_flops(instruction: Instruction) -> int:
    """cuDNN flash attention: its matmuls from the query, key and value shapes and the dot dimension
    numbers. Each matmul is score-sized (batch x heads x query length x key length) times a head
    dim: the forward pass contracts the query-key head dim once (QK^T) and produces the value head
    dim once (PV); the backward pass recomputes QK^T and forms dQ and dK (query-key head dim), dV
    and dP (value head dim). All halved under a causal mask."""
    config = _backend_config(instruction).get("cudnn_fmha_backend_config", {})
    constraints = re.search(r"operand_layout_constraints=\{(.*?)\}, api_version", instruction.attributes)
    # The backward's config names no QK^T; its dP = dO V^T is laid out as QK^T over the same
    # operand layout (jax/_src/cudnn/fused_attention_stablehlo.py), so its numbers read Q and K.
    numbers = config.get("bmm1_dot_dimension_numbers") or config.get("bmm2_grad_gemm2_dot_dimension_numbers", {})
    arrays = [_dims(dims) for _, dims, _ in ARRAY.findall(constraints.group(1))] if constraints else []
    if len(arrays) < 3 or not numbers:
        return 0
    query, key, value = arrays[:3]  # forward and backward both take Q, K, V first
    batch = [int(d) for d in numbers.get("lhs_batch_dimensions", [])]
    contracting = [int(d) for d in numbers.get("lhs_contracting_dimensions", [])]
    key_batch = [int(d) for d in numbers.get("rhs_batch_dimensions", [])]
    key_contracting = [int(d) for d in numbers.get("rhs_contracting_dimensions", [])]
    query_length = math.prod(n for i, n in enumerate(query) if i not in batch + contracting)
    key_length = math.prod(n for i, n in enumerate(key) if i not in key_batch + key_contracting)
    scores = 2 * math.prod(query[i] for i in batch) * query_length * key_length
    qk = scores * math.prod(query[i] for i in contracting)
    pv = scores * math.prod(value[i] for i in key_contracting)  # V is laid out as K
    if config.get("mask_type") == "CAUSAL":
        qk, pv = qk // 2, pv // 2
    backward = "Backward" in instruction.attributes.split("custom_call_target=", 1)[-1][:40]
    return 3 * qk + 2 * pv if backward else qk + pv


def gemm_custom_call_flops(computation: Computation, instruction: Instruction) -> int:
    numbers = _backend_config(instruction).get("gemm_backend_config", {}).get("dot_dimension_numbers", {})
    lhs = _operand_dims(computation, instruction.operands[0]) if instruction.operands else []
    out = instruction.arrays
    if not numbers or not lhs or not out:
        return 0
    contracted = math.prod(lhs[int(d)] for d in numbers.get("lhs_contracting_dimensions", []))
    return 2 * math.prod(out[0][1]) * contracted


def own_flops(computation: Computation, instruction: Instruction) -> tuple[int, str]:
    """(FLOPs, kind) of one instruction itself, not of what it calls."""
    if instruction.op == "dot":
        return dot_flops(computation, instruction), "gemm"
    if instruction.op == "custom-call":
        target = re.search(r'custom_call_target="([^"]+)"', instruction.attributes)
        name = target.group(1) if target else ""
        if name.startswith("__cudnn$fmha"):
            return attention_flops(instruction), "attention"
        if name.startswith("__cublas"):
            return gemm_custom_call_flops(computation, instruction), "gemm"
    return 0, ""


def labels(op_name: str) -> tuple[bool, bool]:
    """(JAX checkpoint recompute, MoE dispatch the source did not spend)."""
    return REMAT_LABEL in op_name, any(label in op_name for label in UNSPENT_LABELS)


@dataclass
class Flops:
    total: int = 0
    gemm: int = 0
    attention: int = 0
    rematted: int = 0  # labelled recompute (JAX's checkpoint)
    unspent: int = 0  # dense MoE dispatch / combine
    # Neither label: what compares with the model's own FLOPs, kind by kind
    unlabelled_gemm: int = 0
    unlabelled_attention: int = 0

    def add(self, flops: int, kind: str, op_name: str, times: int = 1) -> None:
        flops *= times
        self.total += flops
        setattr(self, kind, getattr(self, kind) + flops)
        rematted, unspent = labels(op_name)
        self.rematted += flops if rematted else 0
        self.unspent += flops if unspent else 0
        if not rematted and not unspent:
            setattr(self, f"unlabelled_{kind}", getattr(self, f"unlabelled_{kind}") + flops)

    def record(self) -> dict[str, int]:
        return dict(vars(self))


def count_flops(computations: dict[str, Computation]) -> tuple[Flops, list[str]]:
    """Per step, every computation counted as many times as it runs."""
    runs, unknown = executions(computations)
    flops = Flops()
    for computation in computations.values():
        times = runs.get(computation.name, 0)
        for instruction in computation.instructions if times else ():
            value, kind = own_flops(computation, instruction)
            if value:
                flops.add(value, kind, instruction.op_name, times)
    return flops, unknown


# --- the schedule ----------------------------------------------------------------------------


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
    operand_host = ["S(5)" in computation.shapes.get(op, "") for op in instruction.operands]
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
        sizes = [
            shape_bytes(computation.shapes.get(op, ""))
            for op in instruction.operands
            if "S(5)" not in computation.shapes.get(op, "")
        ]
        return max(sizes, default=0)
    arrays = [array_bytes(d, dims) for d, dims, host in instruction.arrays if not host]
    return max(arrays, default=0)  # the slice read back into device memory


def _collective(
    computation: Computation, instruction: Instruction, network: tuple[int, int, int] | None
) -> collective_traffic.Collective | None:
    """The collective an instruction is; `network`: (devices per NVLink domain, NICs a ring's
    crossings spread over, NICs per GPU), None for one domain."""
    if collective_traffic.kind_of(instruction.op) is None:
        return None
    if instruction.op.endswith("-start") and instruction.shape.startswith("(("):
        shapes = [instruction.shape[1 : _balanced(instruction.shape, 1)]]  # (operands, results): the operands
    else:
        shapes = [computation.shapes.get(operand, "") for operand in instruction.operands]
    per_domain, channels, nics = network or (None, 1, 1)
    return collective_traffic.collective(instruction.op, shapes, instruction.attributes, per_domain, channels, nics)


@dataclass(frozen=True)
class FusedFlops:
    total: int = 0
    unspent: int = 0
    attention: int = 0

    def __add__(self, other: FusedFlops) -> FusedFlops:
        return FusedFlops(self.total + other.total, self.unspent + other.unspent, self.attention + other.attention)


def flops_of(computation: Computation, instruction: Instruction) -> FusedFlops:
    value, kind = own_flops(computation, instruction)
    unspent = value if labels(instruction.op_name)[1] else 0
    return FusedFlops(value, unspent, value if kind == "attention" else 0)


def fused_flops(computations: dict[str, Computation], name: str, memo: dict[str, FusedFlops]) -> FusedFlops:
    """The FLOPs of a fused computation and what it calls in turn, per run."""
    if name in memo:
        return memo[name]
    memo[name] = FusedFlops()
    found = FusedFlops()
    computation = computations.get(name)
    for instruction in computation.instructions if computation else ():
        found += flops_of(computation, instruction)
        for how, callee in called(instruction):
            if how == "calls":
                found += fused_flops(computations, callee, memo)
    memo[name] = found
    return found


def instruction_events(
    computations: dict[str, Computation],
    computation: Computation,
    instruction: Instruction,
    memo: dict,
    network: tuple[int, int, int] | None = None,
) -> list[Event]:
    """What one scheduled instruction is to the step-time model: a loop, a host copy or a
    collective (async start or synchronous), the done an async start waits for, or compute (its
    FLOPs and the HBM bytes it reads and writes)."""
    if instruction.op == "while":
        body = next((callee for how, callee in called(instruction) if how == "body"), "")
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


def timelines(
    computations: dict[str, Computation], network: tuple[int, int, int] | None = None
) -> dict[str, list[list[Event]]]:
    """Each scheduled computation (the entry and what it runs in sequence), as the events of each of
    its instructions in order; `network`: (devices per NVLink domain, NICs a ring's crossings spread
    over, NICs per GPU) where the devices span more than one domain."""
    memo: dict[str, FusedFlops] = {}
    sequenced = {c.name for c in computations.values() if c.entry}
    for computation in reversed(list(computations.values())):
        for instruction in computation.instructions:
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
    computations: dict[str, Computation], network: tuple[int, int, int] | None = None, ideal: bool = False
) -> dict[str, list[Event]]:
    """The events of each scheduled computation in order (`timelines`); `ideal`: in the ideal overlap."""
    return schedules(computations, timelines(computations, network))[1 if ideal else 0]


def entry_name(computations: dict[str, Computation]) -> str:
    return next(c.name for c in computations.values() if c.entry)


def loop_flops(events: dict[str, list[Event]], name: str) -> int:
    """FLOPs of one run of a scheduled computation, its loops included."""
    return sum(
        e.flops if e.kind == "compute" else e.times * loop_flops(events, e.body) if e.kind == "loop" else 0
        for e in events.get(name, [])
    )


def transfers(computations: dict[str, Computation], events: dict[str, list[Event]]) -> dict[str, Any]:
    """Bytes per step to the host, back from it, and per collective type (the buffer, the bus bytes
    on NVLink, the bytes per NIC between NVLink domains at each end of their band, the group
    sizes); each host copy with whether it is asynchronous and the FLOPs scheduled between its
    start and done; the HBM bytes of the compute; from the schedule's events (`schedule`), each
    computation as many times as it runs."""
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
                entry = collectives.setdefault(
                    event.what,
                    {"count": 0, "bytes": 0, "bus_bytes": 0, "network_ring_bytes": 0, "network_floor_bytes": 0},
                )
                entry["count"] += times
                entry["bytes"] += event.buffer * times
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
