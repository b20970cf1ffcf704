"""XLA's memory analysis of a compiled program as plain numbers, the same for a run's program
(produce/measured/launch.py) and a compile-only one (produce/compiled/aot_compile.py). Kept apart
from both so that editing how a row is launched never recompiles a program."""

from __future__ import annotations

from typing import Any

FIELDS = (
    *(f"{kind}_size_in_bytes" for kind in ("argument", "output", "alias", "temp", "generated_code")),
    *(f"host_{kind}_size_in_bytes" for kind in ("argument", "output", "alias", "temp")),
)


def memory_analysis_dict(stats: Any) -> dict[str, int]:
    return {name: int(getattr(stats, name)) for name in FIELDS if hasattr(stats, name)}
