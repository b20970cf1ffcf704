"""The h200-1 and h100-1 scale rules keep the source's capacity contrast, judged from compiled H200 memory
(slow: three train-step compiles per GPU description)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from offload_repro.core.data import load_target
from offload_repro.produce.compiled.compiled_row import compile_row
from offload_repro.produce.compiled.derive_scale import CONTRAST, choose


@pytest.mark.slow
def test_declared_one_gpu_rules_reproduce_the_capacity_contrast(rows, tmp_path):
    """Both targets' three compiles, two at a time."""
    jobs = [(target_name, row_id) for target_name in ("h200-1", "h100-1") for row_id in CONTRAST]

    def compiled(job: tuple[str, str]) -> dict:
        target_name, row_id = job
        work = tmp_path / target_name / row_id
        return compile_row(rows[row_id], load_target(target_name), work.with_suffix(".json"), work)

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(jobs, pool.map(compiled, jobs), strict=True))
    assert len(results) == 6  # three rows on each of two targets
    for (target_name, row_id), result in results.items():
        assert result["status"] == "ok", (target_name, row_id, result["message"])
        assert result["devices"] == 1
        assert result["fits"] is CONTRAST[row_id], (target_name, row_id, result["device_bytes"] / 1024**3)


def test_choice_takes_the_widest_margin_among_candidates_that_match():
    def candidate(value, mb2, mb8, offload):
        margins = {"deepseek-device-mb2": mb2, "deepseek-device-mb8": mb8, "deepseek-offload-optimized": offload}
        return {"value": value, "margin_gib": margins, "fits": {row: m >= 0 for row, m in margins.items()}}

    candidates = [candidate(4, 40, 20, 25), candidate(5, 30, -2, 6), candidate(6, 20, -5, 4), candidate(7, 10, -20, -3)]
    assert choose(candidates)["value"] == 6  # 4 keeps device-save at mb 8 fitting; 7 loses the offload row
    assert choose(candidates[:1]) is None
