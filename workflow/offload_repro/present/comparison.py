"""The comparison page's published column (the throughputs a published speedup implies for rows
the source gives none, as any target's predictions recorded them) and its claims, in the order the
targets' verdicts list them."""

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


def claims_in_order(columns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every claim any target judged, once, in the order its verdicts list them (the source's
    claims, then the reproduction's own checks): its id, kind and statement."""
    found: dict[str, dict[str, Any]] = {}
    for column in columns:
        for claim_id, claim in column["verdicts"].items():
            found.setdefault(claim_id, {key: claim[key] for key in ("id", "kind", "statement")})
    return sorted(found.values(), key=lambda claim: claim["kind"] == "check")
