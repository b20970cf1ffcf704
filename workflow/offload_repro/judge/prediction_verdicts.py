"""How predicted evidence judges a speed claim, never more strongly than the model's measured error
allows, and what it says about why.

Every predicted row is read from its own result file (`Predicted`): its throughput under each
calibration of its model (`by_calibration`, at each setting of the stated uncertainties, central
first), the result's settings and the leave-one-out errors of its published throughput
(`model_error`: predicted from another row's calibration, against its own published number). Its
observations give the published throughput it was compared with where it has one, what that number
derives from (`published_sources`) and its placement kind (`placement_kind`: offload, device or remat).

- A claim's own published values: the claim itself, its row's throughput for a value claim, and every
  row throughput or claim it `derives_from` (experiments/claims.yaml). They never calibrate it and
  never enter its error.
- Calibration: the model's default calibration row, unless its published throughput derives from
  one of the claim's own values; then the next one that does not; none left: not comparable.
- Error, per pair of rows the claim compares (a value claim: its calibration row and its row):
  - a ratio's or an ordering's pair of two placements at one scale (offload against remat or device):
    the model's error on ratios of that kind of pair, in percentage points (pp) on quotient - 1
    (produce/predicted/pair_errors.py): the larger of the largest over the chip's measured placement
    pairs of the family (experiments/pair-errors.yaml), taken only where the source rows' regime (host
    copies over compute) lies inside the chip's measured range, and the largest over the source's
    pairs of published throughputs that leave the claim's own values out. Neither: unmeasured, saying
    how far outside the chip's range the rows sit. Errors across scales (real GPUs) never stand in:
    the pair differs in placement, not scale;
  - any other pair: the largest leave-one-out throughput error over the pairs of the same kind (the
    two rows' placement kinds, in the same model) that leave the claim's own values out, or the error
    on real GPUs recorded for the family where larger. No such pair: unmeasured.
  An unmeasured error leaves the verdict inconclusive, saying so.
- Band: a throughput error is e = predicted / published - 1, so a published value lies in
  [predicted / (1 + e), predicted / (1 - e)]; a ratio error of p pp puts a quotient within p / 100 of
  the predicted one. Each setting's prediction is widened so, once: a value claim's row, a ratio's or
  an ordering's quotient of its two rows. A setting where no rate calibrates leaves open the side
  toward which the prediction moves as that setting is approached (both sides where that cannot be
  told).
- Verdict: pass where the whole band lies inside the claim's tolerance, fail where it lies wholly
  outside, else inconclusive; an ordering is decided only where every setting decides it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from offload_repro.judge import metric_names as names
from offload_repro.judge.ratio_errors import FRACTION, PP, PairError
from offload_repro.judge.spread import number

Setting = tuple[str, str, str]  # the links' efficiency level, network end, schedule
LEVEL_ORDER = {"low": 0, "central": 1, "high": 2}  # the links' efficiency levels, slowest first


@dataclass(frozen=True)
class Predicted:
    """One row's prediction as its result file records it (above); `loo_errors` by the calibration row."""

    by_calibration: dict[str, list[float | None]] = field(default_factory=dict)
    settings: list[Setting] = field(default_factory=list)
    loo_errors: dict[str, float] = field(default_factory=dict)

    def central(self, calibrated_on: str) -> float | None:
        return (self.by_calibration.get(calibrated_on) or [None])[0]

    def series(self, calibrated_on: str) -> list[float | None]:  # empty where it predicts nothing
        values = self.by_calibration.get(calibrated_on) or []
        return values if any(value is not None for value in values) else []


UNPREDICTED = Predicted()


def predictions(result: dict[str, Any]) -> dict[str, Predicted]:
    """Each row a prediction result predicted."""
    chosen = result.get("settings") or {}
    links, ends = chosen.get("link_level", []), chosen.get("network_end", [])
    overlaps = chosen.get("overlap") or ["scheduled"] * len(links)  # recorded before the schedule was a setting
    settings = list(zip(links, ends, overlaps, strict=True))
    errors: dict[str, dict[str, float]] = {}
    for family in ((result.get("model_error") or {}).get("families") or {}).values():
        for pair in family["pairs"]:
            if pair["error"] is not None:
                errors.setdefault(pair["predicted"], {})[pair["calibrated_on"]] = pair["error"]
    return {
        row["row"]: Predicted(row.get("by_calibration") or {}, settings, errors.get(row["row"], {}))
        for row in result["rows"]
        if row["status"] == "ok"
    }


def own_values(claim: dict[str, Any]) -> set[str]:
    """The published values a claim is: itself, a value claim's row's throughput, and what it derives from."""
    check = claim["check"]
    found = {claim["id"], *claim.get("derives_from", [])}
    if check["type"] == "value":
        found.add(check["rows"][0])
    return found


def sources(facts: dict[str, dict[str, Any]], row: str) -> set[str]:
    return set(facts.get(row, {}).get(names.PUBLISHED_SOURCES) or [])


def choose_calibration(
    claim: dict[str, Any], facts: dict[str, dict[str, Any]], predicted: dict[str, Predicted]
) -> tuple[str | None, str]:
    """(calibration row, why), or (None, why not comparable); a calibration is offered where it
    predicts the claim's first row at the central settings."""
    row = claim["check"]["rows"][0]
    default = facts[row].get(names.CALIBRATED_ON)
    mine = predicted.get(row, UNPREDICTED)
    offered = [calibration for calibration in mine.by_calibration if mine.central(calibration) is not None]
    if not offered:
        return None, "no calibration of this model reaches this target"
    excluded = own_values(claim)
    ordered = ([default] if default in offered else []) + [row for row in offered if row != default]
    admissible = [row for row in ordered if not sources(facts, row) & excluded]
    if not admissible:
        return None, (
            "every published throughput of this model is one of this claim's own published values or derives"
            " from one: judging it by a calibration on one would judge it by itself"
        )
    chosen = admissible[0]
    why = f"calibrated on {chosen}"
    if default and chosen != default:
        why += f" (not {default}: its published throughput is, or derives from, this claim's own)"
    return chosen, why


def pair_kind(facts: dict[str, dict[str, Any]], a: str, b: str) -> str:
    """What a pair of rows compares: their placement kinds, e.g. 'offload ↔ remat' or 'offload ↔ offload'."""
    kinds = sorted(str(facts.get(row, {}).get("placement_kind")) for row in (a, b))
    return " ↔ ".join(kinds)


def compared_pairs(claim: dict[str, Any], calibrated_on: str) -> list[tuple[str, str]]:
    """The pairs of rows a claim's band compares, each (numerator, denominator) of its quotient: a
    value claim's calibration row and its row; a ratio's or ordering's rows, the expected one first."""
    check = claim["check"]
    rows = check["rows"]
    if check["type"] == "value":
        return [(rows[0], calibrated_on)]
    if check["type"] in ("ratio", "greater"):
        return [(rows[0], rows[1])]
    expect = check["expect"]
    others = [row for row in rows if row != expect]
    return [(expect, o) for o in others] if check["type"] == "fastest" else [(o, expect) for o in others]


def measured_error(
    claim: dict[str, Any], facts: dict[str, dict[str, Any]], predicted: dict[str, Predicted], pair: tuple[str, str]
) -> tuple[float | None, str]:
    """The largest leave-one-out error over the pairs of this pair's kind in its model that leave the
    claim's own values out; (None, why) where there is none: unmeasured."""
    excluded = own_values(claim)
    family = facts[pair[0]].get(names.FAMILY)
    kind = pair_kind(facts, *pair)
    errors = []
    for row, observed in facts.items():
        if observed.get(names.FAMILY) != family:
            continue
        for calibrated_on, value in predicted.get(row, UNPREDICTED).loo_errors.items():
            if (sources(facts, row) | sources(facts, calibrated_on)) & excluded:
                continue
            if pair_kind(facts, row, calibrated_on) == kind:
                errors.append(abs(value))
    if not errors:
        return None, (
            f"unmeasured: the model's error is measured by predicting one of {family}'s published throughputs"
            f" from another, and every such prediction across {kind} rows uses this claim's own published values"
        )
    largest = max(errors)
    count = f"{len(errors)} prediction{'s' if len(errors) > 1 else ''}"
    return largest, (
        f"±{largest:.1%}, the largest error predicting one of {family}'s published throughputs from another"
        f" across {kind} rows ({count}, leave-one-out)"
    )


def real_hardware_error(family: str | None, kinds: dict[str, Any]) -> tuple[float | None, str]:
    """The error on real GPUs that experiments/validation.yaml records for the family's kind of claim:
    the largest throughput error of a run measured elsewhere predicted from another of its model and
    precision (the analogue of the source's rows, which compare settings of one model). Recorded, not
    read from results/, so that every run judges with it; (None, why) where no run of the kind is."""
    kind = kinds.get(str(family))
    if kind is None:
        return None, f"no kind of measured run is stated for {family} (experiments/validation.yaml)"
    recorded = kind["recorded_error"]
    if recorded is None:
        return None, f"unmeasured on real GPUs: no {kind['what']} run measured elsewhere is recorded"
    error = recorded["throughput_error"]
    return error, (
        f"±{error:.1%}, the largest throughput error over {recorded['pairs']} predictions of {kind['what']} runs"
        " measured on real GPUs, each from another run of its model and precision (experiments/validation.yaml)"
    )


def larger_error(own: tuple[float | None, str], real: tuple[float | None, str]) -> tuple[float | None, str, str]:
    """The error a band takes, saying which set it: the larger of the source rows' leave-one-out
    error and that on real GPUs. Unmeasured on the source's rows stays unmeasured: real GPUs never
    stand in for the pairs of rows a claim compares."""
    (mine, my_why), (theirs, their_why) = own, real
    if mine is None:
        return None, my_why, "unmeasured"
    if theirs is None or theirs <= mine:
        return mine, f"{my_why} ({their_why})", "leave-one-out"
    return theirs, f"{their_why} (larger than the source rows': {my_why})", "real GPUs"


def open_sides(values: list[float | None], settings: list[Setting]) -> set[str]:
    """The sides a setting without a prediction leaves open: toward where the predictions at its
    network end, schedule and program move as its links' efficiency level is approached; both
    where fewer than two tell (a program that predicts nothing for the row), or where the settings
    were not recorded."""
    if not settings:
        return {"low", "high"} if None in values else set()
    opened: set[str] = set()
    ranked = [(LEVEL_ORDER[level], *rest) for level, *rest in settings]
    for (link, *rest), value in zip(ranked, values, strict=True):
        if value is not None:
            continue
        known = sorted(
            (lk, v) for (lk, *others), v in zip(ranked, values, strict=True) if others == rest and v is not None
        )
        below = [kv for kv in known if kv[0] < link]
        above = [kv for kv in known if kv[0] > link]
        if len(above) >= 2 and not below:  # extrapolate down from the two nearest
            (_, near), (_, far) = above[0], above[1]
        elif len(below) >= 2 and not above:
            (_, near), (_, far) = below[-1], below[-2]
        else:
            opened |= {"low", "high"}
            continue
        opened |= {"low"} if near < far else {"high"} if near > far else {"low", "high"}
    return opened


def band(
    check: dict[str, Any],
    series: dict[str, list[float | None]],
    errors: dict[tuple[str, str], PairError | float],
    settings: list[Setting],
) -> dict[str, Any] | None:
    """Value and ratio claims: the lowest and highest value over every setting, each setting's
    prediction (a ratio: its quotient) widened once by its pair's error; None for an open side.
    Orderings: at how many settings the ordering holds, and at how many every pair's widened
    quotient decides it one way or the other."""
    errors = {
        pair: e if isinstance(e, PairError) else PairError(e) for pair, e in errors.items()
    }  # a bare number: a fraction
    pairs = list(errors)
    rows = check["rows"]
    if any(row not in series for row in rows):
        return None
    count = max(len(values) for values in series.values())
    if len(settings) != count:
        settings = []  # not recorded: an unpredicted setting opens both sides
    values = {row: (list(series[row]) + [None] * count)[:count] for row in rows}
    largest = max(errors.values(), key=lambda error: error.as_fraction)
    if check["type"] in ("value", "ratio"):
        quotient = (
            values[rows[0]]
            if check["type"] == "value"
            else [a / b if a is not None and b else None for a, b in zip(values[rows[0]], values[rows[1]], strict=True)]
        )
        present = [q for q in quotient if q is not None]
        if not present:
            return None
        spans = [errors[pairs[0]].span(q) for q in present]
        shift = 0.0 if check["type"] == "value" else 1.0
        opened = open_sides(quotient, settings)
        low = None if "low" in opened else min(s[0] for s in spans) - shift
        highs = [s[1] for s in spans]
        high = None if "high" in opened or None in highs else max(highs) - shift  # type: ignore[type-var]
        missing = count - len(present)
        return {
            "low": low,
            "high": high,
            "settings": count,
            "unpredicted_settings": missing,
            "error": largest.value,
            "error_unit": largest.unit,
        }
    held = decided_for = decided_against = 0
    for i in range(count):
        quotients = {(a, b): (values[a][i], values[b][i]) for a, b in pairs}
        if any(a is None or not b for a, b in quotients.values()):
            continue  # no prediction here: this setting decides nothing
        spans = {pair: errors[pair].span(a / b) for pair, (a, b) in quotients.items()}
        held += all(a > b for a, b in quotients.values())
        decided_for += all(low > 1 for low, _ in spans.values())
        decided_against += any(high is not None and high < 1 for _, high in spans.values())
    return {
        "holds_at": held,
        "decided_for": decided_for,
        "decided_against": decided_against,
        "settings": count,
        "error": largest.value,
        "error_unit": largest.unit,
    }


def verdict(check: dict[str, Any], found: dict[str, Any], published: Any, tolerance: dict[str, Any] | None) -> str:
    """pass / fail only where the whole band decides it, else inconclusive; an open side decides nothing."""
    if "low" in found:
        if tolerance is None or published is None:
            return "inconclusive"
        allowed = tolerance["absolute"] if "absolute" in tolerance else tolerance["relative"] * abs(published)
        low, high = found["low"], found["high"]
        if low is not None and high is not None and published - allowed <= low and high <= published + allowed:
            return "pass"
        if (high is not None and high < published - allowed) or (low is not None and low > published + allowed):
            return "fail"
        return "inconclusive"
    if found["decided_for"] == found["settings"]:
        return "pass"
    if found["decided_against"] == found["settings"]:
        return "fail"
    return "inconclusive"


def inconclusive_reason(claim: dict[str, Any], found: dict[str, Any], tolerance: dict[str, Any] | None) -> str:
    """Why the band cannot decide the claim, in its numbers."""
    error = PairError(found["error"], found.get("error_unit", FRACTION)).text()
    if "low" in found:
        published = claim.get("published")
        ratio = claim["check"]["type"] == "ratio"
        text = (lambda v: f"{v:+.1%}") if ratio else number
        low = "open" if found["low"] is None else text(found["low"])
        high = "open" if found["high"] is None else text(found["high"])
        allowed = 0.0
        if tolerance:
            allowed = tolerance["absolute"] if "absolute" in tolerance else tolerance["relative"] * abs(published)
        unpredicted = found.get("unpredicted_settings")
        where = f"; no rate calibrates {unpredicted} of {found['settings']} settings" if unpredicted else ""
        said = (
            f"the band {low} to {high} (the model's measured error of {error} included{where})"
            f" straddles the tolerance {text(published - allowed)} to {text(published + allowed)}"
        )
        return said + decided_below(found, published, allowed)
    return (
        f"the predicted gaps between the rows do not exceed the model's measured error of {error}"
        f" at every setting (decided for the claim at {found['decided_for']} and against it at"
        f" {found['decided_against']} of {found['settings']} settings)"
    )


def decided_below(found: dict[str, Any], published: float, allowed: float) -> str:
    """For a band in pp with both sides known: the error under which the same predictions would decide
    the claim, which names the measurement that keeps it open ('' where that cannot be told)."""
    if found.get("error_unit") != PP or found["low"] is None or found["high"] is None:
        return ""
    margin = found["error"] / 100
    lowest, highest = found["low"] + margin, found["high"] - margin  # the predictions themselves
    below, above = published - allowed, published + allowed
    if highest < below or lowest > above:
        gap = (below - highest) if highest < below else (lowest - above)
        return f"; the predictions alone lie outside it: an error below {gap * 100:.2f} pp would fail the claim"
    if below <= lowest and highest <= above:
        room = min(lowest - below, above - highest)
        return f"; the predictions lie inside it: an error below {room * 100:.2f} pp would pass the claim"
    return "; the predictions themselves straddle it: no error would decide the claim"


def terms_text(row: str, observed: dict[str, Any]) -> str:
    parts = [
        f"{label} {observed[key]:.2f} s" for key, label in names.STEP_TERMS.items() if observed.get(key) is not None
    ]
    return f"{row}: step {observed.get('step_s', 0):.2f} s = " + " + ".join(parts)


def difference_text(claim: dict[str, Any], a: str, b: str, rows: dict[str, dict[str, Any]]) -> str:
    """Which term makes row b's step differ from row a's, and what a published ratio would need."""
    first, second = rows[a], rows[b]
    deltas = [
        (label, (second.get(key) or 0) - (first.get(key) or 0))
        for key, label in names.STEP_TERMS.items()
        if first.get(key) is not None
    ]
    recompute = (second.get("counted_tflops_per_step", 0) - second.get("unspent_tflops_per_step", 0)) - (
        first.get("counted_tflops_per_step", 0) - first.get("unspent_tflops_per_step", 0)
    )
    labelled = second.get("rematted_tflops_per_step", 0) - first.get("rematted_tflops_per_step", 0)
    largest = max(deltas, key=lambda d: abs(d[1]), default=("nothing", 0.0))
    text = (
        f"{b} minus {a}: "
        + ", ".join(f"{label} {delta:+.2f} s" for label, delta in deltas)
        + f" (FLOPs charged {recompute:+.0f} TFLOP per step, of which JAX-labelled recompute {labelled:+.0f});"
        f" the largest term is {largest[0]}"
    )
    if claim["check"]["type"] == "ratio" and claim.get("published") is not None and first.get("step_s"):
        needed = first["step_s"] * claim["published"]
        modelled = (second.get("step_s") or 0) - first["step_s"]
        text += (
            f"; the published {claim['published']:+.1%} needs {b}'s step to be {needed:.2f} s longer than {a}'s,"
            f" the model makes it {modelled:+.2f} s"
        )
    return text


def explain(claim: dict[str, Any], rows: dict[str, dict[str, Any]]) -> str:
    """Which term of the model makes the difference between the claim's rows (or its one row's step),
    each term at the central settings of the row's own prediction."""
    check = claim["check"]
    compared = check["rows"]
    if len(compared) == 1:
        row = rows[compared[0]]
        text = terms_text(compared[0], row)
        if row.get("implied_host_gb_s_per_direction"):
            text += (
                f"; the published number implies a host link of {number(row['implied_host_gb_s_per_direction'])}"
                " GB/s per direction at the calibrated compute rate"
            )
        return text
    if len(compared) > 2:
        text = "; ".join(terms_text(row, rows[row]) for row in compared)
    else:
        text = difference_text(claim, compared[0], compared[1], rows)
    for row in compared:
        implied = rows[row].get("implied_host_gb_s_per_direction")
        if implied:
            text += f"; {row}'s published number implies a host link of {number(implied)} GB/s per direction"
    return text
