"""The sweep's one-process loop with a trainer that stands in for MaxText: what it writes, how a deadline
stops it and a second call goes on, and how an out-of-memory point is kept. The fake trainer writes what
the chip's MaxText wrote for llama-baseline (its kept log lines) and the metrics file MaxText would have."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from conftest import REPO
from offload_repro.core.data import load_rows, load_target
from offload_repro.core.results import read_result
from offload_repro.core.sweep import load_sweep, process_environment
from offload_repro.core.sweep import sweep_file as kept_file
from offload_repro.produce.measured import sweep_runner

KEPT = REPO / "experiments" / "device-results" / "tpu-v5e-1" / "runs"
STEP = re.compile(
    r"completed step: (\d+), seconds: ([\d.]+), TFLOP/s/device: ([\d.]+), Tokens/s/device: ([\d.]+).*loss: ([\d.]+)"
)
OOM = next(iter(json.loads((KEPT / "deepseek-device-mb8.json").read_text())["log_lines"]))["failure"][0]


def kept_lines(row: str) -> dict[str, list[str]]:
    return json.loads((KEPT / f"{row}.json").read_text())["log_lines"][0]


class FakeTrainer:
    """Trains by writing the kept log's lines and their metrics; advances `clock` as a compile (50 s)
    or a cached repeat (10 s) would; runs out of memory for the arguments that contain `oom_when`."""

    def __init__(self, clock: list[float], oom_when: str | None = None) -> None:
        self.clock, self.oom_when, self.calls = clock, oom_when, []

    def __call__(self, argv: list[str], log_file: Path, keep_hlo: bool) -> dict[str, Any]:
        self.calls.append((argv, keep_hlo))
        self.clock[0] += 50.0 if keep_hlo else 10.0
        args = dict(arg.split("=", 1) for arg in argv[1:])
        if self.oom_when and self.oom_when in argv:
            log_file.write_text(f"E1207 06:20:01.000000  11 train.py:1] {OOM}\n")
            return {"exception": {"type": "JaxRuntimeError", "message": OOM}, "compiled_memory": None, "hlo_text": None}
        lines = kept_lines("llama-baseline")
        steps = lines["steps"][: int(args["steps"])]
        log_file.write_text("\n".join(lines["memory"] + steps) + "\n")
        with open(args["metrics_file"], "w") as metrics:
            for line in steps:
                step, seconds, tflops, tokens, loss = STEP.search(line).groups()
                record = {"step": int(step), "perf/step_time_seconds": float(seconds), "learning/loss": float(loss)}
                record |= {
                    "perf/per_device_tflops_per_sec": float(tflops),
                    "perf/per_device_tokens_per_sec": float(tokens),
                }
                metrics.write(json.dumps(record | {"perf/per_device_tflops": 61.8475290624}) + "\n")
        memory = {"bytes_in_use": 1, "peak_bytes_in_use": 6776463872, "peak_bytes_reserved": 4413100032}
        return {
            "exception": None,
            "compiled_memory": {"peak_memory_in_bytes": 11189563392, "temp_size_in_bytes": 4413100032},
            "hlo_text": "HloModule jit_train_step\n" if keep_hlo else None,
            "runtime_memory": memory,
            "runtime_memory_at_start": None,
            "train_seconds": 10.0,
        }


def sweep_file(tmp_path: Path, regimes: int = 2) -> Path:
    widths = [512, 1024, 2048][:regimes]
    data = {
        "target": "tpu-v5e-1",
        "steps": 6,
        "warmup_steps": 3,
        "repeats": 3,
        "regimes": [
            {
                "regime": f"w{width}",
                "overrides": {"base_emb_dim": width, "max_target_length": 2048},
                "points": [
                    {"id": f"w{width}-baseline", "row": "llama-baseline"},
                    {"id": f"w{width}-qkv", "row": "llama-qkv-offload-lhs"},
                ],
            }
            for width in widths
        ],
    }
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def call(path: Path, out: Path, trainer: FakeTrainer, deadline_s: float, monkeypatch) -> None:
    monkeypatch.setattr(sweep_runner.time, "monotonic", lambda: trainer.clock[0])
    assert (
        sweep_runner.main(
            ["tpu-v5e-1", "llama", str(out), "--deadline-s", str(deadline_s), "--sweep", str(path)], trainer
        )
        == 0
    )


def test_a_deadline_keeps_the_finished_repeats_and_a_second_call_goes_on(tmp_path, monkeypatch, capsys):
    path, out, clock = sweep_file(tmp_path), tmp_path / "out", [1000.0]
    trainer = FakeTrainer(clock)
    # 200 s: two points whole (50 + 10 + 10 s each), then the third's first two repeats; its third
    # (10 s, the longest later repeat seen) would end at 210 s
    call(path, out, trainer, 200, monkeypatch)
    said = capsys.readouterr().out
    assert "sweep: stopped after 200 s: call again to continue" in said
    records = {p.stem: read_result(p, "sweep-point") for p in sorted((out / "points").glob("*.json"))}
    assert {name: r["status"] for name, r in records.items()} == {
        "w512-baseline": "ok",
        "w512-qkv": "ok",
        "w1024-baseline": "partial",
    }
    assert [r["repeat"] for r in records["w1024-baseline"]["repeat_runs"]] == [1, 2]

    call(path, out, FakeTrainer(clock), 200, monkeypatch)
    said = capsys.readouterr().out
    assert "w512-baseline: already recorded (ok)" in said and "stopped" not in said
    records = {p.stem: read_result(p, "sweep-point") for p in sorted((out / "points").glob("*.json"))}
    assert {r["status"] for r in records.values()} == {"ok"} and len(records) == 4
    resumed = records["w1024-baseline"]
    assert [r["repeat"] for r in resumed["repeat_runs"]] == [1, 2, 3] and len(resumed["repeats"]) == 3
    # the kept log's steps 3 to 5, timed: their median
    assert resumed["step_time_s"] == pytest.approx(0.710) and resumed["steps_timed"] == 3
    assert resumed["compiled_memory"]["peak_memory_in_bytes"] == 11189563392
    assert resumed["measured_peak"] == {"bytes": 6776463872 + 4413100032, "own": True}
    assert resumed["hlo"] == "programs/w1024-baseline.hlo.gz" and (out / resumed["hlo"]).exists()
    args = resumed["maxtext_arguments"]
    assert "base_emb_dim=1024" in args and "steps=6" in args and "query_proj=remat" in args
    assert "max_target_length=2048" in args and "base_num_decoder_layers=8" in args  # the target's depth kept
    assert resumed["xla_flags"] == "--xla_disable_hlo_passes=rematerialization"  # as XLA:TPU reads them


def test_a_point_out_of_memory_is_recorded_once_and_skipped_after(tmp_path, monkeypatch, capsys):
    path, out, clock = sweep_file(tmp_path, regimes=1), tmp_path / "out", [0.0]
    trainer = FakeTrainer(clock, oom_when="query_proj=offload")
    call(path, out, trainer, 600, monkeypatch)
    oom = read_result(out / "points" / "w512-qkv.json", "sweep-point")
    assert oom["status"] == "oom" and len(oom["repeat_runs"]) == 1 and oom["repeats"] == []
    assert oom["hbm_oom"] == {"required_gib": 17.62, "available_gib": 15.75}
    assert "(17.62G) exceeds available HBM (15.75G)" in oom["message"]
    assert oom["hlo"] is None and oom["compiled_memory"] is None
    calls = len(trainer.calls)
    call(path, out, trainer, 600, monkeypatch)
    assert len(trainer.calls) == calls and "w512-qkv: already recorded (oom)" in capsys.readouterr().out


def test_a_point_whose_first_repeat_cannot_fit_in_the_time_left_is_not_started(tmp_path, monkeypatch, capsys):
    path, out = sweep_file(tmp_path, regimes=1), tmp_path / "out"
    trainer = FakeTrainer([0.0])
    call(path, out, trainer, sweep_runner.FIRST_GUESS_S - 1, monkeypatch)
    assert trainer.calls == [] and not (out / "points").exists()
    assert "stopped after 0 s: call again to continue" in capsys.readouterr().out


def test_points_whose_flags_xla_reads_differ_cannot_share_a_process():
    rows = load_rows(list(sweep_runner.TABLES))
    sweep = load_sweep(kept_file("tpu-v5e-1"), rows, load_target("tpu-v5e-1"))
    # on the chip, DeepSeek's offload row differs from its remat row only in XLA:GPU's flags: one process
    assert (
        process_environment(sweep.family("deepseek"), load_target("tpu-v5e-1"))["OFFLOAD_REPRO_RAGGED_DOT"] == "tiled"
    )
    # on the CPU, XLA reads them all: the offload row's pipelining flags set it apart
    with pytest.raises(ValueError, match=r"cannot train in one process on 'cpu'.*pipelined_host_offloading"):
        process_environment(sweep.family("deepseek"), load_target("cpu"))


def test_what_a_call_left_is_filed_with_each_repeats_log_lines_and_its_program(tmp_path, monkeypatch):
    import tarfile

    from offload_repro.produce.measured import sweep_results

    path, root, clock = sweep_file(tmp_path, regimes=1), tmp_path / "chip", [0.0]
    out = root / "results" / "tpu-v5e-1" / "sweep"
    call(path, out, FakeTrainer(clock, oom_when="query_proj=offload"), 600, monkeypatch)
    archive = tmp_path / "tpu-v5e-1-sweep.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:  # as the tier's script packs it, from the checkout's root
        tar.add(out, arcname="results/tpu-v5e-1/sweep")
    written = sweep_results.keep("tpu-v5e-1", [archive], kept_dir=tmp_path / "kept")
    kept = tmp_path / "kept" / "tpu-v5e-1" / "sweep"
    assert sorted(p.relative_to(kept).as_posix() for p in written) == [
        "points/w512-baseline.json",
        "points/w512-qkv.json",
        "programs/w512-baseline.hlo.gz",
    ]
    trained = read_result(kept / "points" / "w512-baseline.json", "sweep-point")
    assert [lines["log"] for lines in trained["log_lines"]] == [
        f"results/tpu-v5e-1/sweep/work/w512-baseline/repeat-{n}/train.log" for n in (1, 2, 3)
    ]
    assert trained["log_lines"][0]["steps"][3].startswith("completed step: 3, seconds: 0.708")
    refused = read_result(kept / "points" / "w512-qkv.json", "sweep-point")
    assert refused["log_lines"][0]["failure"] == [OOM]
    with pytest.raises(ValueError, match="holds no results/h200-1/sweep/points/"):
        sweep_results.keep("h200-1", [archive], kept_dir=tmp_path / "kept")
