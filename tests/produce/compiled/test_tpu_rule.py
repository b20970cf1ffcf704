"""The tpu-v5e-1 target: its file, the rows that are one program on a TPU, how a derivation's choice
is written into the file and how a TPU compile's outcome is read."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import REPO
from offload_repro.core.data import DataError, load_target
from offload_repro.core.maxtext_args import environment, same_program_rows, target_overrides
from offload_repro.produce.compiled.derive_scale import apply, choose, tpu_outcome

REFUSAL = (
    "JaxRuntimeError: RESOURCE_EXHAUSTED: E1000: CompileTimeHbmOom: Ran out of memory on HBM, the total memory"
    " required for HLO temporaries (17.62G) exceeds available HBM (15.75G). HLO module: jit_train_step."
)


def test_the_chip_is_a_cited_one_device_target(rows):
    target = load_target("tpu-v5e-1")
    assert target.kind == "tpu" and target.judges == ["single-device"] and target.uncited == ()
    assert target.host_link_gb_s_per_direction == 14.0  # measured by the probe, cited as such
    overrides = target_overrides(rows["deepseek-device-mb8"], target)
    assert overrides["hardware"] == "tpu" and overrides["ici_fsdp_parallelism"] == -1
    assert overrides["per_device_batch_size"] == 8 and overrides["max_target_length"] == 4096  # published


def test_a_tpu_target_without_its_memory_is_refused(tmp_path):
    text = (REPO / "experiments" / "targets" / "tpu-v5e-1.yaml").read_text()
    (tmp_path / "tpu-v5e-1.yaml").write_text(text.replace("  device_memory_bytes:", "  # device_memory_bytes:"))
    with pytest.raises(DataError, match=r"tpu-v5e-1\.yaml.*device_memory_bytes"):
        load_target("tpu-v5e-1", tmp_path)


def test_rows_differing_only_in_xla_gpu_flags_are_one_program_on_a_tpu(rows):
    listed = list(rows.values())
    on_tpu = same_program_rows(listed, load_target("tpu-v5e-1"))
    assert on_tpu["llama-qkv-offload-nolhs"] == [
        "llama-qkv-offload-lhs",
        "llama-qkv-offload-nolhs",
        "llama-qkv-offload-lhs-pipelined",
    ]
    assert on_tpu["deepseek-offload-plain"] == ["deepseek-offload-plain", "deepseek-offload-optimized"]
    assert on_tpu["llama-baseline"] == ["llama-baseline"] and on_tpu["deepseek-remat"] == ["deepseek-remat"]
    # on a GPU the flags are part of the program
    on_gpu = same_program_rows(listed, load_target("h200-1"))
    assert all(ids == [row] for row, ids in on_gpu.items())
    # and the rows' processes still get every flag: the program's identity is XLA's business
    flags = environment(rows["llama-qkv-offload-nolhs"], load_target("tpu-v5e-1"))["XLA_FLAGS"]
    assert "--xla_gpu_enable_latency_hiding_scheduler=false" in flags


def test_a_tpu_compiles_outcome():
    capacity = 16_909_336_064
    refused = {"status": "oom", "hbm_oom": {"required_gib": 17.62, "available_gib": 15.75}, "memory": None}
    assert tpu_outcome(refused, capacity) == (False, -1.87, 17.62)
    # deepseek-offload-optimized at 12 layers, as the chip compiled it (its run's compiled_memory)
    fits = {"status": "ok", "memory": {"peak_memory_in_bytes": 13_326_407_680}}
    assert tpu_outcome(fits, capacity) == (True, 3.34, 12.41)
    with pytest.raises(RuntimeError, match="lockfile"):
        tpu_outcome({"status": "error", "message": "Internal error when accessing libtpu multi-process lockfile"}, 1)


def test_a_derivations_choice_is_written_into_its_family_block(tmp_path):
    shutil.copy(REPO / "experiments" / "targets" / "tpu-v5e-1.yaml", tmp_path)
    derivation = {"target": "tpu-v5e-1", "parameter": "deepseek.base_num_decoder_layers", "chosen": 16}
    assert apply(derivation, tmp_path).endswith("set to 16 (was 12), as derived")
    target = load_target("tpu-v5e-1", tmp_path)
    assert target.scale["families"]["deepseek"]["base_num_decoder_layers"] == 16
    assert target.scale["families"]["llama"]["base_num_decoder_layers"] == 8  # the other family's is its own
    assert apply(derivation, tmp_path).endswith("is 16, as derived")
    with pytest.raises(ValueError, match="chose no value"):
        apply(derivation | {"chosen": None}, tmp_path)


def test_the_kept_derivation_chose_the_depth_the_chip_ran_and_agrees_with_its_compiles():
    kept = REPO / "experiments" / "device-results" / "tpu-v5e-1"
    derivation = json.loads((kept / "derivation.json").read_text())
    assert (
        derivation["chosen"] == 12 == load_target("tpu-v5e-1").scale["families"]["deepseek"]["base_num_decoder_layers"]
    )
    assert choose(derivation["candidates"])["value"] == 12
    twelve = next(c for c in derivation["candidates"] if c["value"] == 12)
    for row in ("deepseek-device-mb2", "deepseek-offload-optimized"):  # compiled without the chip, and on it
        run = json.loads((kept / "runs" / f"{row}.json").read_text())
        assert twelve["device_gib"][row] == round(run["compiled_memory"]["peak_memory_in_bytes"] / 1024**3, 2)
    refused = json.loads((kept / "runs" / "deepseek-device-mb8.json").read_text())
    assert f"({twelve['device_gib']['deepseek-device-mb8']}G) exceeds available HBM" in refused["message"]
