"""The step-time model's error on ratios, per kind of pair: on the programs and runs one TPU v5e chip kept
(experiments/device-results/tpu-v5e-1), on a sweep made of them, and on a real GB200 prediction."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import PREDICTED, REPO, TABLES
from offload_repro.core.data import DataError, load_rows, load_target
from offload_repro.core.files import read_yaml
from offload_repro.core.published import load_speed, published_throughputs
from offload_repro.core.results import read_result, write_result
from offload_repro.produce.predicted import chip_pairs, device_prediction, pair_errors, pair_record, step_model
from offload_repro.produce.predicted.target_rates import rates

KEPT = REPO / "experiments" / "device-results" / "tpu-v5e-1"
CHIP = load_target("tpu-v5e-1")
ROWS = {row.id: row for row in load_rows(TABLES)}


@pytest.fixture(scope="module")
def chip_lines():
    lines, read = chip_pairs.chip_lines(CHIP, KEPT, ROWS, load_speed())
    return lines, read


def kept_run(row: str) -> dict:
    return json.loads((KEPT / "runs" / f"{row}.json").read_text())


def test_the_chip_pairs_are_its_placements_at_one_scale_each_predicted_from_outside_the_pair(chip_lines):
    lines, read = chip_lines
    assert read["sweep_folder"] is None or read["sweep_points"]  # a kept sweep is read, none is no error
    rows_pairs = {(line["first"], line["second"]): line for line in lines if line["set"] == "chip_rows"}
    # device-save at micro batch 2 is another scale than remat's 8: no pair
    assert set(rows_pairs) == {
        ("llama-qkv-offload-lhs", "llama-baseline"),
        ("deepseek-offload-plain", "deepseek-remat"),
    }
    for (first, second), line in rows_pairs.items():
        # measured: the runs' own throughputs, model FLOPs over the median step (their medians of throughput
        # agree to 1e-5)
        one, two = kept_run(line["rows"][0]), kept_run(line["rows"][1])
        measured = (one["model_tflops_per_step_per_device"] / one["step_time_s"]) / (
            two["model_tflops_per_step_per_device"] / two["step_time_s"]
        ) - 1
        assert line["measured"] == pytest.approx(measured, rel=1e-12)
        assert line["measured"] == pytest.approx(one["tflops_per_device"] / two["tflops_per_device"] - 1, rel=1e-5)
        assert first not in line["calibrated_on"] and second not in line["calibrated_on"]
        for found in line["by_model"].values():
            # a ratio's error in pp is the difference of two percentages
            assert found["pp"] == pytest.approx(found["predicted"] * 100 - line["measured"] * 100)
            assert found["low"] <= found["predicted"] <= found["high"]
            assert found["sign_agrees"] == ((found["predicted"] > 0) == (line["measured"] > 0))
    # DeepSeek's offload row calibrated by its family's other program; Llama's has none, so DeepSeek's rates
    deepseek = rows_pairs[("deepseek-offload-plain", "deepseek-remat")]
    assert deepseek["calibrated_on"] == ["deepseek-device-mb2"] and deepseek["calibration_same_family"]
    llama = rows_pairs[("llama-qkv-offload-lhs", "llama-baseline")]
    assert not llama["calibration_same_family"] and all(n.startswith("deepseek") for n in llama["calibrated_on"])
    # the chip measured offloading slower on both: -1.2% (QKV, Llama) and -25.9% (DeepSeek)
    assert llama["measured"] == pytest.approx(-0.0122, abs=5e-4) and deepseek["measured"] == pytest.approx(
        -0.259, abs=1e-3
    )


def test_on_the_chip_the_host_copy_and_overlap_terms_each_lower_the_ratios_error(chip_lines):
    lines, _ = chip_lines
    found = pair_errors.summaries(lines)[pair_errors.PLACEMENTS]["chip_rows"]
    errors = {model: found["by_model"][model]["mean_abs_pp"] for model in pair_errors.MODELS}
    assert found["terms_lower_the_error"] == {
        "host_copies": errors["full"] < errors["no_host_copies"],
        "overlap": errors["full"] < errors["serial_copies"],
    }
    # without the copies DeepSeek's offload costs nothing: the model alone explains the chip's 26% loss
    assert found["terms_lower_the_error"]["host_copies"] and found["kept_model"] == "full"
    deepseek = next(line for line in lines if line["first"] == "deepseek-offload-plain")
    assert deepseek["by_model"]["no_host_copies"]["predicted"] > -0.05 > deepseek["by_model"]["full"]["predicted"]


def test_an_exposed_copy_never_exceeds_the_copies_time_at_the_link_rate():
    speed = load_speed()
    for name in ("llama-qkv-offload-lhs", "deepseek-offload-plain", "deepseek-remat"):
        program = device_prediction.read_program(KEPT / "programs" / f"{name}.hlo.gz")
        at = rates(CHIP, 0.5 * 197e12, device_prediction.CENTRAL, "bfloat16", speed)
        terms = step_model.breakdown(program["events"]["full"], program["entry"], at)
        host = program["summary"]["host_bytes"]
        at_link = host["to_host"] / at.to_host_bytes_per_s + host["from_host"] / at.from_host_bytes_per_s
        assert 0 <= terms["exposed_host_copy_s"] <= at_link * (1 + 1e-9)
        if not host["to_host"]:
            assert terms["exposed_host_copy_s"] == 0


def sweep_point(point: str, regime: str, row: str, run: dict, kept: Path) -> dict:
    """A sweep point's record made from a kept run of the chip (its numbers, its program), as the sweep's
    runner writes one."""
    program = next(
        n
        for n, p in json.loads((KEPT / "programs" / "programs.json").read_text())["programs"].items()
        if row in p["rows"]
    )
    (kept / "programs").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(KEPT / "programs" / f"{program}.hlo.gz", kept / "programs" / f"{point}.hlo.gz")
    repeat = {
        "repeat": 1,
        "status": "ok",
        "failure": None,
        "steps_completed": run["steps_completed"],
        "step_time_s": run["step_time_s"],
        "train_log": f"work/{point}/repeat-1/train.log",
        "wall_time_s": 60.0,
        "arguments": run["provenance"]["maxtext_arguments"],
        "runtime_memory": run["runtime_memory"],
    }
    return {
        "point": point,
        "regime": regime,
        "row": row,
        "family": ROWS[row].family,
        "target": "tpu-v5e-1",
        "status": "ok",
        "message": None,
        "failure": None,
        "overrides": {},
        "placement": ROWS[row].placement,
        "steps": 6,
        "warmup_steps": 3,
        "repeats_planned": 1,
        "step_time_s": run["step_time_s"],
        "tflops_per_device": run["tflops_per_device"],
        "model_tflops_per_step_per_device": run["model_tflops_per_step_per_device"],
        "repeats": run["repeats"],
        "spread": run["spread"],
        "repeat_runs": [repeat],
        "compiled_memory": run["compiled_memory"],
        "measured_peak": None,
        "xla_flags": "",
        "maxtext_arguments": run["provenance"]["maxtext_arguments"],
        "hlo": f"programs/{point}.hlo.gz",
        "versions": {},
        "provenance": {"finished_at": "2026-12-07T00:00:00Z"},
    }


def sweep_fixture(root: Path, steps: dict[str, float] | None = None) -> Path:
    """A kept sweep of the chip's own runs: Llama's baseline and QKV offload in one regime, DeepSeek's
    remat and offload in another, its device-save row alone in a third; `steps` replaces a point's step."""
    kept = root / "tpu-v5e-1"
    points = (
        ("l-baseline", "llama", "llama-baseline"),
        ("l-qkv", "llama", "llama-qkv-offload-lhs"),
        ("d-remat", "deepseek", "deepseek-remat"),
        ("d-offload", "deepseek", "deepseek-offload-optimized"),
        ("d-device", "deepseek-mb2", "deepseek-device-mb2"),
    )
    for point, regime, row in points:
        record = sweep_point(point, regime, row, kept_run(row), kept / "sweep")
        if steps and point in steps:
            record["step_time_s"] = steps[point]
        write_result(kept / "sweep" / "points" / f"{point}.json", "sweep-point", record)
    return kept


def test_a_sweep_points_pairs_are_its_regimes_and_no_pair_is_predicted_from_its_own_measurement(tmp_path, chip_lines):
    speed = load_speed()
    kept = sweep_fixture(tmp_path / "a")
    lines, read = chip_pairs.chip_lines(CHIP, kept, ROWS, speed)
    assert read["programs"] == [] and read["sweep_points"] == [
        "d-device",
        "d-offload",
        "d-remat",
        "l-baseline",
        "l-qkv",
    ]
    pairs = {(line["first"], line["second"]): line for line in lines}
    assert set(pairs) == {("l-qkv", "l-baseline"), ("d-offload", "d-remat")}  # d-device: a regime of its own
    assert pairs[("d-offload", "d-remat")]["calibrated_on"] == ["d-device"]
    # the same programs and steps as the chip's rows: the same pairs' numbers
    rows_lines = {line["first"]: line for line in chip_lines[0] if line["set"] == "chip_rows"}
    same = pairs[("d-offload", "d-remat")]["by_model"]["full"]["predicted"]
    assert same == pytest.approx(rows_lines["deepseek-offload-plain"]["by_model"]["full"]["predicted"])
    # a pair's own steps enter its measured ratio only: its prediction stays where its points' steps move
    moved = sweep_fixture(tmp_path / "b", {"d-offload": 2.0, "d-remat": 1.0})
    again = {(line["first"], line["second"]): line for line in chip_pairs.chip_lines(CHIP, moved, ROWS, speed)[0]}
    before, after = pairs[("d-offload", "d-remat")], again[("d-offload", "d-remat")]
    assert after["measured"] == pytest.approx(-0.5) and after["measured"] != before["measured"]
    for model in pair_errors.MODELS:
        assert after["by_model"][model]["predicted"] == before["by_model"][model]["predicted"]
    # a point outside the pair does move it: its rate calibrates the pair
    third = sweep_fixture(tmp_path / "c", {"d-device": kept_run("deepseek-device-mb2")["step_time_s"] * 2})
    moved_rate = {(line["first"], line["second"]): line for line in chip_pairs.chip_lines(CHIP, third, ROWS, speed)[0]}
    assert (
        moved_rate[("d-offload", "d-remat")]["by_model"]["full"]["predicted"] != before["by_model"]["full"]["predicted"]
    )


def test_without_a_sweep_folder_there_are_no_sweep_pairs(tmp_path):
    assert chip_pairs.sweep_points(CHIP, tmp_path, ROWS, load_speed()) == {}


def test_the_source_pairs_are_the_leave_one_out_pairs_read_as_ratios():
    prediction = read_result(PREDICTED, "predicted")
    speed = load_speed()
    published = published_throughputs(ROWS, speed, REPO / "experiments" / "claims.yaml")
    regimes = {row: 0.0 for row in ROWS}
    claimed = pair_errors.claimed_pairs(read_yaml(REPO / "experiments" / "claims.yaml")["claims"])
    lines = pair_errors.source_pairs(ROWS, published, pair_errors.prediction_throughputs(prediction), regimes, claimed)
    by = {(line["first"], line["second"], line["calibrated_on"][0]): line for line in lines}
    values = {r["row"]: r["by_calibration"] for r in prediction["rows"] if r["status"] == "ok"}
    line = by[("llama-qkv-offload-lhs", "llama-baseline", "llama-baseline")]
    assert line["measured"] == pytest.approx(2746 / 2669 - 1)
    predicted = values["llama-qkv-offload-lhs"]["llama-baseline"][0] / values["llama-baseline"]["llama-baseline"][0] - 1
    assert line["by_model"]["full"]["predicted"] == pytest.approx(predicted)
    assert line["by_model"]["full"]["pp"] == pytest.approx((predicted - (2746 / 2669 - 1)) * 100)
    # calibrated on a row of the pair: its published value is in the ratio; on a third row it is not
    assert not line["calibration_outside_pair"]
    assert by[("llama-qkv-offload-lhs", "llama-baseline", "llama-qkv-offload-nolhs")]["calibration_outside_pair"]
    # a variant over the row it varies; offload over remat
    assert ("llama-qkv-offload-nolhs", "llama-qkv-offload-lhs", "llama-baseline") in by
    # DeepSeek's implied throughputs derive from the optimized row's 908.2: its pair with plain (ordered as
    # the claim names it) calibrated on plain is the pair's own values
    deepseek = by[("deepseek-offload-optimized", "deepseek-offload-plain", "deepseek-offload-plain")]
    assert deepseek["measured"] == pytest.approx(0.677) and not deepseek["calibration_outside_pair"]


def test_the_source_rows_regimes_and_a_claim_outside_the_chips_range(chip_lines):
    lines, _ = chip_lines
    speed = load_speed()
    source = load_target("gb200-nvl72")
    regimes = pair_errors.source_regimes(ROWS.values(), source, speed)
    # as the sweep's regimes table states them (experiments/sweeps/tpu-v5e-1.regimes.md)
    assert round(regimes["llama-qkv-offload-lhs"], 3) == 0.081
    assert round(regimes["deepseek-offload-optimized"], 3) == 0.234
    assert regimes["llama-baseline"] == regimes["deepseek-remat"] == 0.0
    ranges = pair_errors.measured_range(lines)
    claims = read_yaml(REPO / "experiments" / "claims.yaml")["claims"]
    found = {c["claim"]: c for c in pair_errors.claim_records(claims, ROWS, lines, regimes, ranges, "full")}
    qkv = found["llama-qkv-lhs-vs-baseline"]
    assert qkv["pairs"] == [["llama-qkv-offload-lhs", "llama-baseline"]] and qkv["kind"] == pair_errors.PLACEMENTS
    # with the sweep kept, the chip measured Llama from 0.073 to 1.36: GB200's row (0.081) lies inside;
    # DeepSeek's optimized row (0.234) lies below the chip's least copy-bound point, by the factor to it
    assert qkv["inside_chip_range"] and qkv["outside_by"] is None
    assert ranges["llama"]["low"] < 0.0806 < ranges["llama"]["high"]
    remat = found["deepseek-optimized-vs-remat"]
    assert not remat["inside_chip_range"]
    assert remat["outside_by"] == pytest.approx(ranges["deepseek"]["low"] / regimes["deepseek-offload-optimized"])
    over = qkv["chip_error"]["over"]
    assert sum(pair.startswith("chip_rows: llama-qkv-offload-lhs / llama-baseline") for pair in over) == 1
    assert sum(pair.startswith("sweep: llama-") for pair in over) == 6
    fastest = found["llama-lhs-without-pipelining-fastest"]
    assert len(fastest["pairs"]) == 3 and all(pair[0] == "llama-qkv-offload-lhs" for pair in fastest["pairs"])
    # a claim of a value is no ratio
    assert "llama-baseline-throughput" not in found


def test_the_record_is_held_to_the_pairs_it_names_and_a_pair_added_is_reported_not_applied():
    result = read_result(REPO / "tests" / "fixtures" / "results" / "predicted" / "pair-errors.json", "pair-errors")
    record = pair_record.load_record()
    lines = result["pairs"]
    checked = pair_record.check_record(lines, record)
    assert [(c["set"], c["family"], c["since_record"]) for c in checked] == [
        (entry["set"], entry["family"], []) for entry in record["records"]
    ]
    # a sweep pair kept later: listed as since the record, its error beside, the record unchanged
    added = dict(lines[-1], set="sweep", first="w512-qkv", second="w512-baseline")
    added["id"] = pair_record.line_id(added)
    again = pair_record.check_record([*lines, added], record)
    chip = next(c for c in again if c["set"] == "chip" and c["family"] == added["family"])
    assert chip["since_record"] == [added["id"]] and chip["by_model"] == next(
        e["by_model"] for e in record["records"] if e["set"] == "chip" and e["family"] == added["family"]
    )
    assert chip["with_since"]["full"]["pairs"] == len(chip["pairs"]) + 1
    # a value recorded that the pairs no longer give, or a recorded pair gone: stops, naming what to record
    changed = {
        "records": [
            dict(record["records"][0], by_model={"full": {"mean_abs_pp": 0.5, "largest_abs_pp": 0.5, "sign_agrees": 0}})
        ]
    }
    with pytest.raises(
        DataError, match=r"by_model.full.mean_abs_pp: recorded 0.5, computed \d+\.\d+ over the recorded pairs"
    ):
        pair_record.check_record(lines, changed)
    gone = [line for line in lines if line["id"] != record["records"][0]["pairs"][0]]
    with pytest.raises(DataError, match="no such pair computed"):
        pair_record.check_record(gone, record)


def test_the_kept_result_is_this_codes_on_the_chip(chip_lines):
    kept = read_result(REPO / "tests" / "fixtures" / "results" / "predicted" / "pair-errors.json", "pair-errors")
    lines, _ = chip_lines
    for line in lines:
        same = next(
            k
            for k in kept["pairs"]
            if (k["set"], k["first"], k["second"]) == (line["set"], line["first"], line["second"])
        )
        assert same["by_model"] == line["by_model"] and same["measured"] == line["measured"]


def test_two_scales_of_one_placement_are_the_validation_stages_pairs_read_as_ratios():
    from offload_repro.core.measured_elsewhere import load_validation

    validation = read_result(REPO / "tests" / "fixtures" / "results" / "validation" / "model.json", "validation")
    lines = pair_errors.scale_pairs(validation)
    recorded = load_validation()["kinds"]["llama"]["recorded_error"]
    # the pairs experiments/validation.yaml's recorded error is over: runs of one model and precision
    assert len(lines) == recorded["pairs"] and all(line["kind"] == pair_errors.SCALES for line in lines)
    runs = {run["run"]: run for run in validation["runs"]}
    for line in lines:
        first, second = runs[line["first"]], runs[line["second"]]
        assert (first["model"], first["precision"]) == (second["model"], second["precision"])
        assert first["gpus"] > second["gpus"]
        full = line["by_model"]["full"]
        # a ratio's error in pp is the run's throughput error times the measured ratio: the throughput
        # error of the predicted run, seen from the run that calibrated it
        predicted_run = line["second"] if line["calibrated_on"] == [line["first"]] else line["first"]
        error = (
            1
            / (
                1
                + next(
                    p["error"]
                    for p in validation["pairs"]["every_run"]
                    if p["predicted"] == predicted_run and p["calibrated_on"] == line["calibrated_on"][0]
                )
            )
            - 1
        )
        expected = (
            (1 + line["measured"]) * error
            if predicted_run == line["first"]
            else (1 + line["measured"]) * (1 / (1 + error) - 1)
        )
        assert full["pp"] == pytest.approx(expected * 100)
    worst = max(lines, key=lambda line: abs(line["by_model"]["full"]["pp"]))
    # the recorded worst pair: the 256-GPU run predicted from the 64-GPU one, 21.6% high
    assert (worst["first"], worst["calibrated_on"]) == ("llama2-70b-fp8-256gpu", ["llama2-70b-fp8-64gpu"])
    assert worst["by_model"]["full"]["pp"] == pytest.approx(
        recorded["throughput_error"] * (1 + worst["measured"]) * 100, abs=0.01
    )
    found = pair_errors.summaries(lines)[pair_errors.SCALES]
    assert found["computed"] and found["by_model"]["full"]["pairs"] == 100
    assert not pair_errors.summaries([])[pair_errors.SCALES]["computed"]


def test_the_scales_record_is_checked_where_the_validation_stage_ran_and_kept_as_recorded_where_not():
    validation = read_result(REPO / "tests" / "fixtures" / "results" / "validation" / "model.json", "validation")
    record = pair_record.load_record()
    scales = [entry for entry in record["records"] if entry["set"] == "runs_elsewhere"]
    assert len(scales) == 1 and len(scales[0]["pairs"]) == 100  # 22 H100 runs: each pair under both calibrations
    lines = [line | {"id": pair_record.line_id(line)} for line in pair_errors.scale_pairs(validation)]
    (checked,) = pair_record.check_record(lines, {"records": scales})
    assert checked["since_record"] == [] and "checked" not in checked  # computed again and held to the record
    # a ratio of two scales errs by tens of pp at most: the model's step is nearly flat in scale
    assert 0 < scales[0]["by_model"]["full"]["mean_abs_pp"] < scales[0]["by_model"]["full"]["largest_abs_pp"] < 50
    (kept,) = pair_record.check_record([], {"records": scales})
    assert kept["checked"] is False and kept["by_model"] == scales[0]["by_model"] and "validation" in kept["why"]
