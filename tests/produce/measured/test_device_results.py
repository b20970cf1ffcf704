"""What one TPU v5e chip measured, kept as data (experiments/device-results/tpu-v5e-1/), and the
pieces that read it: the runtime's and XLA's peaks, XLA:TPU's refusal, the profile's copy waits
and the keeping of a tier's archive. Lines and numbers are copied from what the chip wrote."""

from __future__ import annotations

import io
import json
import tarfile

import pytest

from conftest import REPO
from offload_repro.core import memory
from offload_repro.core.data import load_rows, load_target
from offload_repro.core.failure import OUT_OF_MEMORY, hbm_oom
from offload_repro.core.files import read_json
from offload_repro.core.results import read_result, write_result
from offload_repro.produce.measured import device_results, runner, trace

KEPT = REPO / "experiments" / "device-results" / "tpu-v5e-1"
# deepseek-device-mb8's train.log on the chip, as the runtime wrote it
REFUSAL = (
    "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom: Ran out of memory on HBM, the total"
    " memory required for HLO temporaries (17.62G) exceeds available HBM (15.75G). HLO module: jit_train_step."
)
# llama-baseline's train.log on the chip
STEP_LINE = (
    "I1206 23:51:27.359251 139543104883584 metric_logger.py:265] completed step: 5, seconds: 0.711, TFLOP/s/device:"
    " 86.931, Tokens/s/device: 23028.896, total_weights: 16384, loss: 8.674, lm_loss: 8.674, perplexity: 5851.493"
)
# the profile's events by name of llama-qkv-offload-lhs (trace-events.json), the lines of its copy waits
LLAMA_OPS = [
    {"name": "dynamic-slice-done.2", "count": 104, "total_us": 445782.4},
    {"name": "dynamic-slice-done.1", "count": 104, "total_us": 240664.1},
    {"name": "copy.355", "count": 104, "total_us": 41747.8},
]


def kept(row: str) -> dict:
    return read_result(KEPT / "runs" / f"{row}.json", "run")


def test_xla_tpu_refusal_names_the_need_and_the_chip():
    assert OUT_OF_MEMORY.search(REFUSAL)
    assert hbm_oom(REFUSAL) == {"required_gib": 17.62, "available_gib": 15.75}
    assert hbm_oom("RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1.0G") is None


@pytest.mark.parametrize(
    "row", ["llama-baseline", "llama-qkv-offload-lhs", "deepseek-device-mb2", "deepseek-offload-optimized"]
)
def test_a_runs_peak_on_the_chip_is_its_weights_and_its_reserved_temporaries(row):
    run = kept(row)
    stats, compiled = run["runtime_memory"], run["compiled_memory"]
    peak = memory.runtime_peak_bytes(stats, "tpu")
    assert peak == stats["peak_bytes_in_use"] + stats["peak_bytes_reserved"]
    assert memory.runtime_peak_bytes(stats, "gpu") == stats["peak_bytes_in_use"]
    # physical bounds: within the chip, and XLA's own peak within what arguments + temporaries could take
    assert peak <= stats["bytes_limit"] == 16_909_336_064
    program = memory.program_peak_bytes(compiled, "tpu")
    assert program == compiled["peak_memory_in_bytes"] <= memory.device_bytes(compiled)
    # the runtime holds a little more than XLA planned, never less: 0.4% to 5.8% on these rows
    assert 0 < peak / program - 1 < 0.06


def test_an_offload_rows_host_bytes_are_its_tensors():
    # 8 layers of Llama width 2048 at micro batch 2, sequence 8192: Q 64 MiB, K and V 32 MiB each
    run = kept("llama-qkv-offload-lhs")
    assert memory.host_bytes(run["compiled_memory"]) == 8 * (64 + 32 + 32) * memory.MIB


def test_the_chip_refused_device_save_at_micro_batch_8_and_trained_offload():
    refused, offloaded = kept("deepseek-device-mb8"), kept("deepseek-offload-optimized")
    assert refused["status"] == "oom" and refused["log_lines"][0]["failure"] == [REFUSAL]
    assert offloaded["status"] == "ok" and offloaded["steps_completed"] == 13
    assert memory.program_peak_bytes(offloaded["compiled_memory"], "tpu") < offloaded["runtime_memory"]["bytes_limit"]


def test_copy_waits_from_a_tpu_profile():
    names = {
        "/device:TPU:0 / XLA Ops": LLAMA_OPS,
        "/device:TPU:0 / Steps": [{"name": "3", "count": 1, "total_us": 1.0}],
    }
    waits = trace.tpu_waits(names, steps=13)
    assert waits["host_copies"] == 208
    assert waits["exposed_copy_s_per_step"] == pytest.approx((445782.4 + 240664.1) / 13 / 1e6)
    assert waits["hidden_fraction"] is None  # the copies themselves are not in the profile
    # bound: the wait is part of the step (0.7185 s measured)
    assert waits["exposed_copy_s_per_step"] < kept("llama-qkv-offload-lhs")["step_time_s"]
    assert trace.tpu_waits({"/host:CPU / python": []}, steps=13) is None


# one steady step of llama-qkv-offload-lhs's profile on the chip: its ops line's host copies (and its
# three longest other ops), as jax.profiler wrote them
QKV_STEP = REPO / "tests" / "fixtures" / "traces" / "tpu-v5e-llama-qkv-offload-lhs-step.json"


def test_host_copies_from_a_tpu_profile():
    found = trace.summarize(trace.read_events(QKV_STEP), steps=1)
    program = read_json(KEPT / "programs" / "programs.json")["programs"]["llama-qkv-offload-lhs"]
    stored = program["memory"]["host_temp_size_in_bytes"]  # XLA's host buffers: what the step stores
    assert found["host_copies"] == 48  # 8 layers x query (64 MiB), key and value (32 MiB each), out and back
    assert found["by_direction"]["to_host"]["bytes_per_step"] == stored == 1024**3
    assert found["by_direction"]["from_host"]["bytes_per_step"] == stored
    for direction in found["by_direction"].values():  # bound: no faster than PCIe 4.0 x16 (31.5 GB/s)
        assert direction["bytes_per_step"] / direction["in_flight_s_per_step"] < 31.5e9
    # what the core waited is part of the time copies were in flight, which is part of the 0.7185 s step
    assert (
        0
        < found["exposed_copy_s_per_step"]
        < found["in_flight_s_per_step"]
        < kept("llama-qkv-offload-lhs")["step_time_s"]
    )
    assert found["by_direction"]["to_host"]["exposed_s_per_step"] < 1e-6  # the stores never held the core up
    assert found["hidden_fraction_at_most"] == pytest.approx(1 - 0.0528 / 0.2103, abs=0.001)
    assert found["hidden_fraction"] is None  # the DMA's own time is not in the profile


def test_log_lines_are_the_lines_numbers_come_from():
    found = device_results.log_lines(f"{STEP_LINE}\nI1206 23:51:27.360000 1 train.py:1] another line\n{REFUSAL}\n")
    assert found["steps"] == [STEP_LINE.split("] ", 1)[1]]
    assert found["failure"] == [REFUSAL]


def archive(path, run: dict, log: str, target_dir: str = "tpu-v5e-1"):
    with tarfile.open(path, "w:gz") as tar:
        for name, text in (
            (f"results/{target_dir}/runs/{run['row']}.json", json.dumps(run)),
            (f"results/{target_dir}/work/{run['row']}/train.log", log),
        ):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_keeping_a_tiers_archive_validates_and_attaches_its_log_lines(tmp_path):
    run = {key: value for key, value in kept("deepseek-device-mb8").items() if key != "log_lines"}
    run["provenance"] = run["provenance"] | {"train_log": "results/tpu-v5e-1/work/deepseek-device-mb8/train.log"}
    written = device_results.keep("tpu-v5e-1", [archive(tmp_path / "a.tar.gz", run, REFUSAL + "\n")], tmp_path / "kept")
    assert written == [tmp_path / "kept" / "tpu-v5e-1" / "runs" / "deepseek-device-mb8.json"]
    assert read_result(written[0], "run")["log_lines"][0]["failure"] == [REFUSAL]

    broken = run | {"status": "finished"}
    with pytest.raises(Exception, match="status"):
        device_results.keep("tpu-v5e-1", [archive(tmp_path / "b.tar.gz", broken, "")], tmp_path / "kept2")
    assert not (tmp_path / "kept2").exists()  # nothing half-written
    with pytest.raises(ValueError, match="holds no results/h200-1/"):
        device_results.keep("h200-1", [tmp_path / "a.tar.gz"], tmp_path / "kept3")


def test_a_row_that_is_one_program_with_a_run_row_is_filed_from_its_record(rows, tables, tmp_path):
    tpu, cpu = load_target("tpu-v5e-1"), load_target("cpu")
    every = load_rows(tables)
    write_result(tmp_path / "llama-qkv-offload-lhs.json", "run", kept("llama-qkv-offload-lhs"))
    nolhs = runner.same_program_record(rows["llama-qkv-offload-nolhs"], every, tpu, tmp_path / "nolhs.json")
    assert nolhs["row"] == "llama-qkv-offload-nolhs" and nolhs["same_program_as"] == "llama-qkv-offload-lhs"
    assert nolhs["step_time_s"] == kept("llama-qkv-offload-lhs")["step_time_s"]
    assert read_result(tmp_path / "nolhs.json", "run") == nolhs
    # another program on the chip (no offload), or the same row on a GPU-flag-reading target: none
    assert runner.same_program_record(rows["llama-baseline"], every, tpu, tmp_path / "base.json") is None
    assert runner.same_program_record(rows["llama-qkv-offload-nolhs"], every, cpu, tmp_path / "cpu.json") is None
