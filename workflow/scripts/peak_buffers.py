"""What a compiled program holds in device memory at its peak: the live buffers, by what made them.

XLA's memory analysis gives one number per program (temp bytes); its dump says which buffers make it.
Compile a row with XLA's dump on, then read the dump:

    PYTHONPATH=workflow .venv/bin/python -m offload_repro.cli compile --tables experiments/rows/deepseek-v3-671b.yaml \\
      --row deepseek-offload-plain --target gb200-nvl72 --out /tmp/row.json --work-dir /tmp/row-work \\
      --variant dump --variant-settings \
      '{"row": {"unstated_xla_flags": {"replace": [], "with": ["--xla_dump_to=/tmp/dump"]}}}'
    PYTHONPATH=workflow .venv/bin/python workflow/scripts/peak_buffers.py /tmp/dump [--top 25]

(add `"maxtext": {...}` to the settings to compile under an alternative). From XLA's buffer
assignment (each value's size and offset in the device's temp allocation), its live ranges (each
value's first and last position in the flattened schedule) and the optimized HLO (each
instruction's JAX op_name), it finds the schedule position where the temp buffers live at once are
largest, and lists them largest first, each with its shape and where in the model JAX made it.
Values that share an offset while live are one buffer (a loop's state and its body's parameter).
XLA's own peak report counts host buffers too; this one counts device memory only. It also prints
the size of the temp allocation XLA laid those buffers out in: where that is larger than the most
ever live at once, the difference is layout (gaps between buffers), not buffers the program needs.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

VALUE = re.compile(r" value: <\d+ (\S+?)(\{[\d,]*\})?(?: \(phi\))? @(\d+)> \(size=(\d+),offset=(\d+)\): (\S+)")
RANGE = re.compile(r"^    (\S+?)(\{[\d,]*\}):(\d+)-(\d+)$")
OP_NAME = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = .*?op_name=\"([^\"]*)\"", re.M)
DEVICE_COLOR = "0"


def _one(dump: Path, suffix: str) -> Path:
    found = sorted(dump.glob(f"*after_optimizations{suffix}"))
    if not found:
        sys.exit(f"{dump}: no *after_optimizations{suffix}: compile with --xla_dump_to={dump}")
    return found[-1]


def temp_values(assignment: str) -> dict[str, tuple[int, int, str]]:
    """value (name{index}) -> (offset, size, shape) for the device's temp allocation."""
    values: dict[str, tuple[int, int, str]] = {}
    temp = False
    for line in assignment.splitlines():
        if line.startswith("allocation "):
            temp = "preallocated-temp" in line and ", color " not in line  # color 0: device memory
            continue
        if temp and (found := VALUE.match(line)) and found.group(3) == DEVICE_COLOR:
            name, index, _, size, offset, shape = found.groups()
            values[f"{name}{index or '{}'}"] = (int(offset), int(size), shape)
    return values


def live_ranges(text: str) -> tuple[list[str], dict[str, tuple[int, int]]]:
    sequence = re.findall(r"^    \d+:(\S+)$", text.split("BufferLiveRange:")[0], re.M)
    ranges = {}
    for line in text.split("BufferLiveRange:")[1].split("Live ranges at")[0].splitlines():
        if found := RANGE.match(line):
            ranges[found.group(1) + found.group(2)] = (int(found.group(3)), int(found.group(4)))
    return sequence, ranges


def temp_allocation_bytes(assignment: str) -> int:
    """The size XLA gave the device's temp allocation (memory_analysis().temp_size_in_bytes)."""
    found = re.search(r"^allocation \d+: size (\d+), page \d+, preallocated-temp:", assignment, re.M)
    return int(found.group(1)) if found else 0


def device_peak(dump: Path) -> dict[str, Any]:
    """The schedule position where the device temp buffers live at once are largest: the position,
    the instruction there, those buffers (size, value, shape, scope; largest first) and the size of
    the temp allocation XLA laid them out in."""
    assignment = _one(dump, "-buffer-assignment.txt").read_text()
    values = temp_values(assignment)
    sequence, ranges = live_ranges(_one(dump, "-live-range.txt").read_text())
    op_names = dict(OP_NAME.findall(_one(dump, ".txt").read_text()))
    at: dict[int, dict[int, tuple[int, str]]] = defaultdict(dict)  # position -> offset -> (size, value)
    for value, (offset, size, _) in values.items():
        start, end = ranges.get(value, (0, -1))
        for position in range(start, end + 1):
            held = at[position].get(offset)
            if held is None or held[0] < size:
                at[position][offset] = (size, value)
    position = max(at, key=lambda p: sum(size for size, _ in at[p].values()))
    live = [
        {
            "bytes": size,
            "value": value,
            "shape": values[value][2],
            "scope": _scope(op_names.get(value.split("{")[0], "")),
        }
        for size, value in sorted(at[position].values(), reverse=True)
    ]
    return {
        "position": position,
        "instruction": sequence[position] if position < len(sequence) else None,
        "live_bytes": sum(buffer["bytes"] for buffer in live),
        "temp_allocation_bytes": temp_allocation_bytes(assignment),
        "live": live,
    }


def report(found: dict[str, Any], top: int) -> None:
    gib = 2**30
    print(
        f"device temp buffers live at once, at most: {found['live_bytes'] / gib:.2f} GiB, at schedule position"
        f" {found['position']} ({found['instruction']})"
    )
    print(f"XLA's temp allocation they are laid out in: {found['temp_allocation_bytes'] / gib:.2f} GiB")
    by_scope: dict[str, int] = defaultdict(int)
    for buffer in found["live"]:
        by_scope[buffer["scope"]] += buffer["bytes"]
    print("\nby where JAX made them:")
    for scope, size in sorted(by_scope.items(), key=lambda item: -item[1])[:top]:
        print(f"  {size / gib:7.2f} GiB  {scope}")
    print("\nlargest buffers:")
    for buffer in found["live"][:top]:
        print(f"  {buffer['bytes'] / gib:7.2f} GiB  {buffer['shape']:<36} {buffer['value']}  {buffer['scope']}")


def _scope(op_name: str | None) -> str:
    """The model-level part of an op_name: JAX's transform wrappers and eval_jaxpr steps dropped."""
    parts = [p for p in (op_name or "").split("/") if p and not p.startswith(("jit(", "eval_jaxpr"))]
    return "/".join(parts[-6:]) or "(no op_name: a parameter, copy or loop state)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dump", type=Path, help="the directory given to --xla_dump_to")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    report(device_peak(args.dump), args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
