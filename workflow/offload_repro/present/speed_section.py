"""The page's speed section: what the compiled programs and the step-time model say about each
row's step (FLOPs, bytes, collectives, host copies), the speed claims' predicted judgements, and
the model's calibration and measured error, all as the evidence table holds them."""

from __future__ import annotations

import itertools
from typing import Any

import pandas as pd

from offload_repro.core.data import Row
from offload_repro.core.measured_elsewhere import load_validation
from offload_repro.judge import metric_names as names
from offload_repro.present.lookup import Lookup

SPEED_COLUMNS = (
    "model_tflops_per_step",
    "counted_tflops_per_step",
    "rematted_tflops_per_step",
    "unspent_tflops_per_step",
    "recompute_share",
    "host_copy_gib_per_step",
    "hbm_gb_per_step",
    names.STEP_S,
    *names.STEP_TERMS,
    names.TFLOPS,
    names.CALIBRATED_ON,
    names.PUBLISHED_TFLOPS,
    names.PUBLISHED_IMPLIED,
    names.PREDICTED_OVER_PUBLISHED,
    names.ERROR_AGAINST_MEASURED,
    "implied_host_gb_s_per_direction",
    *(f"network_{end}_{what}" for what in ("gb_per_nic", "s_per_step") for end in names.NETWORK_ENDS),
    *(names.collective_gb(kind) for kind in names.COLLECTIVE_KINDS),
    *names.COLLECTIVE_RUNS,
    *(names.clone(kind, what) for kind in names.CLONE_KINDS for what in names.CLONE_MEASURES),
    "remat_pass",
    "remat_limit_met",
    "remat_limit_gib",
    "remat_reached_gib",
)


# MaxText's model FLOPs per component (the compile's split), the weight FLOPs they make, and the
# counted FLOPs without JAX's recompute or MoE dispatch label against them, in page order.
FLOP_COLUMNS = (
    *(names.model_component(name) for name in names.MODEL_COMPONENTS),
    "model_weights_tflops_per_step",
    "unlabelled_gemm_tflops_per_step",
    "gemm_beyond_model_tflops_per_step",
    "model_attention_tflops_per_step",
    "unlabelled_attention_tflops_per_step",
    "attention_beyond_model_tflops_per_step",
    "model_tflops_per_step",
)
COPY_SIDES = dict(zip(names.COPY_SIDES, ("to the host", "from the host"), strict=True))
ERROR_ON_HARDWARE = {
    "rows": names.ERROR_AGAINST_MEASURED_ROWS,
    "mean_abs": names.ERROR_AGAINST_MEASURED_MEAN_ABS,
    "largest_abs": names.ERROR_AGAINST_MEASURED_LARGEST_ABS,
}


def flop_components(rows: list[Row], lookup: Lookup) -> list[dict[str, Any]]:
    """Each predicted row whose compile split MaxText's model FLOPs: the components beside the counted."""
    lines = []
    for row in rows:
        values = {metric: lookup.value(row.id, "predicted", metric) for metric in FLOP_COLUMNS}
        if values["model_weights_tflops_per_step"] is not None:
            lines.append({"row": row, **values})
    return lines


def host_copies(rows: list[Row], lookup: Lookup) -> list[dict[str, Any]]:
    """Each predicted row with host copies: per direction, how many, how many asynchronous, and
    the compute their start / done pairs span."""
    found = []
    for row in rows:
        sides = [
            {
                "direction": label,
                **{c: lookup.value(row.id, "predicted", names.copy_side(side, c)) for c in names.COPY_MEASURES},
            }
            for side, label in COPY_SIDES.items()
            if lookup.value(row.id, "predicted", names.copy_side(side, "copies")) is not None
        ]
        if sides:
            found.append({"row": row, "sides": sides})
    return found


def error_on_hardware(observations: pd.DataFrame, target: str | None) -> dict[str, Any] | None:
    """The predictions' error against the runs measured on the same hardware (a fact about the
    target), where there is one: rows, mean and largest."""
    facts = observations[
        (observations["evidence"] == "predicted") & observations["row"].isna() & (observations["target"] == target)
    ]
    values = dict(zip(facts["metric"], facts["value"], strict=True))
    found = {key: values.get(metric) for key, metric in ERROR_ON_HARDWARE.items()}
    return found if found["rows"] else None


def unmeasured_errors(lines: list[dict[str, Any]], error: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Each model whose leave-one-out error has no pair to measure it: which of its rows fit as
    compiled and which ran out of memory, since a pair needs two that fit."""

    def rows_of(family: str, status: str) -> list[str]:
        return [line["row"].id for line in lines if line["row"].family == family and line["status"] == status]

    families = (error or {}).get("families", {})
    return [
        {"family": family, "fit": rows_of(family, "ok"), "out_of_memory": rows_of(family, "oom")}
        for family, measured in families.items()
        if not measured["pairs"]
    ]


def speed(
    rows: list[Row],
    lookup: Lookup,
    observations: pd.DataFrame,
    verdicts: dict[str, Any],
    prediction: dict[str, Any] | None,
    measured_here: bool = False,
):
    """What the compiled programs say about speed: each row's FLOPs, bytes, collectives and predicted
    step, the model's measured error (and that of simpler models), the speed claims' predicted
    judgements with their explanations, and the model's calibration. `prediction`: the compile
    target's prediction details in the evidence table; `measured_here`: the page's runs are on the
    hardware the rows were predicted for, so each prediction stands beside its run."""
    if prediction is None:
        return None
    lines = []
    for row in rows:
        values = {metric: lookup.value(row.id, "predicted", metric) for metric in SPEED_COLUMNS}
        status = lookup.value(row.id, "predicted", names.STATUS)
        if status is None:
            continue
        lines.append(
            {
                "row": row,
                "status": status,
                "message": lookup.message(row.id, "predicted", names.STATUS),
                "band": lookup.band(row.id, "predicted", names.TFLOPS),
                "measured": lookup.value(row.id, "measured", names.TFLOPS) if measured_here else None,
                "collectives": {
                    kind: {
                        "gb": values[names.collective_gb(kind)],
                        "runs": values[names.collective_runs(kind)],
                        "synchronous": values[names.collective_runs(kind, synchronous=True)],
                    }
                    for kind in names.COLLECTIVE_KINDS
                },
                **values,
            }
        )
    # the memory each program was planned within: the run's allocator share (one per target, as a rule)
    within = ("allocator_share", names.ALLOCATOR_LIMIT_GIB)
    planned = {tuple(lookup.value(row.id, "compiled", metric) for metric in within) for row in rows}
    judged = [
        {"claim": claim, "judgement": judgement}
        for claim in verdicts["claims"]
        for judgement in claim["judgements"]
        if judgement["evidence"] == "predicted"
    ]
    # a calibration row's own claim is judged under another calibration: the table shows that value too
    judged_as = {
        j["claim"]["subjects"][0]: {"claim": j["claim"]["id"], "value": j["judgement"].get("observed"), "on": on}
        for j in judged
        if j["claim"]["check"] == "value" and (on := j["judgement"].get("calibrated_on"))
    }
    for line in lines:
        found = judged_as.get(line["row"].id)
        line["judged_as"] = found if found and found["on"] != line["row"].id else None
    terms = term_earnings(prediction.get("ablation") or [], load_validation().get("recorded_term_errors"))
    return {
        "lines": lines,
        "measured_here": measured_here,
        "error_on_hardware": error_on_hardware(observations, verdicts["compile_target"]) if measured_here else None,
        # the rows whose collectives cross between NVLink domains
        "network": [line for line in lines if line["status"] == "ok" and line["network_ring_gb_per_nic"]],
        "components": flop_components(rows, lookup),
        "copies": host_copies(rows, lookup),
        "claims": judged,
        "calibration": prediction.get("calibration") or {},
        "uncalibrated": prediction.get("uncalibrated") or {},
        "error": prediction.get("model_error"),
        "unmeasured": unmeasured_errors(lines, prediction.get("model_error")),
        "ablation": prediction.get("ablation") or [],
        "terms": terms,
        # the terms that lower no measured error: the stated rule would not keep them
        "idle_terms": [
            t["model"]
            for t in terms
            if t["elsewhere"]["change"] != "lowers" and all(h["change"] != "lowers" for h in t["here"])
        ],
        "by_precision": prediction.get("by_precision") or [],
        "ruled_out_precisions": prediction.get("ruled_out_precisions") or [],
        "cross_checks": prediction.get("cross_checks") or [],
        "planned_within": [
            {"share": share, "gib": gib} for share, gib in sorted(p for p in planned if p[0] is not None)
        ],
        "assumptions": prediction["assumptions"],
    }


def change(before: float | None, after: float | None) -> str | None:
    """'lowers', 'raises' or 'keeps' an error, as the page shows it (to 0.1%); None where one is unmeasured."""
    if before is None or after is None:
        return None
    shown = round(before, 3), round(after, 3)
    return "keeps" if shown[0] == shown[1] else "lowers" if shown[1] < shown[0] else "raises"


def term_earnings(ablation: list[dict[str, Any]], elsewhere: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Each term the model adds, in order: its change to the mean error on the source's rows (leave one
    out, per model family where both models measure it: a family the simpler model alone predicts is
    no comparison) and on the runs measured elsewhere (every run in turn, as experiments/validation.yaml
    records it). The stated rule keeps a term where it lowers the error."""
    recorded = (elsewhere or {}).get("by_model") or {}
    found = []
    for before, after in itertools.pairwise(ablation):
        here = [
            {"family": family, "before": values["mean_abs"], "after": after["families"][family]["mean_abs"]}
            for family, values in (before.get("families") or {}).items()
            if values.get("mean_abs") is not None
            and ((after.get("families") or {}).get(family) or {}).get("mean_abs") is not None
        ]
        for line in here:
            line["change"] = change(line["before"], line["after"])
        there = [recorded.get(model["model"], {}).get("mean_abs") for model in (before, after)]
        found.append(
            {
                "model": after["model"],
                "here": here,
                "elsewhere": {"before": there[0], "after": there[1], "change": change(*there)},
            }
        )
    return found
