"""Predicted against measured on a device the rows ran on: each program the chip ran (its scheduled
HLO, kept beside the runs by produce/compiled/tpu_programs.py) replayed by the step-time model at the
target's rates, its step set beside the measured one.

The model's one free parameter, the effective compute rate, is set three ways:
- chip: each other program the chip ran calibrates it in turn (leave one out), those of the
  program's own model family apart (as on the GPUs, a family calibrates itself);
- runs_elsewhere: the share of its BF16 peak that runs measured elsewhere fit, as
  experiments/validation.yaml records it per kind (today NVIDIA's H100 runs, dense models only),
  carried by the peaks;
- source: the share of its peak the source's rows fit on their hardware (the calibration target of
  experiments/speed.yaml, results/predicted/<target>.json) at the same precision, carried by the
  peaks; none where the source's rows rule that precision out. Its error per family is a measured
  carry across hardware, which experiments/validation.yaml records (the band of every prediction
  for hardware nobody has run on) and this result is held to (carry_errors).
Each is replayed under three models, so that each term is kept only where it lowers the error:
- full: the host copies at the host link's rate, overlapped as XLA scheduled them;
- no_host_copies: the host copies cost nothing (the offload's traffic left out);
- serial_copies: every host copy waited for where it starts (the overlap left out).

Its command: `predict_device` (the main job's rule of that name, for each kept target with programs).
"""

from __future__ import annotations

import gzip
import hashlib
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

from offload_repro.core.data import Target, load_rows
from offload_repro.core.files import read_json
from offload_repro.core.measured_elsewhere import load_validation
from offload_repro.core.published import load_speed
from offload_repro.core.results import read_result
from offload_repro.core.validation_record import carried_errors
from offload_repro.produce.compiled import hlo_text
from offload_repro.produce.compiled.tpu_programs import TABLES
from offload_repro.produce.predicted import hlo_flops, hlo_schedule, step_model, step_traffic
from offload_repro.produce.predicted.source_calibration import source_calibration
from offload_repro.produce.predicted.target_rates import Setting, peak_flops, rates

MODELS = ("full", "no_host_copies", "serial_copies")
CENTRAL = Setting("central", "ring", "scheduled")
PRECISION = "bfloat16"  # every row on the chip runs its GEMMs in BF16


def serial(events: dict[str, list[hlo_schedule.Event]]) -> dict[str, list[hlo_schedule.Event]]:
    """The schedule with every host copy waited for where it starts: each async host copy made a
    synchronous transfer, its done dropped."""
    host = {
        e.key for evs in events.values() for e in evs if e.kind == "start" and e.channel in ("to_host", "from_host")
    }
    return {
        name: [
            replace(e, kind="transfer") if e.kind == "start" and e.key in host else e
            for e in evs
            if not (e.kind == "done" and e.key in host)
        ]
        for name, evs in events.items()
    }


def read_program(path: Path) -> dict[str, Any]:
    """What the model replays of one kept program, and what it is checked by."""
    text = gzip.decompress(path.read_bytes()).decode("utf-8")
    computations = hlo_text.parse(text)
    flops, unknown_loops = hlo_flops.count_flops(computations)
    events, _ = hlo_schedule.schedules(computations, hlo_schedule.timelines(computations))
    transfers = step_traffic.transfers(computations, events)
    return {
        "entry": hlo_text.entry_name(computations),
        "events": {"full": events, "no_host_copies": events, "serial_copies": serial(events)},
        "summary": {
            "hlo_sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "counted_tflops": flops.total / 1e12,
            "counted_attention_tflops": flops.attention / 1e12,
            "unknown_loops": unknown_loops,
            "host_bytes": transfers["host_bytes"],
        },
    }


def model_rates(target: Target, speed: dict[str, Any], flops_per_s: float, model: str) -> step_model.Rates:
    at = rates(target, flops_per_s, CENTRAL, PRECISION, speed)
    return at.free("host") if model == "no_host_copies" else at


def step(program: dict[str, Any], target: Target, speed: dict[str, Any], flops_per_s: float, model: str) -> float:
    at = model_rates(target, speed, flops_per_s, model)
    return step_model.step_seconds(program["events"][model], program["entry"], at)


def fitted_rate(program: dict[str, Any], target: Target, speed: dict[str, Any], measured_s: float, model: str) -> float:
    """The compute rate at which the model's step of the program is the measured one."""
    at = model_rates(target, speed, 1e12, model)
    model_flops = program["model_flops"]
    return step_model.calibrate(program["events"][model], program["entry"], model_flops, model_flops / measured_s, at)


CARRIED = ("runs_elsewhere", "source")


def carried_shares(
    family_of: dict[str, str], source: dict[str, Any] | None, speed: dict[str, Any]
) -> dict[str, dict[str, Any]]:
    """Per calibration carried from elsewhere, per family: the share of peak it gives, or why none
    (the source's at the chip's precision only: source_calibration)."""
    elsewhere = {
        family: kind["recorded_fitted_rate"]
        for kind in load_validation()["kinds"].values()
        for family in kind["families"]
        if (kind.get("recorded_fitted_rate") or {}).get("precision") == PRECISION
    }
    found: dict[str, dict[str, Any]] = {name: {} for name in CARRIED}
    for family in sorted(set(family_of.values())):
        if family in elsewhere:
            found["runs_elsewhere"][family] = {
                "share_of_peak": elsewhere[family]["share_of_peak"],
                "calibrated_on": f"{elsewhere[family]['target']}/{elsewhere[family]['calibrated_on']}",
            }
        else:
            found["runs_elsewhere"][family] = {
                "none": f"no measured run of a {family} model's kind at {PRECISION} is recorded"
            }
        carried = source_calibration(source, family, PRECISION, speed)
        found["source"][family] = (
            {"none": carried.none}
            if carried.none
            else {"share_of_peak": carried.share_of_peak, "calibrated_on": carried.calibrated_on}
        )
    return found


def errors(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    values = [abs(p["error"]) for p in pairs]
    return {"mean_abs": statistics.fmean(values), "largest_abs": max(values), "pairs": len(values)} if values else {}


def predict(target: Target, kept_dir: Path, source: dict[str, Any] | None) -> dict[str, Any]:
    speed = load_speed()
    kept = kept_dir / target.name
    listed = read_json(kept / "programs" / "programs.json")
    family_of = {row.id: row.family for row in load_rows(list(TABLES))}  # a program is named by its first row
    runs = {path.stem: read_result(path, "run") for path in sorted((kept / "runs").glob("*.json"))}
    programs: dict[str, dict[str, Any]] = {}
    for name, program in listed["programs"].items():
        measured = [runs[row] for row in program["rows"] if row in runs and runs[row].get("step_time_s")]
        if program["status"] != "ok" or not measured:
            continue  # a refused program never ran a step
        first = measured[0]
        programs[name] = read_program(kept / "programs" / f"{name}.hlo.gz") | {
            "rows": program["rows"],
            "family": family_of[name],
            "measured_step_s": first["step_time_s"],
            "measured_from": first["row"],
            "model_flops": first["model_tflops_per_step_per_device"] * 1e12,
            "equals_the_runs_analysis": program["equals_the_runs_analysis"],
        }
    peak = peak_flops(target, PRECISION) or 0.0
    carried = carried_shares({name: p["family"] for name, p in programs.items()}, source, speed)
    by_model: dict[str, Any] = {}
    for model in MODELS:
        rates_fitted = {n: fitted_rate(p, target, speed, p["measured_step_s"], model) for n, p in programs.items()}
        # a program the model reaches only above the chip's peak rules the model out there: it calibrates nothing
        fitted = {n: rate for n, rate in rates_fitted.items() if rate <= peak}
        unreachable = {n: rate / peak for n, rate in rates_fitted.items() if rate > peak}
        pairs: dict[str, list[dict[str, Any]]] = {"chip": [], **{name: [] for name in CARRIED}}
        for name, program in programs.items():
            for anchor, rate in fitted.items():
                if anchor != name:
                    predicted = step(program, target, speed, rate, model)
                    found = pair(name, program, predicted, anchor, rate / peak)
                    pairs["chip"].append(found | {"same_family": programs[anchor]["family"] == program["family"]})
            for by in CARRIED:
                mine = carried[by][program["family"]]
                if (share := mine.get("share_of_peak")) is not None:
                    predicted = step(program, target, speed, share * peak, model)
                    pairs[by].append(pair(name, program, predicted, mine["calibrated_on"], share))
        within = [p for p in pairs["chip"] if p["same_family"]]
        by_model[model] = {
            "fitted_share_of_peak": {n: rate / peak for n, rate in fitted.items()},
            "unreachable": unreachable,
            "pairs": pairs,
            "errors": {source: errors(found) for source, found in pairs.items()},
            # each program from the other programs of its own model family only
            "chip_within_family": errors(within),
        }
    # a program's own family calibrates it, as on the GPUs (a rate fitted on a dense Llama is not an MoE's)
    chip_error = {model: by_model[model]["chip_within_family"].get("mean_abs") for model in MODELS}
    # the model whose terms lower the chip's leave-one-out error (within a family) most: a term is kept
    # only where it does
    kept = min(chip_error, key=lambda m: chip_error[m] if chip_error[m] is not None else float("inf"))
    kept_chip, kept_source = by_model[kept]["pairs"]["chip"], by_model[kept]["pairs"]["source"]
    return {
        "target": target.name,
        "status": "ok",
        "message": None,
        "precision": PRECISION,
        "peak_tflops": peak / 1e12,
        "setting": list(CENTRAL),
        "programs": {
            name: {k: p[k] for k in ("rows", "family", "measured_step_s", "measured_from", "equals_the_runs_analysis")}
            | {"model_tflops": p["model_flops"] / 1e12, "predicted": within_family(kept_chip, name)}
            | {"predicted_terms": terms(p, kept_chip, name, target, speed, peak, kept)}
            | p["summary"]
            for name, p in programs.items()
        },
        "carried": carried,
        # the source's calibration carried to this device, per family, under the kept model: the
        # measured carry experiments/validation.yaml records (calibrations.across_hardware.recorded_errors)
        "carry_errors": carried_errors(
            [p | {"family": programs[p["program"]]["family"], "precision": PRECISION} for p in kept_source],
            target.name,
        ),
        "models": by_model,
        # the model whose terms lower the chip's leave-one-out error (within a family) most: a term is
        # kept only where it does
        "kept_model": kept,
    }


def terms(
    program: dict[str, Any],
    pairs: list[dict[str, Any]],
    name: str,
    target: Target,
    speed: dict[str, Any],
    peak: float,
    model: str,
) -> dict[str, float] | None:
    """The kept model's step of the program in its terms (step_model.breakdown: compute, memory-bound,
    exposed host copies, ...), at each rate its family's other programs fit, the median of each; the
    measured profile's exposed copy time is set beside `exposed_host_copy_s`."""
    rates_of = [p["share_of_peak"] * peak for p in pairs if p["program"] == name and p["same_family"]]
    if not rates_of:
        return None
    found = [
        step_model.breakdown(program["events"][model], program["entry"], model_rates(target, speed, rate, model))
        for rate in rates_of
    ]
    return {term: statistics.median(b[term] for b in found) for term in found[0]}


def within_family(pairs: list[dict[str, Any]], program: str) -> dict[str, Any] | None:
    """The program's step as the other programs of its family predict it, each in turn: their
    median, lowest and highest, and their mean error; None where its family has no other program."""
    mine = [p for p in pairs if p["program"] == program and p["same_family"]]
    if not mine:
        return None
    steps = sorted(p["predicted_step_s"] for p in mine)
    return {
        "step_s": statistics.median(steps),
        "low": steps[0],
        "high": steps[-1],
        "n": len(steps),
        "mean_abs_error": statistics.fmean(abs(p["error"]) for p in mine),
        "error": mine[0]["error"] if len(mine) == 1 else None,
        "calibrated_on": mine[0]["calibrated_on"] if len(mine) == 1 else None,
    }


def pair(name: str, program: dict[str, Any], predicted_s: float, calibrated_on: str, share: float) -> dict[str, Any]:
    return {
        "program": name,
        "calibrated_on": calibrated_on,
        "share_of_peak": share,
        "predicted_step_s": predicted_s,
        "measured_step_s": program["measured_step_s"],
        "error": predicted_s / program["measured_step_s"] - 1,
    }
