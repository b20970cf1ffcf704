"""The appendix's section on the step-time model's error on ratios (results/predicted/pair-errors.json):
per kind of pair, set and model family, the error with and without each term; every pair's predicted
ratio beside the measured or published one; where each speed claim's rows sit against the regimes
the chip measured. It selects and orders what the result holds; it computes no error of its own."""

from __future__ import annotations

from typing import Any

# The sets of pairs a summary is over, in the order a reader weighs them, each in a few words.
SETS = {
    "chip": "measured on the chip: its rows and its sweep",
    "sweep": "the chip's placement-pair sweep alone",
    "chip_rows": "the chip's rows alone",
    "source_calibrated_outside_pair": "the source's published pairs, calibrated outside the pair",
    "source": "the source's published pairs, under every calibration",
}
MODEL_WORDS = {
    "full": "the full model",
    "no_host_copies": "without the host-copy term",
    "serial_copies": "without the overlap term (copies serialised)",
}


def _summary_lines(kind: str, summaries: dict[str, Any]) -> list[dict[str, Any]]:
    lines = []
    for name, words in SETS.items():
        for family, found in (summaries.get(name) or {}).get("by_family", {}).items():
            if found["by_model"]:
                lines.append({"kind": kind, "set": name, "words": words, "family": family, **found})
    return lines


def section(result: dict[str, Any] | None) -> dict[str, Any] | None:
    """What the template shows; None where the stage did not run."""
    if result is None:
        return None
    summaries = result["summaries"]
    lines = _summary_lines("placements at one scale", summaries["placements at one scale"])
    flags = summaries.get("flags at one placement") or {}
    if flags.get("by_model"):
        lines.append(
            {
                "kind": "flags at one placement",
                "set": "source",
                "words": "the source's published pairs",
                "family": "all",
                **flags,
            }
        )
    scales = summaries["scales at one placement"]
    kept = result["kept_model"]
    # where dropping a term of the kept model lowers the mean error: the term does not earn its place there
    raises = [
        {"without": MODEL_WORDS[model], "line": line, "mean": values["mean_abs_pp"], "kept_mean": kept_mean}
        for line in lines
        if (kept_mean := (line["by_model"].get(kept) or {}).get("mean_abs_pp")) is not None
        for model, values in line["by_model"].items()
        if model != kept and values["mean_abs_pp"] < kept_mean
    ]
    return {
        "kept_model": kept,
        "raises": raises,
        "models": MODEL_WORDS,
        "summaries": lines,
        "scales": scales,
        # two scales of one placement as recorded, where the validation stage did not compute them here
        "scales_recorded": next(
            (entry for entry in result.get("record", []) if entry["set"] == "runs_elsewhere"), None
        ),
        "pairs": sorted(
            result["pairs"],
            key=lambda p: (p["kind"], p["set"], p["family"], p.get("regime") or 0.0, p["id"]),
        ),
        "claims": result["claims"],
        "chip_range": result["regimes"]["chip_range"],
    }
