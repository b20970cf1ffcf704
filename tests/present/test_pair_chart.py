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
    # measured points, the model's line over the chip's pairs, the source's predictions, the zero line
    assert len(spec["layer"]) == 4 and spec["layer"][2]["mark"]["type"] == "line"
    assert spec["layer"][1]["encoding"]["x"]["scale"]["type"] == "log"


def test_a_record_is_a_pair_of_an_offloading_row_over_one_that_offloads_nothing():
    lines = {(line["set"], f"{line['first']} / {line['second']}"): line for line in PAIRS["pairs"]}
    for record in PAIRS["chart"]:
        line = lines[(record["set"], record["pair"])]
        assert line["placements"][0] == "offload" and line["placements"][1] != "offload"
        assert record["measured_pct"] == line["measured"] * 100 and record["copy_to_compute"] == line["regime"] > 0


def test_no_records_no_chart():
    assert charts.offload_cost(PAIRS | {"chart": []}) is None and charts.pair_charts(None) == []
