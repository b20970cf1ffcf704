"""What the pair-error stage's result (results/predicted/pair-errors.json) gives the verdicts: each
speed claim's record (the error on ratios of its kind of pair, its rows' regime against the chip's
measured range), and the pairs of the source's rows where the model's ratio has the other sign from
the post's, under every calibration outside the pair."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from offload_repro.core.results import read_result


def read_pairs(path: str | Path | None) -> dict[str, Any] | None:
    """The pair-error stage's result, read once; None without it."""
    return read_result(path, "pair-errors") if path else None


def ratio_records(result: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Each speed claim's record, by claim id; none without the result."""
    return {record["claim"]: record for record in (result or {}).get("claims", [])}


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def sign_disagreements(result: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Per pair of the source's rows with a published ratio: where the kept model's predicted ratio has
    the other sign under every calibration outside the pair (under every calibration where none is
    outside), with the published ratio and the predictions' range; [] without the result."""
    if result is None:
        return []
    model = result["kept_model"]
    grouped: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for line in result["pairs"]:
        if line["set"] == "source" and model in line["by_model"]:
            grouped.setdefault((line["first"], line["second"]), []).append(line)
    found = []
    for (first, second), lines in grouped.items():
        outside = [line for line in lines if line["calibration_outside_pair"]] or lines
        predicted = [line["by_model"][model]["predicted"] for line in outside]
        published = outside[0]["measured"]
        if all(_sign(value) != _sign(published) for value in predicted):
            found.append(
                {
                    "target": outside[0].get("target"),
                    "family": outside[0]["family"],
                    "first": first,
                    "second": second,
                    "published": published,
                    "predicted_low": min(predicted),
                    "predicted_high": max(predicted),
                    "calibrated_on": sorted({row for line in outside for row in line["calibrated_on"]}),
                    "model": model,
                }
            )
    return found
