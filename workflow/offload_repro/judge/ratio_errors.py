"""The error a predicted ratio's band takes: the unit of a pair's error (a throughput's, relative; a
ratio's, in percentage points) and, for a ratio of two placements at one scale, the model's error on
such ratios, from the pair-error stage's record of the claim (produce/predicted/pair_errors.py):
the chip's, where the source's rows lie inside its measured regimes, or the source's own pairs of
that kind where larger (judge/prediction_verdicts.py says how a band is judged)."""

from __future__ import annotations

from typing import Any, NamedTuple

from offload_repro.core.error_band import Span, shifted, widened

PP, FRACTION = "pp", "fraction"  # the units of a pair's error: on a ratio, or on a throughput


class PairError(NamedTuple):
    """The error a pair's quotient is widened by: `value` in `unit` (PP or FRACTION)."""

    value: float
    unit: str = FRACTION

    def span(self, quotient: float) -> Span:
        return shifted(quotient, self.value) if self.unit == PP else widened(quotient, self.value)

    @property
    def as_fraction(self) -> float:  # to rank errors of both units: a pp on a quotient near 1
        return self.value / 100 if self.unit == PP else self.value

    def text(self) -> str:
        return f"±{self.value:.2f} pp" if self.unit == PP else f"±{self.value:.1%}"


def placement_pair(facts: dict[str, dict[str, Any]], pair: tuple[str, str]) -> bool:
    """Two placements of one model at one scale: the rows' placement kinds differ (offload, device, remat)."""
    kinds = {facts.get(row, {}).get("placement_kind") for row in pair}
    return len(kinds) == 2 and None not in kinds


def ratio_error(record: dict[str, Any] | None, target: str | None = None) -> tuple[float | None, str, str]:
    """A placement pair's ratio error in pp, from the claim's record of the pair-error stage
    (results/predicted/pair-errors.json, `claims`): the larger of the chip's recorded error, where the
    rows' regime is inside its measured range, and the source's own (module doc); (None, why,
    "unmeasured") where neither is."""
    if record is None:
        return None, "unmeasured: the model's error on ratios of placement pairs was not given here", "unmeasured"
    where = target or "the source's hardware"
    chip, source, span = record.get("chip_error"), record.get("source_error"), record.get("chip_range")
    regime = record.get("regime") or 0.0
    at = f"{where}'s rows copy to host for {regime:.3f} of their compute time"
    found: list[tuple[float, str, str]] = []
    if chip and record.get("inside_chip_range"):
        found.append(
            (
                chip["largest_abs_pp"],
                f"±{chip['largest_abs_pp']:.2f} pp, the largest ratio error over {len(chip['over'])} placement pairs"
                f" of {record['family']} measured on the chip (experiments/pair-errors.yaml; {at}, inside the"
                f" chip's measured {span['low']:.3f} to {span['high']:.3f})",
                "chip placement pairs",
            )
        )
    if source:
        found.append(
            (
                source["largest_abs_pp"],
                f"±{source['largest_abs_pp']:.2f} pp, the largest ratio error over {len(source['over'])} pairs of"
                f" {record['family']}'s published throughputs that leave this claim's own values out",
                "source pairs",
            )
        )
    if not found:
        if chip and span:
            side = "above" if regime > span["high"] else "below"
            outside = f" (by a factor of {record['outside_by']:.2f})" if record.get("outside_by") else ""
            why = (
                f"unmeasured at this regime: {at}, {side} the chip's measured {span['low']:.3f} to"
                f" {span['high']:.3f}{outside}, and every pair of the source's published throughputs uses this"
                " claim's own values"
            )
        else:
            why = (
                "unmeasured: no placement pair of this family was measured on the chip, and every pair of the"
                " source's published throughputs uses this claim's own values"
            )
        return None, why, "unmeasured"
    value, why, source_name = max(found)
    others = [text for v, text, _ in found if text != why]
    return value, why + (f" (larger than {others[0]})" if others else ""), source_name
