"""One-GPU tier pieces that need no GPU: the transfer probe (run on the CPU backend) and the
overlap summary (on synthetic traces with known answers)."""

from __future__ import annotations

import gzip
import json

import pytest

from offload_repro.core.data import load_rows
from offload_repro.produce.measured import host_link_probe, trace


def test_probe_sizes_are_the_offloaded_tensors(tables):
    rows = [row for row in load_rows(tables) if row.family == "llama"]
    assert host_link_probe.offloaded_sizes(rows) == [32 * 1024**2, 512 * 1024**2]


def test_probe_runs_on_the_cpu_backend():
    result = host_link_probe.measure([1 << 20, 4 << 20], limit_gb_s=64, repeats=2)
    assert result["platform"] == "cpu" and len(result["transfers"]) == 2
    for line in result["transfers"]:
        assert line["d2h_gb_s"] > 0 and line["h2d_gb_s"] > 0
        assert line["d2h_of_limit"] == pytest.approx(line["d2h_gb_s"] / 64)


def gpu_trace(events):
    meta = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:GPU:0"}},
        {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "/host:CPU"}},
    ]
    return meta + [{"ph": "X", "pid": pid, "tid": 1, "name": n, "ts": ts, "dur": dur} for pid, n, ts, dur in events]


def test_overlap_with_known_answer():
    events = gpu_trace(
        [
            (1, "gemm_fusion", 0, 100),  # compute 0..100
            (1, "MemcpyDtoH", 50, 100),  # copy 50..150: 50 hidden, 50 exposed
            (1, "loop_fusion", 200, 100),  # compute 200..300
            (1, "MemcpyHtoD", 250, 20),  # copy 250..270: hidden
            (2, "MemcpyDtoH", 0, 1000),  # host-side event: ignored
        ]
    )
    summary = trace.summarize(events, steps=1)
    assert summary["host_copies"] == 2
    assert summary["copy_s_per_step"] == pytest.approx(120e-6)
    assert summary["compute_s_per_step"] == pytest.approx(200e-6)
    assert summary["hidden_copy_s_per_step"] == pytest.approx(70e-6)
    assert summary["exposed_copy_s_per_step"] == pytest.approx(50e-6)
    assert summary["hidden_fraction"] == pytest.approx(70 / 120)


def test_no_copies_and_per_step_division(tmp_path):
    path = tmp_path / "perfetto_trace.json.gz"
    with gzip.open(path, "wt") as handle:
        json.dump({"traceEvents": gpu_trace([(1, "gemm", 0, 400)])}, handle)
    summary = trace.summarize(trace.read_events(path), steps=4)
    assert summary["compute_s_per_step"] == pytest.approx(100e-6)
    assert summary["hidden_fraction"] is None and summary["host_copies"] == 0
