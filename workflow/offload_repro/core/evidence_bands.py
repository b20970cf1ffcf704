"""The measured bands of kinds of evidence (experiments/evidence-bands.yaml): where a run's figure lies,
given the figure this evidence gives. A band widens a figure before it is held to the claim's one
tolerance; it is never a second tolerance."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from offload_repro.core.data import DataError, validate
from offload_repro.core.files import REPO_ROOT, read_yaml

BANDS_FILE = "experiments/evidence-bands.yaml"
READS = ("experiments/evidence-bands.yaml",)  # read by a fixed path: the rules take it as an input


@cache
def load_bands(path: Path = REPO_ROOT / BANDS_FILE) -> dict[str, dict[str, Any]]:
    data = validate(read_yaml(path), "evidence_bands", BANDS_FILE)
    for name, band in data["bands"].items():
        for gap in band["gaps"]:
            if gap["low"] > gap["high"]:
                where = f"{BANDS_FILE}: bands.{name}, gap '{gap['id']}'"
                raise DataError(f"{where}: field 'low': {gap['low']} is above 'high' {gap['high']}")
    return data["bands"]


def band(name: str | dict[str, Any], where: str) -> dict[str, Any]:
    """The band `name` (one read already passes as it is); a DataError naming `where` (the file and
    entry that asked for it) if none is."""
    if isinstance(name, dict):
        return name
    bands = load_bands()
    if name not in bands:
        raise DataError(f"{where}: no band '{name}' in {BANDS_FILE}; known: {sorted(bands)}")
    return {"name": name, **bands[name]}


def span(found: dict[str, Any], figure: float) -> tuple[float, float]:
    """Where a run's figure lies, given this evidence's `figure` (GiB): each gap applied in turn, in
    the file's order, its lowest value for the low end and its highest for the high end."""
    low = high = figure
    for gap in found["gaps"]:
        if gap["unit"] == "GiB":
            low, high = low + gap["low"], high + gap["high"]
        else:
            low, high = low * (1 + gap["low"]), high * (1 + gap["high"])
    return low, high
