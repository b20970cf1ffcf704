"""The comparison page's published column (the throughputs a published speedup implies for rows
the source gives none) and its claims, in the order the targets' verdicts list them."""

from __future__ import annotations

from typing import Any

from offload_repro.core.data import Row
from offload_repro.core.published import load_speed, published_throughputs


def implied_throughputs(rows: list[Row]) -> dict[str, float]:
    """The throughputs a published speedup implies for rows the source gives none (DeepSeek's remat
    and plain offload), from experiments/speed.yaml and experiments/claims.yaml alone: the same on
    every page whatever a target predicted (a row out of memory there included)."""
    published = published_throughputs({row.id: row for row in rows}, load_speed())
    return {
        row_id: entry["tflops"]
        for family in published.values()
        for row_id, entry in family.items()
        if entry["how"] != "published"
    }


def claims_in_order(columns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every claim any target judged, once, in the order its verdicts list them (the source's
    claims, then the reproduction's own checks): its id, kind and statement."""
    found: dict[str, dict[str, Any]] = {}
    for column in columns:
        for claim_id, claim in column["verdicts"].items():
            found.setdefault(claim_id, {key: claim[key] for key in ("id", "kind", "statement")})
    return sorted(found.values(), key=lambda claim: claim["kind"] == "check")
