"""What-if: the capacity frontier's search and cache, and the transfer budget's arithmetic."""

from __future__ import annotations

import gzip
import random
import re

import numpy as np
import pytest

from conftest import RESULTS, program_of
from offload_repro.core.assumptions import load_assumptions
from offload_repro.core.data import load_target
from offload_repro.core.results import read_result, write_result
from offload_repro.core.variants import variant_row
from offload_repro.produce.compiled import program_cache
from offload_repro.produce.compiled.aot_compile import HLO_FILE
from offload_repro.produce.compiled.compiled_row import compile_result, compile_row
from offload_repro.produce.whatif import capacity_frontier
from offload_repro.produce.whatif.transfer_budget import budget_line
from workflow_copy import copy_workflow, snakemake


def policy(policy_id):
    return next(p for p in capacity_frontier.load_policies()["policies"] if p["id"] == policy_id)


def test_a_policy_is_its_row_with_the_micro_batch_varied(rows):
    device = capacity_frontier.policy_row(policy("deepseek-device"), rows, 3)
    assert device.per_device_batch_size == 3 and device.global_batch_size == 3 * 128
    assert device.placement == rows["deepseek-device-mb8"].placement and device.id == "deepseek-device-mb3"
    qkv = capacity_frontier.policy_row(policy("llama-qkv-device"), rows, 2)
    assert qkv.tensors("device") == ["query_proj", "key_proj", "value_proj"]
    assert policy("llama-qkv-device")["published"] is False


# Device GiB per micro batch compiled for GB200 (184.3 GiB) by the bisection this search replaced:
# DeepSeek saved on device and offloaded (tests/fixtures/results/whatif/gb200-nvl72/).
GB200_GIB = 184.3
DEVICE_SAVE = {1: 143.38, 2: 153.95, 3: 177.04, 4: 200.68, 8: 295.15, 16: 487.96}
OFFLOAD = {1: 126.01, 8: 163.37, 10: 176.10, 11: 180.29, 12: 187.17, 16: 215.04}


def measured(gib_at, capacity=GB200_GIB, calls=None):
    """measure(b) for the search: a point whose device memory is gib_at(b)."""

    def measure(micro_batch):
        if calls is not None:
            calls.append(micro_batch)
        gib = gib_at(micro_batch)
        return {"micro_batch": micro_batch, "status": "ok", "fits": gib <= capacity, "margin_gib": capacity - gib}

    return measure


def interpolated(known):
    """Device GiB between the compiled points, linear (what the real points lie close to)."""
    batches = sorted(known)
    return lambda micro_batch: float(np.interp(micro_batch, batches, [known[b] for b in batches]))


@pytest.mark.parametrize(
    ("known", "grid", "largest", "compiles"),
    [(DEVICE_SAVE, (), 3, [8, 1, 2, 3, 4]), (DEVICE_SAVE, (2, 8), 3, [3, 4]), (OFFLOAD, (8,), 11, [16, 11, 12])],
)
def test_the_search_finds_the_published_frontiers_in_a_few_compiles(known, grid, largest, compiles):
    """A bisection over 1-16 compiled 6 points for each; the grid's rows (DeepSeek saved on device
    at micro batches 2 and 8, offloaded at 8) are in the cache before the search starts."""
    calls = []
    measure = measured(interpolated(known), calls=calls)
    cached = {b: measured(interpolated(known))(b) for b in grid}
    found, points, error = capacity_frontier.search(8, {"min": 1, "max": 16}, measure, cached.get)
    assert (found, error) == (largest, None)
    assert calls == compiles
    assert {largest, largest + 1} <= {p["micro_batch"] for p in points}  # the boundary, both sides compiled
    assert [p["micro_batch"] for p in points] == sorted([*calls, *grid])


def test_the_search_equals_exhaustive_compiling_on_any_growing_memory():
    """Whatever the shape (linear, convex, concave, steps), the answer is the one compiling every
    micro batch gives, and every compile is new."""
    generator = random.Random(7)
    for _ in range(400):
        start, high = generator.randint(1, 20), generator.randint(1, 20)
        growth = [generator.choice([0.0, 0.5, 3.0, 10.0, 40.0]) * generator.random() for _ in range(high + 1)]
        gib = {b: 100 + sum(growth[:b]) for b in range(1, high + 1)}
        capacity = 100 + generator.random() * (gib[high] - 100 + 20)
        calls = []
        chosen = generator.sample(sorted(gib), min(len(gib), generator.randint(0, 2)))
        grid = {b: measured(gib.get, capacity)(b) for b in chosen}
        measure = measured(gib.get, capacity, calls)
        found, _, error = capacity_frontier.search(start, {"min": 1, "max": high}, measure, grid.get)
        fitting = [b for b in gib if gib[b] <= capacity]
        assert (found, error) == (max(fitting) if fitting else None, None), (gib, capacity, start, grid)
        assert len(calls) == len(set(calls)) and not set(calls) & set(grid)


def test_frontier_beyond_the_range_or_below_it():
    calls = []
    assert capacity_frontier.search(8, {"min": 1, "max": 16}, measured(lambda b: 10.0 * b, calls=calls))[0] == 16
    assert calls == [8, 16]
    calls.clear()
    assert capacity_frontier.search(8, {"min": 1, "max": 16}, measured(lambda b: 500.0 + b, calls=calls))[0] is None
    assert calls == [8, 1]


def test_a_compile_error_stops_the_search_with_its_message():
    def failing(micro_batch):
        return {"micro_batch": micro_batch, "status": "error", "message": "XlaRuntimeError: boom"}

    found, points, error = capacity_frontier.search(2, {"min": 1, "max": 8}, failing)
    assert found is None and error == "micro batch 2: XlaRuntimeError: boom" and points[0]["status"] == "error"


@pytest.mark.parametrize(
    ("policy_id", "micro_batch", "row_id"),
    [
        ("deepseek-device", 8, "deepseek-device-mb8"),
        ("deepseek-device", 2, "deepseek-device-mb2"),
        ("deepseek-offload", 8, "deepseek-offload-optimized"),
        ("llama-remat", 2, "llama-baseline"),
    ],
)
def test_a_policys_point_at_a_rows_micro_batch_is_that_rows_program(rows, policy_id, micro_batch, row_id):
    gb200 = load_target("gb200-nvl72")
    point = capacity_frontier.policy_row(policy(policy_id), rows, micro_batch)
    assert program_cache.program_key(point, gb200) == program_cache.program_key(rows[row_id], gb200)


def test_a_program_is_keyed_by_everything_that_decides_it(rows):
    gb200, rubin = load_target("gb200-nvl72"), load_target("vr-nvl144")

    def key(row, target=gb200, *flags):
        return program_cache.program_key(row, target, *flags)

    mb2 = capacity_frontier.policy_row(policy("deepseek-device"), rows, 2)
    keys = {
        key(mb2),
        key(mb2, rubin),  # another GPU description
        key(capacity_frontier.policy_row(policy("deepseek-device"), rows, 3)),  # micro batch
        key(capacity_frontier.policy_row(policy("deepseek-offload"), rows, 2)),  # placement, flags
        key(mb2, gb200, program_cache.DEFAULT_AUTOTUNING),  # compile-only flags
        key(rows["llama-qkv-offload-lhs"]),
        key(rows["llama-qkv-offload-nolhs"]),  # LHS off: XLA flags only
    }
    assert len(keys) == 7


@pytest.mark.parametrize("row_id", ["deepseek-device-mb8", "deepseek-offload-plain", "llama-qkv-offload-lhs"])
def test_a_result_from_a_cached_program_is_the_result_compiling_gave(rows, row_id):
    compiled = read_result(RESULTS / f"compiled/gb200-nvl72/{row_id}.json", "compile")
    row = rows[row_id]
    if row.family == "deepseek":  # the fixtures were compiled with MaxText's dense dispatch, now an alternative
        dispatch = load_assumptions()["deepseek-moe-dispatch"]
        row = variant_row(row, dispatch, next(a for a in dispatch["alternatives"] if a["id"] == "capacity-1.0"))
    result = compile_result(row, load_target("gb200-nvl72"), program_of(compiled), None, True)
    fields = ("memory", "device_bytes", "host_bytes", "fits", "margin_gib", "xla_memory_warnings", "maxtext_overrides")
    assert {field: result[field] for field in fields} == {field: compiled[field] for field in fields}
    assert result["program"]["cached"] is True


def test_a_row_whose_program_is_cached_is_not_compiled_again(rows, tmp_path, monkeypatch):
    gb200, row = load_target("gb200-nvl72"), rows["deepseek-device-mb8"]
    compiled = read_result(RESULTS / "compiled/gb200-nvl72/deepseek-device-mb8.json", "compile")
    cache = tmp_path / "programs"
    key = program_cache.program_key(row, gb200)
    entry = program_of(compiled) | {"key": key, "compiled_as": "deepseek-device-mb8"}
    write_result(cache / f"{key}.json", "program", entry)
    program_cache.hlo_path(cache / f"{key}.json").write_bytes(gzip.compress(b"HloModule stand_in"))

    def no_compile(*args, **kwargs):
        raise AssertionError("compiled although the program is in the cache")

    monkeypatch.setattr(program_cache, "compile_program", no_compile)
    mb8 = capacity_frontier.policy_row(policy("deepseek-device"), rows, 8)
    point = capacity_frontier.compile_point(mb8, gb200, cache)
    assert point["cached"] and point["compiled_as"] == "deepseek-device-mb8" and point["fits"] is False
    assert point["device_gib"] == pytest.approx(295.15, abs=0.01)

    def compiles(row, target, work_dir, *args, **kwargs):
        work_dir.mkdir(parents=True, exist_ok=True)
        (work_dir / HLO_FILE).write_bytes(gzip.compress(b"HloModule compiled_again"))
        return program_of(compiled) | {"key": key}

    (cache / f"{key}.json").write_text("{damaged")
    monkeypatch.setattr(program_cache, "compile_program", compiles)
    result = compile_row(row, gb200, tmp_path / "row.json", tmp_path / "work", programs=cache)
    assert result["program"]["cached"] is False and read_result(cache / f"{key}.json", "program")["key"] == key
    assert gzip.decompress(program_cache.hlo_path(cache / f"{key}.json").read_bytes()) == b"HloModule compiled_again"

    program_cache.hlo_path(cache / f"{key}.json").unlink()  # an entry without its HLO is not a program to reuse
    assert program_cache.cached_program(row, gb200, cache) is None


def test_link_bandwidth_per_direction_from_the_target_files():
    assert load_target("gb200-nvl72").host_link_gb_s_per_direction == 450  # 900 GB/s bidirectional
    assert load_target("vr-nvl144").host_link_gb_s_per_direction == 900
    assert load_target("h200-8").host_link_gb_s_per_direction == 64
    assert load_target("h200-1").host_link_gb_s_per_direction == 64  # stated per direction
    assert load_target("cpu").host_link_gb_s_per_direction is None


def test_transfer_budget_arithmetic(rows):
    """QKV offload of Llama on GB200: 70.875 GiB each way at 255.5 GB/s (NVLink-C2C's 450 one way, but
    each GPU's share of its Grace's 511 GB/s when both of its GPUs copy), against the step the
    published 2,746 TFLOPs/s/device gives a step of 1,000 model TFLOP (a round test number)."""
    compiled = {"hlo": {"host_buffer_bytes": 76101451776}, "model_tflops_per_device_per_step": 1000.0}
    gb200 = load_target("gb200-nvl72")
    line = budget_line(rows["llama-qkv-offload-lhs"], compiled, gb200, gb200)
    assert line["copy_s_per_step"] == pytest.approx(2 * 76101451776 / 255.5e9)
    assert line["step_s"] == pytest.approx(1000 / 2746)
    assert line["copy_share_of_step"] == pytest.approx(line["copy_s_per_step"] / line["step_s"])
    h200 = budget_line(rows["llama-qkv-offload-lhs"], compiled, load_target("h200-8"), gb200)
    assert h200["achieved_tflops_per_device"] == pytest.approx(2746 * 989 / 2500)
    plain = budget_line(rows["deepseek-offload-plain"], compiled, gb200, gb200)
    assert plain["copy_share_of_step"] is None and "publishes no throughput" in plain["why_no_share"]


def test_a_target_added_as_one_file_enters_the_grid_and_the_frontier(tmp_path, rows):
    directory = copy_workflow(tmp_path)
    targets = directory / "experiments/targets"
    original = (targets / "vr-nvl144.yaml").read_text()
    (targets / "rubin-copy.yaml").write_text(original.replace("name: vr-nvl144", "name: rubin-copy"))
    done = snakemake(directory, "-n", "--config", "whatif=True", 'frontier_targets=["gb200-nvl72","rubin-copy"]')
    plan = done.stdout + done.stderr
    assert done.returncode == 0, plan[-3000:]
    for row_id in rows:
        assert f"results/compiled/rubin-copy/{row_id}.json" in plan
    for item in capacity_frontier.load_policies()["policies"]:
        assert f"results/whatif/rubin-copy/frontier-{item['id']}.json" in plan


def test_a_default_run_plans_the_same_whatever_results_hold(tmp_path):
    """The same command, the same plan: what-if, sensitivity and validation results left by earlier
    runs neither enter a plain run's evidence nor are kept current by it; asking for a stage does."""
    directory = copy_workflow(tmp_path)
    plain = snakemake(directory, "-n")
    assert plain.returncode == 0 and "frontier-deepseek-device.json" not in plain.stdout
    for left in ("whatif/budget.json", "whatif/assumptions.json", "validation/model.json"):
        (directory / "results" / left).parent.mkdir(parents=True, exist_ok=True)
        (directory / "results" / left).write_text("{}")
    again = snakemake(directory, "-n")
    assert again.returncode == 0, again.stderr[-3000:]
    planned = re.compile(r"^\s+output: (.*)$", re.M)
    # the same jobs; the order a dry run lists jobs that are ready together in is Snakemake's, not the plan's
    assert sorted(planned.findall(again.stdout)) == sorted(planned.findall(plain.stdout)) != []
    asked = snakemake(directory, "-n", "--config", "whatif=True")
    assert asked.returncode == 0, asked.stderr[-3000:]
    assert "results/whatif/gb200-nvl72/frontier-deepseek-device.json" in asked.stdout
