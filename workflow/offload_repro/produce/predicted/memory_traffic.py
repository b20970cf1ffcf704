"""The device-memory (HBM) bytes one scheduled instruction reads and writes, from the optimized HLO.

A kernel's time is at least its bytes over the HBM bandwidth, and most of a step's kernels do no
matmul at all (element-wise, normalisation, the optimizer update): counted here so that the
step-time model can charge them. A fusion reads its operands and writes its result, except where
its fused computation touches only part of an operand:
- a parameter used only by `dynamic-slice` or `gather` (operand 0) is read as those slices;
- a parameter that is only the buffer a `dynamic-update-slice` writes into (operand 0) is updated
  in place: nothing of it is read, and only the update is written.
Bookkeeping instructions (parameters, tuples, bitcasts, constants) move nothing.
"""

from __future__ import annotations

import re

from offload_repro.produce.compiled.hlo_text import Computation, Instruction, device_shape_bytes

NO_TRAFFIC = frozenset(
    {
        "parameter",
        "constant",
        "get-tuple-element",
        "tuple",
        "bitcast",
        "after-all",
        "partition-id",
        "replica-id",
        "opt-barrier",
        "add-dependency",
        "while",
        "call",
        "conditional",
    }
)
SLICING = ("dynamic-slice", "gather", "slice")
PASS_THROUGH = ("bitcast",)


def _users(computation: Computation) -> dict[str, list[tuple[Instruction, int]]]:
    found: dict[str, list[tuple[Instruction, int]]] = {}
    for instruction in computation.instructions:
        for position, operand in enumerate(instruction.operands):
            found.setdefault(operand, []).append((instruction, position))
    return found


def _read(name: str, full: int, users: dict[str, list[tuple[Instruction, int]]]) -> int:
    """Bytes read of a fused parameter: its slices where only slices are taken, else all of it."""
    taken = 0
    for user, position in users.get(name, []):
        if user.op in SLICING and position == 0:
            taken += device_shape_bytes(user.shape)
        elif user.op == "dynamic-update-slice" and position == 0:
            continue  # the buffer written in place
        elif user.op in PASS_THROUGH:
            taken += _read(user.name, full, users)
        else:
            return full
    return min(taken, full)


def _written(root: Instruction, computation: Computation) -> int:
    """Bytes a fused computation writes: its result, or the update of an in-place update."""
    if root.op == "dynamic-update-slice" and len(root.operands) > 1:
        return device_shape_bytes(computation.shapes.get(root.operands[1], ""))
    by_name = {i.name: i for i in computation.instructions}
    parts = [by_name[operand] for operand in root.operands if operand in by_name]
    if root.op == "tuple" or (root.op in PASS_THROUGH and parts):  # what its parts, or what it renames, write
        return sum(_written(part, computation) for part in parts)
    return device_shape_bytes(root.shape)


def fusion_bytes(fused: Computation, operand_shapes: list[str]) -> int:
    """Read and written bytes of one run of a fusion, given its fused computation."""
    users = _users(fused)
    params = {int(i.operands[0]): i.name for i in fused.instructions if i.op == "parameter" and i.operands}
    read = sum(
        _read(params[index], device_shape_bytes(shape), users) if index in params else device_shape_bytes(shape)
        for index, shape in enumerate(operand_shapes)
    )
    return read + (_written(fused.instructions[-1], fused) if fused.instructions else 0)


def instruction_bytes(computations: dict[str, Computation], computation: Computation, instruction: Instruction) -> int:
    """Read and written HBM bytes of one run of a scheduled instruction (0 for bookkeeping)."""
    if instruction.op in NO_TRAFFIC or instruction.op.endswith(("-start", "-done")):
        return 0
    operand_shapes = [computation.shapes.get(operand, "") for operand in instruction.operands]
    if instruction.op == "fusion":
        callee = re.search(r"\bcalls=%?([\w.\-]+)", instruction.attributes)
        fused = computations.get(callee.group(1)) if callee else None
        if fused is not None:
            return fusion_bytes(fused, operand_shapes)
    return sum(device_shape_bytes(shape) for shape in operand_shapes) + device_shape_bytes(instruction.shape)
