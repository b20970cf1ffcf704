"""The sensitivity stage: what each alternative to an unstated setting does to the compiled memory.

Each alternative of experiments/assumptions.yaml is compiled for the source's GB200 on the rows
it affects, one assumption at a time (rule `compile_variant`, a cached program each). This module
gathers them beside the default compiles into `results/whatif/assumptions.json` (kind
`assumptions`), with, beside each alternative that was predicted, its step-time model's
leave-one-out error against the source's published throughputs: which setting explains the
published speeds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from offload_repro.core import memory
from offload_repro.core.assumptions import load_assumptions, variants
from offload_repro.core.data import Target
from offload_repro.core.results import read_result, write_result
from offload_repro.core.variants import variant_id


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


def gather(target: Target, default_files: list[Path], variant_files: list[Path]) -> dict[str, Any]:
    defaults = [(read_result(path, "compile"), str(path)) for path in default_files]
    default = {result["row"]: summary(result, path) for result, path in defaults}
    by_variant: dict[str, dict[str, Any]] = {}
    for path in variant_files:
        result = read_result(path, "compile")
        base = result["row"].split("@")[0]
        by_variant.setdefault(result["variant"]["id"], {})[base] = summary(result, str(path))
    table = [
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
        for entry in load_assumptions().values()
        if entry.get("alternatives")
    ]
    return {"target": target.name, "status": "ok", "message": None, "assumptions": table, "variants": len(variants())}


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


def write_sensitivity(
    target: Target,
    default_files: list[Path],
    variant_files: list[Path],
    predicted_files: list[Path],
    out: Path,
    default_predicted: Path | None = None,
) -> dict[str, Any]:
    """The table of every alternative beside the defaults; `predicted_files`: each alternative's
    prediction of every row, `<variant>/predicted.json` (`default_predicted`: the defaults' own)."""
    data = gather(target, default_files, variant_files)
    predicted = {path.parent.name: str(path) for path in map(Path, predicted_files)}
    for entry in data["assumptions"]:
        for alternative in entry["alternatives"]:
            key = variant_id(entry, alternative)
            alternative["predicted"] = predicted.get(key)
            alternative["speed_error"] = speed_error(predicted.get(key))
    data["default_speed_error"] = speed_error(default_predicted)
    return write_result(out, "assumptions", data)
