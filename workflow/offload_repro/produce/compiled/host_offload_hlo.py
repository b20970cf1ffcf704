"""What a compiled XLA:GPU program says about host offloading, read from its HLO text.

Host memory is layout memory space 5: `bf16[126,2,8192,128,128]{4,3,2,1,0:S(5)}`. Offloaded
activations live in host buffers made by `AllocateBuffer` custom calls; the forward pass writes
them with (async) dynamic-update-slices and the backward pass reads them back with (async)
dynamic-slices. Async work of every kind appears as `*-start` / `*-done` pairs.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from offload_repro.produce.compiled.hlo_text import ELEMENT_BYTES, HOST_MEMORY, array_bytes, parse_dims

HOST_ARRAY = re.compile(r"(\w+)\[([\d,]*)\]\{[^}]*:S\(5\)\}")
INSTRUCTION = re.compile(r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*(?P<shape>.*?)\s(?P<op>[a-z][\w\-]*)\(", re.M)
METADATA = re.compile(r",?\s*metadata=\{[^}]*\}")


def canonical(text: str) -> str:
    """The program without debug information (source files, lines, stack frames, op names),
    so its digest changes with the schedule and the operations, not with who called jit."""
    lines = text.splitlines()
    body_start = next((i for i, line in enumerate(lines) if line.startswith(("%", "ENTRY"))), len(lines))
    return "\n".join([lines[0], *(METADATA.sub("", line) for line in lines[body_start:])]) if lines else ""


def summarize_hlo(text: str) -> dict[str, Any]:
    host_buffers: list[str] = []
    host_buffer_bytes = 0
    async_starts: Counter[str] = Counter()
    host_writes = host_reads = 0
    for match in INSTRUCTION.finditer(text):
        name, shape, op = match["name"], match["shape"], match["op"]
        if op.endswith("-start"):
            async_starts[op] += 1
        if HOST_MEMORY not in shape:
            continue
        line_end = text.find("\n", match.end())
        line = text[match.end() : line_end if line_end >= 0 else None]
        if op == "custom-call" and 'custom_call_target="AllocateBuffer"' in line:
            found = HOST_ARRAY.search(shape)
            if found:
                if found.group(1) not in ELEMENT_BYTES:  # a host buffer's size is never taken as 0
                    raise KeyError(f"{found.group(0)}: element type {found.group(1)} of unknown size")
                host_buffers.append(found.group(0))
                host_buffer_bytes += array_bytes(found.group(1), parse_dims(found.group(2)))
        elif op in ("dynamic-update-slice", "fusion-start") and name.startswith("dynamic-update-slice"):
            host_writes += 1
        elif op in ("dynamic-slice", "fusion-start") and name.startswith("dynamic-slice"):
            host_reads += 1
    return {
        "host_buffers": len(host_buffers),
        "host_buffer_bytes": host_buffer_bytes,
        "host_buffer_shapes": sorted(host_buffers),
        "host_write_instructions": host_writes,
        "host_read_instructions": host_reads,
        "async_pairs": dict(sorted(async_starts.items())),
        "async_pairs_total": sum(async_starts.values()),
    }
