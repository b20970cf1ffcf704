"""The step-time model's error on ratios, per kind of pair, in percentage points.

The source's speed claims compare two placements of one model at one scale: a ratio of two
throughputs, in which much of the calibrated compute rate cancels. Their band should be the model's
error on pairs of the same kind, measured as the ratio's error: predicted ratio - 1 against measured
(or published) ratio - 1, in percentage points, signed, and whether the sign agrees. Three sets of
pairs, each listed apart:

- source: every two of a model's published (or implied) throughputs on the source's hardware
  (experiments/speed.yaml, leave_one_out), under each calibration of the model: the pages' leave-one-out
  pairs read as ratios. A calibration on a row of the pair uses that row's published value (the rate
  then mostly cancels): each line says whether its calibration lies outside the pair's published values.
  Two rows of one placement that differ in XLA flags alone (LHS, pipelined offload) are a pair of
  another kind (FLAGS), summarised apart: no chip measures it, XLA:TPU reading no XLA:GPU flag;
- chip rows: every two programs one chip ran for the rows (experiments/device-results/<target>/programs)
  of one family and one scale (the same MaxText model FLOPs per step);
- sweep: every two points of one regime of the chip's placement-pair sweep
  (experiments/device-results/<target>/sweep/points, result kind sweep-point), where it exists.
A chip pair's prediction takes no measured value of its own pair: the rate is fitted on each other
program (point) of its family in turn, or of the other family where its family has none (said so), and
the pair's prediction is their median, with the lowest and highest.

Each is made under the device prediction's three models (device_prediction.MODELS: the full model, no
host-copy term, the copies serialised: no overlap term), each fitting its own rate; a term is kept in a
set of pairs only where it lowers the mean |pp| error there. Beside each pair, its regime
(produce/predicted/regime.py: host-copy time over compute time, of the member that offloads more); the
source's rows and each GPU target's on the same axis; and, per speed claim of the source, what a
verdict needs: its kind of pair, the recorded errors and the pairs they are over, and whether its rows
lie inside the regimes the chip measured.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from itertools import combinations
from pathlib import Path
from typing import Any

from offload_repro.core import maxtext_args
from offload_repro.core.data import Row, Target
from offload_repro.produce.predicted import device_prediction, regime, step_model
from offload_repro.produce.predicted.chip_pairs import chip_lines
from offload_repro.produce.predicted.pair_record import (
    FLAGS,
    PLACEMENTS,
    SCALES,
    SCALES_NOT_COMPUTED,
    SPEED_CHECKS,
    check_record,
    compared,
    line_id,
    ordered,
    summary,
)
from offload_repro.produce.predicted.prediction import placement_kind
from offload_repro.produce.predicted.target_rates import Setting, peak_flops, precisions, rates, settings

MODELS = device_prediction.MODELS
# --- the source's pairs ---------------------------------------------------------------------------


def source_throughputs(
    rows: dict[str, Row],
    programs: dict[str, dict[str, Any]],
    target: Target,
    speed: dict[str, Any],
    published: dict[str, dict[str, dict[str, Any]]],
) -> dict[str, dict[str, dict[str, float]]]:
    """Per model, per calibration row, each program's predicted throughput (TFLOP/s) at the central
    setting, the rate fitted on the calibration row's published throughput under that model; a
    calibration needing more than the precision's dense peak calibrates nothing."""
    central = settings(speed)[0]
    found: dict[str, dict[str, dict[str, float]]] = {model: {} for model in MODELS}
    for entries in published.values():
        present = [row for row in entries if row in programs]
        for calibrated_on in present:
            precision = precisions(speed, rows[calibrated_on], target)[0]
            peak = peak_flops(target, precision, speed) or float("inf")
            for model in MODELS:
                rate = _fit(
                    programs[calibrated_on],
                    entries[calibrated_on]["tflops"] * 1e12,
                    target,
                    speed,
                    precision,
                    central,
                    model,
                )
                if rate is None or rate > peak:
                    continue
                found[model][calibrated_on] = {
                    row: _throughput(programs[row], target, speed, precision, central, model, rate) for row in present
                }
    return found


def _events(program: dict[str, Any], model: str, setting: Setting) -> dict[str, Any]:
    events = program["ideal_events"] if setting.overlap == "ideal" else program["events"]
    return device_prediction.serial(events) if model == "serial_copies" else events


def _rates(target: Target, rate: float, setting: Setting, precision: str, speed: dict[str, Any], model: str):
    at = rates(target, rate, setting, precision, speed)
    return at.free("host") if model == "no_host_copies" else at


def _fit(program, flops_per_s, target, speed, precision, setting, model) -> float | None:
    at = _rates(target, 1e12, setting, precision, speed, model)
    try:
        return step_model.calibrate(
            _events(program, model, setting), program["entry"], program["model_flops"], flops_per_s, at
        )
    except ValueError:
        return None  # no rate reaches it: its transfers alone take longer


def _throughput(program, target, speed, precision, setting, model, rate) -> float:
    at = _rates(target, rate, setting, precision, speed, model)
    return (
        program["model_flops"] / step_model.step_seconds(_events(program, model, setting), program["entry"], at) / 1e12
    )


def claimed_pairs(claims: list[dict[str, Any]]) -> frozenset[tuple[str, str]]:
    """The (first, second) rows of each ratio or direction the source claims between two rows."""
    return frozenset(
        (claim["check"]["rows"][0], claim["check"]["rows"][1])
        for claim in claims
        if claim["check"]["type"] in ("ratio", "greater") and len(claim["check"]["rows"]) == 2
    )


def source_pairs(
    rows: dict[str, Row],
    published: dict[str, dict[str, dict[str, Any]]],
    throughputs: dict[str, dict[str, dict[str, float]]],
    regimes: dict[str, float],
    claimed: frozenset[tuple[str, str]] = frozenset(),
) -> list[dict[str, Any]]:
    """Every two published throughputs of a model, first over second (ordered), under each calibration
    that predicts both: the predicted ratio against the published one. `throughputs`: per model, per
    calibration row, each row's predicted TFLOP/s (source_throughputs, or a prediction result's central
    values for the full model); `regimes`: each row's copy over compute time."""
    lines = []
    for family, entries in published.items():
        listed = list(entries)
        for a, b in combinations(listed, 2):
            first, second = ordered((a, placement_kind(rows[a])), (b, placement_kind(rows[b])), listed, claimed)
            measured = entries[first]["tflops"] / entries[second]["tflops"] - 1
            own = set(entries[first]["sources"]) | set(entries[second]["sources"])
            calibrations = dict.fromkeys(c for by in throughputs.values() for c in by)
            for calibrated_on in calibrations:
                by_model = {}
                for model, by in throughputs.items():
                    found = by.get(calibrated_on) or {}
                    if first in found and second in found:
                        by_model[model] = compared(found[first] / found[second] - 1, measured)
                if not by_model or calibrated_on not in entries:
                    continue
                placements = [placement_kind(rows[first]), placement_kind(rows[second])]
                lines.append(
                    {
                        "kind": PLACEMENTS if placements[0] != placements[1] else FLAGS,
                        "set": "source",
                        "family": family,
                        "first": first,
                        "second": second,
                        "rows": [first, second],
                        "placements": placements,
                        "measured": measured,
                        "measured_how": "published",
                        "published_sources": sorted(own),
                        "calibrated_on": [calibrated_on],
                        "calibration_sources": sorted(entries[calibrated_on]["sources"]),
                        # a calibration on a value the pair's ratio is made of: the rate mostly cancels
                        "calibration_outside_pair": not (set(entries[calibrated_on]["sources"]) & own),
                        "regime": max(regimes.get(first, 0.0), regimes.get(second, 0.0)),
                        "by_model": by_model,
                    }
                )
    return lines


def prediction_throughputs(prediction: dict[str, Any]) -> dict[str, dict[str, dict[str, float]]]:
    """The full model's throughputs as a prediction result holds them (each row's central value under
    each calibration): the source's pairs as the pages show them."""
    found: dict[str, dict[str, float]] = {}
    for row in prediction["rows"]:
        for calibrated_on, values in (row.get("by_calibration") or {}).items():
            if values and values[0] is not None:
                found.setdefault(calibrated_on, {})[row["row"]] = values[0]
    return {"full": found}


# --- two scales of one placement: the runs measured elsewhere ---------------------------------------


def scale_pairs(validation: dict[str, Any]) -> list[dict[str, Any]]:
    """Every two runs measured elsewhere of one model and precision (one placement, two scales), the one
    on more GPUs first, under each of the two calibrations the validation stage's (b) makes (each run
    calibrating the other: its predicted step is its measured one): the throughput ratio predicted
    against measured. The full model only: the stage predicts each run under it."""
    runs = {run["run"]: run for run in validation["runs"] if run["status"] == "ok"}
    lines = []
    for pair in validation["pairs"]["every_run"]:
        x, y = runs.get(pair["predicted"]), runs.get(pair["calibrated_on"])
        if x is None or y is None or (x["model"], x["precision"]) != (y["model"], y["precision"]):
            continue
        first, second = (x, y) if (x["gpus"], x["run"]) > (y["gpus"], y["run"]) else (y, x)
        rate = {r["run"]: r["model_tflops"] / r["measured_step_s"] for r in (x, y)}
        measured = rate[first["run"]] / rate[second["run"]] - 1
        rate[x["run"]] = x["model_tflops"] / pair["predicted_step_s"]  # the calibrated run's stays measured
        lines.append(
            {
                "kind": SCALES,
                "set": "runs_elsewhere",
                "target": x["target"],
                "family": x["family"],
                "first": first["run"],
                "second": second["run"],
                "rows": [first["run"], second["run"]],
                "measured": measured,
                "measured_how": "measured",
                "scale": f"{first['gpus']} / {second['gpus']} GPUs",
                "calibrated_on": [y["run"]],
                "calibration_outside_pair": False,
                "regime": 0.0,
                "by_model": {"full": compared(rate[first["run"]] / rate[second["run"]] - 1, measured)},
            }
        )
    return lines


# --- summaries, regimes and what a verdict needs -------------------------------------------------


def summaries(every: list[dict[str, Any]]) -> dict[str, Any]:
    """Each set of pairs of one kind apart, the chip's measured sets together, and all together."""
    lines = [line for line in every if line["kind"] == PLACEMENTS]
    scales = [line for line in every if line["kind"] == SCALES]
    flags = [line for line in every if line["kind"] == FLAGS]
    sets = {
        "source": [line for line in lines if line["set"] == "source"],
        "source_calibrated_outside_pair": [
            line for line in lines if line["set"] == "source" and line["calibration_outside_pair"]
        ],
        "chip_rows": [line for line in lines if line["set"] == "chip_rows"],
        "sweep": [line for line in lines if line["set"] == "sweep"],
        "chip": [line for line in lines if line["set"] in ("chip_rows", "sweep")],
        "all": lines,
    }
    families = sorted({line["family"] for line in lines})
    return {
        PLACEMENTS: {
            name: summary(found) | {"by_family": {f: summary([x for x in found if x["family"] == f]) for f in families}}
            for name, found in sets.items()
        },
        SCALES: {"computed": True, **summary(scales)}
        | {
            "by_family": {
                f: summary([x for x in scales if x["family"] == f]) for f in sorted({x["family"] for x in scales})
            }
        }
        if scales
        else {"computed": False, "why": SCALES_NOT_COMPUTED},
        # the source's pairs that differ in flags alone: no chip measures them (XLA:TPU reads no XLA:GPU flag)
        FLAGS: summary(flags) | {"outside_pair": summary([x for x in flags if x["calibration_outside_pair"]])},
    }


def source_regimes(rows: Iterable[Row], source: Target, speed: dict[str, Any]) -> dict[str, float]:
    """Each source row's copy over compute time on the source's hardware as published, at its default precision."""
    return {
        row.id: regime.row_regime(
            row, maxtext_args.full_scale_overrides(row), source, speed, precisions(speed, row, source)[0]
        ).copy_to_compute
        for row in rows
    }


def target_regimes(rows: Iterable[Row], targets: list[Target], speed: dict[str, Any]) -> list[dict[str, Any]]:
    """Each GPU target's offloading rows as published, on the same axis; a target that cites no host
    link or peak says why."""
    found = []
    for target in targets:
        for row in rows:
            if not row.tensors("offload"):
                continue
            precision = precisions(speed, row, target)[0]
            try:
                at = regime.row_regime(row, maxtext_args.full_scale_overrides(row), target, speed, precision)
            except ValueError as err:
                found.append({"target": target.name, "row": row.id, "copy_to_compute": None, "why": str(err)})
                continue
            found.append(
                {"target": target.name, "row": row.id, "precision": precision, "copy_to_compute": at.copy_to_compute}
            )
    return found


def measured_range(lines: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per family, the regimes the chip measured pairs at, over pairs with a member that offloads."""
    found: dict[str, list[float]] = {}
    for line in lines:
        if line["set"] in ("chip_rows", "sweep") and line["regime"] > 0:
            found.setdefault(line["family"], []).append(line["regime"])
    return {family: {"low": min(values), "high": max(values)} for family, values in found.items()}


def compared_rows(check: dict[str, Any]) -> list[tuple[str, str]]:
    """The pairs of rows a speed claim compares, as its judgement forms them."""
    rows = check["rows"]
    if check["type"] in ("ratio", "greater"):
        return [(rows[0], rows[1])]
    others = [row for row in rows if row != check["expect"]]
    if check["type"] == "fastest":
        return [(check["expect"], other) for other in others]
    return [(other, check["expect"]) for other in others]


def claim_records(
    claims: list[dict[str, Any]],
    rows: dict[str, Row],
    lines: list[dict[str, Any]],
    regimes: dict[str, float],
    ranges: dict[str, dict[str, float]],
    kept_model: str | None,
    checked: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Per speed claim of the source: what a verdict needs. Its kind of pair; the error on pairs of that
    kind under the kept model, in pp, over the chip's measured pairs of its family (as recorded, where
    experiments/pair-errors.yaml records it: `checked`) and over the source's pairs that leave its own
    published values out (each with the pairs it is over); its rows' regime against the chip's measured
    range, and how far outside (a factor)."""
    chip_records = {entry["family"]: entry for entry in checked or [] if entry["set"] == "chip"}
    found = []
    for claim in claims:
        check = claim["check"]
        if check["type"] not in SPEED_CHECKS or check.get("metric") != "tflops_per_device":
            continue
        family = rows[check["rows"][0]].family
        own = {claim["id"], *claim.get("derives_from", [])}
        chip = [line for line in lines if line["set"] in ("chip_rows", "sweep") and line["family"] == family]
        # the source's pairs whose ratio holds none of the claim's own values; strictly, calibrated on none either
        others = [
            line
            for line in lines
            if line["set"] == "source"
            and line["kind"] == PLACEMENTS
            and line["family"] == family
            and not (set(line["published_sources"]) & own)
        ]
        source = [line for line in others if not (set(line["calibration_sources"]) & own)]
        at = max(regimes.get(row, 0.0) for row in check["rows"])
        span = ranges.get(family)
        inside = span is not None and span["low"] <= at <= span["high"]
        outside = None
        if span and not inside:
            outside = at / span["high"] if at > span["high"] else span["low"] / at if at > 0 else None
        found.append(
            {
                "claim": claim["id"],
                "family": family,
                "kind": PLACEMENTS,
                "pairs": [list(pair) for pair in compared_rows(check)],
                "model": kept_model,
                "chip_error": from_record(chip_records.get(family), kept_model) or recorded(chip, kept_model),
                "source_error": recorded(source, kept_model),
                # the same pairs whatever calibrates them: the rate, fitted on one of the claim's own
                # values, mostly cancels in a ratio (said apart, never in place of the strict one)
                "source_error_any_calibration": recorded(others, kept_model),
                "regime": at,
                "chip_range": span,
                "inside_chip_range": inside,
                "outside_by": outside,
            }
        )
    return found


def recorded(lines: list[dict[str, Any]], model: str | None) -> dict[str, Any] | None:
    """The error a band would take over `lines` under `model`: largest and mean |pp|, sign agreement, and
    the pairs (first/second, with the calibration) it is over; None where no line is."""
    found = [line for line in lines if model in line["by_model"]]
    if not found:
        return None
    errors = [abs(line["by_model"][model]["pp"]) for line in found]
    return {
        "recorded": False,
        "largest_abs_pp": max(errors),
        "mean_abs_pp": statistics.fmean(errors),
        "sign_agrees": sum(line["by_model"][model]["sign_agrees"] for line in found),
        "over": [
            f"{line['set']}: {line['first']} / {line['second']} ({', '.join(line['calibrated_on'])})" for line in found
        ],
    }


def from_record(entry: dict[str, Any] | None, model: str | None) -> dict[str, Any] | None:
    """A recorded entry's error under `model`, with the pairs it is over; None where none is recorded."""
    values = (entry or {}).get("by_model", {}).get(model)
    if values is None:
        return None
    return {"recorded": True, **values, "over": entry["pairs"]}  # type: ignore[index]


def published_offloads(
    rows: dict[str, Row],
    published: dict[str, dict[str, dict[str, Any]]],
    regimes: dict[str, float],
    claimed: frozenset[tuple[str, str]],
    target: str,
) -> list[dict[str, Any]]:
    """Each published pair of an offloading row over one that offloads nothing, at its regime: placed on
    the chart whether or not the model predicts it (a row out of memory as compiled is not predicted)."""
    found = []
    for family, entries in published.items():
        listed = list(entries)
        for a, b in combinations(listed, 2):
            first, second = ordered((a, placement_kind(rows[a])), (b, placement_kind(rows[b])), listed, claimed)
            if placement_kind(rows[first]) == "offload" != placement_kind(rows[second]):
                found.append(
                    {
                        "set": "source",
                        "target": target,
                        "family": family,
                        "first": first,
                        "second": second,
                        "regime": max(regimes.get(first, 0.0), regimes.get(second, 0.0)),
                        "measured": entries[first]["tflops"] / entries[second]["tflops"] - 1,
                    }
                )
    return found


def curve(lines: list[dict[str, Any]], model: str | None, published: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chart's records: each pair of an offloading row over one that offloads nothing, at its regime,
    its measured (or published) cost of offloading and the model's (ratio - 1, in %; null where it does
    not predict it), drawn by present/charts.py as they are. A source pair once: under its first
    calibration outside the pair, else its first."""
    found, seen = [], set()
    offloading = [
        line
        for line in sorted(lines, key=lambda line: not line["calibration_outside_pair"])
        if line["regime"] > 0 and line["placements"][0] == "offload" != line["placements"][1]
    ]
    for line in [*offloading, *published]:  # a published pair the model predicts comes first, with it
        key = (line["set"], line["target"], line["first"], line["second"])
        if key in seen:
            continue
        seen.add(key)
        predicted = (line.get("by_model") or {}).get(model)
        found.append(
            {
                "set": line["set"],
                "target": line["target"],
                "family": line["family"],
                "pair": f"{line['first']} / {line['second']}",
                "calibrated_on": ", ".join(line.get("calibrated_on", [])),
                "copy_to_compute": line["regime"],
                "measured_pct": line["measured"] * 100,
                "predicted_pct": predicted["predicted"] * 100 if predicted else None,
            }
        )
    return sorted(found, key=lambda record: (record["set"], record["family"], record["copy_to_compute"]))


# --- the result -----------------------------------------------------------------------------------


def same_as_prediction(computed: dict[str, dict[str, float]], prediction: dict[str, Any]) -> list[str]:
    """Where the full model's replay here differs from the prediction result's central value (the
    pages' numbers): each calibration and row, both values."""
    theirs = prediction_throughputs(prediction)["full"]
    return [
        f"{row} calibrated on {calibrated_on}: {value:.6g} here, {theirs.get(calibrated_on, {}).get(row)} predicted"
        for calibrated_on, by_row in computed.items()
        for row, value in by_row.items()
        if abs(value - (theirs.get(calibrated_on, {}).get(row) or 0.0)) > 1e-6 * value
    ]


def pair_errors(
    rows: list[Row],
    source: Target,
    source_programs: dict[str, dict[str, Any]],
    published: dict[str, dict[str, dict[str, Any]]],
    devices: list[tuple[Target, Path]],
    gpu_targets: list[Target],
    claims: list[dict[str, Any]],
    speed: dict[str, Any],
    prediction: dict[str, Any] | None = None,
    record: dict[str, Any] | None = None,
    validation: dict[str, Any] | None = None,
    regime_rows: list[Row] | None = None,
) -> dict[str, Any]:
    """Every pair, the summaries per kind of pair, the record checked, the regimes and the claims'
    records (module doc); `regime_rows`: the rows as the source's and the what-if targets' programs
    were built (under the chosen settings), where they differ from `rows`."""
    by_id = {row.id: row for row in rows}
    at_full_scale = regime_rows or rows
    throughputs = source_throughputs(by_id, source_programs, source, speed, published)
    if prediction is not None and (differs := same_as_prediction(throughputs["full"], prediction)):
        raise ValueError("the full model here differs from the prediction result: " + "; ".join(differs))
    regimes = source_regimes(at_full_scale, source, speed)
    lines = source_pairs(by_id, published, throughputs, regimes, claimed_pairs(claims))
    read: dict[str, Any] = {}
    for device, kept in devices:
        found, read[device.name] = chip_lines(device, kept, by_id, speed)
        lines += [line | {"target": device.name} for line in found]
    if validation is not None:
        lines += scale_pairs(validation)
    for line in lines:
        line.setdefault("target", source.name)
        line["id"] = line_id(line)
    checked = check_record(lines, record) if record else []
    chip_summary = summaries(lines)[PLACEMENTS]["chip"]
    kept_model = chip_summary["kept_model"] or "full"
    ranges = measured_range(lines)
    return {
        "source_target": source.name,
        "devices": read,
        "models": list(MODELS),
        "pairs": lines,
        "summaries": summaries(lines),
        "kept_model": kept_model,
        "regimes": {
            "source": [
                {"target": source.name, "row": row_id, "copy_to_compute": value} for row_id, value in regimes.items()
            ],
            "targets": target_regimes(at_full_scale, gpu_targets, speed),
            "chip_range": ranges,
        },
        "record": checked,
        "claims": claim_records(claims, by_id, lines, regimes, ranges, kept_model, checked),
        "chart": curve(
            lines, kept_model, published_offloads(by_id, published, regimes, claimed_pairs(claims), source.name)
        ),
    }
