"""The assumptions section: each row's predicted step terms under every setting of an assumption."""

from __future__ import annotations

import json

from offload_repro.core.data import load_rows
from offload_repro.present.assumptions_section import steps_chart
from offload_repro.produce.whatif.alternatives import step_terms
from tests.conftest import FIXTURES, REPO

PREDICTED = FIXTURES / "results/predicted/gb200-nvl72.json"
ROWS = load_rows(sorted((REPO / "experiments/rows").glob("*.yaml")))


def test_a_predictions_step_terms_are_its_rows_central_breakdown():
    found = step_terms(PREDICTED)
    rows = json.loads(PREDICTED.read_text())["rows"]
    assert found == {row["row"]: row["breakdown"] for row in rows if row["status"] == "ok"}
    assert step_terms(None) == {}


def test_each_setting_of_an_assumption_gets_its_bar_per_row():
    default = step_terms(PREDICTED)
    rows = ["llama-baseline", "llama-qkv-offload-lhs"]
    slower = {
        row: {**terms, "exposed_collective_s": terms["exposed_collective_s"] + 1.0} for row, terms in default.items()
    }
    entry = {
        "id": "xla-rematerialization",
        "affects": rows,
        "alternatives": [{"id": "xla-default", "step_terms": slower}, {"id": "not-predicted", "step_terms": {}}],
    }
    chart = steps_chart(entry, default, ROWS)
    assert chart is not None and chart["id"] == "steps-xla-rematerialization"
    data = next(iter(json.loads(chart["spec"])["datasets"].values()))
    assert {(d["row"], d["setting"]) for d in data} == {(r, s) for r in rows for s in ("default", "xla-default")}
    collectives = {
        d["setting"]: d["seconds"]
        for d in data
        if d["row"] == "llama-baseline" and d["term"] == "exposed collectives (NVLink)"
    }
    assert collectives["xla-default"] - collectives["default"] == 1.0
    # an assumption no alternative of which was predicted draws nothing
    assert steps_chart({**entry, "alternatives": entry["alternatives"][1:]}, default, ROWS) is None


def test_an_assumptions_settings_read_as_words_the_schedulers_cost_model_too():
    from offload_repro.present.text import settings_text

    assert settings_text({"row": {"max_target_length": 2048}, "maxtext": {"capacity_factor": 1.25}}) == (
        "max_target_length 2048; MaxText capacity_factor 1.25"
    )
    assert settings_text({"latency_profile": "step-model"}) == "latency profile step-model"
    assert settings_text({"latency_profile": "none"}) == "latency profile none"
