"""XLA's memory analysis of a compiled program as plain numbers, the same for a run's program
(produce/measured/launch.py) and a compile-only one (produce/compiled/aot_compile.py). Kept apart
from both so that editing how a row is launched never recompiles a program."""

from __future__ import annotations

from typing import Any

FIELDS = (
    "argument_size_in_bytes",
    "output_size_in_bytes",
    "alias_size_in_bytes",
    "temp_size_in_bytes",
    "generated_code_size_in_bytes",
    "host_argument_size_in_bytes",
    "host_output_size_in_bytes",
    "host_alias_size_in_bytes",
    "host_temp_size_in_bytes",
    # XLA's own peak of the scheduled program; on a TPU the one figure that matches a run's peak
    # (arguments + outputs + temporaries overstates it there: temporaries share the arguments' room).
    "peak_memory_in_bytes",
)


def memory_analysis_dict(stats: Any) -> dict[str, int]:
    return {name: int(getattr(stats, name)) for name in FIELDS if hasattr(stats, name)}
