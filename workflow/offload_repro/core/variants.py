"""A row under an alternative to one of its assumptions (experiments/assumptions.yaml).

The settings come from the caller (a rule passes them as a parameter), so that the compile stage
does not read the assumptions file: adding an alternative replans only the new variants.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from offload_repro.core.data import Row

SEPARATOR = "@"  # a variant row's id: <row>@<assumption>.<alternative>
FLAGS = "unstated_xla_flags"


def schedules_by_profile(settings: dict[str, Any]) -> bool:
    """Whether an alternative's settings have XLA's scheduler take a latency profile (rule latency_profile)."""
    return settings.get("latency_profile", "none") != "none"


def variant_id(assumption: dict[str, Any], alternative: dict[str, Any]) -> str:
    return f"{assumption['id']}.{alternative['id']}"


def resolved(assumption: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """Settings of `assumption` (its default's or an alternative's) as a row takes them: their unstated
    XLA flags take the place of the assumption's default flags and leave the flags other assumptions
    state, since two assumptions may each state some of a row's flags."""
    fields = settings.get("row", {})
    if not isinstance(fields.get(FLAGS), list):
        return settings
    default = assumption["default"].get("row", {}).get(FLAGS, [])
    return {**settings, "row": {**fields, FLAGS: {"replace": default, "with": fields[FLAGS]}}}


def _flags(row: Row, change: dict[str, list[str]]) -> list[str]:
    """The row's unstated flags with `change['replace']` replaced by `change['with']`, in their place."""
    flags = row.unstated_xla_flags
    at = next((i for i, flag in enumerate(flags) if flag in change["replace"]), len(flags))
    return flags[:at] + list(change["with"]) + [flag for flag in flags[at:] if flag not in change["replace"]]


def apply(row: Row, settings: dict[str, Any], suffix: str) -> Row:
    """The row with `settings` (`resolved`) applied: its own fields replaced, MaxText overrides added."""
    fields = dict(settings.get("row", {}))
    if isinstance(fields.get(FLAGS), dict):
        fields[FLAGS] = _flags(row, fields[FLAGS])
    return dataclasses.replace(
        row,
        id=f"{row.id}{SEPARATOR}{suffix}" if suffix else row.id,
        maxtext_overrides={**row.maxtext_overrides, **settings.get("maxtext", {})},
        **fields,
    )


def variant_row(row: Row, assumption: dict[str, Any], alternative: dict[str, Any]) -> Row:
    return apply(row, resolved(assumption, alternative["settings"]), variant_id(assumption, alternative))


def apply_all(row: Row, settings: list[dict[str, Any]], suffix: str) -> Row:
    """The row with each of `settings` (`resolved`, of distinct assumptions) applied in turn."""
    for one in settings:
        row = apply(row, one, "")
    return dataclasses.replace(row, id=f"{row.id}{SEPARATOR}{suffix}") if suffix else row


def apply_chosen(row: Row, chosen: list[dict[str, Any]]) -> Row:
    """The row under the alternatives `chosen` ({id, settings, rows}) that affect it, its id kept."""
    return apply_all(row, [c["settings"] for c in chosen if row.id in c["rows"]], "")
