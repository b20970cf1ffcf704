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

import pytest
import yaml

from conftest import FIXTURES
from offload_repro.core import measured_elsewhere
from offload_repro.core.data import DataError, load_target
from offload_repro.core.files import read_yaml
from offload_repro.core.measured_elsewhere import MEASURED_DIR, load_measured, load_validation
from offload_repro.core.published import load_speed
from offload_repro.core.results import write_result
from offload_repro.produce.compiled import hlo_text
from offload_repro.produce.predicted import device_prediction, hlo_flops, hlo_schedule
from offload_repro.produce.predicted.target_rates import peak_flops, settings
from offload_repro.produce.validation import against_measured
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
    error such a carry was measured to have (experiments/validation.yaml), never left bare."""
    runs = load_measured()
    lone = min(runs, key=lambda run: run.gpus)
    anchored = with_anchor(gpu="NVIDIA H200", precision=lone.precision, kind=lone.kind, run="lone-run")
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
    error = load_validation()["calibrations"]["across_hardware"]["recorded_error"]["largest_abs"]
    steps = [step for step in carried["step_s"] if step]
    assert carried["band"] == {"error": error, "low_s": min(steps) / (1 + error), "high_s": max(steps) / (1 - error)}
    assert carried["band"]["low_s"] < carried["step_s"][0] < carried["band"]["high_s"]


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
    assert result["errors"]["across_hardware"]["carried_at"] == "run_precision"
    carried = device_prediction.carried_shares({"a-program": "llama"}, source_prediction(), speed)
    assert carried["gb200"]["llama"]["none"] == why["bfloat16"]  # one wording, shared
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
    assert result["errors"]["across_hardware"]["pairs"] == sum(run.precision == "bfloat16" for run in runs)


def test_a_recorded_across_hardware_error_is_compared_only_with_one_carried_alike():
    """The recorded error of (c) says how its pairs were carried; the stage compares it only with an
    error carried the same way, and where they differ names what it computes, to record again."""
    recorded = {"largest_abs": 0.486, "mean_abs": 0.3781, "pairs": 22, "carried_at": "family_default_precision"}
    mine = {"largest_abs": 0.1, "mean_abs": 0.05, "pairs": 11, "carried_at": "run_precision"}
    where = "experiments/validation.yaml"
    assert against_measured.unrecorded_across_hardware(mine, recorded, where) == []
    assert against_measured.unlike_across_hardware(mine, recorded, where) == (
        "experiments/validation.yaml: field 'calibrations.across_hardware.recorded_error': records an error carried"
        " at family_default_precision, this stage carries at run_precision and computes largest_abs 0.1000,"
        " mean_abs 0.0500 over 11 pairs; not compared: record it again from this result, with carried_at:"
        " run_precision"
    )
    none = {"largest_abs": None, "mean_abs": None, "pairs": 0, "carried_at": "run_precision"}
    assert "computes no pair" in against_measured.unlike_across_hardware(none, recorded, where)
    alike = recorded | {"carried_at": "run_precision"}
    assert against_measured.unlike_across_hardware(mine, alike, where) is None
    assert [line.split(": ")[1] for line in against_measured.unrecorded_across_hardware(mine, alike, where)] == [
        "field 'calibrations.across_hardware.recorded_error.largest_abs'",
        "field 'calibrations.across_hardware.recorded_error.mean_abs'",
    ]
    # the published record is of the former carry: kept, not compared, until recorded again
    assert load_validation()["calibrations"]["across_hardware"]["recorded_error"]["carried_at"] == (
        "family_default_precision"
    )


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
