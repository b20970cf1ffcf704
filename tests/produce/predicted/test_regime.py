"""The predicted regime (host-copy time over compute time): its FLOP count is MaxText's own, its bytes
are what the chip's profile moved, and the sweep's table beside its file is the one the code gives."""

from __future__ import annotations

import json

import pytest

from conftest import REPO
from offload_repro.core import maxtext_args
from offload_repro.core.data import load_rows, load_target
from offload_repro.core.published import load_speed
from offload_repro.core.sweep import load_sweep, sweep_file
from offload_repro.produce.predicted import regime

KEPT = REPO / "experiments" / "device-results" / "tpu-v5e-1" / "runs"
TABLES = ["experiments/rows/llama3.1-405b.yaml", "experiments/rows/deepseek-v3-671b.yaml"]
ROWS = {row.id: row for row in load_rows(TABLES)}


@pytest.mark.parametrize("row_id", ["llama-baseline", "deepseek-remat", "deepseek-device-mb2"])
def test_the_flop_count_is_the_one_maxtext_recorded_on_the_chip(row_id):
    row, chip = ROWS[row_id], load_target("tpu-v5e-1")
    config = regime.settled(row.model, maxtext_args.target_overrides(row, chip))
    recorded = json.loads((KEPT / f"{row_id}.json").read_text())["model_tflops_per_step_per_device"]
    assert regime.step_flops(config).total / 1e12 == pytest.approx(recorded, rel=1e-12)


def test_the_offloaded_bytes_are_what_the_chips_profile_moved_each_way():
    row, chip, speed = ROWS["llama-qkv-offload-lhs"], load_target("tpu-v5e-1"), load_speed()
    run = json.loads((KEPT / "llama-qkv-offload-lhs.json").read_text())
    found = regime.row_regime(row, maxtext_args.target_overrides(row, chip), chip, speed, "bfloat16")
    for direction in ("to_host", "from_host"):
        assert found.offloaded_bytes == run["overlap"]["by_direction"][direction]["bytes_per_step"]
    assert found.host_copy_s == pytest.approx(found.offloaded_bytes / 14.0e9)  # the probed 14.0 GB/s, whole
    assert found.compute_s == pytest.approx(run["model_tflops_per_step_per_device"] / 197)
    assert found.copy_to_compute == pytest.approx(0.2443, abs=1e-4)


def test_a_program_without_offload_copies_nothing_and_another_block_is_refused():
    row, chip, speed = ROWS["deepseek-remat"], load_target("tpu-v5e-1"), load_speed()
    assert (
        regime.row_regime(row, maxtext_args.target_overrides(row, chip), chip, speed, "bfloat16").copy_to_compute == 0
    )
    with pytest.raises(ValueError, match="decoder block 'mistral' is not counted"):
        regime.step_flops({"decoder_block": "mistral"})


def test_the_sweeps_table_is_current_and_spans_its_regimes():
    chip = load_target("tpu-v5e-1")
    sweep = load_sweep(sweep_file(chip.name), list(ROWS.values()), chip)
    text = regime.table(sweep, list(ROWS.values()), chip, load_target("gb200-nvl72"), load_speed())
    assert regime.table_file(sweep).read_text() == text, "run python -m offload_repro.produce.predicted.regime --write"
    found = regime.sweep_regimes(sweep, chip, load_speed())
    for family in ("llama", "deepseek"):
        ratios = [found[p.regime].copy_to_compute for p in sweep.family(family)]
        assert max(ratios) / min(ratios) >= 10
