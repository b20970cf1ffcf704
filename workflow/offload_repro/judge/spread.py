"""When repeats disagree more than a claim's tolerance allows, the judgement says so.

A measured value on a target that repeats its runs is the median of the repeats; its spread
(lowest and highest repeat) is carried by the observation. A verdict stands on the median, but a
spread wider than the tolerance means one run more or less could have turned it, and a reader
should know: the judgement gets a `note`. Orderings (greater, fastest, slowest) have no
tolerance; there the note says when the rows' spreads overlap.
"""

from __future__ import annotations

from typing import Any

from offload_repro.core.rounding import significant

Spread = dict[str, Any]  # {"low", "high", "n"}: only for medians of more than one repeat
DASH = "\u2013"  # an en dash between the ends of a range, as the report writes ranges


def number(value: float) -> str:
    """Like the report's numbers (this layer does not import the report): 2,746 / 908.2 / 0.5699."""
    return f"{value:,.0f}" if abs(value) >= 1000 else significant(value)


def tolerance_text(tolerance: dict[str, Any] | None) -> str:
    """'±5%' or '±0.05': the one way a tolerance is written, in notes and pages."""
    if not tolerance:
        return ""
    return f"±{tolerance['absolute']:g}" if "absolute" in tolerance else f"±{tolerance['relative'] * 100:g}%"


def range_text(spread: Spread, number_text=number) -> str:
    """'2,716 to 2,760' joined by an en dash: the one way a spread's ends are written."""
    return f"{number_text(spread['low'])}{DASH}{number_text(spread['high'])}"


def described(spread: Spread) -> str:
    return f"spread of {spread['n']} repeats {range_text(spread)}"


def _value_note(value: float, spread: Spread, tolerance: dict[str, Any]) -> str | None:
    width = spread["high"] - spread["low"]
    if "absolute" in tolerance:
        wide, size = width > tolerance["absolute"], number(width)
    else:
        relative = width / abs(value) if value else float("inf")
        wide, size = relative > tolerance["relative"], f"{relative:.1%}"
    return f"{described(spread)} ({size}) is wider than the tolerance ({tolerance_text(tolerance)})" if wide else None


def _ratio_notes(
    rows: list[str], values: dict[str, float], spreads: dict[str, Spread], tolerance: dict[str, Any], published: float
) -> list[str]:
    """How far each side's spread alone moves metric[a] / metric[b] - 1, against the tolerance in the ratio's units."""
    allowed = tolerance["absolute"] if "absolute" in tolerance else tolerance["relative"] * abs(published)
    a, b = rows
    notes = []
    for row in rows:
        spread = spreads.get(row)
        if spread is None:
            continue
        if row == a:
            moved = (spread["high"] - spread["low"]) / values[b]
        else:
            moved = values[a] / spread["low"] - values[a] / spread["high"] if spread["low"] else float("inf")
        if moved > allowed:
            relative = (spread["high"] - spread["low"]) / abs(values[row])
            notes.append(
                f"{row}: {described(spread)} ({relative:.1%}) moves the ratio by {number(moved)}, "
                f"more than the tolerance ({tolerance_text(tolerance)})"
            )
    return notes


def _span(row: str, values: dict[str, float], spreads: dict[str, Spread]) -> tuple[float, float]:
    spread = spreads.get(row)
    return (spread["low"], spread["high"]) if spread else (values[row], values[row])


def _shown(row: str, values: dict[str, float], spreads: dict[str, Spread]) -> str:
    spread = spreads.get(row)
    if spread is None:
        return f"{row} {number(values[row])}"
    return f"{row} {range_text(spread)} ({spread['n']} repeats)"


def _overlap_note(first: str, others: list[str], values: dict[str, float], spreads: dict[str, Spread]) -> str | None:
    low, high = _span(first, values, spreads)

    def overlaps(row: str) -> bool:
        # Two single values never "overlap" unless equal, which the check itself already shows.
        other_low, other_high = _span(row, values, spreads)
        return (first in spreads or row in spreads) and other_low <= high and low <= other_high

    overlapping = [row for row in others if overlaps(row)]
    if not overlapping:
        return None
    shown = ", ".join(_shown(row, values, spreads) for row in [first, *overlapping])
    return f"spreads of the repeats overlap: {shown}; single runs could order these rows either way"


def note(claim: dict[str, Any], judgement: dict[str, Any], spreads: dict[str, Spread]) -> str | None:
    """The note a decided judgement gets when its rows' spreads are wider than the check can tell apart."""
    if judgement["verdict"] not in ("pass", "fail") or not spreads:
        return None
    check, values = claim["check"], judgement.get("observed_rows") or {}
    rows, tolerance = check["rows"], judgement.get("tolerance")
    if check["type"] == "value" and tolerance and rows[0] in spreads:
        return _value_note(values[rows[0]], spreads[rows[0]], tolerance)
    if check["type"] == "ratio" and tolerance:
        return "; ".join(_ratio_notes(rows, values, spreads, tolerance, claim["published"])) or None
    if check["type"] == "greater":
        return _overlap_note(rows[0], rows[1:], values, spreads)
    if check["type"] in ("fastest", "slowest"):
        chosen = judgement["observed"]
        return _overlap_note(chosen, [row for row in rows if row != chosen], values, spreads)
    return None


def qualify(claim: dict[str, Any], judgement: dict[str, Any], spreads: dict[str, Spread]) -> dict[str, Any]:
    """The keys a judgement gains from its rows' spreads: `spreads`, `observed_spread` (the spread of
    `observed` when that is one row's value) and `note`."""
    if not spreads:
        return {}
    extra: dict[str, Any] = {"spreads": spreads}
    single = (claim["check"].get("rows") or [None])[0]
    if claim["check"]["type"] in ("value", "between") and single in spreads:
        extra["observed_spread"] = spreads[single]
    text = note(claim, judgement, spreads)
    if text:
        extra["note"] = text
    return extra
