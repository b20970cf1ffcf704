"""The compile stage's pure parts: arguments for the GPU compile, the cuDNN version, the mechanism check."""

from __future__ import annotations

import pytest

from offload_repro.core.data import load_rows, load_target
from offload_repro.core.files import REPO_ROOT
from offload_repro.produce.aot import compute_capability
from offload_repro.produce.compile import compile_overrides, cudnn_version, mechanism


@pytest.fixture(scope="module")
def gb200():
    return load_target("gb200-nvl72")


def rows(tables):
    return {row.id: row for row in load_rows(tables)}


def test_compile_arguments_are_full_scale_with_the_targets_settings(tables, gb200):
    args = compile_overrides(rows(tables)["deepseek-device-mb8"], gb200)
    assert args["model_name"] == "deepseek3-671b" and "override_model_config" not in args
    assert args["per_device_batch_size"] == 8 and args["max_target_length"] == 4096
    assert args["internal_compile_num_devices"] == 128
    assert (args["megablox"], args["sparse_matmul"], args["capacity_factor"]) == (False, False, 1.0)
    assert args["attention"] == "cudnn_flash_jax" and args["hardware"] == "gpu"
    assert args["mla_q"] == "device"


def test_llama_compile_drops_transformer_engine_quantization(tables, gb200):
    args = compile_overrides(rows(tables)["llama-qkv-offload-lhs"], gb200)
    assert "quantization" not in args and "megablox" not in args
    assert any("NVFP4" in assumption for assumption in gb200.spec["compile"]["assumptions"])


def test_target_description_facts(gb200):
    text = (REPO_ROOT / gb200.spec["compile"]["description_file"]).read_text()
    assert cudnn_version(text) == 91500
    assert compute_capability(text) == (10, 0)
    assert "device_memory_size: 197897748480" in text


def test_mechanism_compares_host_buffers_with_analytic_bytes(tables):
    row = rows(tables)["llama-qkv-offload-lhs"]
    exact = {"host_buffers": 3, "host_buffer_bytes": 76101451776}
    result = mechanism(row, 76101451776, exact)
    assert result["host_bytes_match_analytic"] and result["offload_took_effect"]
    assert result["analytic_host_buffers"] == 3
    nothing_moved = mechanism(row, 0, {"host_buffers": 0, "host_buffer_bytes": 0})
    assert not nothing_moved["offload_took_effect"] and not nothing_moved["host_bytes_match_analytic"]
    baseline = mechanism(rows(tables)["llama-baseline"], 0, {"host_buffers": 0, "host_buffer_bytes": 0})
    assert baseline["offload_took_effect"] and baseline["host_bytes_match_analytic"]


def test_mechanism_uses_the_rows_as_compiled_on_scaled_targets(tables):
    row = rows(tables)["llama-qkv-offload-lhs"]
    overrides = compile_overrides(row, load_target("h200-1"))  # 2 of 126 layers
    result = mechanism(row, 2 * 576 * 1024**2, {"host_buffers": 3, "host_buffer_bytes": 2 * 576 * 1024**2}, overrides)
    assert result["analytic_offload_bytes"] == 2 * 576 * 1024**2 and result["host_bytes_match_analytic"]
