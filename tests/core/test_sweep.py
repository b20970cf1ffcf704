"""The sweep file: the kept one loads as the pairs it declares, and a malformed one is refused by file,
entry and field."""

from __future__ import annotations

import pytest
import yaml

from offload_repro.core.data import DataError, load_rows, load_target
from offload_repro.core.sweep import load_sweep, sweep_file

TABLES = ["experiments/rows/llama3.1-405b.yaml", "experiments/rows/deepseek-v3-671b.yaml"]


@pytest.fixture(scope="module")
def rows():
    return load_rows(TABLES)


@pytest.fixture(scope="module")
def chip():
    return load_target("tpu-v5e-1")


def test_the_kept_sweep_is_21_placement_pairs_over_11_regimes(rows, chip):
    sweep = load_sweep(sweep_file("tpu-v5e-1"), rows, chip)
    pairs = list(sweep.pairs())
    assert len(sweep.points) == 27 and len(sweep.regimes()) == 11 and len(pairs) == 21
    assert all(a.regime == b.regime and a.row.placement != b.row.placement for a, b in pairs)
    regimes = {family: {p.regime for p in sweep.family(family)} for family in ("llama", "deepseek")}
    assert len(regimes["llama"]) >= 4 and len(regimes["deepseek"]) >= 4


def edited(tmp_path, change) -> str:
    data = yaml.safe_load(sweep_file("tpu-v5e-1").read_text())
    change(data)
    path = tmp_path / "tpu-v5e-1.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def refusal(tmp_path, rows, chip, change) -> str:
    with pytest.raises(DataError) as refused:
        load_sweep(edited(tmp_path, change), rows, chip)
    return str(refused.value)


def test_an_unknown_row_is_refused_with_the_closest_name(tmp_path, rows, chip):
    said = refusal(tmp_path, rows, chip, lambda d: d["regimes"][0]["points"][1].update(row="llama-qkv-ofload-lhs"))
    assert said.startswith(
        f"{tmp_path}/tpu-v5e-1.yaml: regime 1 ('llama-w512-s2k'), point 'llama-w512-s2k-qkv-offload'"
    )
    assert "field 'row': no row 'llama-qkv-ofload-lhs' in the tables; did you mean 'llama-qkv-offload-lhs'?" in said


def test_an_override_of_an_unknown_key_or_type_is_refused_by_the_schema(tmp_path, rows, chip):
    said = refusal(tmp_path, rows, chip, lambda d: d["regimes"][2]["overrides"].update(emb_dim=1024))
    assert "regime 3 (id 'llama-w2048-s2k'), field 'overrides'" in said and "'emb_dim' was unexpected" in said
    said = refusal(tmp_path, rows, chip, lambda d: d["regimes"][2]["overrides"].update(max_target_length="8k"))
    assert "regime 3 (id 'llama-w2048-s2k'), field 'overrides.max_target_length': '8k' is not of type 'integer'" in said


def test_an_override_the_familys_scale_rule_does_not_set_is_refused(tmp_path, rows, chip):
    said = refusal(tmp_path, rows, chip, lambda d: d["regimes"][0]["overrides"].update(base_moe_mlp_dim=256))
    assert "regime 1 ('llama-w512-s2k'), field 'overrides.base_moe_mlp_dim': the scale rule of 'tpu-v5e-1'" in said
    assert "sets no 'base_moe_mlp_dim' for llama" in said


def test_an_id_used_twice_is_refused(tmp_path, rows, chip):
    def twice(data):
        data["regimes"][1]["points"][0]["id"] = data["regimes"][0]["points"][0]["id"]

    said = refusal(tmp_path, rows, chip, twice)
    assert "regime 2 ('llama-w1024-s2k'), field 'points': id 'llama-w512-s2k-baseline' already used by regime 1" in said
    said = refusal(tmp_path, rows, chip, lambda d: d["regimes"][1].update(regime="llama-w512-s2k"))
    assert "regime 2 ('llama-w512-s2k'), field 'regime': 'llama-w512-s2k' already used by regime 1" in said


def test_a_regime_whose_points_differ_in_more_than_placement_is_refused(tmp_path, rows, chip):
    # DeepSeek's device-save row is published at micro batch 2, the others at 8: the regime must set one
    said = refusal(tmp_path, rows, chip, lambda d: d["regimes"][7]["overrides"].pop("per_device_batch_size"))
    assert "regime 8 ('deepseek-w1024-s2k'), point 'deepseek-w1024-s2k-device', field 'row': differs from" in said
    assert "per_device_batch_size 8 vs 2" in said


def test_one_placement_twice_or_two_families_in_a_regime_are_refused(tmp_path, rows, chip):
    said = refusal(tmp_path, rows, chip, lambda d: d["regimes"][0]["points"][1].update(row="llama-baseline"))
    assert "point 'llama-w512-s2k-qkv-offload', field 'row': the placement of 'llama-w512-s2k-baseline' again" in said
    said = refusal(tmp_path, rows, chip, lambda d: d["regimes"][0]["points"][1].update(row="deepseek-remat"))
    assert "regime 1 ('llama-w512-s2k')" in said
