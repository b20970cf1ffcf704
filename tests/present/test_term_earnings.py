"""What each term of the step-time model earns, on the source's rows (the prediction's ablation) and on
the runs measured elsewhere (experiments/validation.yaml's record, held here to the kept result)."""

from __future__ import annotations

import pytest

from conftest import PREDICTED, RESULTS
from offload_repro.core.measured_elsewhere import load_validation
from offload_repro.core.results import read_result
from offload_repro.present.speed_section import change, term_earnings


def test_the_recorded_term_errors_are_the_validation_results_every_run_errors():
    recorded = load_validation()["recorded_term_errors"]
    kept = read_result(RESULTS / "validation" / "model.json", "validation")["errors"]["by_model"]
    assert list(recorded["by_model"]) == list(kept)
    for model, values in recorded["by_model"].items():
        every_run = kept[model]["every_run"]
        assert every_run["pairs"] == recorded["pairs"]
        assert (values["mean_abs"], values["largest_abs"]) == (
            round(every_run["mean_abs"], 4),
            round(every_run["largest_abs"], 4),
        )
        # a relative error of a step: under 100%, its mean never above its largest
        assert 0 < values["mean_abs"] <= values["largest_abs"] < 1


def test_each_term_is_weighed_where_both_models_measure_it():
    ablation = read_result(PREDICTED, "predicted")["ablation"]
    terms = {t["model"]: t for t in term_earnings(ablation, load_validation()["recorded_term_errors"])}
    collectives = terms["+ collectives on NVLink"]
    # on GB200's Llama rows the collectives raise the leave-one-out error; on the H100 runs they lower it
    llama = next(h for h in collectives["here"] if h["family"] == "llama")
    assert llama["change"] == "raises" and collectives["elsewhere"]["change"] == "lowers"
    # a family the simpler model alone predicts is no comparison
    assert all(h["before"] is not None and h["after"] is not None for t in terms.values() for h in t["here"])
    assert change(0.0392, 0.0389) == "keeps" and change(None, 0.1) is None and change(0.05, 0.06) == "raises"


@pytest.mark.parametrize("missing", [None, {}])
def test_without_a_record_the_runs_elsewhere_are_not_weighed(missing):
    ablation = read_result(PREDICTED, "predicted")["ablation"]
    assert all(t["elsewhere"]["change"] is None for t in term_earnings(ablation, missing))
