"""The pairs' vocabulary (their kinds, the order of a pair, a ratio compared in pp) and the record of
the step-time model's error on ratios (experiments/pair-errors.yaml): what a set of
pairs' error is (mean and largest |pp|, signs right, per model, and the terms that lower it), how a
pair is named, and each recorded entry computed again over the pairs it names, so that every run
takes the same error whatever results/ holds (produce/predicted/pair_errors.py computes the pairs)."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from offload_repro.core.data import DataError, validate
from offload_repro.core.files import REPO_ROOT, read_yaml
from offload_repro.produce.predicted import device_prediction

READS = ("experiments/pair-errors.yaml",)
RECORD_FILE = "experiments/pair-errors.yaml"
MODELS = device_prediction.MODELS
PLACEMENTS = "placements at one scale"
FLAGS = "flags at one placement"  # two rows of one placement that differ in XLA flags alone (LHS, pipelining)
SCALES = "scales at one placement"
RANK = {"remat": 0, "device": 1, "offload": 2}  # a pair's first member is the one that keeps more off the recompute
SPEED_CHECKS = ("ratio", "greater", "fastest", "slowest")


def sign(value: float) -> int:
    return (value > 0) - (value < 0)


def compared(predicted: float, measured: float) -> dict[str, Any]:
    """A predicted ratio - 1 beside a measured one: the difference in percentage points, and the sign."""
    return {
        "predicted": predicted,
        "pp": (predicted - measured) * 100,
        "sign_agrees": sign(predicted) == sign(measured),
    }


def ordered(
    a: tuple[str, str], b: tuple[str, str], listed: list[str], claimed: frozenset[tuple[str, str]] = frozenset()
) -> tuple[str, str]:
    """(first, second) of two (name, placement kind): as a claim's ratio names them, else the one with the
    higher placement kind first, else the one listed later (a variant over the row it varies: pipelined
    over LHS alone)."""
    if (b[0], a[0]) in claimed:
        return b[0], a[0]
    if (a[0], b[0]) in claimed:
        return a[0], b[0]
    key = {name: (RANK[kind], listed.index(name)) for name, kind in (a, b)}
    first, second = sorted(key, key=key.__getitem__, reverse=True)
    return first, second


SCALES_NOT_COMPUTED = (
    "not computed: the runs measured elsewhere (experiments/measured-elsewhere) are compiled and predicted only by"
    " the optional validation stage, which did not run (--config validation=True runs it and gives its result"
    " here); experiments/validation.yaml records their largest throughput error (a relative error of one run's"
    " throughput, not a ratio's error in percentage points)"
)


def summary(lines: list[dict[str, Any]]) -> dict[str, Any]:
    """Per model, over the lines it predicts: how many, mean and largest |pp|, how many agree in sign; the
    model kept (lowest mean |pp|) and which terms it keeps: a term stays only where it lowers the error."""
    by_model = {}
    for model in MODELS:
        found = [line["by_model"][model] for line in lines if model in line["by_model"]]
        if found:
            errors = [abs(f["pp"]) for f in found]
            by_model[model] = {
                "pairs": len(found),
                "mean_abs_pp": statistics.fmean(errors),
                "largest_abs_pp": max(errors),
                "sign_agrees": sum(f["sign_agrees"] for f in found),
            }
    full = by_model.get("full")
    terms = {
        term: full["mean_abs_pp"] < by_model[without]["mean_abs_pp"]
        for term, without in (("host_copies", "no_host_copies"), ("overlap", "serial_copies"))
        if full and without in by_model
    }
    kept = min(by_model, key=lambda m: by_model[m]["mean_abs_pp"]) if by_model else None
    return {"lines": len(lines), "by_model": by_model, "terms_lower_the_error": terms, "kept_model": kept}


# --- the record ------------------------------------------------------------------------------------

RECORDED_SETS = {
    "chip": ("chip_rows", "sweep"),
    "source_calibrated_outside_pair": ("source",),
    "runs_elsewhere": ("runs_elsewhere",),  # computed only where the validation stage's result is given
}
CALIBRATED_SETS = ("source", "runs_elsewhere")  # sets whose pairs are listed once per calibration
PP_DIGITS = 2  # a record's pp, as written


def load_record(path: str | Path = REPO_ROOT / RECORD_FILE) -> dict[str, Any]:
    data = read_yaml(path)
    validate(data, "pair_errors", RECORD_FILE)
    return data


def line_id(line: dict[str, Any]) -> str:
    """A pair as a record names it: its target, set and rows; a source line also its calibration row."""
    calibration = f" calibrated on {line['calibrated_on'][0]}" if line["set"] in CALIBRATED_SETS else ""
    return f"{line['target']} {line['set']}: {line['first']} / {line['second']}{calibration}"


def recorded_lines(lines: list[dict[str, Any]], entry: dict[str, Any]) -> list[dict[str, Any]]:
    """The lines of an entry's set and family (the source's only where calibrated outside the pair)."""
    return [
        line
        for line in lines
        if line["set"] in RECORDED_SETS[entry["set"]]
        and line["kind"] == entry["kind"]
        and line["family"] == entry["family"]
        and (entry["set"] != "source_calibrated_outside_pair" or line["calibration_outside_pair"])
    ]


def check_record(lines: list[dict[str, Any]], record: dict[str, Any]) -> list[dict[str, Any]]:
    """Each recorded entry computed again over the pairs it names alone: a pair added beside them (a sweep
    point kept later) never changes it, and is listed as since the record. Stops (DataError) where a named
    pair is gone or a value differs, naming the value to record."""
    checked = []
    for entry in record["records"]:
        mine = recorded_lines(lines, entry)
        by_id = {line_id(line): line for line in mine}
        where = f"{RECORD_FILE}: {entry['set']}, {entry['family']}"
        if not mine and entry["set"] == "runs_elsewhere":  # the validation stage did not run: kept as recorded
            checked.append(
                {key: entry[key] for key in ("set", "family", "pairs", "by_model")}
                | {"since_record": [], "with_since": None, "checked": False, "why": SCALES_NOT_COMPUTED}
            )
            continue
        if missing := [pair for pair in entry["pairs"] if pair not in by_id]:
            raise DataError(f"{where}: field 'pairs': no such pair computed: {'; '.join(missing)}")
        found = summary([by_id[pair] for pair in entry["pairs"]])["by_model"]
        for model, values in entry["by_model"].items():
            computed = found.get(model)
            if computed is None:
                raise DataError(f"{where}: by_model.{model}: the model predicts none of the recorded pairs")
            for key in ("mean_abs_pp", "largest_abs_pp"):
                if round(computed[key], PP_DIGITS) != values[key]:
                    raise DataError(
                        f"{where}: by_model.{model}.{key}: recorded {values[key]}, computed"
                        f" {round(computed[key], PP_DIGITS)} over the recorded pairs (record it)"
                    )
            if computed["sign_agrees"] != values["sign_agrees"]:
                raise DataError(
                    f"{where}: by_model.{model}.sign_agrees: recorded {values['sign_agrees']}, computed"
                    f" {computed['sign_agrees']} (record it)"
                )
        since = [pair for pair in by_id if pair not in entry["pairs"]]
        checked.append(
            {
                "set": entry["set"],
                "family": entry["family"],
                "pairs": entry["pairs"],
                "by_model": entry["by_model"],
                # over every pair computed now, the recorded ones and any since: reported, not applied
                "since_record": since,
                "with_since": summary(list(by_id.values()))["by_model"] if since else None,
            }
        )
    return checked
