"""The latency profile written from the step-time model's costs (produce/predicted/model_profile.py),
on lines copied from llama-qkv-offload-lhs's GB200 program (tests/fixtures/README.md)."""

from __future__ import annotations

import re

import pytest

from conftest import CLAIMS, FIXTURES
from offload_repro.core.data import DataError, load_target
from offload_repro.core.published import load_speed
from offload_repro.produce.compiled import hlo_text
from offload_repro.produce.compiled.program_cache import profile_matched
from offload_repro.produce.predicted import hlo_schedule, model_profile, step_model

PROGRAM = (FIXTURES / "latency_profile.hlo").read_text()
NVLINK = 700e9  # bytes per second of bus bandwidth: a round number near GB200's measured share
HBM = 7e12
RATES = step_model.Rates(1e15, collective_bytes_per_s=NVLINK, hbm_bytes_per_s=HBM)


@pytest.fixture(scope="module")
def scheduled() -> dict:
    """The program parsed and scheduled, as model_profile.read_program gives it."""
    computations = hlo_text.parse(PROGRAM)
    timeline = hlo_schedule.timelines(computations)
    events, ideal = hlo_schedule.schedules(computations, timeline)
    return {
        "events": events,
        "ideal_events": ideal,
        "entry": hlo_text.entry_name(computations),
        "model_flops": 1e15,
        "computations": computations,
        "timeline": timeline,
        "fingerprint": model_profile.fingerprint(PROGRAM),
    }


@pytest.fixture(scope="module")
def costs(scheduled) -> dict[str, float]:
    """Each instruction's cost in microseconds, by name."""
    return model_profile.instruction_costs(scheduled["computations"], scheduled["timeline"], scheduled["events"], RATES)


def test_the_fingerprint_is_the_one_xla_printed_before_scheduling():
    assert model_profile.fingerprint(PROGRAM) == "6e4d72fd1cbd9e4f3431442c71c8be48"
    with pytest.raises(DataError, match="fingerprint_before_lhs"):
        model_profile.fingerprint(PROGRAM.split("\n", 1)[1])  # the module line removed


def test_a_weight_all_gather_costs_its_gathered_bytes_over_the_link(costs):
    """One layer's MLP weight, bf16 [16384,53248] gathered over 128 GPUs: each GPU receives 127/128 of
    the whole matrix (1.74 GB, the weight's own bytes), at 700 GB/s about 2.47 ms. Its done costs
    nothing of its own: XLA takes a start's cost as the latency to its done."""
    weight_bytes = 16384 * 53248 * 2
    assert costs["all-gather-start.1"] == pytest.approx(weight_bytes * 127 / 128 / NVLINK * 1e6)
    assert 2400 < costs["all-gather-start.1"] < 2500
    assert "all-gather-done.1" not in costs


def test_a_combined_gradient_reduce_scatter_moves_about_a_layers_weight_bytes(costs):
    """The layer's combined reduce-scatter carries five gradients: the MLP matrix and four attention
    projections, about a layer's bf16 weights (physical bound: a step's gradients move the weights'
    bytes), 127/128 of them over the link."""
    gradients = 2 * (16384 * 53248 + 2 * 16384 * 128 * 8 + 2 * 16384 * 128 * 128)
    assert costs["reduce-scatter-start.1"] == pytest.approx(gradients * 127 / 128 / NVLINK * 1e6)


def test_a_loop_costs_its_trips_times_its_bodys_replay_which_no_overlap_makes_longer_than_its_parts(scheduled, costs):
    events = scheduled["events"]
    body = next(e.body for e in events[scheduled["entry"]] if e.kind == "loop")
    replayed = step_model.Replay(events, RATES).computation(body)
    assert costs["while.43"] == pytest.approx(126 * replayed * 1e6)
    parts = sum(cost for name, cost in costs.items() if name != "while.43")
    assert max(costs["all-gather-start.1"], costs["reduce-scatter-start.1"]) <= replayed * 1e6 <= parts


def test_the_profile_is_text_xla_reads_each_entry_named_for_its_program(costs):
    text = model_profile.profile_text("6e4d72fd1cbd9e4f3431442c71c8be48", costs)
    entry = re.compile(r'^costs \{ name: "6e4d72fd1cbd9e4f3431442c71c8be48::([^"]+)" cost_us: (\d+\.\d{3}) \}$')
    lines = text.splitlines()
    assert len(lines) == len(costs) and all(entry.match(line) for line in lines)
    read = {entry.match(line).group(1): float(entry.match(line).group(2)) for line in lines}
    assert read == pytest.approx(costs, abs=1e-3)


def test_what_xla_says_it_matched_is_read_from_its_log():
    """XLA's own lines (GB200 compiles with a profile, tests/fixtures/README.md): it reads the profile
    for every module it schedules; the train step is the one it found most of. It says nothing where
    it missed nothing."""
    log = (FIXTURES / "latency_profile.log").read_text()
    assert profile_matched(log) == {"found": 319, "missing": 14}
    assert profile_matched("I1202 nothing about a profile") is None


def test_a_row_whose_family_no_published_throughput_calibrates_gets_no_profile_and_says_why(
    tmp_path, monkeypatch, rows, scheduled
):
    """A run of a few rows may hold no published throughput of a family: its rows get no profile
    (their profile-guided compile then fails, saying XLA found none of their instructions), and the
    profile file says why, instead of the whole stage stopping."""
    monkeypatch.setattr(model_profile, "read_program", lambda result, shape, keep_parsed: scheduled)
    out = tmp_path / "profile.pbtxt"
    compiled = [{"row": "deepseek-device-mb2", "status": "ok"}]
    target = load_target("gb200-nvl72")
    record = model_profile.write_profile([rows["deepseek-device-mb2"]], target, compiled, out, load_speed(), CLAIMS)
    assert record == {
        "deepseek-device-mb2": {
            "skipped": "no published throughput of family 'deepseek' calibrates the model within its dense peak"
        }
    }
    assert out.read_text() == f"# deepseek-device-mb2: no profile: {record['deepseek-device-mb2']['skipped']}\n"
