"""The chart of the cost of offloading against the regime, drawn from a real pair-errors result (the
main job's, kept as tests/fixtures/results/predicted/pair-errors.json): it draws the result's records
as they are and computes nothing."""

from __future__ import annotations

from conftest import RESULTS
from offload_repro.core.results import read_result
from offload_repro.present import charts

PAIRS = read_result(RESULTS / "predicted" / "pair-errors.json", "pair-errors")


def drawn(spec: dict) -> list[dict]:
    return [row for rows in spec["datasets"].values() for row in rows if "pair" in row]  # not the zero line


def test_the_chart_draws_every_record_at_its_regime_and_its_measured_and_predicted_cost():
    spec = charts.offload_cost(PAIRS).to_dict()
    records = PAIRS["chart"]
    # the chip's pairs and the source's rows as published, each once
    assert {record["set"] for record in records} >= {"source", "chip_rows"}
    rows = drawn(spec)
    for record in records:
        same = [r for r in rows if r["pair"] == record["pair"] and r["set"] == record["set"]]
        assert same and all(
            r["copy_to_compute"] == record["copy_to_compute"]
            and r["measured_pct"] == record["measured_pct"]
            and r["predicted_pct"] == record["predicted_pct"]
            for r in same
        )
    # the chip's measured range along the foot, the zero line, measured points, the model's line over the
    # chip's pairs, the source's predictions, the range's two ends
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in spec["layer"]]
    assert marks == ["rule", "rule", "point", "line", "point", "tick", "tick"]
    assert spec["layer"][2]["encoding"]["x"]["scale"]["type"] == "log"


def test_a_record_is_a_pair_of_an_offloading_row_over_one_that_offloads_nothing():
    lines = {(line["set"], f"{line['first']} / {line['second']}"): line for line in PAIRS["pairs"]}
    unpredicted = []
    for record in PAIRS["chart"]:
        line = lines.get((record["set"], record["pair"]))
        if line is None:  # a published pair the model does not predict: placed all the same
            assert record["set"] == "source" and record["predicted_pct"] is None
            unpredicted.append(record["pair"])
            continue
        assert line["placements"][0] == "offload" and line["placements"][1] != "offload"
        assert record["measured_pct"] == line["measured"] * 100 and record["copy_to_compute"] == line["regime"] > 0
    # no rate calibrates DeepSeek under the chosen settings: its published 57% stands on the axis unpredicted
    assert "deepseek-offload-optimized / deepseek-remat" in unpredicted
    published = next(r for r in PAIRS["chart"] if r["pair"] == "deepseek-offload-optimized / deepseek-remat")
    # its regime under the chosen settings (sequence length 2048), as the source's programs were compiled
    assert round(published["measured_pct"], 6) == 57.0 and round(published["copy_to_compute"], 3) == 0.249


def test_no_records_no_chart():
    assert charts.offload_cost(PAIRS | {"chart": []}) is None and charts.pair_charts(None) == []
