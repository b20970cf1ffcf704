"""The band over every program that may have run: an alternative program's predictions appended
to the default's, setting by setting, and a verdict's band over both."""

from __future__ import annotations

import copy
import json

import pytest

from offload_repro.judge import prediction_verdicts
from offload_repro.produce.predicted.band_programs import with_programs
from tests.conftest import FIXTURES

PREDICTED = json.loads((FIXTURES / "results/predicted/gb200-nvl72.json").read_text())
ALTERNATIVE = "xla-rematerialization.xla-default"


def alternative(scale: float, without: str) -> dict:
    """The fixture's prediction as another program would give it: every value scaled, one row unpredicted."""
    other = copy.deepcopy(PREDICTED)
    for row in other["rows"]:
        if row["status"] == "ok":
            row["tflops_per_device"] = [v * scale if v else v for v in row["tflops_per_device"]]
            row["by_calibration"] = {c: [v * scale if v else v for v in vs] for c, vs in row["by_calibration"].items()}
    other["rows"] = [row for row in other["rows"] if row["row"] != without]
    return other


def test_an_alternative_programs_settings_follow_the_defaults_each_marked_with_its_program():
    default = copy.deepcopy(PREDICTED)
    count = len(default["settings"]["link_level"])
    merged = with_programs(default, {ALTERNATIVE: alternative(0.9, without="llama-qkv-offload-nolhs")})
    settings = merged["settings"]
    assert settings["program"] == ["default"] * count + [ALTERNATIVE] * count
    assert len(settings["link_level"]) == len(settings["network_end"]) == len(settings["overlap"]) == 2 * count
    rows = {row["row"]: row for row in merged["rows"]}
    originals = {row["row"]: row for row in PREDICTED["rows"]}
    baseline = rows["llama-baseline"]
    assert baseline["tflops_per_device"][:count] == originals["llama-baseline"]["tflops_per_device"]
    assert baseline["tflops_per_device"][count:] == pytest.approx(
        [v * 0.9 for v in originals["llama-baseline"]["tflops_per_device"]]
    )
    assert baseline["tflops_per_device"] == baseline["by_calibration"][baseline["calibrated_on"]]
    # a row the alternative cannot predict has nothing at its settings
    assert rows["llama-qkv-offload-nolhs"]["tflops_per_device"][count:] == [None] * count
    assert [(e["program"], e["rows_predicted"]) for e in merged["band_programs"]] == [
        (ALTERNATIVE, len(PREDICTED["rows"]) - 1)
    ]
    # nothing else moves: the error and the calibration stay the default programs'
    assert merged["model_error"] == PREDICTED["model_error"] and merged["calibration"] == PREDICTED["calibration"]


def test_a_value_claims_band_covers_both_programs_and_opens_where_one_predicts_nothing():
    default = copy.deepcopy(PREDICTED)
    count = len(default["settings"]["link_level"])
    merged = with_programs(default, {ALTERNATIVE: alternative(0.8, without="llama-qkv-offload-nolhs")})
    keys = ("link_level", "network_end", "overlap", "program")
    settings = list(zip(*(merged["settings"][k] for k in keys), strict=True))
    rows = {row["row"]: row for row in merged["rows"]}
    check = {"type": "value", "rows": ["llama-qkv-offload-lhs"]}
    series = {"llama-qkv-offload-lhs": rows["llama-qkv-offload-lhs"]["tflops_per_device"]}
    pair = ("llama-qkv-offload-lhs", "llama-baseline")
    both = prediction_verdicts.band(check, series, {pair: 0.05}, settings)
    alone = prediction_verdicts.band(check, {k: v[:count] for k, v in series.items()}, {pair: 0.05}, settings[:count])
    assert both["low"] == pytest.approx(alone["low"] * 0.8) and both["high"] == pytest.approx(alone["high"])
    assert both["settings"] == 2 * count
    # the row the alternative does not predict: its band is open on both sides, since it is unknown there
    series = {"llama-qkv-offload-nolhs": rows["llama-qkv-offload-nolhs"]["tflops_per_device"]}
    check = {"type": "value", "rows": ["llama-qkv-offload-nolhs"]}
    found = prediction_verdicts.band(check, series, {("llama-qkv-offload-nolhs", "llama-baseline"): 0.05}, settings)
    assert found["low"] is None and found["high"] is None and found["unpredicted_settings"] == count


def test_each_programs_step_terms_are_kept_and_drawn_beside_the_defaults():
    from offload_repro.core.data import load_rows
    from offload_repro.present.speed_section import programs_chart
    from tests.conftest import REPO

    default = copy.deepcopy(PREDICTED)
    merged = with_programs(default, {ALTERNATIVE: alternative(0.9, without="llama-qkv-offload-nolhs")})
    (entry,) = merged["band_programs"]
    breakdowns = {row["row"]: row["breakdown"] for row in PREDICTED["rows"] if row["status"] == "ok"}
    assert entry["step_terms"] == {row: terms for row, terms in breakdowns.items() if row != "llama-qkv-offload-nolhs"}

    class Defaults:  # the page's lookup of the default program's terms
        def value(self, row, evidence, metric):
            return breakdowns.get(row, {}).get(metric)

    rows = [row for row in load_rows(sorted((REPO / "experiments/rows").glob("*.yaml"))) if row.id in breakdowns]
    chart = programs_chart(rows, Defaults(), merged["band_programs"])
    data = next(iter(json.loads(chart["spec"])["datasets"].values()))
    assert {d["setting"] for d in data} == {"default", ALTERNATIVE}
    assert {d["row"] for d in data if d["setting"] == ALTERNATIVE} == set(breakdowns) - {"llama-qkv-offload-nolhs"}
    assert programs_chart(rows, Defaults(), []) is None
