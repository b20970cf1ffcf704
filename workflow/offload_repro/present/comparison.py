"""The comparison page's published column: the throughputs a published speedup implies for rows
the source gives none, as any target's predictions recorded them."""

from __future__ import annotations

from typing import Any

from offload_repro.core.data import Row
from offload_repro.judge import metric_names as names


def implied_throughputs(rows: list[Row], columns: list[dict[str, Any]]) -> dict[str, float]:
    """The throughputs a published speedup implies for rows the source gives none (DeepSeek's remat
    and plain offload), as the predictions of any target recorded them beside their sources."""
    found: dict[str, float] = {}
    for row in rows:
        for column in columns:
            lookup = column["lookup"]
            value = lookup.value(row.id, "predicted", names.PUBLISHED_TFLOPS)
            if value is not None and lookup.value(row.id, "predicted", names.PUBLISHED_IMPLIED):
                found[row.id] = value
                break
    return found
