"""What the page says of the settings the source's outcomes chose: drawn from the search's record
and the verdicts under both settings, never searched or judged here."""

from __future__ import annotations

import pytest

from conftest import REPO
from offload_repro.core import outcome_settings
from offload_repro.core.data import load_rows
from offload_repro.present import outcome_settings_section as section

ROWS = load_rows(sorted((REPO / "experiments/rows").glob("*.yaml")))
MARGINS = {"deepseek-remat": -4.83, "deepseek-offload-optimized": -0.91, "deepseek-device-mb8": 143.12}


def recorded(monkeypatch, **record) -> None:
    declared = outcome_settings.load()
    body = {"recorded_on": "2026-12-07", "defaults": {"margins_gib": MARGINS}, "candidates": [], "chosen": None}
    monkeypatch.setattr(section.outcome_settings, "load", lambda: declared | {"record": body | record})


def verdict(claim_id: str, verdict: str, defaults: str | None = None, kind: str = "value") -> dict:
    found = {"id": claim_id, "kind": kind, "verdict": verdict}
    if defaults:
        found["under_defaults"] = {"verdict": defaults, "counted_as": defaults, "evidence": "compiled"}
    return found


def test_nothing_is_shown_before_a_search_is_recorded(monkeypatch):
    declared = outcome_settings.load()
    monkeypatch.setattr(section.outcome_settings, "load", lambda: declared | {"record": None})
    assert section.outcome_settings_section({"claims": []}, ROWS) is None


def test_the_choice_its_candidates_marks_and_the_verdicts_it_changes(monkeypatch):
    fsdp = "deepseek-parallelism.fsdp-over-experts"
    candidates = [
        {"changes": [fsdp], "round": "single", "margins_gib": {"deepseek-remat": 13.59}, "holds": True},
        {"changes": ["remat-device-flags.lhs-off"], "round": "single", "margins_gib": {}, "holds": False},
    ]
    recorded(monkeypatch, candidates=candidates, chosen=[fsdp], why="1 candidate meets every constraint")
    verdicts = {
        "settings": {"chosen": [fsdp], "headline": "chosen"},
        "under_defaults": {"finding_counts": {"pass": 3, "fail": 2}},
        "claims": [verdict("plain-memory", "pass", "fail"), verdict("gain", "inconclusive", "inconclusive")],
    }
    found = section.outcome_settings_section(verdicts, ROWS)
    assert found["chosen"] == [fsdp] and found["headline"] == "chosen"
    assert found["failing"] == ["deepseek-remat", "deepseek-offload-optimized"]
    # found while explaining plain offload's memory: the page keeps that mark wherever it decides
    assert found["candidates"][0]["in_view"] == ["deepseek-plain-gpu-memory"] and found["candidates"][0]["chosen"]
    assert [i["claim"] for i in found["chosen_in_view"]] == ["deepseek-plain-gpu-memory"]
    assert found["differing"] == [{"id": "plain-memory", "chosen": "pass", "defaults": "fail"}]
    assert found["finding_counts_defaults"] == {"pass": 3, "fail": 2}
    assert found["outcomes"]["deepseek-device-mb8"] == "oom"


def test_a_row_the_source_ran_that_fits_under_no_candidate_is_named_with_its_best_margin(monkeypatch):
    recorded(monkeypatch, unmet={"deepseek-remat": -2.08}, why="No candidate of the 14 tried meets every constraint")
    found = section.outcome_settings_section({"claims": []}, ROWS)
    assert found["chosen"] == [] and found["not_reproduced"] == [
        {"row": "deepseek-remat", "label": "Activation remat (mb 8)", "margin_gib": pytest.approx(-2.08)}
    ]
