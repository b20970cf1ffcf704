"""The validation stage's calibrations, keyed by GPU and precision (never by the file a run comes
from), and what it says of a run that nothing tests: the 22 published H100 runs, each replayed on
one program of lines copied from llama-qkv-offload-lhs's GB200 program (tests/fixtures/README.md),
so that the calibrations' bookkeeping, not the model's numbers, is what is checked."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from conftest import FIXTURES
from offload_repro.core.data import load_target
from offload_repro.core.measured_elsewhere import load_measured, load_validation
from offload_repro.core.published import load_speed
from offload_repro.produce.compiled import hlo_text
from offload_repro.produce.predicted import hlo_flops, hlo_schedule
from offload_repro.produce.validation import against_measured


@pytest.fixture(scope="module")
def program() -> dict:
    computations = hlo_text.parse((FIXTURES / "latency_profile.hlo").read_text())
    timeline = hlo_schedule.timelines(computations)
    events, ideal = hlo_schedule.schedules(computations, timeline)
    flops, _ = hlo_flops.count_flops(computations)
    return {
        "events": events,
        "ideal_events": ideal,
        "entry": hlo_text.entry_name(computations),
        "model_flops": 4e15,
        "flops": flops,
        "clones": {},
    }


def validated(monkeypatch, program: dict, runs: list) -> dict:
    """The runs validated against the model, each replayed on `program`, and carried (c) from the source's
    GB200 prediction kept in tests/fixtures, as the workflow always carries it."""
    monkeypatch.setattr(against_measured, "read_program", lambda result, shape, keep_parsed=False: program)
    compiled = {run.id: {"status": "ok", "fits": True, "program": {"key": "one"}} for run in runs}
    source = json.loads((FIXTURES / "results/predicted/gb200-nvl72.json").read_text())
    speed, gb200 = load_speed(), load_target("gb200-nvl72")
    return against_measured.validate_model(runs, compiled, speed, load_validation(), source, gb200)


def test_two_files_of_one_gpu_calibrate_as_one_group(program):
    """A second file of H100 runs (another cluster, another target file) joins H100's group of its
    precision: one rate per GPU and precision, not one per file."""
    runs = load_measured()
    elsewhere = replace(runs[0], id="another-cluster", target="h100-1")
    first = against_measured.Measured(runs[0], load_target("h100-sxm"), program)
    second = against_measured.Measured(elsewhere, load_target("h100-1"), program)
    assert first.group == second.group == ("NVIDIA H100", runs[0].precision)
    grouped = against_measured.groups({"a": first, "b": second})
    assert list(grouped.values()) == [[first, second]]


def test_a_calibrating_run_is_not_said_predicted_and_a_lone_run_carries_a_band(program, monkeypatch):
    """The run that calibrates (a) predicts its own step by construction: its error is not a result
    (never "+0.0%"), and the page reads why. A run alone on its GPU and precision says that nothing but
    (c) predicts it: the source's GB200 calibration carried by peaks, whose band is widened by the
    error such a carry was measured to have (experiments/validation.yaml), never left bare."""
    runs = load_measured()
    lone = min(runs, key=lambda run: run.gpus)
    result = validated(monkeypatch, program, [*runs, replace(lone, id="lone-run", target="h200-8")])  # one H200 run
    by_run = {line["run"]: line for line in result["runs"]}
    calibrators = {rate["calibrated_on"] for rate in result["fitted_rates"]}
    assert {rate["gpu"] for rate in result["fitted_rates"]} == {"NVIDIA H100", "NVIDIA H200"}
    for run_id, line in by_run.items():
        if run_id in calibrators:
            assert line["smallest"]["error"] is None and all(v is None for v in line["smallest"]["by_model"].values())
            assert line["untested"] and "calibrates" in line["untested"]
        else:
            assert line["smallest"]["error"] is not None and line["untested"] is None
    assert f"the only run of {lone.precision} on NVIDIA H200" in by_run["lone-run"]["untested"]
    assert by_run["lone-run"]["every_run"]["pairs"] == 0
    assert by_run["lone-run"]["every_run"]["mean_abs"] is None
    carried = by_run["lone-run"]["across_hardware"]
    error = load_validation()["calibrations"]["across_hardware"]["recorded_error"]["largest_abs"]
    steps = [step for step in carried["step_s"] if step]
    assert carried["band"] == {"error": error, "low_s": min(steps) / (1 + error), "high_s": max(steps) / (1 - error)}
    assert carried["band"]["low_s"] < carried["step_s"][0] < carried["band"]["high_s"]
