"""How predicted evidence judges a speed claim, never more strongly than the model's measured error
allows, and what it says about why.

Every predicted row carries its throughput under each calibration of its model (`tflops_per_device@<row>`
at each setting of the stated uncertainties), the published throughput it was compared with where it
has one, what that number derives from (`published_sources`), and its leave-one-out errors
(`loo_error@<row>`: predicted from that row's calibration, against its own published number).

- Calibration: the model's default calibration row, unless its published throughput derives from
  the claim's own published value (a value claim's row; the throughput a speedup claim implies);
  then the next one that does not; none left: not comparable.
- Error: the model's largest leave-one-out error over the pairs whose published throughputs do not
  derive from the claim's own value (its model's pairs, else the other models'); none: inconclusive.
- Band: the prediction at every setting, each row widened by that error.
- Verdict: pass where the whole band lies inside the claim's tolerance, fail where it lies wholly
  outside, else inconclusive; an ordering is decided only where every setting's gaps exceed the error.
"""

from __future__ import annotations

from typing import Any

from offload_repro.judge.spread import number

METRIC = "tflops_per_device"
TERMS = (
    ("compute_s", "compute"),
    ("memory_bound_s", "memory-bound work"),
    ("exposed_host_copy_s", "exposed host copies"),
    ("exposed_collective_s", "exposed collectives"),
    ("exposed_network_s", "network between NVLink domains"),
)


def by_calibration(row: str) -> str:
    return f"{METRIC}@{row}"


def loo_error(row: str) -> str:
    return f"loo_error@{row}"


def own_values(claim: dict[str, Any]) -> set[str]:
    """What a claim's published value is: a value claim's row's throughput, any other claim itself."""
    check = claim["check"]
    return {check["rows"][0]} if check["type"] == "value" else {claim["id"]}


def sources(facts: dict[str, dict[str, Any]], row: str) -> set[str]:
    return set(str(facts.get(row, {}).get("published_sources") or "").split())


def choose_calibration(claim: dict[str, Any], facts: dict[str, dict[str, Any]]) -> tuple[str | None, str]:
    """(calibration row, why), or (None, why not comparable)."""
    first = facts[claim["check"]["rows"][0]]
    default = first.get("calibrated_on")
    offered = [key.split("@", 1)[1] for key in first if key.startswith(f"{METRIC}@")]
    if not offered:
        return None, "no calibration of this model reaches this target"
    excluded = own_values(claim)
    ordered = ([default] if default in offered else []) + [row for row in offered if row != default]
    admissible = [row for row in ordered if not sources(facts, row) & excluded]
    if not admissible:
        return None, (
            "every published throughput of this model derives from this claim's own published value:"
            " judging it by a calibration on one would judge it by itself"
        )
    chosen = admissible[0]
    why = f"calibrated on {chosen}"
    if default and chosen != default:
        why += f" (not {default}: its published throughput is this claim's own value)"
    return chosen, why


def measured_error(claim: dict[str, Any], facts: dict[str, dict[str, Any]]) -> tuple[float | None, str]:
    """The largest leave-one-out error over the pairs that leave the claim's own value out: its
    model's pairs, else every model's; (None, why) where there are none."""
    excluded = own_values(claim)
    family = facts[claim["check"]["rows"][0]].get("family")
    found: dict[bool, list[float]] = {True: [], False: []}  # same family or not
    for row, observed in facts.items():
        for key, value in observed.items():
            if not key.startswith("loo_error@") or value is None:
                continue
            calibrated_on = key.split("@", 1)[1]
            if (sources(facts, row) | sources(facts, calibrated_on)) & excluded:
                continue
            found[observed.get("family") == family].append(abs(value))
    for same, errors in ((True, found[True]), (False, found[False])):
        if errors:
            where = f"on {family}'s other published throughputs" if same else "on the other model's throughputs"
            largest = max(errors)
            pairs = f"{len(errors)} pair{'s' if len(errors) > 1 else ''}"
            return largest, f"the model's largest leave-one-out error {where}: ±{largest:.1%} ({pairs})"
    return None, "no leave-one-out error can be measured without this claim's own published value"


def widened(values: list[float | None], error: float) -> list[tuple[float, float] | None]:
    return [None if value is None else (value * (1 - error), value * (1 + error)) for value in values]


def band(check: dict[str, Any], series: dict[str, list[float | None]], error: float) -> dict[str, Any] | None:
    """Value and ratio claims: the lowest and highest value over every setting, each row widened by
    the error. Orderings: at how many settings the ordering holds, and at how many the gaps decide
    it (exceed the error) one way or the other."""
    rows = check["rows"]
    if any(row not in series for row in rows):
        return None
    count = min(len(series[row]) for row in rows)
    spans = {row: widened(series[row][:count], error) for row in rows}
    usable = [i for i in range(count) if all(spans[row][i] is not None for row in rows)]
    if not usable:
        return None
    if check["type"] in ("value", "ratio"):
        if check["type"] == "value":
            lows = [spans[rows[0]][i][0] for i in usable]
            highs = [spans[rows[0]][i][1] for i in usable]
        else:
            lows = [spans[rows[0]][i][0] / spans[rows[1]][i][1] - 1 for i in usable]
            highs = [spans[rows[0]][i][1] / spans[rows[1]][i][0] - 1 for i in usable]
        return {"low": min(lows), "high": max(highs), "settings": len(usable), "error": error}
    held = decided_for = decided_against = 0
    for i in usable:
        central = {row: series[row][i] for row in rows}
        low = {row: spans[row][i][0] for row in rows}
        high = {row: spans[row][i][1] for row in rows}
        if check["type"] == "greater":
            first, second = rows
            held += central[first] > central[second]
            decided_for += low[first] > high[second]
            decided_against += high[first] < low[second]
            continue
        expect, others = check["expect"], [row for row in rows if row != check["expect"]]
        if check["type"] == "fastest":
            held += all(central[expect] > central[o] for o in others)
            decided_for += all(low[expect] > high[o] for o in others)
            decided_against += any(high[expect] < low[o] for o in others)
        else:
            held += all(central[expect] < central[o] for o in others)
            decided_for += all(high[expect] < low[o] for o in others)
            decided_against += any(low[expect] > high[o] for o in others)
    return {
        "holds_at": held,
        "decided_for": decided_for,
        "decided_against": decided_against,
        "settings": len(usable),
        "error": error,
    }


def verdict(check: dict[str, Any], found: dict[str, Any], published: Any, tolerance: dict[str, Any] | None) -> str:
    """pass / fail only where the whole band decides it, else inconclusive."""
    if "low" in found:
        if tolerance is None or published is None:
            return "inconclusive"
        allowed = tolerance["absolute"] if "absolute" in tolerance else tolerance["relative"] * abs(published)
        if published - allowed <= found["low"] and found["high"] <= published + allowed:
            return "pass"
        if found["high"] < published - allowed or found["low"] > published + allowed:
            return "fail"
        return "inconclusive"
    if found["decided_for"] == found["settings"]:
        return "pass"
    if found["decided_against"] == found["settings"]:
        return "fail"
    return "inconclusive"


def inconclusive_reason(claim: dict[str, Any], found: dict[str, Any], tolerance: dict[str, Any] | None) -> str:
    """Why the band cannot decide the claim, in its numbers."""
    error = f"±{found['error']:.1%}"
    if "low" in found:
        published = claim.get("published")
        ratio = claim["check"]["type"] == "ratio"
        text = (lambda v: f"{v:+.1%}") if ratio else number
        allowed = 0.0
        if tolerance:
            allowed = tolerance["absolute"] if "absolute" in tolerance else tolerance["relative"] * abs(published)
        return (
            f"the band {text(found['low'])} to {text(found['high'])} (the model's measured error of {error} included)"
            f" straddles the tolerance {text(published - allowed)} to {text(published + allowed)}"
        )
    return (
        f"the predicted gaps between the rows do not exceed the model's measured error of {error}"
        f" at every setting (decided for the claim at {found['decided_for']} and against it at"
        f" {found['decided_against']} of {found['settings']} settings)"
    )


def terms_text(row: str, observed: dict[str, Any]) -> str:
    parts = [f"{label} {observed[key]:.2f} s" for key, label in TERMS if observed.get(key) is not None]
    return f"{row}: step {observed.get('step_s', 0):.2f} s = " + " + ".join(parts)


def difference_text(claim: dict[str, Any], a: str, b: str, rows: dict[str, dict[str, Any]]) -> str:
    """Which term makes row b's step differ from row a's, and what a published ratio would need."""
    first, second = rows[a], rows[b]
    deltas = [
        (label, (second.get(key) or 0) - (first.get(key) or 0)) for key, label in TERMS if first.get(key) is not None
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
    names = check["rows"]
    if len(names) == 1:
        row = rows[names[0]]
        text = terms_text(names[0], row)
        if row.get("implied_host_gb_s_per_direction"):
            text += (
                f"; the published number implies a host link of {number(row['implied_host_gb_s_per_direction'])}"
                " GB/s per direction at the calibrated compute rate"
            )
        return text
    if len(names) > 2:
        text = "; ".join(terms_text(row, rows[row]) for row in names)
    else:
        text = difference_text(claim, names[0], names[1], rows)
    for row in names:
        implied = rows[row].get("implied_host_gb_s_per_direction")
        if implied:
            text += f"; {row}'s published number implies a host link of {number(implied)} GB/s per direction"
    return text
