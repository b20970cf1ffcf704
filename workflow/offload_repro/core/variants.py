"""A row under an alternative to one of its assumptions (experiments/assumptions.yaml).

The settings come from the caller (a rule passes them as a parameter), so that the compile stage
does not read the assumptions file: adding an alternative replans only the new variants.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from offload_repro.core.data import Row

SEPARATOR = "@"  # a variant row's id: <row>@<assumption>.<alternative>


def schedules_by_profile(settings: dict[str, Any]) -> bool:
    """Whether an alternative's settings have XLA's scheduler take a latency profile (rule latency_profile)."""
    return settings.get("latency_profile", "none") != "none"


def variant_id(assumption: dict[str, Any], alternative: dict[str, Any]) -> str:
    return f"{assumption['id']}.{alternative['id']}"


def apply(row: Row, settings: dict[str, Any], suffix: str) -> Row:
    """The row with `settings` applied: its own fields replaced, MaxText overrides added."""
    fields = dict(settings.get("row", {}))
    return dataclasses.replace(
        row,
        id=f"{row.id}{SEPARATOR}{suffix}" if suffix else row.id,
        maxtext_overrides={**row.maxtext_overrides, **settings.get("maxtext", {})},
        **fields,
    )


def variant_row(row: Row, assumption: dict[str, Any], alternative: dict[str, Any]) -> Row:
    return apply(row, alternative["settings"], variant_id(assumption, alternative))


def combined_row(row: Row, chosen: list[tuple[dict[str, Any], dict[str, Any]]]) -> Row:
    """The row under several alternatives at once (each for a different assumption)."""
    for assumption, alternative in chosen:
        if row.id.split(SEPARATOR)[0] in assumption["affects"]:
            row = apply(row, alternative["settings"], "")
    suffix = "+".join(variant_id(a, alt) for a, alt in chosen)
    return dataclasses.replace(row, id=f"{row.id}{SEPARATOR}{suffix}")
