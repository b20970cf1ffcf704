"""The step-time model calibrated on published throughputs, and its error when each is left out.

The model has one free parameter, the effective compute rate. Each published (or implied)
throughput of a model (experiments/speed.yaml, leave_one_out) calibrates it at every setting of
the stated uncertainties; one that no rate reaches is recorded with the settings at which one does.
Each calibration at the central setting predicts the other throughputs of its model: every pair's
error, the mean absolute and the largest, per model and in all; beside the full model's, the same
for simpler models that leave terms out, so that each term shows what it earns, and for each
combination of the models' GEMM precisions.
"""

from __future__ import annotations

import itertools
from typing import Any

from offload_repro.core.data import Row, Target
from offload_repro.produce.predicted import step_model
from offload_repro.produce.predicted.target_rates import peak_flops, precisions, rates, replayed, settings

# The step-time model with fewer terms, each made free (step_model.Rates.free), simplest first:
# every term the full model adds must earn its place by lowering the measured error.
MODELS = (
    ("FLOPs over one rate", ("hbm", "host", "collective")),
    ("+ HBM bytes", ("host", "collective")),
    ("+ host copies", ("collective",)),
    ("+ collectives on NVLink", ("network",)),
    ("+ network between NVLink domains (the full model)", ()),
)


class AbovePeak(ValueError):
    """A calibration that would need a compute rate above the precision's dense peak."""

    def __init__(self, message: str, low_share: float, high_share: float) -> None:
        super().__init__(message)
        self.low_share, self.high_share = low_share, high_share


def calibrate_row(
    program: dict[str, Any],
    published: float,
    target: Target,
    speed: dict[str, Any],
    precision: str,
    free: tuple[str, ...] = (),
    only_central: bool = False,
) -> list[float | None]:
    """The GEMM rate at each setting that makes the program's prediction `published`; None at a
    setting where none can (its transfers alone take longer) or where it would exceed the
    precision's dense peak; ValueError where the central one can't, saying why and at which
    settings one can."""
    found: list[float | None] = []
    over_peak: list[float | None] = []  # each setting's needed rate over the peak, where it exceeds it
    peak = peak_flops(target, precision, speed)
    chosen = settings(speed)[:1] if only_central else settings(speed)
    for setting in chosen:
        at = rates(target, 1.0, setting, precision, speed).free(*free)
        try:
            events, entry = replayed(program, at), program["entry"]
            rate = step_model.calibrate(events, entry, program["model_flops"], published * 1e12, at)
        except ValueError:
            rate = None
        above = rate / peak if rate and peak and rate > peak else None  # faster than the tensor cores go
        over_peak.append(above)
        found.append(None if above else rate)
    if found[0] is None:
        reached = [
            f"link efficiency {link}, network {end}, {overlap} overlap"
            for (link, end, overlap), rate in zip(chosen, found, strict=True)
            if rate
        ]
        where = f"; it is reached only at {'; '.join(reached)}" if reached else " nor at any other setting"
        if above_peak := [share for share in over_peak if share]:
            # ruled out at every setting: where some other setting would reach it within the peak is
            # not an alternative calibration, and is not offered as one
            central = (
                f"{over_peak[0]:.0%} at the central one"
                if over_peak[0]
                else "at the central one its transfers alone take longer"
            )
            raise AbovePeak(
                f"ruled out: reaching it needs {min(above_peak):.0%} to {max(above_peak):.0%} of the {precision}"
                f" dense peak at {len(above_peak)} of {len(chosen)} settings ({central}), which no hardware"
                " does; it calibrates at no setting",
                min(above_peak),
                max(above_peak),
            )
        raise ValueError(
            f"no compute rate reaches it at the central setting (its transfers alone take longer){where}"
            f" ({len(reached)} of {len(chosen)} settings)"
        )
    return found


def calibrations(
    rows: dict[str, Row],
    programs: dict[str, dict[str, Any]],
    target: Target,
    speed: dict[str, Any],
    published: dict[str, dict[str, dict[str, Any]]],
) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """Per family and precision, per published throughput with a program: the rate at each
    setting and its share of the precision's peak; and those that cannot be reached, with why."""
    found: dict[str, Any] = {}
    impossible: dict[str, dict[str, str]] = {}
    for family, entries in published.items():
        for row_id, entry in entries.items():
            if row_id not in programs:
                continue
            for precision in precisions(speed, rows[row_id], target):
                try:
                    by_setting = calibrate_row(programs[row_id], entry["tflops"], target, speed, precision)
                except ValueError as err:
                    impossible[f"{row_id}/{precision}"] = {"row": row_id, "reason": f"{row_id} ({precision}): {err}"}
                    continue
                peak = peak_flops(target, precision, speed)
                found.setdefault(family, {}).setdefault(precision, {})[row_id] = {
                    "published_tflops": entry["tflops"],
                    "sources": entry["sources"],
                    "how": entry["how"],
                    "by_setting": [
                        {
                            "link_level": level,
                            "network_end": end,
                            "overlap": overlap,
                            "effective_tflops": rate / 1e12 if rate else None,
                            "share_of_peak": rate / peak if rate and peak else None,
                        }
                        for (level, end, overlap), rate in zip(settings(speed), by_setting, strict=True)
                    ],
                }
    return found, impossible


def rates_from(
    calibration: dict[str, Any], target: Target, calibration_target: Target, precision: str, speed: dict[str, Any]
) -> list[float | None] | None:
    """One calibration's GEMM rates on `target` (None at a setting it cannot reach): its own on the
    calibration target, else its share of this target's peak."""
    if target.name == calibration_target.name:
        return [entry["effective_tflops"] and entry["effective_tflops"] * 1e12 for entry in calibration["by_setting"]]
    peak = peak_flops(target, precision, speed)
    if not peak:
        return None
    return [entry["share_of_peak"] and entry["share_of_peak"] * peak for entry in calibration["by_setting"]]


def model_error(
    programs: dict[str, dict[str, Any]],
    target: Target,
    speed: dict[str, Any],
    published: dict[str, dict[str, dict[str, Any]]],
    precision_of: dict[str, str],
    free: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Leave one out: each published throughput calibrates the model (with `free` terms left out)
    at the central setting, which predicts the others of its family; every error, the mean
    absolute and the largest per family and in all."""
    families: dict[str, Any] = {}
    for family, entries in published.items():
        precision = precision_of[family]
        pairs = []
        present = [r for r in entries if r in programs]
        calibrated: dict[str, float] = {}
        ruled_out: list[dict[str, Any]] = []
        for row_id in present:  # each calibration once, for every row it predicts
            try:
                (rate,) = calibrate_row(
                    programs[row_id], entries[row_id]["tflops"], target, speed, precision, free, only_central=True
                )
            except AbovePeak as err:
                ruled_out.append({"row": row_id, "share_of_peak": err.low_share})
                continue
            except ValueError:
                continue  # this model cannot reach that published throughput: no prediction from it
            if rate is not None:
                calibrated[row_id] = rate
        for calibrated_on, predicted in itertools.permutations(present, 2):
            if calibrated_on not in calibrated:
                continue
            at = rates(target, calibrated[calibrated_on], settings(speed)[0], precision, speed).free(*free)
            step = step_model.step_seconds(replayed(programs[predicted], at), programs[predicted]["entry"], at)
            if not step:
                continue  # nothing of the predicted program is left in this model
            value = programs[predicted]["model_flops"] / step / 1e12
            error = value / entries[predicted]["tflops"] - 1
            pairs.append(
                {
                    "calibrated_on": calibrated_on,
                    "predicted": predicted,
                    "published_tflops": entries[predicted]["tflops"],
                    "predicted_tflops": value,
                    "error": error,
                }
            )
        errors = [abs(pair["error"]) for pair in pairs]
        families[family] = {"precision": precision, "pairs": pairs, "ruled_out": ruled_out, **summarised(errors)}
    return assembled(families)


def assembled(families: dict[str, Any]) -> dict[str, Any]:
    """Several families' leave-one-out errors as one table: theirs, and the mean absolute and the
    largest over all their pairs."""
    every = [abs(pair["error"]) for family in families.values() for pair in family["pairs"]]
    return {"families": families, **summarised(every), "pairs": len(every)}


def summarised(errors: list[float]) -> dict[str, float | None]:
    """The mean absolute and the largest of some absolute errors (None for none)."""
    return {"mean_abs": sum(errors) / len(errors) if errors else None, "largest_abs": max(errors, default=None)}


def error_tables(
    rows: dict[str, Row],
    programs: dict[str, dict[str, Any]],
    target: Target,
    speed: dict[str, Any],
    published: dict[str, dict[str, dict[str, Any]]],
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The full model's leave-one-out error at each family's default precision; the same for each
    simpler model; for each combination of the families' precisions that are not ruled out; and
    the precisions ruled out, where every calibration would need more than the dense peak."""
    choices = {family: precisions(speed, rows[next(iter(entries))], target) for family, entries in published.items()}
    default = {family: listed[0] for family, listed in choices.items()}
    # the full model at the default precisions is computed once: the ablation's last line and the
    # default combination of precisions are the same numbers
    full = model_error(programs, target, speed, published, default)
    ablation = [
        {
            "model": name,
            "free": list(free),
            **(model_error(programs, target, speed, published, default, free) if free else full),
        }
        for name, free in MODELS
    ]
    # each family at each precision once: a combination only sets families' errors side by side
    by_family = {
        (family, precision): full["families"][family]
        if precision == default[family]
        else model_error(programs, target, speed, {family: published[family]}, {family: precision})["families"][family]
        for family, listed in choices.items()
        for precision in listed
    }
    ruled_out = [
        {
            "family": family,
            "precision": precision,
            "low_share": min(entry["share_of_peak"] for entry in error["ruled_out"]),
            "high_share": max(entry["share_of_peak"] for entry in error["ruled_out"]),
        }
        for (family, precision), error in by_family.items()
        if error["ruled_out"] and not error["pairs"]
    ]
    excluded = {(entry["family"], entry["precision"]) for entry in ruled_out}
    admissible = {family: [p for p in listed if (family, p) not in excluded] for family, listed in choices.items()}
    by_precision = [
        {"precision": chosen, **assembled({family: by_family[(family, p)] for family, p in chosen.items()})}
        for chosen in (dict(zip(admissible, c, strict=True)) for c in itertools.product(*admissible.values()))
    ]
    return full, ablation, by_precision, ruled_out
