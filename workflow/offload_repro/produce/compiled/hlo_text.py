"""A compiled program's optimized HLO text, read: its computations and their instructions, and the
bytes of the arrays its shapes name.

An array is printed as its element type, its dimensions and a layout, whose memory space 5 is host
memory: `bf16[126,2,8192,128,128]{4,3,2,1,0:S(5)}`; a shape is an array or a tuple of shapes. A
computation is printed as a header line (`ENTRY` for the entry), one instruction a line
(`%name = shape op(operands), attributes`) and a closing brace, callees before their callers.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

from offload_repro.core.hlo_arrays import ARRAY, ELEMENT_BYTES, HOST_MEMORY

HEADER = re.compile(r"^(ENTRY\s+)?%?([\w.\-]+)\s+\(.*\{\s*$")
ASSIGN = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*")
OP_NAME = re.compile(r'op_name="([^"]*)"')
TRIP_COUNT = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')
CALLED = re.compile(
    r"\b(calls|body|condition|to_apply|branch_computations|async_execution_thread)=\{?([^,}]+(?:,\s*%[\w.\-]+)*)\}?"
)


def parse_dims(text: str) -> list[int]:
    """The integers of a comma-separated list (an array's dimensions: '2,8192' -> [2, 8192])."""
    return [int(d) for d in text.split(",") if d]


def array_bytes(dtype: str, dims: list[int]) -> int:
    """Bytes of one array; an element type not in ELEMENT_BYTES (a token) counts none."""
    return ELEMENT_BYTES.get(dtype, 0) * math.prod(dims)


def shape_bytes(shape: str) -> int:
    """Bytes of all the arrays of a shape, wherever they live."""
    return sum(array_bytes(dtype, parse_dims(dims)) for dtype, dims, _ in ARRAY.findall(shape))


def device_shape_bytes(shape: str) -> int:
    """Bytes of the arrays of a shape that live in device memory (not in host memory)."""
    arrays = ARRAY.findall(shape)
    return sum(array_bytes(dtype, parse_dims(dims)) for dtype, dims, layout in arrays if HOST_MEMORY not in layout)


@dataclass
class Instruction:
    name: str
    shape: str
    op: str
    operands: list[str]
    attributes: str
    op_name: str
    # A while loop's trip count where XLA printed none (XLA:TPU does not): read from its condition
    trips: int | None = None
    # what `called` read from the attributes, once: a program's readers ask it of each instruction often
    calls: list[tuple[str, str]] | None = field(default=None, repr=False, compare=False)

    @property
    def arrays(self) -> list[tuple[str, list[int], bool]]:
        """(dtype, dims, in host memory) of each array in the result shape."""
        return [
            (dtype, parse_dims(dims), bool(layout and HOST_MEMORY in layout))
            for dtype, dims, layout in ARRAY.findall(self.shape)
        ]


@dataclass
class Computation:
    name: str
    entry: bool
    instructions: list[Instruction] = field(default_factory=list)
    shapes: dict[str, str] = field(default_factory=dict)


def balanced(text: str, start: int) -> int:
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
    """`text` split at the commas outside any brackets."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return [*parts, text[start:]]


def parse_instruction(line: str) -> Instruction | None:
    assigned = ASSIGN.match(line)
    if not assigned:
        return None
    rest = re.sub(r"/\*index=\d+\*/", "", line[assigned.end() :])
    shape_end = balanced(rest, 0) if rest.startswith("(") else rest.find(" ")
    shape = rest[:shape_end]
    after = rest[shape_end:].lstrip()
    open_at = after.find("(")
    if open_at < 0:
        return None
    op = after[:open_at]
    close = balanced(after, open_at)
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
    for computation in computations.values():
        for instruction in computation.instructions:
            if instruction.op == "while" and not TRIP_COUNT.search(instruction.attributes):
                instruction.trips = counted_trips(computations, computation, instruction)
    return computations


CONSTANT = re.compile(r"^-?\d+$")
GTE_INDEX = re.compile(r"index=(\d+)")


def _source(by_name: dict[str, Instruction], name: str) -> Instruction | None:
    """The instruction a value comes from, looking through copies (XLA:TPU copies a loop counter
    between memory spaces)."""
    found = by_name.get(name)
    while found is not None and found.op == "copy" and found.operands:
        found = by_name.get(found.operands[0])
    return found


def _constant(by_name: dict[str, Instruction], name: str) -> int | None:
    found = _source(by_name, name)
    if found is None or found.op != "constant" or not found.operands or not CONSTANT.match(found.operands[0]):
        return None
    return int(found.operands[0])


def _element(by_name: dict[str, Instruction], name: str) -> int | None:
    """k where the value is element k of a tuple (a loop's state), else None."""
    found = _source(by_name, name)
    index = GTE_INDEX.search(found.attributes) if found is not None and found.op == "get-tuple-element" else None
    return int(index.group(1)) if index else None


def counted_trips(computations: dict[str, Computation], caller: Computation, loop: Instruction) -> int | None:
    """The trip count of a counted loop, `for (i = 0; i < N; i++)` as a scan lowers: its condition's
    root compares element k of the loop state with a constant N (direction=LT), element k of the
    initial state is the constant 0, and the body adds the constant 1 to it. None where the loop is
    not of that form."""
    how = dict(called(loop))
    condition, body = computations.get(how.get("condition", "")), computations.get(how.get("body", ""))
    if condition is None or body is None or not condition.instructions or not body.instructions or not loop.operands:
        return None
    in_condition = {i.name: i for i in condition.instructions}
    root = condition.instructions[-1]
    if root.op != "compare" or "direction=LT" not in root.attributes or len(root.operands) != 2:
        return None
    k, limit = _element(in_condition, root.operands[0]), _constant(in_condition, root.operands[1])
    in_caller = {i.name: i for i in caller.instructions}
    initial = _source(in_caller, loop.operands[0])
    if k is None or limit is None or initial is None or initial.op != "tuple" or k >= len(initial.operands):
        return None
    if _constant(in_caller, initial.operands[k]) != 0 or not _increments_by_one(body, k):
        return None
    return limit


def _increments_by_one(body: Computation, k: int) -> bool:
    """Whether element k of the body's result tuple is element k of its state plus the constant 1."""
    by_name = {i.name: i for i in body.instructions}
    root = body.instructions[-1]  # a scheduled computation prints its root last
    if root.op != "tuple" or k >= len(root.operands):
        return False
    step = _source(by_name, root.operands[k])
    if step is None or step.op != "add" or len(step.operands) != 2:
        return False
    a, b = step.operands
    return (_constant(by_name, a) == 1 and _element(by_name, b) == k) or (
        _constant(by_name, b) == 1 and _element(by_name, a) == k
    )


def entry_name(computations: dict[str, Computation]) -> str:
    return next(c.name for c in computations.values() if c.entry)


def called(instruction: Instruction) -> list[tuple[str, str]]:
    """(how, computation) for each computation the instruction calls."""
    if instruction.calls is None:
        calls = CALLED.findall(instruction.attributes)
        names = [(how, name.strip().lstrip("%")) for how, listed in calls for name in listed.split(",")]
        instruction.calls = [(how, name) for how, name in names if re.fullmatch(r"[\w.\-]+", name)]
    return instruction.calls


def trip_count(instruction: Instruction) -> int | None:
    """A while loop's trip count: as XLA printed it (`known_trip_count`, XLA:GPU), else as its
    condition counts it (`counted_trips`), else None."""
    found = TRIP_COUNT.search(instruction.attributes)
    return int(found.group(1)) if found else instruction.trips


def backend_config(instruction: Instruction) -> dict[str, Any]:
    """The instruction's backend config (JSON), {} where it has none or it does not parse."""
    start = instruction.attributes.find("backend_config=")
    if start < 0:
        return {}
    brace = instruction.attributes.find("{", start)
    try:
        return json.loads(instruction.attributes[brace : balanced(instruction.attributes, brace)])
    except ValueError:
        return {}
