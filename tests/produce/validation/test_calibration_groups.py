"""The validation stage's calibrations, keyed by GPU and precision (never by the file a run comes
from), (a)'s anchors named per GPU, precision and model kind, and what it says of a run that nothing
tests: the 22 published H100 runs, each replayed on one program of lines copied from
llama-qkv-offload-lhs's GB200 program (tests/fixtures/README.md), so that the calibrations'
bookkeeping, not the model's numbers, is what is checked."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from types import SimpleNamespace

import pytest
import yaml

from conftest import FIXTURES
from offload_repro.commands import validate_model
from offload_repro.core import measured_elsewhere
from offload_repro.core.data import DataError, load_target
from offload_repro.core.files import read_yaml
from offload_repro.core.measured_elsewhere import MEASURED_DIR, load_measured, load_validation
from offload_repro.core.published import load_speed
from offload_repro.core.results import write_result
from offload_repro.core.validation_record import unrecorded_carries
from offload_repro.produce.compiled import hlo_text
from offload_repro.produce.predicted import device_prediction, hlo_flops, hlo_schedule
from offload_repro.produce.predicted.target_rates import peak_flops, settings
from offload_repro.produce.validation import against_measured, since_record
from report_page import rendered_page, visible_text


@pytest.fixture(scope="module")
def program() -> dict:
    computations = hlo_text.parse((FIXTURES / "latency_profile.hlo").read_text())
    timeline = hlo_schedule.timelines(computations)
    events, ideal = hlo_schedule.schedules(computations, timeline)
    flops, _ = hlo_flops.count_flops(computations)
    return {
        "events": events,
        "ideal_events": ideal,
        "entry": hlo_text.entry_name(computations),
        "model_flops": 4e15,
        "flops": flops,
        "clones": {},
    }


SHIPPED = json.loads((FIXTURES / "results/validation/model.json").read_text())  # the stage's real result
OWN_RUN = FIXTURES / "measured-elsewhere" / "own-llama2-70b-8gpu.yaml"  # a user's 8-GPU H100 BF16 run


def validated(
    monkeypatch, program: dict, runs: list, validation: dict | None = None, source: dict | None = None
) -> dict:
    """The runs validated against the model, each replayed on `program`, and carried (c) from the source's
    GB200 prediction kept in tests/fixtures (or `source`), as the workflow always carries it."""
    monkeypatch.setattr(against_measured, "read_program", lambda result, shape, keep_parsed=False: program)
    compiled = {run.id: {"status": "ok", "fits": True, "program": {"key": "one"}} for run in runs}
    source = source or source_prediction()
    speed, gb200 = load_speed(), load_target("gb200-nvl72")
    return against_measured.validate_model(runs, compiled, speed, validation or load_validation(), source, gb200)


def source_prediction() -> dict:
    """The source's GB200 prediction kept in tests/fixtures: Llama calibrated at NVFP4 only, BF16 ruled out."""
    return json.loads((FIXTURES / "results/predicted/gb200-nvl72.json").read_text())


def calibrated_at(precision: str, share: float) -> dict:
    """The source's GB200 prediction with a Llama calibration at `precision` too, on its default row at
    `share` of the peak at every setting (none is ruled out): as if its rows had been measured so."""
    source = source_prediction()
    nvfp4 = source["calibration"]["llama"]["nvfp4"]["llama-baseline"]
    by_setting = [{**entry, "share_of_peak": share} for entry in nvfp4["by_setting"]]
    source["calibration"]["llama"][precision] = {"llama-baseline": {**nvfp4, "by_setting": by_setting}}
    source["ruled_out_precisions"] = []
    return source


def with_anchor(**anchor: str) -> dict:
    """experiments/validation.yaml with one more anchor of calibration (a)."""
    validation = load_validation()
    validation["calibrations"]["smallest"]["anchors"].append(anchor)
    return validation


def moe_file(directory) -> list:
    """A file of MoE runs on H100, written as a user adds one: the Llama 3 file's runs with
    MaxText's Mixtral 8x7B as their model."""
    data = read_yaml(MEASURED_DIR / "dgxc-llama3-70b.yaml")
    data["source"] = "mixtral-h100"
    data["defaults"]["model"] = data["defaults"]["maxtext"]["model_name"] = "mixtral-8x7b"
    for run in data["runs"]:
        run["id"] = run["id"].replace("llama3-70b", "mixtral-8x7b")
    path = directory / "mixtral-h100.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_measured([path])


def test_two_files_of_one_gpu_calibrate_as_one_group(program):
    """A second file of H100 runs (another cluster, another target file) joins H100's group of its
    precision: one rate per GPU and precision, not one per file."""
    runs = load_measured()
    elsewhere = replace(runs[0], id="another-cluster", target="h100-1")
    first = against_measured.Measured(runs[0], load_target("h100-sxm"), program)
    second = against_measured.Measured(elsewhere, load_target("h100-1"), program)
    assert first.group == second.group == ("NVIDIA H100", runs[0].precision)
    assert first.anchor_group == second.anchor_group == ("NVIDIA H100", runs[0].precision, "dense")
    grouped = against_measured.groups({"a": first, "b": second})
    assert list(grouped.values()) == [[first, second]]


def test_a_calibrating_run_is_not_said_predicted_and_a_lone_run_carries_a_band(program, monkeypatch):
    """The run that calibrates (a) predicts its own step by construction: its error is not a result
    (never "+0.0%"), and the page reads why. A run alone on its GPU and precision says that nothing but
    (c) predicts it: the source's GB200 calibration carried by peaks, whose band is widened by the
    error that carry (its family and precision) was measured to have (experiments/validation.yaml),
    and where it is unmeasured says so, never left bare."""
    runs = load_measured()
    lone = min(runs, key=lambda run: run.gpus)
    anchored = with_anchor(gpu="NVIDIA H200", precision=lone.precision, kind=lone.kind, run="lone-run")
    carry = {"family": "llama", "precision": lone.precision, "measured_by": "tpu-v5e-1", "largest_abs": 0.25}
    anchored["calibrations"]["across_hardware"]["recorded_errors"].append(
        carry | {"mean_abs": 0.2, "pairs": 2, "recorded_from": "a test"}
    )
    source = calibrated_at(lone.precision, 0.5)  # (c) carries only a calibration at the run's own precision
    runs = [*runs, replace(lone, id="lone-run", target="h200-8")]
    result = validated(monkeypatch, program, runs, anchored, source)
    by_run = {line["run"]: line for line in result["runs"]}
    calibrators = {rate["calibrated_on"] for rate in result["fitted_rates"]}
    assert {rate["gpu"] for rate in result["fitted_rates"]} == {"NVIDIA H100", "NVIDIA H200"}
    for run_id, line in by_run.items():
        if run_id in calibrators:
            assert line["smallest"]["error"] is None and all(v is None for v in line["smallest"]["by_model"].values())
            assert line["untested"] and "calibrates" in line["untested"]
        else:
            assert line["smallest"]["error"] is not None and line["untested"] is None
    assert f"the only run of {lone.precision} on NVIDIA H200" in by_run["lone-run"]["untested"]
    assert by_run["lone-run"]["every_run"]["pairs"] == 0
    assert by_run["lone-run"]["every_run"]["mean_abs"] is None
    carried = by_run["lone-run"]["across_hardware"]
    error = carry["largest_abs"]
    steps = [step for step in carried["step_s"] if step]
    assert carried["band"] == {"error": error, "low_s": min(steps) / (1 + error), "high_s": max(steps) / (1 - error)}
    assert carried["band"]["low_s"] < carried["step_s"][0] < carried["band"]["high_s"]
    assert carried["band_why"].startswith(f"±25.0% of the step: the largest error of gb200-nvl72's {lone.precision}")
    assert "2 on Google TPU v5e (tpu-v5e-1, experiments/device-results/tpu-v5e-1), 20.0% mean" in carried["band_why"]

    # the same carry with nothing measuring it: no band, and the line says why
    unmeasured = with_anchor(**anchored["calibrations"]["smallest"]["anchors"][-1])
    unmeasured = validated(monkeypatch, program, runs, unmeasured, source)
    carried = next(line for line in unmeasured["runs"] if line["run"] == "lone-run")["across_hardware"]
    assert carried["band"] is None and carried["step_s"][0]
    assert carried["band_why"] == (
        f"no band: the error of gb200-nvl72's {lone.precision} llama calibration carried to other hardware is"
        " unmeasured (no run measured elsewhere or on a device was predicted from it; experiments/validation.yaml,"
        " calibrations.across_hardware.recorded_errors)"
    )


def test_a_run_added_to_a_group_changes_no_shipped_runs_anchor(program, monkeypatch, tmp_path):
    """A user adds an 8-GPU H100 BF16 dense run (its own file beside the published ones): every
    published run keeps the anchor the stage's real result records for it, and (a)'s pairs over the
    published runs are those without it, so their error does not move; the added run is predicted
    from its group's anchor, as any other run of the group."""
    directory = tmp_path / "measured-elsewhere"
    shutil.copytree(MEASURED_DIR, directory)
    shutil.copy(OWN_RUN, directory)
    runs = load_measured(sorted(directory.glob("*.yaml")))
    shipped = [run for run in runs if run.id != "own-llama2-70b-bf16-8gpu"]
    added = next(run for run in runs if run.id == "own-llama2-70b-bf16-8gpu")
    assert len(shipped) == len(SHIPPED["runs"]) == 22 and added.gpus < min(run.gpus for run in shipped)
    recorded = {line["run"]: line["smallest"]["calibrated_on"] for line in SHIPPED["runs"]}

    before, after = validated(monkeypatch, program, shipped), validated(monkeypatch, program, runs)
    anchors = {line["run"]: line["smallest"]["calibrated_on"] for line in after["runs"]}
    assert {run_id: anchors[run_id] for run_id in recorded} == recorded
    assert anchors["own-llama2-70b-bf16-8gpu"] == "llama2-70b-bf16-64gpu"
    assert [p for p in after["pairs"]["smallest"] if p["predicted"] in recorded] == before["pairs"]["smallest"]
    # the seam, without a program: the anchors named are the same whichever runs are loaded
    validation = load_validation()
    assert against_measured.named_anchors(runs, validation) == against_measured.named_anchors(shipped, validation)


def added_run(tmp_path) -> tuple[list, list]:
    """(the published runs with a user's 8-GPU H100 BF16 Llama 2 70B run beside them, the published runs)."""
    directory = tmp_path / "measured-elsewhere"
    shutil.copytree(MEASURED_DIR, directory)
    shutil.copy(OWN_RUN, directory)
    runs = load_measured(sorted(directory.glob("*.yaml")))
    return runs, [run for run in runs if run.id != "own-llama2-70b-bf16-8gpu"]


def test_a_run_added_reports_every_recorded_run_it_moved_and_by_how_much(program, monkeypatch, tmp_path):
    """The added run is the twelfth BF16 run on H100, so under (b) it calibrates each of
    the 11 recorded BF16 runs once more: each is listed, with its errors over the recorded runs and
    over all; (a) moves none (anchors are named); the values over the recorded runs are those of the
    stage without the run, so the record is checked as if it were not there."""
    runs, shipped = added_run(tmp_path)
    before, after = validated(monkeypatch, program, shipped), validated(monkeypatch, program, runs)
    since = after["since_record"]
    assert since["added"] == ["own-llama2-70b-bf16-8gpu"] and len(since["recorded_runs"]) == 22
    assert before["since_record"]["added"] == before["since_record"]["moved"] == []
    full = before["errors"]["by_model"][before["errors"]["model"]]
    assert since["errors"] == {c: full[c] for c in ("smallest", "every_run")}
    assert since["real_hardware_error"] == before["real_hardware_error"]
    bf16 = {run.id for run in shipped if run.precision == "bfloat16"}
    assert {entry["run"] for entry in since["moved"]} == bf16 and len(bf16) == 11
    assert {entry["calibration"] for entry in since["moved"]} == {"every_run"}
    by_run = {line["run"]: line for line in before["runs"]}
    for entry in since["moved"]:
        assert entry["before"]["pairs"] == by_run[entry["run"]]["every_run"]["pairs"] == 10
        assert entry["after"]["pairs"] == 11
        assert entry["before"]["mean_abs"] == by_run[entry["run"]]["every_run"]["mean_abs"]
    lines = since_record.since_record_lines(since, after["errors"]["by_model"][after["errors"]["model"]])
    assert lines[0] == (
        "1 run added beside the 22 the recorded errors are over: own-llama2-70b-bf16-8gpu; 11 of the 22 recorded"
        " runs moved; none under (a) its group's anchor"
    )
    assert len([line for line in lines if "(b) every other run of its GPU and precision: " in line]) == 11
    assert since_record.since_record_lines(before["since_record"]) == [
        "no run added beside the 22 the recorded errors are over (experiments/validation.yaml)"
    ]


def test_the_stage_checks_the_record_over_the_recorded_runs_and_reports_what_the_added_would_record(
    program, monkeypatch, tmp_path, capsys
):
    """End to end, through the stage's command: with a run added, the recorded errors are checked over
    the recorded runs (so the stage goes on where they hold), and what recording with the added run
    would change is printed and kept in the result, never applied; a record that does not hold over
    its own runs stops the stage, naming the value to record."""
    runs, shipped = added_run(tmp_path)
    # the record the stage's own result over the published runs gives, with this test's one program
    validation = load_validation()
    computed = validated(monkeypatch, program, shipped)["real_hardware_error"]["llama"]
    validation["kinds"]["llama"]["recorded_error"] |= {
        "throughput_error": round(computed["throughput_error"], 4),
        "pairs": computed["pairs"],
    }
    monkeypatch.setattr(validate_model, "load_validation", lambda: validation)
    monkeypatch.setattr(validate_model, "load_measured", lambda: runs)
    compiled = []
    for run in runs:
        path = tmp_path / "compiled" / f"{run.id}.json"
        path.parent.mkdir(exist_ok=True)
        path.write_text(json.dumps({"row": run.id, "status": "ok", "fits": True, "program": {"key": "one"}}))
        compiled.append(path)
    by_run = {path.stem: json.loads(path.read_text()) for path in compiled}
    monkeypatch.setattr(validate_model, "read_by_row", lambda paths, kind: by_run if paths else {})
    monkeypatch.setattr(validate_model, "write_result", lambda path, kind, data: data)
    source = FIXTURES / "results/predicted/gb200-nvl72.json"
    args = SimpleNamespace(compiled=compiled, profiled=[], calibrated_by=source, out=tmp_path / "model.json")
    assert validate_model.run(args) == 0
    said = capsys.readouterr().out
    assert "validation: 1 run added beside the 22 the recorded errors are over: own-llama2-70b-bf16-8gpu" in said
    assert (
        "validation: not recorded, so no verdict takes it yet: experiments/validation.yaml: field"
        " 'kinds.llama.recorded_error': records"
    ) in said
    assert " over 100 pairs, this stage computes " in said and " over 112 pairs" in said  # 7 x 6 llama2-70b BF16

    validation["kinds"]["llama"]["recorded_error"]["throughput_error"] = 0.5
    with pytest.raises(DataError, match=r"field 'kinds.llama.recorded_error': records 0.5000 over 100 pairs"):
        validate_model.run(args)


def test_a_dense_anchor_never_calibrates_an_moe_run(program, monkeypatch, tmp_path):
    """MoE runs of a GPU and precision whose dense runs have an anchor: with no MoE anchor named, (a)
    predicts none of them and each says why; with one named, it predicts them and no dense run. A
    dense run named as an MoE group's anchor is refused."""
    moe = moe_file(tmp_path)
    runs = [*load_measured(), *moe]
    kind = {run.id: run.kind for run in runs}
    result = validated(monkeypatch, program, runs)
    by_run = {line["run"]: line for line in result["runs"]}
    for run in moe:
        line = by_run[run.id]
        assert line["smallest"]["calibrated_on"] is None and line["smallest"]["error"] is None
        assert line["untested"].startswith(
            f"no anchor is named for the {run.precision} MoE runs on NVIDIA H100"
            " (experiments/validation.yaml, calibrations.smallest.anchors): (a) does not predict it"
        )
    assert all(kind[p["calibrated_on"]] == kind[p["predicted"]] == "dense" for p in result["pairs"]["smallest"])

    anchor = next(run for run in moe if run.precision == "bfloat16")
    named = with_anchor(gpu="NVIDIA H100", precision="bfloat16", kind="MoE", run=anchor.id)
    result = validated(monkeypatch, program, runs, named)
    by_run = {line["run"]: line for line in result["runs"]}
    assert {by_run[run.id]["smallest"]["calibrated_on"] for run in moe if run.precision == "bfloat16"} == {anchor.id}
    assert all(kind[p["calibrated_on"]] == kind[p["predicted"]] for p in result["pairs"]["smallest"])
    assert {p["calibrated_on"] for p in result["pairs"]["smallest"] if kind[p["predicted"]] == "MoE"} == {anchor.id}

    dense = with_anchor(gpu="NVIDIA H100", precision="bfloat16", kind="MoE", run="llama3-70b-bf16-128gpu")
    with pytest.raises(DataError) as err:
        validated(monkeypatch, program, runs, dense)
    assert str(err.value) == (
        "experiments/validation.yaml: field 'calibrations.smallest.anchors[2].run': 'llama3-70b-bf16-128gpu' is one"
        " of the bfloat16 dense runs on NVIDIA H100, not of the bfloat16 MoE runs on NVIDIA H100 it is named to anchor"
    )


def test_an_anchor_that_names_no_run_is_refused_naming_the_file_and_field(program, monkeypatch):
    """An anchor whose run is in no file of experiments/measured-elsewhere/ (renamed, say) stops the
    stage, naming the file, the field and the run it may have meant: never a silent fallback."""
    validation = load_validation()
    validation["calibrations"]["smallest"]["anchors"][1]["run"] = "llama2-70b-fp8-64gpus"
    with pytest.raises(DataError) as err:
        validated(monkeypatch, program, load_measured(), validation)
    assert str(err.value) == (
        "experiments/validation.yaml: field 'calibrations.smallest.anchors[1].run': 'llama2-70b-fp8-64gpus' names no"
        " run of experiments/measured-elsewhere/, so fp8 dense runs on NVIDIA H100 would have no anchor;"
        " did you mean 'llama2-70b-fp8-64gpu'?"
    )


def test_an_moe_run_is_labelled_moe_with_its_own_family(program, monkeypatch, tmp_path):
    """A Mixtral run's line says MoE and mixtral, never deepseek; what reads the source's family of
    its kind still finds it: (c) carries the source's MoE calibration to its BF16 runs (the source
    calibrates DeepSeek at BF16 only), and its pairs bound the MoE claims' error on real hardware."""
    moe = moe_file(tmp_path)
    # the source's default MoE calibration row (experiments/speed.yaml), at the fixture's MoE calibration
    source = source_prediction()
    row = load_speed()["calibration"]["rows"]["deepseek"]
    by_row = source["calibration"]["deepseek"]["bfloat16"]
    by_row[row] = next(iter(by_row.values()))
    result = validated(monkeypatch, program, [*load_measured(), *moe], source=source)
    by_run = {line["run"]: line for line in result["runs"]}
    for run in moe:
        line = by_run[run.id]
        assert (line["kind"], line["family"]) == ("MoE", "mixtral")
        assert line["source_family"] == "deepseek"
        if run.precision == "bfloat16":
            assert line["across_hardware"]["calibrated_on"] == f"gb200-nvl72/{row}" and line["not_carried"] is None
        else:
            assert line["across_hardware"] is None
            assert line["not_carried"] == (
                f"the source's rows calibrate deepseek at bfloat16, not at {run.precision}, and a share of one"
                " precision's peak is not carried to another"
            )
    assert {line["family"] for line in result["runs"] if line["kind"] == "dense"} == {"llama"}
    kinds = load_validation()["kinds"]
    assert result["real_hardware_error"]["deepseek"]["worst"]["predicted"] in {run.id for run in moe}
    assert kinds["deepseek"]["what"] == "MoE"


def test_across_hardware_carries_the_sources_share_measured_at_the_runs_own_precision(program, monkeypatch):
    """(c) carries to a run the share of GB200's peak the source's rows fit at the run's own precision,
    never the family's default (Llama's NVFP4) carried to a BF16 or FP8 run; a run of a precision the
    source's rows give no calibration at is not predicted by (c), and its line says why, in the words
    a device's prediction uses for the same source."""
    runs = load_measured()
    speed, h100 = load_speed(), load_target("h100-sxm")
    # as published: Llama calibrated at NVFP4 only, BF16 ruled out, so no run is carried anything
    result = validated(monkeypatch, program, runs)
    assert all(line["across_hardware"] is None for line in result["runs"])
    why = {line["precision"]: line["not_carried"] for line in result["runs"]}
    assert why["bfloat16"].startswith(
        "the source's llama throughputs at bfloat16 would need 161% or more of gb200-nvl72's bfloat16 peak,"
        " so they are taken as nvfp4, and a share of the nvfp4 peak is not carried to bfloat16"
    )
    assert why["fp8"] == (
        "the source's rows calibrate llama at nvfp4, nvfp4-bf16-gathers, not at fp8, and a share of one"
        " precision's peak is not carried to another"
    )
    assert result["errors"]["across_hardware"]["pairs"] == 0
    assert result["errors"]["across_hardware"]["by_carry"] == []
    carried = device_prediction.carried_shares({"a-program": "llama"}, source_prediction(), speed)
    assert carried["source"]["llama"]["none"] == why["bfloat16"]  # one wording, shared
    # a source with a BF16 calibration: BF16 runs take its share of the BF16 peak, FP8 runs nothing
    result = validated(monkeypatch, program, runs, source=calibrated_at("bfloat16", 0.5))
    for line, run in zip(result["runs"], runs, strict=True):
        carried = line["across_hardware"]
        if run.precision != "bfloat16":
            assert carried is None and "not at fp8" in line["not_carried"]
            continue
        assert line["not_carried"] is None
        assert (carried["calibration_precision"], carried["share_of_peak"]) == ("bfloat16", 0.5)
        assert carried["calibrated_on"] == "gb200-nvl72/llama-baseline"
        rate = 0.5 * peak_flops(h100, "bfloat16", speed)
        entry = against_measured.Measured(run, against_measured.target_for(run), program)
        assert carried["step_s"][0] == pytest.approx(entry.step_s(rate, settings(speed)[0], speed))
    bf16 = sum(run.precision == "bfloat16" for run in runs)
    assert result["errors"]["across_hardware"]["pairs"] == bf16
    (carry,) = result["errors"]["across_hardware"]["by_carry"]
    assert (carry["family"], carry["precision"], carry["measured_by"], carry["pairs"]) == (
        "llama",
        "bfloat16",
        "validation",
        bf16,
    )


def test_a_carry_the_runs_measure_is_held_to_its_record_over_the_recorded_runs_and_reported_over_all(
    program, monkeypatch, tmp_path
):
    """(c)'s error is recorded per family and precision carried. Over the recorded runs the stage
    computes none (the source's Llama is calibrated at NVFP4 only, the runs are BF16 and FP8), and
    records none; a source calibrated at BF16 would give the BF16 runs a carry the record lacks, which
    the stage names, with its value. A run added beside the recorded ones reports its carry, never
    checks it."""
    runs = load_measured()
    validation = load_validation()
    result = validated(monkeypatch, program, runs)
    assert result["since_record"]["across_hardware"] == result["errors"]["across_hardware"]["by_carry"] == []
    assert against_measured.VALIDATION_RUNS == "validation"
    assert unrecorded_carries(result["since_record"]["across_hardware"], "validation", validation) == []
    at_bf16 = validated(monkeypatch, program, runs, source=calibrated_at("bfloat16", 0.5))
    (carry,) = at_bf16["since_record"]["across_hardware"]
    assert unrecorded_carries(at_bf16["since_record"]["across_hardware"], "validation", validation) == [
        "experiments/validation.yaml: field 'calibrations.across_hardware.recorded_errors': records no bfloat16"
        f" llama carry measured by validation, this stage computes largest_abs {carry['largest_abs']:.4f},"
        f" mean_abs {carry['mean_abs']:.4f} over 11 pairs"
    ]
    # an MoE run added: its carry (GB200's DeepSeek at BF16) is over all runs, not over the recorded ones
    added = [run for run in moe_file(tmp_path) if run.precision == "bfloat16"][:1]
    with_added = validated(monkeypatch, program, [*runs, *added])
    assert with_added["since_record"]["across_hardware"] == []
    (moe,) = with_added["errors"]["across_hardware"]["by_carry"]
    assert (moe["family"], moe["precision"], moe["pairs"]) == ("deepseek", "bfloat16", 1)


def test_a_recorded_error_over_another_number_of_pairs_stops_the_stage_naming_both(program, monkeypatch):
    """The stage compares the pairs a kind's recorded error is the largest over with those it
    computes, as it compares the error: a run that did not compile here, say, leaves fewer pairs, and
    an error equal to four decimals over them is still another record, named with both counts."""
    kinds = load_validation()["kinds"]
    recorded = kinds["llama"]["recorded_error"]
    fewer = {"llama": {"throughput_error": recorded["throughput_error"], "pairs": 90}, "deepseek": None}
    assert against_measured.unrecorded(fewer, kinds, "experiments/validation.yaml") == [
        "experiments/validation.yaml: field 'kinds.llama.recorded_error': records 0.2160 over 100 pairs,"
        " this stage computes 0.2160 over 90 pairs"
    ]
    # end to end: one run of a group of six not compiled leaves 6 x 5 - 5 x 4 = 10 pairs fewer
    runs = load_measured()
    monkeypatch.setattr(against_measured, "read_program", lambda result, shape, keep_parsed=False: program)
    compiled = {run.id: {"status": "ok", "fits": True, "program": {"key": "one"}} for run in runs}
    compiled["llama2-70b-bf16-512gpu"] = {"status": "error", "message": "a compile that failed"}
    speed, gb200 = load_speed(), load_target("gb200-nvl72")
    result = against_measured.validate_model(runs, compiled, speed, load_validation(), source_prediction(), gb200)
    assert result["real_hardware_error"]["llama"]["pairs"] == 90
    (differs,) = against_measured.unrecorded(result["real_hardware_error"], kinds, "experiments/validation.yaml")
    assert differs.endswith(" over 90 pairs") and "records 0.2160 over 100 pairs" in differs


def test_where_it_is_off_is_one_line_per_group_of_calibration_a_whatever_files_its_runs_come_from(program, monkeypatch):
    """Runs of one GPU in two target files (another cluster's H100s, say) are one group of (a), and
    "where it is off" names that group once, by GPU, precision and model kind, with the run of either
    file (a) predicts worst; never one GPU twice under two target files."""

    # another cluster's file of the same H100 nodes, as a user would copy experiments/targets/h100-sxm.yaml
    def load(name: str, directory=None, nodes: int | None = None):
        found = load_target("h100-sxm" if name == "h100-elsewhere" else name, nodes=nodes)
        return replace(found, name=name)

    monkeypatch.setattr(measured_elsewhere, "load_target", load)
    runs = load_measured()
    moved = [replace(run, target="h100-elsewhere") if run.model == "llama3-70b" else run for run in runs]
    result = validated(monkeypatch, program, moved)
    assert {line["target"] for line in result["runs"]} == {"h100-sxm", "h100-elsewhere"}
    assert all(line["smallest"]["error"] for line in result["runs"] if line["smallest"]["calibrated_on"] != line["run"])
    assert len(result["where_off"]) == 2  # not one per target file: four
    groups = [(w["gpu"], w["precision"], w["kind"]) for w in result["where_off"]]
    assert groups == [("NVIDIA H100", "bfloat16", "dense"), ("NVIDIA H100", "fp8", "dense")]
    for found in result["where_off"]:
        mine = [
            line["smallest"]["error"]
            for line in result["runs"]
            if (line["gpu"], line["precision"], line["kind"]) == (found["gpu"], found["precision"], found["kind"])
            and line["smallest"]["error"] is not None
        ]
        assert abs(found["error"]) == max(abs(error) for error in mine)


def test_the_page_says_what_each_error_is_over_from_the_result(program, monkeypatch, tmp_path, tables):
    """The page's counts and scopes are the result's, never typed: each error over how many
    predictions of how many runs on which GPUs, "where it is off" once per group of (a), and why (c)
    predicts none of the runs it carries nothing to, once per reason."""
    runs = load_measured()
    h200 = [replace(run, id=f"{run.id}-h200", target="h200-8") for run in runs[:2]]
    assert {run.precision for run in h200} == {"bfloat16"}
    anchored = with_anchor(gpu="NVIDIA H200", precision="bfloat16", kind="dense", run=h200[0].id)
    result = validated(monkeypatch, program, [*runs, *h200], anchored)
    path = tmp_path / "model.json"
    write_result(path, "validation", result)
    html = rendered_page(tmp_path, tables, "cpu", [path])

    said = " ".join(visible_text(re.search(r'<p id="measured-summary">.*?</p>', html, re.S).group(0)).split())
    full = result["errors"]["by_model"][result["errors"]["model"]]
    for calibration in ("smallest", "every_run"):
        errors = full[calibration]
        assert errors["gpus"] == ["NVIDIA H100", "NVIDIA H200"]
        assert f"over {errors['pairs']} predictions of {errors['runs']} runs on NVIDIA H100, NVIDIA H200" in said
    assert (full["smallest"]["pairs"], full["smallest"]["runs"]) == (21, 21)  # every run but the three anchors
    assert "(c) predicts none of 13 runs: the source's llama throughputs at bfloat16 would need" in said
    assert "(c) predicts none of 11 runs: the source's rows calibrate llama at nvfp4" in said
    off = [" ".join(visible_text(p).split()) for p in re.findall(r'<p class="where-off">.*?</p>', html, re.S)]
    assert [line.split(":")[0] for line in off] == [
        "Where it is off, the bfloat16 dense runs on NVIDIA H100",
        "Where it is off, the fp8 dense runs on NVIDIA H100",
        "Where it is off, the bfloat16 dense runs on NVIDIA H200",
    ]
    assert "H100 runs" not in visible_text(html)  # no scope typed on the page
    # the two runs added beside the recorded ones: the page says what they moved, from the result
    since = " ".join(visible_text(re.search(r'<div id="since-record">.*?</div>', html, re.S).group(0)).split())
    assert since.startswith(
        "Since the record: 2 runs added beside the 22 the recorded errors are over: llama2-70b-bf16-64gpu-h200,"
        " llama2-70b-bf16-128gpu-h200; 0 of the 22 recorded runs moved; none under (a) its group's anchor or (b)"
    )
    assert "(a) over the recorded runs: " in since  # the added runs are predicted too: (a) is over more runs
