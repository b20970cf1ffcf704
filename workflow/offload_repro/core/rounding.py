"""One rounding for every number a page or a note shows: four significant digits, halves rounded
up (173.25 GiB is 173.3 wherever it appears, never 173.2 by binary rounding in one place and 173.3
typed in another)."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal


def significant(value: float, digits: int = 4) -> str:
    """`value` to `digits` significant digits, halves up, trailing zeros dropped: 908.2, 0.5699, 173.3."""
    exact = Decimal(repr(float(value)))  # the shortest decimal that reads back as the float: 173.25
    if exact == 0:
        return "0"
    step = Decimal(1).scaleb(exact.adjusted() - digits + 1)
    text = format(exact.quantize(step, rounding=ROUND_HALF_UP), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text
