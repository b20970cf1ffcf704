"""The page's section on the step-time model against published runs measured elsewhere: each run's
measured and predicted step, the error tables and where the model is off, as the validation stage
recorded them (nothing is computed here)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from offload_repro.judge import metric_names as names
from offload_repro.present.lookup import Lookup

# every fact of a run the validation stage predicted, with its calibration and its step's terms
RUN_METRICS = (*names.MEASURED_RUN, names.CALIBRATED_ON, names.STEP_S, *names.STEP_TERMS)


def runs(observations: pd.DataFrame) -> list[dict[str, Any]]:
    """One line per run: its metrics, its status and the band of its predicted step."""
    chosen = observations[observations["evidence"] == "validation"]
    lookup = Lookup(chosen)
    targets = dict(zip(chosen["row"], chosen["target"], strict=True))
    lines = []
    for run, target in targets.items():
        band = lookup.band(run, "validation", "predicted_step_s") or {}
        carried = lookup.band(run, "validation", "across_hardware_step_s") or {}
        lines.append(
            {
                "run": run,
                "target": target,
                **{metric: lookup.value(run, "validation", metric) for metric in RUN_METRICS},
                "status": lookup.value(run, "validation", "status"),
                "message": lookup.message(run, "validation", "status"),
                "low": band.get("low"),
                "high": band.get("high"),
                # the measured step the carry's measured error allows (experiments/validation.yaml)
                "across_low": carried.get("low"),
                "across_high": carried.get("high"),
            }
        )
    return sorted(lines, key=lambda line: (str(line["source"]), str(line["precision"]), line["gpus"] or 0))


def section(observations: pd.DataFrame, validation: dict[str, Any] | None) -> dict[str, Any] | None:
    """`validation`: the validation result's details in the evidence table (its error tables, where
    the model is off, calibrations, how the runs were compiled, and its file)."""
    if validation is None:
        return None
    lines = runs(observations)
    return {
        "runs": lines,
        "not_carried": not_carried(lines),
        # what runs added beside the recorded ones moved, in the stage's words
        "since_record_lines": validation["since_record"]["lines"],
        **validation,
    }


def not_carried(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each reason (c) carries nothing to a run, once, with the runs it holds for."""
    found: dict[str, list[str]] = {}
    for line in lines:
        if line["not_carried"]:
            found.setdefault(line["not_carried"], []).append(line["run"])
    return [{"why": why, "runs": ids} for why, ids in found.items()]
