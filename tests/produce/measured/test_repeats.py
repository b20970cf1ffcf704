"""Repeats of one row: medians, each repeat kept, and the spread the observations carry."""

from __future__ import annotations

import json

import pytest

from conftest import RESULTS
from offload_repro.core.results import read_result, write_result
from offload_repro.judge.observers import run_observations
from offload_repro.produce.measured.repeats import aggregate


def repeat(step: float | None, tflops: float | None, tokens: float | None, wall: float) -> dict:
    return {"step_time_s": step, "tflops_per_device": tflops, "tokens_per_s_per_device": tokens, "wall_time_s": wall}


# Three runs of Llama 3.1 405B, QKV offload + LHS, at the scale of the source's GB200 numbers.
THREE = [
    repeat(19.87, 2746.3, 331.2, 1412.0),
    repeat(20.09, 2716.1, 327.6, 1398.5),
    repeat(19.77, 2760.4, 332.9, 1420.2),
]


def test_three_repeats_give_medians_each_repeat_and_the_spread():
    result = aggregate(THREE)
    assert [r["repeat"] for r in result["repeats"]] == [1, 2, 3]
    assert result["repeats"][1] == {"repeat": 2, **THREE[1]}
    assert result["tflops_per_device"] == 2746.3 and result["step_time_s"] == 19.87
    assert result["tokens_per_s_per_device"] == 331.2
    tflops = result["spread"]["tflops_per_device"]
    relative = pytest.approx((2760.4 - 2716.1) / 2746.3)
    assert tflops == {"median": 2746.3, "low": 2716.1, "high": 2760.4, "relative": relative, "n": 3}
    assert tflops["relative"] == pytest.approx(0.01613, abs=1e-5)


def test_an_even_count_takes_the_mean_of_the_middle_two():
    result = aggregate(THREE[:2])
    assert result["tflops_per_device"] == pytest.approx((2746.3 + 2716.1) / 2)
    assert result["step_time_s"] == pytest.approx(19.98)
    assert result["spread"]["step_time_s"]["relative"] == pytest.approx(0.22 / 19.98)


def test_a_failed_repeat_is_kept_but_not_counted():
    failed = repeat(None, None, None, 61.3)  # OOM at the first step: only its wall time
    result = aggregate([THREE[0], failed, THREE[2]])
    assert result["repeats"][1] == {"repeat": 2, **failed}
    assert result["spread"]["tflops_per_device"]["n"] == 2
    assert result["tflops_per_device"] == pytest.approx((2746.3 + 2760.4) / 2)
    partial = aggregate([repeat(19.87, None, 331.2, 1412.0), repeat(20.09, 2716.1, 327.6, 1398.5)])
    assert partial["spread"]["tflops_per_device"]["n"] == 1 and partial["spread"]["step_time_s"]["n"] == 2
    nothing = aggregate([failed])
    assert "tflops_per_device" not in nothing and nothing["spread"] == {}


def test_one_repeat_has_no_width():
    result = aggregate([THREE[0]])
    assert result["tflops_per_device"] == 2746.3
    one = {"median": 2746.3, "low": 2746.3, "high": 2746.3, "relative": 0, "n": 1}
    assert result["spread"]["tflops_per_device"] == one


def test_a_run_with_repeats_is_a_valid_run_file_and_observations_carry_the_spread(tmp_path):
    run = json.loads((RESULTS / "cpu/runs/llama-qkv-offload-lhs.json").read_text())
    run = {key: value for key, value in run.items() if key not in ("kind", "schema_version")}
    path = tmp_path / "run.json"
    write_result(path, "run", run | aggregate(THREE))
    result = read_result(path, "run")
    assert result["tflops_per_device"] == 2746.3 and len(result["repeats"]) == 3

    observed = {(o.metric, o.at): o for o in run_observations(result, str(path))}
    tflops, step, loss = (observed[(metric, None)] for metric in ("tflops_per_device", "step_time_s", "final_loss"))
    assert (tflops.value, tflops.low, tflops.high, tflops.n) == (2746.3, 2716.1, 2760.4, 3)
    assert (step.value, step.low, step.high, step.n) == (19.87, 19.77, 20.09, 3)
    assert (loss.low, loss.high, loss.n) == (None, None, None)
    plain = {(o.metric, o.at): o for o in run_observations(run | {"kind": "run"}, "run.json")}
    assert plain[("tflops_per_device", None)].n is None  # a run without repeats carries no spread
