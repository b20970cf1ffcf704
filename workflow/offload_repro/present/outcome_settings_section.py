"""The settings the source's outcomes chose: the search's record (experiments/outcome-settings.yaml)
as the page shows it, and the verdicts under them beside those under the defaults. It draws from the
record and the verdicts; it never searches or judges."""

from __future__ import annotations

from typing import Any

from offload_repro.core import optional_stages, outcome_settings
from offload_repro.core.data import Row


def rows_not_reproduced(record: dict[str, Any], rows: dict[str, Row]) -> list[dict[str, Any]]:
    """Each row the source ran whose outcome no candidate reproduces, with its best margin."""
    return [
        {"row": row, "label": rows[row].label if row in rows else row, "margin_gib": margin}
        for row, margin in (record.get("unmet") or {}).items()
    ]


def unpredicted(prediction: dict[str, Any] | None, rows: dict[str, Row]) -> list[dict[str, str]]:
    """Each model family the prediction could not calibrate at all, with why, in the words of its rows
    that have a published throughput (those a calibration is fitted on)."""
    if not prediction:
        return []
    calibrated = set(prediction.get("calibration") or {})
    found: dict[str, list[str]] = {}
    for entry in (prediction.get("uncalibrated") or {}).values():
        row = rows.get(entry["row"])
        if row and row.family not in calibrated and row.published.get("tflops_per_device") is not None:
            found.setdefault(row.family, []).append(entry["reason"])
    return [{"family": family, "reasons": reasons} for family, reasons in found.items()]


def outcome_settings_section(
    verdicts: dict[str, Any], rows: list[Row], prediction: dict[str, Any] | None = None
) -> dict[str, Any] | None:
    """What the page says of the settings the outcomes decided: the chosen alternatives and why,
    every candidate's margins, the rows no candidate reproduces, and the counts under both settings;
    None where nothing was searched or recorded."""
    declared = outcome_settings.load()
    record = declared["record"]
    if record is None:
        return None
    by_id = {row.id: row for row in rows}
    constrained = list(record["defaults"]["margins_gib"])
    outcomes = {row: by_id[row].published.get("outcome") for row in constrained if row in by_id}
    failing = [row for row, margin in record["defaults"]["margins_gib"].items() if margin is None or margin < 0]
    chosen = record["chosen"] or []
    return {
        "file": "experiments/outcome-settings.yaml",
        "command": optional_stages.command("infer"),
        "search": declared["search"],
        "recorded_on": record["recorded_on"],
        "constrained": constrained,
        "outcomes": outcomes,
        "failing": failing,
        "defaults": record["defaults"]["margins_gib"],
        "candidates": [
            c
            | {
                "in_view": [i["claim"] for i in outcome_settings.in_view(c["changes"])],
                "chosen": c["changes"] == chosen,
            }
            for c in record["candidates"]
        ],
        "chosen": chosen,
        "chosen_in_view": outcome_settings.in_view(chosen),
        "why": record["why"],
        "not_reproduced": rows_not_reproduced(record, by_id),
        # a family whose speed the model cannot predict under the choice (its calibration fails)
        "unpredicted": unpredicted(prediction, by_id),
        "headline": (verdicts.get("settings") or {}).get("headline", "defaults"),
        "finding_counts_defaults": (verdicts.get("under_defaults") or {}).get("finding_counts"),
        "differing": [
            {"id": c["id"], "chosen": c["verdict"], "defaults": c["under_defaults"]["verdict"]}
            for c in verdicts["claims"]
            if c.get("under_defaults") and c["under_defaults"]["verdict"] != c["verdict"] and c["kind"] != "check"
        ],
    }
