"""A predicted ratio of two placements judged by the model's error on such ratios (the pair-error
stage's record), and the sign disagreements the page states, on the main job's kept result."""

from __future__ import annotations

import pytest

from conftest import RESULTS
from offload_repro.core.results import read_result
from offload_repro.judge.prediction_verdicts import band, decided_below, verdict
from offload_repro.judge.ratio_errors import PP, PairError, ratio_error
from offload_repro.judge.sign_disagreements import ratio_records, read_pairs, sign_disagreements
from report_page import build_report

PAIRS = RESULTS / "predicted" / "pair-errors.json"


def test_the_model_and_the_post_disagree_in_sign_on_two_pairs_of_the_source_rows():
    found = {(d["first"], d["second"]): d for d in sign_disagreements(read_pairs(PAIRS))}
    assert set(found) == {
        ("llama-qkv-offload-lhs", "llama-baseline"),
        ("llama-qkv-offload-lhs-pipelined", "llama-qkv-offload-lhs"),
    }
    lhs = found["llama-qkv-offload-lhs", "llama-baseline"]
    assert lhs["published"] == pytest.approx(2746 / 2669 - 1)  # the post's two throughputs
    # opposite signs under every calibration outside the pair, and a ratio of a few percent, as a
    # placement of 576 MiB per layer against 16 GB/s-class copies hidden under compute can be
    for d in found.values():
        assert d["predicted_low"] <= d["predicted_high"] and abs(d["predicted_high"]) < 0.1
        assert (d["predicted_high"] < 0 < d["published"]) or (d["predicted_low"] > 0 > d["published"])
        assert not set(d["calibrated_on"]) & {d["first"], d["second"]}
    assert sign_disagreements(None) == [] and ratio_records(None) == {}


def test_a_placement_ratio_takes_the_chips_error_only_where_its_rows_lie_in_the_measured_range():
    records = ratio_records(read_pairs(PAIRS))
    llama = records["llama-qkv-lhs-vs-baseline"]
    value, why, source = ratio_error(llama, "gb200-nvl72")
    assert (value, source) == (llama["chip_error"]["largest_abs_pp"], "chip placement pairs")
    assert "inside the chip's measured 0.073 to 1.364" in why and f"over {len(llama['chip_error']['over'])}" in why
    # DeepSeek's rows copy for 0.249 of their compute under sequence length 2048: just below the chip's range
    deepseek = records["deepseek-optimized-vs-remat"]
    value, why, source = ratio_error(deepseek, "gb200-nvl72")
    assert value is None and source == "unmeasured"
    assert "below the chip's measured 0.252 to 3.691 (by a factor of 1.01)" in why
    # the source's own pairs of the kind, where larger, set the error; neither: unmeasured
    larger = llama | {"source_error": {"largest_abs_pp": 9.5, "over": ["x", "y"]}}
    assert ratio_error(larger)[0:3:2] == (9.5, "source pairs")
    assert ratio_error(None)[0] is None


def test_a_ratio_band_in_pp_is_decided_only_outside_the_error():
    check = {"type": "ratio", "rows": ["a", "b"]}
    series = {"a": [1.010, 1.012], "b": [1.0, 1.0]}  # +1.0% and +1.2% at two settings
    found = band(check, series, {("a", "b"): PairError(4.78, PP)}, [])
    assert found["low"] == pytest.approx(0.010 - 0.0478) and found["high"] == pytest.approx(0.012 + 0.0478)
    tolerance = {"absolute": 0.02}
    assert verdict(check, found, 0.029, tolerance) == "inconclusive"
    # the predictions themselves lie inside +0.9% to +4.9%: an error below 0.1 pp would pass
    assert "an error below 0.10 pp would pass" in decided_below(found, 0.029, 0.02)
    assert verdict(check, band(check, series, {("a", "b"): PairError(0.05, PP)}, []), 0.029, tolerance) == "pass"
    # published +8%: the predictions lie 2.8 pp below the tolerance's low end; 1 pp decides against
    assert verdict(check, band(check, series, {("a", "b"): PairError(1.0, PP)}, []), 0.08, tolerance) == "fail"


def test_the_page_judges_the_llama_ratio_by_the_chips_error_and_states_the_sign_disagreements(tmp_path, tables):
    inputs = [
        *sorted((RESULTS / "compiled/gb200-nvl72").glob("*.json")),
        RESULTS / "analytic.json",
        RESULTS / "predicted/gb200-nvl72.json",
    ]
    _, verdicts_path, page = build_report(
        tmp_path, tables, inputs, check=("--pair-errors", str(PAIRS)), report=("--pairs", str(PAIRS))
    )
    verdicts = read_result(verdicts_path, "verdicts")
    claim = next(c for c in verdicts["claims"] if c["id"] == "llama-qkv-lhs-vs-baseline")
    predicted = next(j for j in claim["judgements"] if j["evidence"] == "predicted")
    assert predicted["band"]["error_unit"] == "pp" and predicted["band"]["error"] == 4.78
    html = page.read_text()
    screen = html[html.index('id="sign-disagreements"') :].split("</li>")[0]
    assert "+2.9% published" in screen and "llama-qkv-offload-lhs-pipelined" in screen
