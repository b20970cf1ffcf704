"""The assumptions section: each setting of an assumption read as words."""

from __future__ import annotations

from offload_repro.present.text import settings_text


def test_an_assumptions_settings_read_as_words_the_schedulers_cost_model_too():
    assert settings_text({"row": {"max_target_length": 2048}, "maxtext": {"capacity_factor": 1.25}}) == (
        "max_target_length 2048; MaxText capacity_factor 1.25"
    )
    assert settings_text({"latency_profile": "step-model"}) == "latency profile step-model"
    assert settings_text({"latency_profile": "none"}) == "latency profile none"
