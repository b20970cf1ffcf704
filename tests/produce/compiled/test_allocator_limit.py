"""A row fits within the memory JAX's allocator takes of the GPU, not within the GPU's memory: what
five rows of the one-GPU tier showed on a real H200 (fixtures/results/h200-1/runs, copied unchanged).

There, at XLA_PYTHON_CLIENT_MEM_FRACTION 0.95, JAX's limit was 132.8 GiB of the card's 140.4, and
every program whose arguments and temporaries exceeded it stopped with RESOURCE_EXHAUSTED."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, program_of
from offload_repro.core import gpu, memory
from offload_repro.core.data import load_target
from offload_repro.core.results import read_result
from offload_repro.produce.compiled.compiled_row import compile_result

RUNS = FIXTURES / "results/h200-1/runs"
GPU_RUNS = sorted(RUNS.glob("*.json"))


@pytest.fixture(scope="module")
def h200():
    return load_target("h200-1")


def judged_limit(target) -> int:
    return round(gpu.capacity_bytes(target) * gpu.allocator_fraction(None, target))


@pytest.mark.parametrize("path", GPU_RUNS, ids=[p.stem for p in GPU_RUNS])
def test_each_real_run_fit_exactly_when_its_program_was_within_the_limit_jax_gave_it(path, h200):
    """JAX takes its share of the memory free once CUDA's context is made, so the real limit sits a
    little under the share of the description's memory: within 1%, and never above it. The program
    the GPU compiled (its memory analysis, as the run recorded it) fits that limit where the run
    trained, and exceeds it where the run stopped out of memory."""
    run = read_result(path, "run")
    real = run["runtime_memory"]["bytes_limit"]
    assert run["provenance"]["device_kind"] == "NVIDIA H200"
    assert real <= judged_limit(h200) <= 1.01 * real
    assert judged_limit(h200) < gpu.capacity_bytes(h200)  # the GPU's memory is not the limit
    used = memory.device_bytes(run["compiled_memory"])
    assert run["status"] in ("ok", "oom")
    assert (used <= judged_limit(h200)) is (run["status"] == "ok"), memory.gib(used)


def test_a_program_compiled_without_a_gpu_is_out_of_memory_where_the_gpu_ran_out(rows, h200):
    """deepseek-offload-optimized compiled here for h200-1 needs 140.8 GiB: under the H200's 141.0
    GiB of memory, which judged it to fit, but over the 134.0 GiB the allocator gives; on the GPU
    it ran out of memory."""
    compiled = read_result(FIXTURES / "results/compiled/h200-1/deepseek-offload-optimized.json", "compile")
    assert compiled["provenance"]["allocator_memory_fraction"] == 0.95
    result = compile_result(rows["deepseek-offload-optimized"], h200, program_of(compiled), None, True)
    assert result["device_bytes"] < result["capacity_bytes"]
    assert result["fits"] is False and result["margin_gib"] < 0
    assert result["allocator_limit_bytes"] == judged_limit(h200)
    assert read_result(RUNS / "deepseek-offload-optimized.json", "run")["status"] == "oom"
