"""One name per quantity: the evidence table's metric names have one owner (judge/metric_names.py),
agree with the result fields they name, carry no value, and nothing else enters the table."""

from __future__ import annotations

import dataclasses

import pytest

from conftest import COMPILED, PREDICTED
from offload_repro.judge import metric_names as names
from offload_repro.judge import observers, result_kinds
from offload_repro.judge.evidence_table import UnknownMetric, build, detail, observe_files
from offload_repro.produce.predicted import step_model, xla_clones


def test_the_families_name_the_fields_their_results_record():
    assert tuple(names.STEP_TERMS) == step_model.TERMS
    assert names.CLONE_KINDS == xla_clones.KINDS


def test_a_prediction_is_one_observation_per_fact_its_calibrations_stay_in_its_result(gb200_prediction):
    observations, _, details = observe_files([PREDICTED, *COMPILED])
    assert all("@" not in o.metric for o in observations)
    predicted = [o for o in observations if o.evidence == "predicted" and o.row is not None]
    assert all(o.at is None for o in predicted)
    facts = [(o.row, o.metric) for o in predicted]
    assert len(facts) == len(set(facts))
    central = {o.row: (o.value, o.low, o.high) for o in predicted if o.metric == names.TFLOPS}
    for row in (r for r in gb200_prediction["rows"] if r["status"] == "ok"):
        values = row["tflops_per_device"]
        assert central[row["row"]] == (values[0], min(values), max(values))
    # the sources of a published number travel as a list, and the page's flag is computed here
    sources = [o for o in observations if o.metric == names.PUBLISHED_SOURCES]
    assert sources and all(isinstance(o.value, list) for o in sources)
    implied = {o.row: o.value for o in observations if o.metric == names.PUBLISHED_IMPLIED}
    assert implied == {o.row: len(o.value) > 1 for o in sources}  # type: ignore[arg-type]
    # a prediction's details are a field of the table under their kind, never spread over its sources
    assert [d["kind"] for d in details] == ["predicted"]
    assert set(details[0]["fields"]) <= set(result_kinds.PREDICTED_DETAILS)
    assert "model_error" in details[0]["fields"]


def test_the_details_are_read_by_kind_and_target(tmp_path):
    evidence = build([PREDICTED], "gb200-nvl72", tmp_path / "evidence.json")
    found = detail(evidence, "predicted", "gb200-nvl72")
    assert found is not None and found["file"] == str(PREDICTED) and "calibration" in found
    assert detail(evidence, "predicted", "gb300-nvl72") is None
    assert detail(evidence, "validation") is None


def test_every_observer_writes_only_names_the_owner_knows(monkeypatch, tmp_path):
    """A metric named nowhere else is refused, naming the file: a new name is added to the owner first."""
    kind = result_kinds.RESULT_KINDS["predicted"]

    def stray(result, source):
        first = kind.observe(result, source)[0]
        return [dataclasses.replace(first, metric="tflops_per_device@llama-baseline")]

    monkeypatch.setitem(
        result_kinds.RESULT_KINDS, "predicted", result_kinds.ResultKind("predicted", "predicted", stray)
    )
    with pytest.raises(UnknownMetric, match=r"gb200-nvl72\.json: metrics \['tflops_per_device@llama-baseline'\]"):
        observe_files([PREDICTED])


def test_a_prediction_beside_a_run_on_its_hardware_gets_its_error_against_the_run():
    """The page's 'predicted / measured - 1' is an observation made here, per row and over the target."""
    predicted, _, _ = observe_files([PREDICTED])
    central = next(o for o in predicted if o.metric == names.TFLOPS)
    run = dataclasses.replace(central, evidence="measured", value=float(central.value) * 1.25, low=None, high=None)
    found = observers.against_measured([*predicted, run])
    by_metric = {(o.row, o.metric): o.value for o in found}
    assert by_metric[(central.row, names.ERROR_AGAINST_MEASURED)] == pytest.approx(1 / 1.25 - 1)
    assert by_metric[(None, names.ERROR_AGAINST_MEASURED_ROWS)] == 1
    assert by_metric[(None, names.ERROR_AGAINST_MEASURED_LARGEST_ABS)] == pytest.approx(0.2)
    # a run on other hardware is not the prediction's: no error
    elsewhere = dataclasses.replace(run, target="cpu")
    assert observers.against_measured([*predicted, elsewhere]) == []
