"""Row + target -> MaxText arguments and XLA flags."""

from __future__ import annotations

from offload_repro.core import maxtext_args
from offload_repro.core.data import load_target


def test_full_scale_arguments_are_the_published_settings(rows):
    args = maxtext_args.full_scale_overrides(rows["llama-qkv-offload-lhs"])
    assert args["model_name"] == "llama3.1-405b"
    assert args["per_device_batch_size"] == 2
    assert args["max_target_length"] == 8192
    assert args["ici_fsdp_parallelism"] == 128
    assert args["remat_policy"] == "custom"
    assert (args["query_proj"], args["key_proj"], args["value_proj"]) == ("offload", "offload", "offload")
    assert args["quantization"] == "te_nvfp4"
    assert args["dataset_type"] == "synthetic"


def test_cpu_target_applies_its_declared_scale_rule(rows):
    target = load_target("cpu")
    row = rows["deepseek-offload-optimized"]
    args = maxtext_args.target_overrides(row, target)
    family = target.scale["families"]["deepseek"]
    assert args["override_model_config"] is True
    assert {key: args[key] for key in family} == family
    assert args["max_target_length"] == target.scale["max_target_length"]
    assert args["steps"] == target.scale["steps"]
    assert args["ici_fsdp_parallelism"] == -1  # 128 devices published, 1 here
    assert args["per_device_batch_size"] == 8  # the published micro batch is kept
    assert "quantization" not in args
    assert args["hardware"] == "cpu" and args["megablox"] is False
    # placement and model identity survive scaling
    assert args["model_name"] == "deepseek3-671b"
    assert args["mla_q"] == "offload" and args["moe_mlpwi_0"] == "offload"


def test_rows_differing_in_placement_get_the_same_model(rows):
    target = load_target("cpu")
    remat = maxtext_args.target_overrides(rows["deepseek-remat"], target)
    device = maxtext_args.target_overrides(rows["deepseek-device-mb8"], target)
    placement_keys = set(rows["deepseek-remat"].placement)
    differing = {key for key in remat.keys() | device.keys() if remat.get(key) != device.get(key)}
    assert differing == placement_keys


def test_no_run_or_compile_reads_or_writes_a_compilation_cache_outside_results(rows):
    for name in ("cpu", "gb200-nvl72", "h200-1"):
        args = maxtext_args.target_overrides(rows["llama-baseline"], load_target(name))
        assert args["jax_cache_dir"] == ""  # MaxText's own default is ~/jax_cache
    assert "jax_cache_dir=" in maxtext_args.as_arguments(args)


def test_arguments_render_as_key_value_text():
    text = maxtext_args.as_arguments({"scan_layers": True, "megablox": False, "steps": 10, "dtype": "bfloat16"})
    assert text == ["scan_layers=true", "megablox=false", "steps=10", "dtype=bfloat16"]


def test_xla_flags_are_the_rows_flags_verbatim_then_the_unstated_ones(rows):
    row = rows["llama-qkv-offload-lhs-pipelined"]
    flags = maxtext_args.xla_flags(row).split()
    assert flags[: len(row.xla_flags)] == row.xla_flags
    assert flags[len(row.xla_flags)] == "--xla_disable_hlo_passes=rematerialization"
    assert "--xla_gpu_enable_pipelined_all_gather=true" in flags[len(row.xla_flags) :]
    assert {"xla-rematerialization", "llama-collective-flags"} <= set(row.assumptions)
