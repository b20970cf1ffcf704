"""How predicted evidence judges a speed claim, and what it says about why.

A prediction never uses the published number of a row it judges. Predicted rows carry the row
their model family was calibrated on (`calibrated_on`):
- a value claim on the calibration row itself is not comparable: it would be judged by itself;
- any other claim that names the calibration row among its rows is judged by the uncalibrated
  prior (`tflops_per_device_prior`), which uses no published number at all;
- every other claim is judged by the calibrated prediction.
The verdict stands on the central setting; the band is the claim's value at every setting of the
stated uncertainties, and an ordering says at how many settings it holds.
"""

from __future__ import annotations

from typing import Any

from offload_repro.judge.spread import number

CALIBRATED, PRIOR = "tflops_per_device", "tflops_per_device_prior"
TERMS = (
    ("compute_s", "compute"),
    ("exposed_host_copy_s", "exposed host copies"),
    ("exposed_collective_s", "exposed collectives"),
)


def choose_metric(claim: dict[str, Any], rows: dict[str, dict[str, Any]]) -> tuple[str | None, str]:
    """(metric to judge by, why), or (None, why not comparable)."""
    check = claim["check"]
    calibrations = {row: rows.get(row, {}).get("calibrated_on") for row in check["rows"]}
    if check["type"] == "value" and calibrations[check["rows"][0]] == check["rows"][0]:
        return None, (
            f"{check['rows'][0]}'s published throughput calibrates the predictions of its model: "
            "judging it by them would judge it by itself"
        )
    if any(calibrated in check["rows"] for calibrated in calibrations.values() if calibrated):
        return PRIOR, "uncalibrated (prior efficiency): the model's calibration row is one of this claim's rows"
    if all(calibrations.values()):
        return CALIBRATED, "calibrated on " + ", ".join(sorted({c for c in calibrations.values() if c}))
    return PRIOR, "uncalibrated (prior efficiency): no calibration reaches this target"


def claim_value(check: dict[str, Any], values: dict[str, float]) -> float | str | bool:
    rows = check["rows"]
    if check["type"] == "value":
        return values[rows[0]]
    if check["type"] == "ratio":
        return values[rows[0]] / values[rows[1]] - 1
    if check["type"] == "greater":
        return values[rows[0]] > values[rows[1]]
    pick = max if check["type"] == "fastest" else min
    return pick(values, key=values.__getitem__)


def band(check: dict[str, Any], series: dict[str, list[float]]) -> dict[str, Any] | None:
    """The claim's value at every setting: a range for values and ratios, a count for orderings."""
    rows = check["rows"]
    if any(row not in series for row in rows):
        return None
    count = min(len(series[row]) for row in rows)
    values = [claim_value(check, {row: series[row][i] for row in rows}) for i in range(count)]
    if check["type"] in ("value", "ratio"):
        return {"low": min(values), "high": max(values), "settings": count}
    if check["type"] == "greater":
        held = sum(1 for v in values if v)
    else:
        held = sum(1 for v in values if v == check.get("expect"))
    return {"holds_at": held, "settings": count}


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
