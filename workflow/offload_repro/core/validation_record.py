"""What experiments/validation.yaml records of the validation stage's results, and how a result is
held to it: the runs the records are over (`recorded_runs`), the pairs each kind's error counts, and
the measured error of the source's calibration carried across hardware, per family and precision.

The records judge: every verdict takes them, whether or not a stage ran, so a run added to
experiments/measured-elsewhere/ changes no verdict until its effect is recorded, and the stage
reports that effect (produce/validation/since_record.py)."""

from __future__ import annotations

import statistics
from typing import Any

from offload_repro.core.data import DataError, did_you_mean, load_target
from offload_repro.core.measured_elsewhere import VALIDATION_FILE, MeasuredRun, gpu_of

RUNS_FIELD = "recorded_runs"
CARRIES_FIELD = "calibrations.across_hardware.recorded_errors"
VALIDATION_RUNS = "validation"  # measured_by of a carry the runs of experiments/measured-elsewhere/ measured


def recorded(runs: list[MeasuredRun], validation: dict[str, Any]) -> tuple[list[MeasuredRun], list[str]]:
    """(the runs the records are over, the ids of those added beside them); a recorded run that no
    file holds is refused: the records are over runs that are gone, and must be made again."""
    by_id = {run.id: run for run in runs}
    for index, run_id in enumerate(validation[RUNS_FIELD]):
        if run_id not in by_id:
            raise DataError(
                f"{VALIDATION_FILE}: field '{RUNS_FIELD}[{index}]': '{run_id}' is no run of"
                f" experiments/measured-elsewhere/, so the errors recorded over it cannot be checked: remove it,"
                f" and record the errors the stage computes without it" + did_you_mean(run_id, by_id)
            )
    mine = set(validation[RUNS_FIELD])
    return [run for run in runs if run.id in mine], [run.id for run in runs if run.id not in mine]


def pairs_within_model(runs: list[MeasuredRun], families: list[str]) -> dict[tuple[str, str, str], int]:
    """The runs of the source's `families` (their source_family) by GPU, precision and model, each
    with how many they are: what calibration (b) within one model pairs, each run predicted from
    every other of its group (n x (n - 1) pairs), where every run compiles and fits."""
    found: dict[tuple[str, str, str], int] = {}
    for run in runs:
        if run.source_family in families:
            key = (gpu_of(run), run.precision, run.model)
            found[key] = found.get(key, 0) + 1
    return found


def unrecorded_pairs(runs: list[MeasuredRun], validation: dict[str, Any]) -> list[str]:
    """Where the pairs a kind's recorded error counts (kinds.<name>.recorded_error.pairs) are not those
    the recorded runs form: found from the run files alone, before anything is compiled, so that a
    record out of step with its runs stops the stage at once, not after its compiles. A run added
    beside the recorded ones changes nothing here: the stage reports what it moves. A kind with no
    error recorded yet is left to the stage, which computes the error to record."""
    mine, _ = recorded(runs, validation)
    found = []
    for name, kind in validation["kinds"].items():
        record = kind["recorded_error"]
        if record is None:
            continue
        groups = pairs_within_model(mine, kind["families"])
        pairs = sum(n * (n - 1) for n in groups.values())
        if pairs == record["pairs"]:
            continue
        formed = ", ".join(f"{n} {precision} {model} runs on {gpu}" for (gpu, precision, model), n in groups.items())
        if pairs:
            what = f"record pairs: {pairs}, then the error the stage computes over them (it names it)"
        else:
            what = "record null (no two runs of one GPU, precision and model)"
        found.append(
            f"{VALIDATION_FILE}: field 'kinds.{name}.recorded_error.pairs': records {record['pairs']}, but the"
            f" recorded runs ({RUNS_FIELD}) form {pairs} pairs, each run predicted from every other of its GPU,"
            f" precision and model ({formed or 'none'}); {what}"
        )
    return found


def carried_errors(pairs: list[dict[str, Any]], measured_by: str) -> list[dict[str, Any]]:
    """Carried predictions' errors per family and precision (each pair names its family, precision and
    error), as experiments/validation.yaml records a carry `measured_by` measured."""
    found = []
    for family, precision in sorted({(pair["family"], pair["precision"]) for pair in pairs}):
        mine = [abs(pair["error"]) for pair in pairs if (pair["family"], pair["precision"]) == (family, precision)]
        found.append(
            {
                "family": family,
                "precision": precision,
                "measured_by": measured_by,
                "pairs": len(mine),
                "mean_abs": statistics.fmean(mine),
                "largest_abs": max(mine),
            }
        )
    return found


def carry_records(validation: dict[str, Any], family: str, precision: str) -> list[dict[str, Any]]:
    """The recorded errors of the source's `family` calibration at `precision` carried across hardware."""
    return [
        entry
        for entry in validation["calibrations"]["across_hardware"]["recorded_errors"]
        if entry["family"] == family and entry["precision"] == precision
    ]


def measured_on(measured_by: str) -> str:
    """What measured a carry, in words."""
    if measured_by == VALIDATION_RUNS:
        return "runs of experiments/measured-elsewhere/"
    accelerator = load_target(measured_by).spec["hardware"].get("accelerator", measured_by)
    return f"{accelerator} ({measured_by}, experiments/device-results/{measured_by})"


def carry_band(validation: dict[str, Any], family: str, precision: str) -> tuple[float | None, str]:
    """The step-time error a prediction carried from the source's `family` calibration at `precision`
    takes on other hardware: the largest recorded for that carry, and why, in words; None, and why
    none, where no such carry was measured."""
    carried = validation["calibrations"]["across_hardware"]
    source = carried["from"]
    found = carry_records(validation, family, precision)
    if not found:
        return None, (
            f"no band: the error of {source}'s {precision} {family} calibration carried to other hardware is"
            f" unmeasured (no run measured elsewhere or on a device was predicted from it; {VALIDATION_FILE},"
            f" {CARRIES_FIELD})"
        )
    worst = max(found, key=lambda entry: entry["largest_abs"])
    over = "; ".join(
        f"{entry['pairs']} on {measured_on(entry['measured_by'])}, {entry['mean_abs']:.1%} mean" for entry in found
    )
    return worst["largest_abs"], (
        f"±{worst['largest_abs']:.1%} of the step: the largest error of {source}'s {precision} {family} calibration"
        f" carried by share of peak to programs measured on other hardware ({over}; {VALIDATION_FILE})"
    )


def unrecorded_carries(computed: list[dict[str, Any]], measured_by: str, validation: dict[str, Any]) -> list[str]:
    """Where the carry errors a stage computed (`computed`: family, precision, largest_abs, mean_abs,
    pairs each) differ from those recorded as measured by it (to four decimals, as recorded), or one
    is recorded it no longer computes: each as the field and the value to record."""
    records = validation["calibrations"]["across_hardware"]["recorded_errors"]
    mine = {(entry["family"], entry["precision"]): entry for entry in computed if entry.get("pairs")}
    theirs = {
        (entry["family"], entry["precision"]): (index, entry)
        for index, entry in enumerate(records)
        if entry["measured_by"] == measured_by
    }
    found = []
    for key in sorted(set(mine) | set(theirs)):
        family, precision = key
        entry = mine.get(key)
        value = (
            f"largest_abs {entry['largest_abs']:.4f}, mean_abs {entry['mean_abs']:.4f} over {entry['pairs']} pairs"
            if entry
            else "no pair (remove the entry)"
        )
        if key not in theirs:
            found.append(
                f"{VALIDATION_FILE}: field '{CARRIES_FIELD}': records no {precision} {family} carry measured by"
                f" {measured_by}, this stage computes {value}"
            )
            continue
        index, record = theirs[key]
        if (
            entry is None
            or any(round(entry[field], 4) != record[field] for field in ("largest_abs", "mean_abs"))
            or entry["pairs"] != record["pairs"]
        ):
            found.append(
                f"{VALIDATION_FILE}: field '{CARRIES_FIELD}[{index}]': records largest_abs {record['largest_abs']:.4f},"
                f" mean_abs {record['mean_abs']:.4f} over {record['pairs']} pairs of the {precision} {family} carry"
                f" measured by {measured_by}, this stage computes {value}"
            )
    return found
