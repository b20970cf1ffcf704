"""A device's pairs, kept as data: every two programs one chip ran for the rows
(experiments/device-results/<target>/programs) of one family and one scale, and every two points of
one regime of its placement-pair sweep (experiments/device-results/<target>/sweep/points). A pair's
prediction takes no measured value of its own pair: the rate is fitted on each other program (point)
of its family in turn, or of the other family where its family has none (said so), and the pair's
prediction is their median, with the lowest and highest (produce/predicted/pair_errors.py sets them
beside the source's pairs)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from itertools import combinations
from pathlib import Path
from typing import Any

from offload_repro.core import maxtext_args
from offload_repro.core.data import Row, Target
from offload_repro.core.files import read_json
from offload_repro.core.results import read_result
from offload_repro.produce.predicted import device_prediction, regime
from offload_repro.produce.predicted.pair_record import MODELS, PLACEMENTS, compared, ordered
from offload_repro.produce.predicted.prediction import placement_kind
from offload_repro.produce.predicted.target_rates import peak_flops

# --- the chip's programs: its rows' and its sweep's points ----------------------------------------


def measured_program(
    name: str, path: Path, family: str, kind: str, step_s: float, model_tflops: float, rows: list[str], copy: float
) -> dict[str, Any]:
    """One program the chip ran, as the pairs read it: its replayable events under each model and what
    it measured."""
    return device_prediction.read_program(path) | {
        "name": name,
        "family": family,
        "placement_kind": kind,
        "measured_step_s": step_s,
        "model_flops": model_tflops * 1e12,
        "rows": rows,
        "regime": copy,
    }


def chip_rows(target: Target, kept: Path, rows: dict[str, Row], speed: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each program the chip's rows ran with a measured step, at the chip's scale."""
    listed = read_json(kept / "programs" / "programs.json")["programs"]
    runs = {path.stem: read_result(path, "run") for path in sorted((kept / "runs").glob("*.json"))}
    found = {}
    for name, program in listed.items():
        measured = [runs[row] for row in program["rows"] if row in runs and runs[row].get("step_time_s")]
        if program["status"] != "ok" or not measured:
            continue  # refused, or never ran a step
        row = rows[name]  # a program is named by its first row
        copy = regime.row_regime(row, maxtext_args.target_overrides(row, target), target, speed, "bfloat16")
        found[name] = measured_program(
            name,
            kept / "programs" / f"{name}.hlo.gz",
            row.family,
            placement_kind(row),
            measured[0]["step_time_s"],
            measured[0]["model_tflops_per_step_per_device"],
            program["rows"],
            copy.copy_to_compute,
        )
    return found


def sweep_points(target: Target, kept: Path, rows: dict[str, Row], speed: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each point of the chip's sweep that trained, with its scheduled program and MaxText's FLOP count;
    none where no sweep is kept."""
    folder = kept / "sweep"
    found = {}
    for path in sorted((folder / "points").glob("*.json")):
        point = read_result(path, "sweep-point")
        if point["status"] != "ok" or not point.get("hlo") or not point.get("model_tflops_per_step_per_device"):
            continue
        row = rows[point["row"]]
        config = maxtext_args.target_overrides(row, target) | point["overrides"]
        copy = regime.row_regime(row, config, target, speed, "bfloat16")
        found[point["point"]] = measured_program(
            point["point"],
            folder / point["hlo"],
            row.family,
            placement_kind(row),
            point["step_time_s"],
            point["model_tflops_per_step_per_device"],
            [point["row"]],
            copy.copy_to_compute,
        ) | {"scale": point["regime"]}
    return found


def chip_pairs(
    programs: dict[str, dict[str, Any]],
    target: Target,
    speed: dict[str, Any],
    scale: Callable[[dict[str, Any]], Any],
    what: str,
) -> list[dict[str, Any]]:
    """Every two programs of one family and scale, first over second (ordered): the measured throughput
    ratio, and the predicted one under each model from each rate fitted on a program outside the pair
    (of its family; of the other where its family has none)."""
    peak = peak_flops(target, device_prediction.PRECISION) or 0.0

    def rate_of(program: dict[str, Any], model: str) -> float | None:
        """The compute rate the model fits on the program's measured step; None where the model's
        own transfers already take longer than that step (it can calibrate nothing there)."""
        try:
            return device_prediction.fitted_rate(program, target, speed, program["measured_step_s"], model)
        except ValueError:
            return None

    fitted = {
        model: {name: rate for name, p in programs.items() if (rate := rate_of(p, model)) is not None and rate <= peak}
        for model in MODELS
    }
    listed = list(programs)
    lines = []
    for a, b in combinations(listed, 2):
        pa, pb = programs[a], programs[b]
        if pa["family"] != pb["family"] or scale(pa) != scale(pb):
            continue
        first, second = ordered((a, pa["placement_kind"]), (b, pb["placement_kind"]), listed)
        p1, p2 = programs[first], programs[second]
        measured = (p1["model_flops"] / p1["measured_step_s"]) / (p2["model_flops"] / p2["measured_step_s"]) - 1
        by_model, used = {}, {}
        for model in MODELS:
            outside = {n: r for n, r in fitted[model].items() if n not in (a, b)}
            own = {n: r for n, r in outside.items() if programs[n]["family"] == pa["family"]}
            chosen = own or outside
            if not chosen:
                continue
            values = []
            for rate in chosen.values():
                s1 = device_prediction.step(p1, target, speed, rate, model)
                s2 = device_prediction.step(p2, target, speed, rate, model)
                values.append((p1["model_flops"] / s1) / (p2["model_flops"] / s2) - 1)
            by_model[model] = compared(statistics.median(values), measured) | {"low": min(values), "high": max(values)}
            used[model] = {"calibrated_on": sorted(chosen), "same_family": bool(own)}
        if not by_model:
            continue
        full = used.get("full") or next(iter(used.values()))
        lines.append(
            {
                "kind": PLACEMENTS,
                "set": what,
                "family": pa["family"],
                "first": first,
                "second": second,
                "rows": [*p1["rows"][:1], *p2["rows"][:1]],
                "placements": [p1["placement_kind"], p2["placement_kind"]],
                "measured": measured,
                "measured_how": "measured",
                "scale": scale(pa),
                "calibrated_on": full["calibrated_on"],
                "calibration_outside_pair": True,
                "calibration_same_family": full["same_family"],
                "regime": max(p1["regime"], p2["regime"]),
                "by_model": by_model,
            }
        )
    return lines


def chip_lines(
    device: Target, kept: Path, rows: dict[str, Row], speed: dict[str, Any]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """A device's pairs: its rows' programs at one scale (the same model FLOPs per step) and its sweep's
    points within one regime; with what was read."""
    programs = chip_rows(device, kept, rows, speed) if (kept / "programs" / "programs.json").exists() else {}
    points = sweep_points(device, kept, rows, speed)
    lines = chip_pairs(programs, device, speed, lambda p: round(p["model_flops"]), "chip_rows")
    lines += chip_pairs(points, device, speed, lambda p: p["scale"], "sweep")
    read = {
        "programs": sorted(programs),
        "sweep_points": sorted(points),
        "sweep_folder": str(kept / "sweep") if (kept / "sweep" / "points").is_dir() else None,
    }
    return lines, read
