"""The compiled memory band (experiments/evidence-bands.yaml) held to the artifacts that measured it:
the chip's runs (runtime peak over XLA's peak of the same program) and an H200 run's own compile
against this build's compile of the same row."""

from __future__ import annotations

import copy

import pytest
import yaml

from conftest import REPO, RESULTS
from offload_repro.core import evidence_bands, memory
from offload_repro.core.data import DataError
from offload_repro.core.results import read_result
from offload_repro.judge.claims import load_claims
from offload_repro.judge.observers import run_observations

CHIP_RUNS = REPO / "experiments" / "device-results" / "tpu-v5e-1" / "runs"


def gaps() -> dict[str, dict]:
    return {gap["id"]: gap for gap in evidence_bands.load_bands()["compiled_memory"]["gaps"]}


def test_the_runtime_gap_is_the_range_the_chips_runs_measured():
    measured = [
        record["value"]
        for path in sorted(CHIP_RUNS.glob("*.json"))
        for record in (o.record() for o in run_observations(read_result(path, "run"), str(path)))
        if record["metric"] == "runtime_over_program"
    ]
    assert len(measured) == 8  # every row that trained; device-save at micro batch 8 did not
    gap = gaps()["runtime-over-compile"]
    assert (gap["low"], gap["high"]) == (round(min(measured), 3), round(max(measured), 3))
    # a run holds its program's buffers and more, never less, and not a fifth more
    assert 0 <= gap["low"] <= gap["high"] < 0.2


def test_the_compile_gap_holds_the_h200_runs_own_compile_against_ours():
    run = read_result(RESULTS / "h200-1/runs/deepseek-offload-optimized.json", "run")
    ours = read_result(RESULTS / "compiled/h200-1/deepseek-offload-optimized.json", "compile")
    theirs = memory.gib(memory.program_peak_bytes(run["compiled_memory"], "gpu"))
    gap = theirs - memory.gib(ours["device_bytes"])
    assert theirs == pytest.approx(145.2, abs=0.05) and gap == pytest.approx(4.41, abs=0.01)
    recorded = gaps()["gpu-compile-over-deviceless"]
    assert recorded["low"] == round(gap, 1) and recorded["low"] <= recorded["high"]
    # the band a run lies in, from a compiled figure: each gap applied, lowest to lowest, highest to highest
    low, high = evidence_bands.span(evidence_bands.band("compiled_memory", "here"), 100.0)
    assert low == pytest.approx((100 + 4.4) * 1.004) and high == pytest.approx((100 + 25.3) * 1.058)


def test_bad_bands_are_refused_naming_the_file_the_entry_and_the_field(tmp_path, monkeypatch):
    data = yaml.safe_load((REPO / evidence_bands.BANDS_FILE).read_text())
    wrong = copy.deepcopy(data)
    wrong["bands"]["compiled_memory"]["gaps"][0]["low"] = 30.0
    path = tmp_path / "bands.yaml"
    path.write_text(yaml.safe_dump(wrong))
    with pytest.raises(DataError, match=r"bands\.compiled_memory, gap 'gpu-compile-over-deviceless': field 'low'"):
        evidence_bands.load_bands.__wrapped__(path)
    with pytest.raises(DataError, match=r"claim 7 .* field 'judged_by\[1\]\.band': no band 'static' in"):
        evidence_bands.band("static", "experiments/claims.yaml: claim 7 (id 'x'), field 'judged_by[1].band'")
    claims = yaml.safe_load((REPO / "experiments" / "claims.yaml").read_text())
    claims["claims"][5]["judged_by"][1]["band"] = "static_memory"
    edited = tmp_path / "claims.yaml"
    edited.write_text(yaml.safe_dump(claims))
    with pytest.raises(DataError, match=rf"{edited}: claim 6 .* 'judged_by\[1\]\.band': no band 'static_memory'"):
        load_claims(edited)
