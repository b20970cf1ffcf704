"""Outcome classification and metric summaries, on recorded text and synthetic metric files."""

from __future__ import annotations

import json

import pytest

from offload_repro.core.data import Target, load_target
from offload_repro.core.files import read_json
from offload_repro.judge.observers import run_observations
from offload_repro.produce.measured import metrics
from offload_repro.produce.measured.runner import classify, run_row

GPU_OOM = (
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
    "34359738368 bytes.\nBufferAssignment OOM Debugging."
)


@pytest.mark.parametrize(
    ("returncode", "exception", "log", "steps_done", "outcome"),
    [
        (0, None, "completed step: 9", 10, "ok"),
        (1, {"type": "XlaRuntimeError", "message": GPU_OOM}, "", 0, "oom"),  # an outcome, not a crash
        (1, None, "...\n" + GPU_OOM + "\n", 0, "oom"),  # found in the log when no exception was recorded
        (1, {"type": "ValueError", "message": "bad mesh"}, "", 0, "error"),  # other exceptions
        (-9, None, "", 3, "error"),  # a killed process
        (0, None, "", 4, "error"),  # a short run, even with status zero
    ],
)
def test_a_run_is_classified_ok_oom_or_error(returncode, exception, log, steps_done, outcome):
    assert classify(returncode, exception, log, steps_done=steps_done, steps=10) == outcome


def step(n: int, seconds: float, loss: float) -> dict:
    timing = {metrics.STEP_TIME: seconds, metrics.TFLOPS: 1.0 / seconds, metrics.TOKENS: 100.0 / seconds}
    return {"step": float(n), **timing, metrics.LOSS: loss, "perf/per_device_tflops": 1.0}


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
def test_repeats_train_in_one_process_and_the_row_keeps_their_median_and_spread(rows, tmp_path):
    cpu = load_target("cpu")
    twice = Target(cpu.name, cpu.kind, cpu.launcher, {**cpu.spec, "repeats": 2})
    result = run_row(rows["llama-baseline"], twice, tmp_path / "llama-baseline.json", tmp_path / "work")
    assert result["status"] == "ok" and [r["repeat"] for r in result["repeats"]] == [1, 2]
    assert all((tmp_path / "work" / f"repeat-{n}" / "metrics.jsonl").exists() for n in (1, 2))
    # one process trained both: its log cut at the second repeat's marker, one part in each directory
    logs = [(tmp_path / "work" / f"repeat-{n}" / "train.log").read_text() for n in (1, 2)]
    assert "offload-repro: repeat 1 of 2" in logs[0] and "repeat 2 of 2" not in logs[0]
    assert logs[1].startswith("offload-repro: repeat 2 of 2") and "completed step: " in logs[1]
    assert all(len(read_json(tmp_path / "work" / f"repeat-{n}" / "launch.json")) > 5 for n in (1, 2))
    assert result["repeats"][1]["live_arrays_at_start"] == 0  # the first repeat's state was freed
    per_repeat = [r["tflops_per_device"] for r in result["repeats"]]
    spread = result["spread"]["tflops_per_device"]
    assert spread["n"] == 2 and spread["low"] == min(per_repeat) and spread["high"] == max(per_repeat)
    assert result["tflops_per_device"] == sum(per_repeat) / 2  # the median of two
    assert result["provenance"]["wall_time_s"] == pytest.approx(sum(r["wall_time_s"] for r in result["repeats"]))
    assert result["provenance"]["environment_info"].startswith("jax:")  # the launcher's, carried over
    (tflops,) = [o for o in run_observations(result, "x.json") if o.metric == "tflops_per_device"]
    assert (tflops.low, tflops.high, tflops.n) == (min(per_repeat), max(per_repeat), 2)
