"""The throughputs the source publishes or implies, per model family: each row's published one, and
those a published speedup implies for rows the source gives none (experiments/speed.yaml's
leave_one_out, with experiments/claims.yaml). Read from the data files alone, so that the predictions
and every page give the same values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from offload_repro.core.data import DataError, Row, validate
from offload_repro.core.files import read_yaml

CLAIMS_FILE = "experiments/claims.yaml"
SPEED_FILE = "experiments/speed.yaml"
READS = ("experiments/speed.yaml",)  # SPEED_FILE, as the plan reads it; the claims reach a page through its verdicts


def load_speed(path: str | Path = SPEED_FILE) -> dict[str, Any]:
    return validate(read_yaml(path), "speed", path)


def published_throughputs(
    rows: dict[str, Row], speed: dict[str, Any], claims_file: str | Path = CLAIMS_FILE
) -> dict[str, dict[str, dict[str, Any]]]:
    """Per family, every throughput of experiments/speed.yaml's leave_one_out: its value and what
    it derives from (its own row; for an implied one also the claim and that claim's first row)."""
    claims = {claim["id"]: claim for claim in read_yaml(claims_file)["claims"]}
    found: dict[str, dict[str, dict[str, Any]]] = {}
    for family, entries in speed["leave_one_out"].items():
        for entry in entries:
            row = rows.get(entry["row"])
            if row is None:
                continue
            if "from_claim" not in entry:
                if value := row.published.get("tflops_per_device"):
                    found.setdefault(family, {})[row.id] = {"tflops": value, "sources": [row.id], "how": "published"}
                continue
            if (claim := claims.get(entry["from_claim"])) is None:
                raise DataError(
                    f"{SPEED_FILE}: leave_one_out {family}, row {row.id}, field 'from_claim':"
                    f" no claim '{entry['from_claim']}' in {claims_file}"
                )
            faster = rows.get(claim["check"]["rows"][0])
            if base := faster and faster.published.get("tflops_per_device"):
                found.setdefault(family, {})[row.id] = {
                    "tflops": base / (1 + claim["published"]),
                    "sources": [row.id, faster.id, claim["id"]],
                    "how": f"{faster.id}'s {base:g} over 1 + {claim['published']:g} ({claim['id']})",
                }
    return found
