"""The compile stage's pure parts (arguments for the GPU compile, the cuDNN version) and what its
results are judged against (the offload expected of a program, the meaning of XLA's warnings)."""

from __future__ import annotations

import dataclasses

import pytest

import offload_repro.produce.compiled.compiled_row as compiling
from conftest import FIXTURES, REPO
from offload_repro.commands.compile import guided_by
from offload_repro.core import gpu
from offload_repro.core.accounting import compiled_accounting
from offload_repro.core.assumptions import load_assumptions, sentence
from offload_repro.core.data import DataError, load_target
from offload_repro.core.files import write_json
from offload_repro.core.variants import apply, variant_row
from offload_repro.judge.observers import warning_meaning
from offload_repro.produce.compiled import program_cache
from offload_repro.produce.compiled.compiled_row import compile_overrides
from offload_repro.produce.compiled.program_cache import memory_warnings, program_key


@pytest.fixture(scope="module")
def gb200():
    return load_target("gb200-nvl72")


def test_compile_arguments_are_full_scale_with_the_targets_settings(rows, gb200):
    args = compile_overrides(rows["deepseek-device-mb8"], gb200)
    assert args["model_name"] == "deepseek3-671b" and "override_model_config" not in args
    assert args["per_device_batch_size"] == 8 and args["max_target_length"] == 4096
    assert args["internal_compile_num_devices"] == 128
    # the sorted, dropless dispatch (assumption deepseek-moe-dispatch), its grouped matmul tiled
    assert (args["megablox"], args["sparse_matmul"], args["capacity_factor"]) == (False, True, -1.0)
    assert rows["deepseek-device-mb8"].ragged_dot == "tiled" and rows["llama-baseline"].ragged_dot == "xla"
    assert args["attention"] == "cudnn_flash_jax" and args["hardware"] == "gpu"
    assert args["mla_q"] == "device"


def test_llama_compile_drops_transformer_engine_quantization(rows, gb200):
    args = compile_overrides(rows["llama-qkv-offload-lhs"], gb200)
    assert "quantization" not in args and "megablox" not in args
    assert all("llama-weight-precision" in row.assumptions for row in rows.values() if row.family == "llama")
    assert "NVFP4" in sentence("llama-weight-precision")  # stated once, in experiments/assumptions.yaml


def test_target_description_facts(gb200):
    text = (REPO / gb200.spec["compile"]["description_file"]).read_text()
    assert gpu.cudnn_version(text) == 91500
    assert gpu.compute_capability(text) == (10, 0)
    assert "device_memory_size: 197897748480" in text
    assert gpu.capacity_bytes(gb200) == 197897748480  # the one source of device memory
    assert gpu.capacity_bytes(load_target("cpu")) is None


def test_a_compile_plans_within_the_memory_a_runs_allocator_gives(gb200, rows):
    """XLA takes 80% of a description's memory where no allocator states one: the description a
    compile is given is scaled so that this is the run's share, and nothing else in it changes."""
    text = (REPO / gb200.spec["compile"]["description_file"]).read_text()
    scaled = gpu.as_run_allocates(text, 0.92)
    assert round(gpu.capacity_bytes_of(scaled) * gpu.DESCRIPTION_SHARE) == round(197897748480 * 0.92)
    changed = [(a, b) for a, b in zip(text.splitlines(), scaled.splitlines(), strict=True) if a != b]
    assert [a.strip() for a, _ in changed] == ["device_memory_size: 197897748480"]
    # the row's own share first, then what the target's runs set (a cluster's, else its own), then JAX's
    assert gpu.allocator_fraction(None, gb200) == 0.94  # cluster.environment
    assert gpu.allocator_fraction(0.92, gb200) == 0.92
    assert gpu.allocator_fraction(None, load_target("h200-1")) == 0.95  # a local target's environment
    assert gpu.allocator_fraction(None, load_target("cpu")) == gpu.JAX_DEFAULT_FRACTION == 0.75
    row = rows["llama-baseline"]
    at_92 = dataclasses.replace(row, allocator_memory_fraction=0.92)
    assert program_key(at_92, gb200) != program_key(row, gb200)
    assert program_key(dataclasses.replace(row, allocator_memory_fraction=0.94), gb200) == program_key(row, gb200)


# Verbatim from the GB200 compile logs of deepseek-offload-plain and deepseek-device-mb8.
OFFLOAD_WARNING = (
    "W1129 16:38:11.969625    2350 hlo_rematerialization.cc:3402] Can't reduce memory use below 143.00GiB "
    "(153547829487 bytes) by rematerialization; only reduced to 303.33GiB (325698409396 bytes), down from "
    "307.76GiB (330458380332 bytes) originally"
)
OOM_WARNING = (
    "W1129 16:39:41.707120    3803 hlo_rematerialization.cc:3402] Can't reduce memory use below 143.00GiB "
    "(153547829487 bytes) by rematerialization; only reduced to 295.24GiB (317008797600 bytes), down from "
    "301.22GiB (323437551680 bytes) originally"
)
GIB = 1024**3


def test_xla_warning_on_an_offload_row_is_explained_as_device_plus_host():
    (text,) = memory_warnings(OFFLOAD_WARNING + "\n")
    meaning = warning_meaning(text, device=int(158.65 * GIB), host=int(144.875 * GIB))
    assert "counts the 144.88 GiB about to be offloaded as device memory" in meaning
    assert "the device holds 158.65 GiB" in meaning


def test_xla_warning_on_a_row_that_does_not_fit_says_so():
    texts = memory_warnings("x\n" + OOM_WARNING + "\n" + OOM_WARNING)
    assert len(texts) == 1 and texts[0].startswith("Can't reduce memory use below 143.00GiB")  # once, as printed
    meaning = warning_meaning(texts[0], device=int(295.15 * GIB), host=0)
    assert meaning.startswith("The program needs 295.15 GiB per device")


@pytest.mark.parametrize(
    ("row_id", "target", "capacity", "offloaded_tensors", "offloaded_bytes"),
    [
        ("llama-qkv-offload-lhs", "gb200-nvl72", None, 3, 76101451776),
        ("llama-baseline", "gb200-nvl72", None, 0, 0),
        ("llama-qkv-offload-lhs", "h200-1", None, 3, 2 * 576 * 1024**2),  # as compiled there: 2 of 126 layers
        # XLA's host memory of deepseek-offload-plain compiled for GB200 under each capacity factor
        # (results/whatif/assumptions/deepseek-moe-dispatch.*/deepseek-offload-plain.json, host_bytes)
        ("deepseek-offload-plain", "gb200-nvl72", None, 6, 155558346752),
        ("deepseek-offload-plain", "gb200-nvl72", "capacity-1.25", 6, 186696859648),
        ("deepseek-offload-plain", "gb200-nvl72", "capacity-2.0", 6, 280112398336),
    ],
)
def test_the_offload_expected_of_a_program_follows_from_its_compile_settings(
    rows, row_id, target, capacity, offloaded_tensors, offloaded_bytes
):
    """That of the row as compiled on the target (a scaled one compiles fewer layers). MaxText's
    dense dispatch gives each expert its capacity of slots, filled or not: the offloaded
    up-projections grow with the capacity factor, byte for byte as XLA holds them on the host."""
    row = rows[row_id]
    if capacity:
        dispatch = load_assumptions()["deepseek-moe-dispatch"]
        row = variant_row(row, dispatch, next(a for a in dispatch["alternatives"] if a["id"] == capacity))
    expected = compiled_accounting(compile_overrides(row, load_target(target)))
    assert expected["offloaded_bytes_per_step"] == offloaded_bytes
    assert [t["placement"] for t in expected["tensors"].values()].count("offload") == offloaded_tensors


def test_a_compile_computes_its_overrides_once_and_hands_them_down(rows, gb200, tmp_path, monkeypatch):
    """The program's key, the compile's MaxText arguments and the result take one computation of
    the row's overrides; the compile's own settings (output directory, run name) stay out of them."""
    row = rows["llama-qkv-offload-lhs"]
    computed = []

    def counted(row, target):
        computed.append(row.id)
        return compile_overrides(row, target)

    monkeypatch.setattr(program_cache, "compile_overrides", counted)
    monkeypatch.setattr(compiling, "compile_overrides", counted)
    launched = []

    def compile_process(command, env, cwd, log_file):  # stands in for XLA: the compile fails at once
        launched.append(command)
        log_file.write_text("")
        write_json(cwd / "aot.json", {"exception": {"type": "E", "message": "a stand-in"}})
        return 1, 0.1

    result = compiling.compile_row(row, gb200, tmp_path / "row.json", tmp_path / "work", launcher=compile_process)
    assert computed == [row.id] and len(launched) == 1
    assert result["status"] == "error" and result["message"] == "E: a stand-in"
    assert result["maxtext_overrides"] == compile_overrides(row, gb200)
    assert result["program"]["key"] == program_cache.program_key(row, gb200)
    arguments = launched[0][launched[0].index("--") + 2 :]  # after the base config
    assert arguments == [
        *program_cache.maxtext_args.as_arguments(compile_overrides(row, gb200)),
        f"base_output_directory={tmp_path / 'work' / 'output'}",
        f"run_name={row.id}",
    ]


def test_a_latency_profile_reaches_xla_by_its_path_and_keys_the_program_by_its_content(rows, gb200, tmp_path):
    """The profile's path (absolute: the compile runs in its own directory) is in XLA_FLAGS; the
    program's key changes with the profile's content, not with where the profile lies. A compile whose
    log says XLA found none of its instructions in the profile fails, in XLA's words."""
    row = rows["llama-qkv-offload-lhs"]
    profile = tmp_path / "profile.pbtxt"
    profile.write_text('costs { name: "abc::fusion.1" cost_us: 1.000 }\n')
    elsewhere = tmp_path / "copy" / "profile.pbtxt"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(profile.read_bytes())
    key = program_cache.program_key(row, gb200, latency_profile=profile)
    assert key == program_cache.program_key(row, gb200, latency_profile=elsewhere)
    assert key != program_cache.program_key(row, gb200)
    elsewhere.write_text('costs { name: "abc::fusion.1" cost_us: 2.000 }\n')
    assert key != program_cache.program_key(row, gb200, latency_profile=elsewhere)

    flags = []

    def compile_process(command, env, cwd, log_file):  # stands in for XLA: it reads no instruction of the profile
        flags.append(env["XLA_FLAGS"])
        log_file.write_text("".join((FIXTURES / "latency_profile.log").read_text().splitlines(keepends=True)[:2]))
        write_json(cwd / "aot.json", {"devices": 128})
        return 0, 0.1

    program = program_cache.compile_program(
        row, gb200, tmp_path / "work", key, launcher=compile_process, latency_profile=profile
    )
    assert f"{program_cache.PROFILE_FLAG}={profile.resolve()}" in flags[0].split()
    assert program["status"] == "error" and "found none of this program's instructions" in program["message"]
    assert program["latency_profile"] == {"file": str(profile), "matched": {"found": 0, "missing": 1}}


def test_only_an_alternative_that_asks_for_a_profile_takes_one_and_never_on_a_row_without_lhs(rows, tmp_path):
    profile = tmp_path / "profile.pbtxt"
    guided = {"id": "xla-latency-estimator.profile-guided", "settings": {"latency_profile": "step-model"}}
    lhs, nolhs = rows["llama-qkv-offload-lhs"], rows["llama-qkv-offload-nolhs"]
    assert guided_by(lhs, guided, profile) == profile
    assert guided_by(lhs, {"id": "x.y", "settings": {"row": {"remat_policy": "full"}}}, profile) is None
    with pytest.raises(DataError, match="none was given"):
        guided_by(lhs, guided, None)
    with pytest.raises(DataError, match=r"row 'llama-qkv-offload-nolhs@.*turns the latency-hiding scheduler off"):
        guided_by(apply(nolhs, guided["settings"], guided["id"]), guided, profile)


# XLA's words, copied from the compile of deepseek-offload-plain under capacity factor 1.25 at autotune level 0.
NO_CONFIG = (
    "INTERNAL: Failed to get configs for: 2 out of 47 instructions. See logs for all failures. Example failure: \n"
    "No supported config found for HLO: %gemm_fusion_dot.138 = bf16[256,1280,2048]{2,1,0} fusion(%bitcast.1613.0,"
    " %bitcast.1595.0), kind=kCustom, calls=%fused_computation.gemm_fusion_dot.138_computation"
)


@pytest.mark.parametrize(("first_failure", "compiles"), [(NO_CONFIG, 2), ("RESOURCE_EXHAUSTED: out of memory", 1)])
def test_a_fusion_without_a_default_config_is_compiled_again_with_autotuning_and_says_so(
    rows, gb200, tmp_path, first_failure, compiles
):
    """Autotune level 0 leaves XLA to a default kernel config, which no backend has for some Triton
    GEMMs; that failure, and only that one, is compiled again at XLA's default autotuning level, and
    the result says so in XLA's words."""
    flags = []

    def compile_process(command, env, cwd, log_file):  # stands in for XLA: fails, then fails otherwise
        flags.append(env["XLA_FLAGS"].split())
        log_file.write_text("")
        message = first_failure if len(flags) == 1 else "a stand-in"
        write_json(cwd / "aot.json", {"exception": {"type": "JaxRuntimeError", "message": message}})
        return 1, 0.1

    row = rows["deepseek-offload-plain"]
    result = compiling.compile_row(row, gb200, tmp_path / "row.json", tmp_path / "work", launcher=compile_process)
    assert len(flags) == compiles and "--xla_gpu_autotune_level=0" in flags[0]
    if compiles == 1:
        assert "autotuning_fallback" not in result and "out of memory" in result["message"]
        return
    assert "--xla_gpu_autotune_level=0" not in flags[1] and "--xla_gpu_shard_autotuning=false" in flags[1]
    fallback = result["autotuning_fallback"]
    assert fallback["compile_only_flags"] == [
        "--xla_gpu_shard_autotuning=false",
        "--xla_gpu_enable_cub_radix_sort=false",
    ]
    assert fallback["why"].startswith(
        "JaxRuntimeError: INTERNAL: Failed to get configs for: 2 out of 47 instructions. See logs for all failures."
        " Example failure: No supported config found for HLO: %gemm_fusion_dot.138 = bf16[256,1280,2048]"
    )
    assert result["message"] == "JaxRuntimeError: a stand-in"  # the second compile's own outcome


def test_a_targets_settings_for_measured_runs_do_not_reach_the_source_rows(rows, gb200):
    """The source's rows compile with the source's attention on every GPU target: a target's
    `maxtext` is given to every row, so a setting meant for the runs measured on that hardware (H100's
    Transformer Engine attention, which MaxText refuses for packed rows without max_segments_per_seq)
    belongs to those runs' own files."""
    gpu_targets = [load_target(path.stem) for path in sorted((REPO / "experiments/targets").glob("*.yaml"))]
    for target in [t for t in gpu_targets if t.kind == "gpu"]:
        for row in rows.values():
            attention = compile_overrides(row, target)["attention"]
            assert attention == compile_overrides(row, gb200)["attention"], (target.name, row.id)
