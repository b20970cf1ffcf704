"""The registry of result kinds: the one place an evidence kind is declared.

A new kind is one producer module (which writes `results/.../*.json` through
`core.results.write_result`), one observer in judge/observers.py (one result -> its
observations), one entry here, a JSON Schema in workflow/schemas/results/, and its Snakemake
rule, which adds its files to the evidence files of the plan. Checking, the evidence table and
the report need no change: they dispatch on each file's own `kind`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from offload_repro.core.observation import Observation
from offload_repro.judge import observers


@dataclass(frozen=True)
class ResultKind:
    name: str  # the result file's `kind`
    evidence: str  # the class of evidence it gives
    observe: Callable[[dict[str, Any], str], list[Observation]]  # one result -> its observations
    # Facts of the whole result that the report shows as they are: the evidence table's `details`.
    details: tuple[str, ...] = ()


# A prediction's calibration, its measured error and that of simpler models and other precisions,
# its cross-checks by construction, and the assumptions it was made under.
PREDICTED_DETAILS = (
    "assumptions",
    "calibration",
    "uncalibrated",
    "model_error",
    "ablation",
    "by_precision",
    "ruled_out_precisions",
    "cross_checks",
)
# The validation stage's error tables, where the model is off, its calibrations, the rates the runs
# fit and how the runs were compiled.
VALIDATION_DETAILS = (
    "errors",
    "where_off",
    "calibrations",
    "fitted_rates",
    "compile",
    "profile_guided",
    "since_record",
)


RESULT_KINDS = {
    k.name: k
    for k in (
        ResultKind("run", "measured", observers.run_observations),
        ResultKind("compile", "compiled", observers.compile_observations),
        ResultKind("analytic", "analytic", observers.analytic_observations),
        ResultKind("probe", "measured", observers.probe_observations),
        ResultKind("frontier", "compiled", observers.frontier_observations),
        ResultKind("budget", "compiled", observers.budget_observations),
        ResultKind("predicted", "predicted", observers.predicted_observations, PREDICTED_DETAILS),
        ResultKind("validation", "validation", observers.validation_observations, VALIDATION_DETAILS),
        ResultKind(
            "device-prediction",
            "predicted",
            observers.device_prediction_observations,
            ("programs", "carried", "models", "kept_model", "peak_tflops", "setting"),
        ),
    )
}
