"""Where a measured value lies given a prediction and the error such predictions were measured to
have: with error e on predicted / measured - 1, the measured value lies within
[predicted / (1 + e), predicted / (1 - e)] (no upper side from an error of 100% or more). One
rule for the verdicts' bands, the what-if's and the validation stage's carried predictions."""

from __future__ import annotations

Span = tuple[float | None, float | None]  # (low, high); None: that side is open


def widened(value: float, error: float) -> Span:
    """Where a measured (or published) value lies, given `value` predicted with error up to `error`."""
    return value / (1 + error), (value / (1 - error) if error < 1 else None)


def shifted(quotient: float, pp: float) -> Span:
    """Where a measured ratio's quotient lies, given `quotient` predicted with an error of up to `pp`
    percentage points on quotient - 1 (how a ratio's error is measured: pairs of one kind)."""
    return quotient - pp / 100, quotient + pp / 100
