"""What-if: the capacity frontier's search and cache, and the transfer budget's arithmetic."""

from __future__ import annotations

import pytest

from offload_repro.core.data import load_rows, load_target
from offload_repro.produce import frontier
from offload_repro.produce.budget import budget_line, link_gb_s_per_direction


@pytest.fixture(scope="module")
def rows(tables):
    return {row.id: row for row in load_rows(tables)}


def policy(policy_id):
    return next(p for p in frontier.load_policies()["policies"] if p["id"] == policy_id)


def test_a_policy_is_its_row_with_the_micro_batch_varied(rows):
    device = frontier.policy_row(policy("deepseek-device"), rows, 3)
    assert device.per_device_batch_size == 3 and device.global_batch_size == 3 * 128
    assert device.placement == rows["deepseek-device-mb8"].placement and device.id == "deepseek-device-mb3"
    qkv = frontier.policy_row(policy("llama-qkv-device"), rows, 2)
    assert qkv.tensors("device") == ["query_proj", "key_proj", "value_proj"]
    assert policy("llama-qkv-device")["published"] is False


def fake_compiles(monkeypatch, largest_fitting, calls):
    def compile_point(row, target, points_dir):
        calls.append(row.per_device_batch_size)
        fits = row.per_device_batch_size <= largest_fitting
        result = {"status": "ok", "message": None, "fits": fits, "device_bytes": 1, "margin_gib": 1.0 if fits else -1.0}
        return result, points_dir / f"{row.id}.json", False

    monkeypatch.setattr(frontier, "compile_point", compile_point)


@pytest.mark.parametrize("largest", [1, 2, 5, 7, 8, 31])
def test_bisection_finds_the_largest_fitting_micro_batch(monkeypatch, rows, tmp_path, largest):
    calls: list[int] = []
    fake_compiles(monkeypatch, largest, calls)
    found, points, error = frontier.search(
        policy("deepseek-device"), rows, load_target("gb200-nvl72"), {"min": 1, "max": 32}, tmp_path
    )
    assert (found, error) == (largest, None)
    assert len(calls) == len(set(calls)) <= 2 + 5  # both ends, then log2(31) halvings
    assert [p["micro_batch"] for p in points] == sorted(calls)


def test_frontier_beyond_the_range_or_below_it(monkeypatch, rows, tmp_path):
    gb200 = load_target("gb200-nvl72")
    fake_compiles(monkeypatch, 100, [])
    assert frontier.search(policy("deepseek-offload"), rows, gb200, {"min": 1, "max": 32}, tmp_path)[0] == 32
    fake_compiles(monkeypatch, 0, [])
    assert frontier.search(policy("deepseek-offload"), rows, gb200, {"min": 1, "max": 32}, tmp_path)[0] is None


def test_a_compile_error_stops_the_search_with_its_message(monkeypatch, rows, tmp_path):
    def compile_point(row, target, points_dir):
        return {"status": "error", "message": "XlaRuntimeError: boom"}, points_dir / "x.json", False

    monkeypatch.setattr(frontier, "compile_point", compile_point)
    found, points, error = frontier.search(
        policy("llama-remat"), rows, load_target("gb200-nvl72"), {"min": 1, "max": 8}, tmp_path
    )
    assert found is None and error == "micro batch 1: XlaRuntimeError: boom" and points[0]["status"] == "error"


def test_a_point_is_cached_under_everything_that_decides_it(rows):
    gb200, rubin = load_target("gb200-nvl72"), load_target("vr-nvl144")
    mb2 = frontier.policy_row(policy("deepseek-device"), rows, 2)
    assert frontier.point_key(mb2, gb200) == frontier.point_key(mb2, gb200)
    assert frontier.point_key(mb2, gb200) != frontier.point_key(mb2, rubin)
    assert frontier.point_key(mb2, gb200) != frontier.point_key(
        frontier.policy_row(policy("deepseek-device"), rows, 3), gb200
    )
    offload = frontier.policy_row(policy("deepseek-offload"), rows, 2)
    assert frontier.point_key(offload, gb200) != frontier.point_key(mb2, gb200)


def test_link_bandwidth_per_direction_from_the_target_files():
    assert link_gb_s_per_direction(load_target("gb200-nvl72")) == 450  # 900 GB/s bidirectional
    assert link_gb_s_per_direction(load_target("vr-nvl144")) == 900
    assert link_gb_s_per_direction(load_target("h200-8")) == 64


def test_transfer_budget_arithmetic(rows):
    """QKV offload of Llama on GB200: 70.875 GiB each way at 450 GB/s, against the step the
    published 2,746 TFLOPs/s/device gives a step of 1,000 model TFLOP (a round test number)."""
    compiled = {"mechanism": {"host_buffer_bytes": 76101451776}, "model_tflops_per_device_per_step": 1000.0}
    gb200 = load_target("gb200-nvl72")
    line = budget_line(rows["llama-qkv-offload-lhs"], compiled, gb200, gb200)
    assert line["copy_s_per_step"] == pytest.approx(2 * 76101451776 / 450e9)
    assert line["step_s"] == pytest.approx(1000 / 2746)
    assert line["copy_share_of_step"] == pytest.approx(line["copy_s_per_step"] / line["step_s"])
    h200 = budget_line(rows["llama-qkv-offload-lhs"], compiled, load_target("h200-8"), gb200)
    assert h200["achieved_tflops_per_device"] == pytest.approx(2746 * 989 / 2500)
    plain = budget_line(rows["deepseek-offload-plain"], compiled, gb200, gb200)
    assert plain["copy_share_of_step"] is None and "publishes no throughput" in plain["why_no_share"]


def test_a_target_added_as_one_file_enters_the_grid_and_the_frontier(tmp_path, tables):
    from workflow_copy import copy_workflow, snakemake

    directory = copy_workflow(tmp_path)
    original = (directory / "experiments/targets/vr-nvl144.yaml").read_text()
    (directory / "experiments/targets/rubin-copy.yaml").write_text(
        original.replace("name: vr-nvl144", "name: rubin-copy")
    )
    done = snakemake(directory, "-n", "--config", "whatif=True", 'frontier_targets=["gb200-nvl72","rubin-copy"]')
    plan = done.stdout + done.stderr
    assert done.returncode == 0, plan[-3000:]
    for row in load_rows(tables):
        assert f"results/compiled/rubin-copy/{row.id}.json" in plan
    for item in frontier.load_policies()["policies"]:
        assert f"results/whatif/rubin-copy/frontier-{item['id']}.json" in plan
