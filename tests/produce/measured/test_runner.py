"""Outcome classification and metric summaries, on recorded text and synthetic metric files."""

from __future__ import annotations

import json

import pytest

from offload_repro.produce.measured import metrics
from offload_repro.produce.measured.runner import classify

GPU_OOM = (
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
    "34359738368 bytes.\nBufferAssignment OOM Debugging."
)


def test_complete_run_is_ok():
    assert classify(0, None, "completed step: 9", steps_done=10, steps=10) == "ok"


def test_out_of_memory_is_an_outcome_not_a_crash():
    assert classify(1, {"type": "XlaRuntimeError", "message": GPU_OOM}, "", steps_done=0, steps=10) == "oom"


def test_oom_found_in_the_log_when_no_exception_was_recorded():
    assert classify(1, None, "...\n" + GPU_OOM + "\n", steps_done=0, steps=10) == "oom"


def test_other_exceptions_killed_processes_and_short_runs_are_errors():
    assert classify(1, {"type": "ValueError", "message": "bad mesh"}, "", steps_done=0, steps=10) == "error"
    assert classify(-9, None, "", steps_done=3, steps=10) == "error"
    assert classify(0, None, "", steps_done=4, steps=10) == "error"  # even with status zero


def step(n: int, seconds: float, loss: float) -> dict:
    return {
        "step": float(n),
        metrics.STEP_TIME: seconds,
        metrics.TFLOPS: 1.0 / seconds,
        metrics.TOKENS: 100.0 / seconds,
        metrics.LOSS: loss,
        "perf/per_device_tflops": 1.0,
    }


def test_summary_takes_medians_after_warmup(tmp_path):
    path = tmp_path / "metrics.jsonl"
    records = [step(0, 5.0, 3.0), step(1, 2.0, 2.9), step(2, 0.5, 2.8), step(3, 0.25, 2.7), step(4, 1.0, 2.6)]
    path.write_text("\n".join(json.dumps(r) for r in reversed(records)) + "\n")
    summary = metrics.summarize(metrics.read_steps(path), warmup_steps=2)
    assert summary["steps_completed"] == 5
    assert summary["steps_timed"] == 3
    assert summary["step_time_s"] == 0.5
    assert summary["tflops_per_device"] == pytest.approx(2.0)
    assert summary["tokens_per_s_per_device"] == pytest.approx(200.0)
    assert summary["losses"] == [3.0, 2.9, 2.8, 2.7, 2.6]


def test_summary_of_a_run_that_never_got_past_warmup(tmp_path):
    summary = metrics.summarize([step(0, 5.0, 3.0)], warmup_steps=2)
    assert summary["steps_timed"] == 0 and "step_time_s" not in summary
    assert metrics.read_steps(tmp_path / "missing.jsonl") == []


@pytest.mark.slow
def test_each_repeat_is_its_own_run_and_the_row_keeps_their_median_and_spread(tables, tmp_path):
    from offload_repro.core.data import Target, load_rows, load_target
    from offload_repro.judge.observers import run_observations as observe
    from offload_repro.produce.measured.runner import run_row

    cpu = load_target("cpu")
    twice = Target(cpu.name, cpu.kind, cpu.launcher, {**cpu.spec, "repeats": 2})
    row = next(row for row in load_rows(tables) if row.id == "llama-baseline")
    result = run_row(row, twice, tmp_path / "llama-baseline.json", tmp_path / "work")
    assert result["status"] == "ok" and [r["repeat"] for r in result["repeats"]] == [1, 2]
    assert all((tmp_path / "work" / f"repeat-{n}" / "metrics.jsonl").exists() for n in (1, 2))
    per_repeat = [r["tflops_per_device"] for r in result["repeats"]]
    spread = result["spread"]["tflops_per_device"]
    assert spread["n"] == 2 and spread["low"] == min(per_repeat) and spread["high"] == max(per_repeat)
    assert result["tflops_per_device"] == sum(per_repeat) / 2  # the median of two
    assert result["provenance"]["wall_time_s"] == pytest.approx(sum(r["wall_time_s"] for r in result["repeats"]))
    (tflops,) = [o for o in observe(result, "x.json") if o.metric == "tflops_per_device"]
    assert (tflops.low, tflops.high, tflops.n) == (min(per_repeat), max(per_repeat), 2)
