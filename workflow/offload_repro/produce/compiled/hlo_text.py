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

ELEMENT_BYTES = {
    **dict.fromkeys(("pred", "s8", "u8", "f8e4m3fn", "f8e5m2"), 1),
    **dict.fromkeys(("s16", "u16", "f16", "bf16"), 2),
    **dict.fromkeys(("s32", "u32", "f32"), 4),
    **dict.fromkeys(("s64", "u64", "f64"), 8),
}
HOST_MEMORY = "S(5)"  # the layout's memory space of an array in host memory
ARRAY = re.compile(r"(\w+)\[([\d,]*)\](\{[^}]*\})?")  # element type, dimensions, layout
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
    return computations


def entry_name(computations: dict[str, Computation]) -> str:
    return next(c.name for c in computations.values() if c.entry)


def called(instruction: Instruction) -> list[tuple[str, str]]:
    """(how, computation) for each computation the instruction calls."""
    calls = CALLED.findall(instruction.attributes)
    names = [(how, name.strip().lstrip("%")) for how, listed in calls for name in listed.split(",")]
    return [(how, name) for how, name in names if re.fullmatch(r"[\w.\-]+", name)]


def trip_count(instruction: Instruction) -> int | None:
    found = TRIP_COUNT.search(instruction.attributes)
    return int(found.group(1)) if found else None


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
