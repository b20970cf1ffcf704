"""The sensitivity stage: what each alternative to an unstated setting does to the compiled memory.

Each alternative of experiments/assumptions.yaml is compiled for the source's GB200 on the rows
it affects, one assumption at a time (rule `compile_variant`, a cached program each). This module
gathers them beside the default compiles into `results/whatif/assumptions.json` (kind
`assumptions`), and searches, over the alternatives, the combination whose compiled memory comes
closest to the source's two published DeepSeek memory figures: each assumption's best option
alone, then those options together (compiled once more, through the program cache). Beside each
candidate that was predicted, its step-time model's leave-one-out error against the source's
published throughputs: which setting explains the published speeds, and which explains speed and
memory together.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from offload_repro.core import memory
from offload_repro.core.assumptions import load_assumptions, variants
from offload_repro.core.data import Row, Target
from offload_repro.core.process import Launcher, run_subprocess
from offload_repro.core.results import read_result, write_result
from offload_repro.core.variants import combined_row, schedules_by_profile, variant_id
from offload_repro.produce.compiled.compiled_row import compiled_evidence


def summary(result: dict[str, Any], file: str | None) -> dict[str, Any]:
    """What a compile gave for one row: memory and fit, or why it did not compile."""
    if result["status"] != "ok":
        return {"status": "error", "message": result["message"], "file": file}
    return {
        "status": "ok",
        "message": None,
        "device_gib": round(memory.gib(result["device_bytes"]), 3),
        "host_gib": round(memory.gib(result["host_bytes"]), 3),
        "fits": result["fits"],
        "margin_gib": round(result["margin_gib"], 3),
        "file": file,
        # compiled again with XLA's default autotuning where level 0 found no kernel config, in its words
        "autotuning_fallback": result.get("autotuning_fallback"),
    }


def published_memory(rows: dict[str, Row]) -> dict[str, float]:
    """The rows whose GPU memory the source publishes: what the best fit is measured against."""
    return {r.id: r.published["device_gib"] for r in rows.values() if r.published.get("device_gib")}


def distance(found: dict[str, dict[str, Any]], published: dict[str, float]) -> float | None:
    """Root mean square of the relative deviations from the published figures (None if one is missing)."""
    deviations = []
    for row, value in published.items():
        entry = found.get(row)
        if not entry or entry.get("status") != "ok":
            return None
        deviations.append((entry["device_gib"] - value) / value)
    return math.sqrt(sum(d * d for d in deviations) / len(deviations)) if deviations else None


def best_fit(
    rows: dict[str, Row],
    target: Target,
    default: dict[str, dict[str, Any]],
    table: list[dict[str, Any]],
    programs: Path,
    work_dir: Path,
    launcher: Launcher = run_subprocess,
) -> dict[str, Any]:
    published = published_memory(rows)
    candidates = [{"combination": [], "rows": {r: default.get(r) for r in published}}]
    default_distance = distance(candidates[0]["rows"], published) or math.inf
    chosen = []
    for entry in table:
        if not set(entry["affects"]) & set(published):
            continue  # it cannot move a published figure
        options = [
            (alternative, {r: alternative["results"].get(r) or default.get(r) for r in published})
            for alternative in entry["alternatives"]
        ]
        options = [(alt, found) for alt, found in options if distance(found, published) is not None]
        candidates += [{"combination": [f"{entry['id']}.{alt['id']}"], "rows": found} for alt, found in options]
        best = min(options, key=lambda option: distance(option[1], published), default=None)
        # a profile-guided schedule is made for its row's default program, not for a combination's
        if best and not schedules_by_profile(best[0]["settings"]) and distance(best[1], published) < default_distance:
            chosen.append((entry, best[0]))
    if len(chosen) > 1:  # each assumption's best alone, then together: one compile per published row
        combination: dict[str, Any] = {}
        for row_id in published:
            row = combined_row(rows[row_id], chosen)
            result = compiled_evidence(row, target, work_dir / row_id, programs, launcher=launcher)
            combination[row_id] = summary(result, result["program"]["file"])
        candidates.append({"combination": [variant_id(a, alt) for a, alt in chosen], "rows": combination})
    for candidate in candidates:
        candidate["distance"] = distance(candidate["rows"], published)
        candidate["deviation_gib"] = {
            r: round(candidate["rows"][r]["device_gib"] - v, 3)
            for r, v in published.items()
            if (candidate["rows"].get(r) or {}).get("status") == "ok"
        }
    ranked = sorted((c for c in candidates if c["distance"] is not None), key=lambda c: c["distance"])
    return {"published_gib": published, "candidates": candidates, "best": ranked[0] if ranked else None}


def gather(
    rows: dict[str, Row],
    target: Target,
    default_files: list[Path],
    variant_files: list[Path],
    programs: Path,
    work_dir: Path,
) -> dict[str, Any]:
    default = {}
    for path in default_files:
        result = read_result(path, "compile")
        default[result["row"]] = summary(result, str(path))
    by_variant: dict[str, dict[str, Any]] = {}
    for path in variant_files:
        result = read_result(path, "compile")
        base = result["row"].split("@")[0]
        by_variant.setdefault(result["variant"]["id"], {})[base] = summary(result, str(path))
    table = []
    for entry in load_assumptions().values():
        if not entry.get("alternatives"):
            continue
        table.append(
            {
                "id": entry["id"],
                "sentence": entry["sentence"],
                "default": entry["default"],
                "affects": entry["affects"],
                "default_results": {r: default.get(r) for r in entry["affects"]},
                "alternatives": [
                    {
                        "id": alternative["id"],
                        "settings": alternative["settings"],
                        "why": alternative["why"],
                        "citation": alternative.get("citation"),
                        "results": by_variant.get(variant_id(entry, alternative), {}),
                    }
                    for alternative in entry["alternatives"]
                ],
            }
        )
    return {
        "target": target.name,
        "status": "ok",
        "message": None,
        "assumptions": table,
        "variants": len(variants()),
        "fit": best_fit(rows, target, default, table, programs, work_dir),
    }


def speed_error(prediction_file: str | Path | None) -> dict[str, Any] | None:
    """A prediction's leave-one-out error against the published throughputs, per model and in all."""
    if prediction_file is None:
        return None
    error = read_result(prediction_file, "predicted").get("model_error")
    if not error or error["mean_abs"] is None:
        return None
    return {
        "mean_abs": error["mean_abs"],
        "largest_abs": error["largest_abs"],
        "families": {
            family: {"mean_abs": f["mean_abs"], "largest_abs": f["largest_abs"]}
            for family, f in error["families"].items()
        },
    }


def step_terms(prediction_file: str | Path | None) -> dict[str, dict[str, float]]:
    """Each predicted row's step and the terms that make it, at the prediction's central setting."""
    if prediction_file is None:
        return {}
    rows = read_result(prediction_file, "predicted")["rows"]
    return {row["row"]: row["breakdown"] for row in rows if row["status"] == "ok" and row.get("breakdown")}


def speed_and_memory(fit: dict[str, Any], errors: dict[str, dict[str, Any] | None]) -> dict[str, Any] | None:
    """Each candidate's speed error beside its memory distance (a combination of several
    alternatives was not predicted), and the candidate best at both: the least root mean square of
    its memory distance and its mean absolute speed error, among those with an error for every model."""
    both = []
    for candidate in fit["candidates"]:
        key = "+".join(candidate["combination"])
        candidate["speed_error"] = errors.get(key) if len(candidate["combination"]) <= 1 else None
        complete = candidate["speed_error"] and all(
            f["mean_abs"] is not None for f in candidate["speed_error"]["families"].values()
        )  # a model left without a measured error (its rows out of memory) cannot be compared
        if complete and candidate["distance"] is not None:
            score = math.sqrt((candidate["distance"] ** 2 + candidate["speed_error"]["mean_abs"] ** 2) / 2)
            both.append((score, candidate))
    if not both:
        return None
    score, best = min(both, key=lambda pair: pair[0])
    return {"combination": best["combination"], "score": score}


def write_sensitivity(
    rows: list[Row],
    target: Target,
    default_files: list[Path],
    variant_files: list[Path],
    predicted_files: list[Path],
    out: Path,
    programs: Path,
    work_dir: Path,
    default_predicted: Path | None = None,
) -> dict[str, Any]:
    """The table of every alternative beside the defaults, and the best fit; `predicted_files`: each
    alternative's prediction of every row, `<variant>/predicted.json` (`default_predicted`: the
    defaults' own)."""
    data = gather({row.id: row for row in rows}, target, default_files, variant_files, programs, work_dir)
    predicted = {path.parent.name: str(path) for path in map(Path, predicted_files)}
    errors: dict[str, dict[str, Any] | None] = {"": speed_error(default_predicted)}
    for entry in data["assumptions"]:
        for alternative in entry["alternatives"]:
            key = variant_id(entry, alternative)
            alternative["predicted"] = predicted.get(key)
            alternative["speed_error"] = errors[key] = speed_error(predicted.get(key))
            alternative["step_terms"] = step_terms(predicted.get(key))
    data["default_step_terms"] = step_terms(default_predicted)
    data["default_speed_error"] = errors[""]
    data["fit"]["best_for_speed_and_memory"] = speed_and_memory(data["fit"], errors)
    return write_result(out, "assumptions", data)
