"""Published runs measured elsewhere (experiments/measured-elsewhere/): loaded, validated, each made
into the row a compile here takes, and found by the validation stage without being named anywhere."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from conftest import FIXTURES, REPO
from offload_repro.core import measured_elsewhere, validation_record
from offload_repro.core.data import DataError
from offload_repro.core.files import read_yaml
from offload_repro.core.measured_elsewhere import compiled_as, load_file, load_measured, load_validation, target_for
from offload_repro.core.published import load_speed
from offload_repro.plan import jobs
from offload_repro.plan.jobs import make_plan
from offload_repro.produce.compiled import hlo_text
from offload_repro.produce.predicted import hlo_schedule, model_profile
from offload_repro.produce.predicted.step_model import Event
from offload_repro.produce.predicted.target_rates import link_efficiency, peak_flops, settings
from offload_repro.produce.validation import against_measured
from offload_repro.produce.validation.against_measured import Measured, calibrated_pairs, fitted_rates
from report_page import rendered_page, visible_text
from workflow_copy import copy_workflow, snakemake

LLAMA3 = REPO / "experiments" / "measured-elsewhere" / "dgxc-llama3-70b.yaml"


def written(tmp_path, data, name="dgxc-llama3-70b"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def refusal(tmp_path, data, match=None) -> tuple[Path, str]:
    """The file of `data` and the message it is refused with."""
    path = written(tmp_path, data)
    with pytest.raises(DataError, match=match) as err:
        load_file(path)
    return path, str(err.value)


def test_the_published_files_hold_22_runs_on_h100_nodes_of_8():
    runs = load_measured()
    assert len(runs) == 22
    assert {run.target for run in runs} == {"h100-sxm"}
    assert all(run.gpus == 8 * run.nodes for run in runs)
    by_id = {run.id: run for run in runs}
    assert by_id["llama3-70b-bf16-128gpu"].step_seconds == 15.563
    assert by_id["llama2-70b-fp8-2048gpu"].step_seconds == 4.93


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda d: d["runs"][2]["maxtext"].update(remat_polcy="full"),
            r"run 3 \(id 'llama3-70b-bf16-512gpu'\).*field 'maxtext.remat_polcy'.*did you mean 'remat_policy'",
        ),
        (lambda d: d["runs"][0].update(precision="fp16"), r"run 1 \(id 'llama3-70b-bf16-128gpu'\), field 'precision'"),
        (  # a run's XLA_PYTHON_CLIENT_MEM_FRACTION is the memory its compile plans within (core/gpu.py)
            lambda d: d["runs"][1].update(environment={"XLA_PYTHON_CLIENT_MEM_FRACTION": "1.5"}),
            r"run 2 .*field 'environment.XLA_PYTHON_CLIENT_MEM_FRACTION'",
        ),
        (
            lambda d: d["runs"][0]["maxtext"].update(dcn_fsdp_parallelism=8),
            r"field 'maxtext': its parallelism spans 64 devices, not 128",
        ),
        (
            lambda d: (
                d["defaults"]["maxtext"].update(ici_tensor_parallelism=-1),
                d["runs"][0]["maxtext"].update(ici_fsdp_parallelism=-1),
            ),
            r"run 1 \(id 'llama3-70b-bf16-128gpu'\), field 'maxtext.ici_tensor_parallelism'"
            r" \(the file's defaults\): -1,",
        ),
        (
            lambda d: d["defaults"]["xla_flags"].__setitem__(3, "-xla_gpu_enable_pipelined_all_gather=true"),
            r"field 'defaults.xla_flags.3': .* does not match",
        ),
    ],
    ids=["misspelt-setting", "schema", "allocator-share", "parallelism-span", "axis-from-defaults", "flag-not-of-xla"],
)
def test_a_malformed_file_is_refused_naming_file_run_and_field(tmp_path, edit, message):
    data = read_yaml(LLAMA3)
    edit(data)
    path, refused = refusal(tmp_path, data, message)
    assert str(path) in refused


def compiled_run(path, run_id):
    run = next(run for run in load_file(path) if run.id == run_id)
    return compiled_as(run, target_for(run), load_validation(), [])


def test_an_axis_left_to_maxtext_is_resolved_in_its_own_group_before_dcn_is_folded_into_ici(tmp_path):
    """MaxText fills a -1 with what the other axes of its group leave: ICI over a node's 8 GPUs, DCN
    over the nodes; the FSDP axis compiled here is then 8 x 2, not -1 x 2."""
    data = read_yaml(LLAMA3)
    data["runs"][0]["maxtext"].update(ici_fsdp_parallelism=-1, dcn_fsdp_parallelism=2, dcn_data_parallelism=8)
    path = written(tmp_path, data)
    run = load_file(path)[0]
    assert run.maxtext["ici_fsdp_parallelism"] == 8
    row = compiled_run(path, "llama3-70b-bf16-128gpu").row
    assert row.parallelism["ici_fsdp_parallelism"] == 16 and row.parallelism["ici_data_parallelism"] == 8


def test_a_run_leaving_its_axes_to_maxtexts_defaults_compiles_as_the_one_that_states_them(tmp_path):
    """MaxText's base.yml leaves ici_fsdp and dcn_data at -1: a file that omits them gets the sizes
    MaxText gives them, written out, and the same compile as the published file."""
    data = read_yaml(LLAMA3)
    del data["defaults"]["maxtext"]["ici_fsdp_parallelism"]
    del data["runs"][2]["maxtext"]["dcn_data_parallelism"]  # 64 nodes over dcn_fsdp 16
    path = written(tmp_path, data)
    run = load_file(path)[2]
    assert (run.maxtext["ici_fsdp_parallelism"], run.maxtext["dcn_data_parallelism"]) == (8, 4)
    published = compiled_run(LLAMA3, "llama3-70b-bf16-512gpu").row
    assert compiled_run(path, "llama3-70b-bf16-512gpu").row == replace(published, source_file=str(path))


# A mesh or a value MaxText would refuse in a run's own settings, and what the refusal says right after
# naming the file, the run and field 'maxtext' (None: MaxText takes it)
REFUSED_SETTINGS = {
    "minus-one-beside-dcn-2": (
        {"ici_fsdp_parallelism": -1, "dcn_fsdp_parallelism": 2},
        r"': its parallelism spans 16 devices, not 128; its DCN axes \(dcn_fsdp_parallelism 2\) span 2, not the"
        r" run's 16 nodes",
    ),
    "two-minus-ones": (
        {"ici_fsdp_parallelism": -1, "ici_data_parallelism": -1},
        r"\.ici_fsdp_parallelism': -1, and so is ici_data_parallelism: MaxText fills at most one ICI",
    ),
    "not-divisible": (
        {"ici_fsdp_parallelism": -1, "ici_tensor_parallelism": 3},
        r"\.ici_fsdp_parallelism': -1 cannot be resolved: the run's 8 GPUs per node are not a whole multiple of"
        r" the other ICI axes' product 3",
    ),
    "zero": ({"dcn_data_parallelism": 0}, r"\.dcn_data_parallelism': 0 is not a size MaxText takes"),
    "ici-beyond-a-node": (
        {"ici_fsdp_parallelism": 16, "dcn_fsdp_parallelism": 8},  # 128 devices, but 16 per node of 8
        r"': its ICI axes \(ici_fsdp_parallelism 16\) span 16, not the run's 8 GPUs per node",
    ),
    "not-a-mesh-axis": (
        {"ici_sequence_parallelism": 2, "ici_fsdp_parallelism": 4},
        r"\.ici_sequence_parallelism': 2, but MaxText's mesh_axes .* have no axis 'sequence'",
    ),
    "batch-0": ({"per_device_batch_size": 0}, r"\.per_device_batch_size': 0 is not a positive number"),
    "batch-negative": ({"per_device_batch_size": -2}, r"\.per_device_batch_size': -2 is not a positive number"),
    "length-0": ({"max_target_length": 0}, r"\.max_target_length': 0 is not a positive whole number of tokens"),
    "length-fraction": (
        {"max_target_length": 8192.5},
        r"\.max_target_length': 8192\.5 is not a positive whole number of tokens",
    ),
    "quantization": ({"quantization": "fp9"}, r"\.quantization': 'fp9' is not one MaxText takes"),
    "dtype": ({"dtype": "bf16"}, r"\.dtype': 'bf16' is not one MaxText takes"),
    "free-string": ({"remat_policy_for_vit": "x"}, None),  # typed str by MaxText: any string is taken
    "model": ({"model_name": "llama2-70b"}, r"\.model_name': 'llama2-70b' is not the file's model 'llama3-70b'"),
    "batch-fraction": (
        {"per_device_batch_size": 0.3},
        r"\.per_device_batch_size': x 128 GPUs is a batch of 38\.4 sequences, not a whole number",
    ),
}


@pytest.mark.parametrize(("run_settings", "message"), REFUSED_SETTINGS.values(), ids=REFUSED_SETTINGS)
def test_a_setting_maxtext_would_refuse_is_refused_naming_file_run_and_field(tmp_path, run_settings, message):
    data = read_yaml(LLAMA3)
    data["runs"][0]["maxtext"].update(run_settings)
    if message is None:
        assert load_file(written(tmp_path, data))[0].maxtext.items() >= run_settings.items()
        return
    path, refused = refusal(tmp_path, data)
    assert re.match(re.escape(f"{path}: run 1 (id 'llama3-70b-bf16-128gpu'), field 'maxtext") + message, refused)


@pytest.mark.parametrize(
    ("flag", "reason"),
    [
        ('--xla_disable_hlo_passes=rematerialization"', "a stray quote"),
        ('--xla_gpu_graph_level="0', "opens a quote"),
        ("--xla_gpu_graph_level='0'", "its value is quoted: XLA strips the quotes and takes '0'"),
        ("--xla_gpu_graph_level=", "its value is empty"),
        ("--xla_gpu_graph_level=0 --xla_dump_to=x", "whitespace"),
        ("--xla_gpu_graph_level=0\t", "whitespace"),
    ],
    ids=["stray-quote", "unclosed-quote", "quoted", "empty", "two-in-one", "tab"],
)
def test_a_malformed_xla_flag_is_refused_naming_file_run_and_field(tmp_path, flag, reason):
    data = read_yaml(LLAMA3)
    data["runs"][1]["xla_flags"].insert(1, flag)
    path, refused = refusal(tmp_path, data)
    assert refused.startswith(f"{path}: run 2 (id 'llama3-70b-bf16-256gpu'), field 'xla_flags[1]': {flag!r}: ")
    assert reason in refused


@pytest.mark.parametrize(
    ("flag", "write"),
    [('--xla_gpu_graph_level=""', None), ("--xla_gpu_graph_level='0'", "--xla_gpu_graph_level=0")],
    ids=["empty", "zero"],
)
def test_a_quoted_flag_is_offered_only_fixes_the_file_takes(tmp_path, flag, write):
    data = read_yaml(LLAMA3)
    data["runs"][1]["xla_flags"].insert(1, flag)
    _, refused = refusal(tmp_path, data)
    # the unquoted flag where it is taken (an empty value is refused too); else only keeping it as passed
    assert ("; write " in refused) == (write is not None)
    if write is not None:
        assert f"; write {write!r};" in refused
        fixed = read_yaml(LLAMA3)
        fixed["runs"][1]["xla_flags"].insert(1, write)
        assert load_file(written(tmp_path, fixed))
    kept = yaml.safe_load(refused.split("list it as passed beside xla_flags: ")[1].replace("<", "").replace(">", ""))
    assert kept == {"xla_flags_as_passed": [{"flag": flag, "effect": "what XLA made of the flag as passed"}]}
    data["runs"][1].update(kept)
    assert load_file(written(tmp_path, data))


def test_a_malformed_flag_the_run_passed_is_kept_only_where_the_file_says_what_xla_made_of_it(tmp_path):
    data = read_yaml(LLAMA3)
    stray = '--xla_disable_hlo_passes=rematerialization"'
    data["defaults"]["xla_flags"][10] = stray
    refusal(
        tmp_path, data, r"defaults, field 'xla_flags\[10\]': .*list it as passed beside xla_flags: xla_flags_as_passed"
    )
    kept = {"flag": stray, "effect": "the pass name with its quote matches no pass: rematerialization stayed on"}
    data["defaults"]["xla_flags_as_passed"] = [kept]
    runs = load_file(written(tmp_path, data))
    assert all(
        stray in run.xla_flags and "--xla_disable_hlo_passes=rematerialization" not in run.xla_flags for run in runs
    )
    # a flag that would swallow the flags after it in XLA_FLAGS cannot be kept; nor can a flag listed but absent
    unclosed = '--xla_disable_hlo_passes="rematerialization'
    data["defaults"]["xla_flags"][10] = unclosed
    data["defaults"]["xla_flags_as_passed"] = [{**kept, "flag": unclosed}]
    refusal(tmp_path, data, r"field 'xla_flags\[10\]': .*cannot be passed as it is")
    data["defaults"]["xla_flags"][10] = "--xla_disable_hlo_passes=rematerialization"
    data["defaults"]["xla_flags_as_passed"] = [kept]
    refusal(tmp_path, data, r"defaults, field 'xla_flags_as_passed\[0\].flag': .* is not one of its")


def test_a_compile_here_folds_dcn_into_ici_and_records_what_it_changes():
    run = next(run for run in load_measured() if run.id == "llama3-70b-bf16-2048gpu")
    target = target_for(run)
    assert target.spec["compile"]["topology"] == "1x256x8" and target.spec["hardware"]["devices"] == 2048
    compiled = compiled_as(run, target, load_validation(), ["--xla_gpu_graph_level=0"])
    row = compiled.row
    assert row.parallelism["ici_fsdp_parallelism"] == 128 and row.parallelism["ici_data_parallelism"] == 16
    assert not any(key.startswith("dcn_") for key in row.maxtext_overrides)
    assert "--xla_gpu_graph_level=0" not in row.xla_flags
    assert "--xla_gpu_unsupported_use_all_reduce_one_shot_kernel=false" in row.xla_flags
    assert not any(flag.startswith("--xla_gpu_pgle_profile_file_or_directory_path") for flag in row.xla_flags)
    # planned within the memory the run's allocator had: its environment's share, not the target's
    assert run.environment["XLA_PYTHON_CLIENT_MEM_FRACTION"] == "0.94" and row.allocator_memory_fraction == 0.94
    substituted = {(s["setting"], s["becomes"]) for s in compiled.substitutions}
    assert substituted >= {("attention", "cudnn_flash_jax"), ("hardware", "gpu")}


def someone_elses_run(directory: Path, target: str) -> None:
    """The published files, and beside them a user's file of one BF16 Llama 3 70B run on `target`."""
    for path in measured_elsewhere.MEASURED_DIR.glob("*.yaml"):
        shutil.copy(path, directory / path.name)
    data = read_yaml(LLAMA3)
    data["source"], data["target"] = "someone-llama3-70b", target
    data["runs"] = [{**data["runs"][0], "id": "someone-llama3-70b-bf16-128gpu", "step_seconds": 15.0}]
    written(directory, data, "someone-llama3-70b")


def validation_plan(results: Path):
    config = read_yaml(REPO / "experiments" / "config.yaml") | {"validation": True}
    return make_plan(config, {}, exists=lambda path: False, results=results)


def test_a_new_file_of_runs_enters_the_validation_stage_by_itself(tmp_path, monkeypatch):
    """A run of a GPU no published run measured forms no pair of (b) within one model: the recorded
    pairs stand, and the run enters the stage."""
    someone_elses_run(tmp_path, "h200-8")
    monkeypatch.setattr(measured_elsewhere, "MEASURED_DIR", tmp_path)
    plan = validation_plan(tmp_path / "results")
    assert plan.measured_runs["someone-llama3-70b-bf16-128gpu"] == "h200-8"
    assert len(plan.measured_runs) == 23
    assert plan.evidence_files["validation"] == ["results/validation/model.json"]


def test_a_run_added_beside_the_recorded_ones_goes_on_and_a_record_out_of_step_stops_the_plan(tmp_path, monkeypatch):
    """A run added to a group whose pairs a kind's recorded error counts goes on to the stage, which
    reports what it moves: the record is over the recorded runs (experiments/validation.yaml,
    recorded_runs). The pairs recorded are counted from those runs' files alone (runs of one GPU,
    precision and model, n x (n - 1) each), so a record out of step with them stops the plan, which
    the rules read before any compile, naming the file, the field, both counts and what to record;
    and so does a recorded run no file holds."""
    validation = load_validation()
    assert validation_record.unrecorded_pairs(load_measured(), validation) == []  # 6 x 5 x 2 + 5 x 4 x 2 = 100
    someone_elses_run(tmp_path, "h100-sxm")
    monkeypatch.setattr(measured_elsewhere, "MEASURED_DIR", tmp_path)
    assert len(validation_plan(tmp_path / "results").measured_runs) == 23
    runs = load_measured()
    assert validation_record.recorded(runs, validation)[1] == ["someone-llama3-70b-bf16-128gpu"]

    validation["kinds"]["llama"]["recorded_error"]["pairs"] = 110
    monkeypatch.setattr(jobs, "load_validation", lambda: validation)
    with pytest.raises(DataError) as err:
        validation_plan(tmp_path / "results")
    assert str(err.value) == (
        "experiments/validation.yaml: field 'kinds.llama.recorded_error.pairs': records 110, but the recorded runs"
        " (recorded_runs) form 100 pairs, each run predicted from every other of its GPU, precision and model"
        " (6 bfloat16 llama2-70b runs on NVIDIA H100, 6 fp8 llama2-70b runs on NVIDIA H100, 5 bfloat16 llama3-70b"
        " runs on NVIDIA H100, 5 fp8 llama3-70b runs on NVIDIA H100); record pairs: 100, then the error the stage"
        " computes over them (it names it)"
    )
    validation["kinds"]["llama"]["recorded_error"]["pairs"] = 100
    validation["recorded_runs"] = [*validation["recorded_runs"][:2], "llama3-70b-bf16-128gpus"]
    with pytest.raises(DataError) as err:
        validation_plan(tmp_path / "results")
    assert str(err.value) == (
        "experiments/validation.yaml: field 'recorded_runs[2]': 'llama3-70b-bf16-128gpus' is no run of"
        " experiments/measured-elsewhere/, so the errors recorded over it cannot be checked: remove it, and record"
        " the errors the stage computes without it; did you mean 'llama3-70b-bf16-128gpu'?"
    )
    # no recorded run of a kind with an error recorded: record null
    validation["recorded_runs"] = ["someone-llama3-70b-bf16-128gpu"]
    (found,) = validation_record.unrecorded_pairs(runs, validation)
    assert "records 100, but the recorded runs (recorded_runs) form 0 pairs" in found
    assert found.endswith("record null (no two runs of one GPU, precision and model)")


def test_the_validation_stage_dry_runs_with_a_job_per_published_run(tmp_path):
    directory = copy_workflow(tmp_path)
    done = snakemake(directory, "-n", "--config", "validation=True")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("rule compile_measured:") == 22
    # each run compiled again, scheduled by a profile of the model's costs of its program
    assert done.stdout.count("rule compile_measured_profiled:") == 22
    assert "results/validation/profile.pbtxt" in done.stdout
    assert "results/validation/compiled/llama3-70b-fp8-2048gpu.json" in done.stdout
    assert "rule validate_model:" in done.stdout or "localrule validate_model:" in done.stdout


def synthetic(run_id: str, gpus: int, step_s: float, flops: float, collective_bytes: int):
    """A run whose program is one compute event and one synchronous collective (its bus bytes)."""
    published = load_measured()[0]  # its settings, but for those given here, are alike in every run
    assert (published.target, published.precision, published.family) == ("h100-sxm", "bfloat16", "llama")
    run = replace(published, id=run_id, gpus=gpus, nodes=gpus // 8, maxtext={}, xla_flags=[], step_seconds=step_s)
    collective = Event("transfer", channel="collective", bytes=collective_bytes, what="all-gather", key="ag")
    events = {"main": [Event("compute", flops=int(flops)), collective]}
    program = {
        "events": events,
        "ideal_events": events,
        "entry": "main",
        "model_flops": flops,
        "flops": SimpleNamespace(total=flops, unspent=0),
    }
    return Measured(run, target_for(run), program)


def test_one_run_calibrates_its_gpu_and_precision_and_the_others_are_predicted_by_hand():
    """Calibration (a): the group's anchor fits the rate; a run whose collective is larger
    is predicted slower by exactly that collective's time at NVLink's cited rate x its central
    efficiency (no network: one NVLink domain is all a synchronous transfer event names here)."""
    speed = load_speed()
    small = synthetic("a-64gpu", 64, step_s=10.0, flops=5e15, collective_bytes=int(45e9))
    # NVLink 4: 900 GB/s both ways, at the share the target file's measurements give it centrally
    link = link_efficiency(small.target, "collective_link", "central", speed) * 450e9
    large = synthetic("a-512gpu", 512, step_s=11.0, flops=5e15, collective_bytes=int(90e9))
    group = [large, small]
    rate = small.calibrate(settings(speed)[0], speed)
    assert rate == pytest.approx(5e15 / (10.0 - 45e9 / link), rel=1e-9)
    (pair,) = calibrated_pairs(group, speed, (), [small])
    expected = 5e15 / rate + 90e9 / link
    assert pair["predicted"] == "a-512gpu" and pair["predicted_step_s"] == pytest.approx(expected, rel=1e-9)
    assert pair["error"] == pytest.approx(expected / 11.0 - 1, rel=1e-9)
    # counted FLOPs over one rate (every transfer free) predicts the same step at every scale
    (flat,) = calibrated_pairs(group, speed, ("hbm", "host", "collective"), [small])
    assert flat["predicted_step_s"] == pytest.approx(10.0, rel=1e-9)


def test_the_runs_profile_is_costed_at_the_rate_the_anchor_fits_and_a_shared_program_once(tmp_path, monkeypatch):
    """Two runs of one GPU and precision whose programs are one (one fingerprint): the profile holds
    that program's entries once, costed at the rate their group's named anchor fits (calibration (a))."""
    speed = load_speed()
    small = synthetic("a-64gpu", 64, step_s=10.0, flops=5e15, collective_bytes=int(45e9))
    large = synthetic("a-512gpu", 512, step_s=11.0, flops=5e15, collective_bytes=int(90e9))
    measured = {m.run.id: m for m in (large, small)}
    monkeypatch.setattr(against_measured, "read_measured", lambda runs, compiled, speed, keep_parsed: (measured, {}))
    text = (FIXTURES / "latency_profile.hlo").read_text()
    computations = hlo_text.parse(text)
    parsed = {
        "computations": computations,
        "timeline": hlo_schedule.timelines(computations),
        "fingerprint": model_profile.fingerprint(text),
    }
    for entry in measured.values():  # both runs' programs are one, as read with keep_parsed
        entry.program.update(parsed)
    out = tmp_path / "profile.pbtxt"
    validation = load_validation()
    anchor = {"gpu": small.gpu, "precision": "bfloat16", "kind": "dense", "run": "a-64gpu"}
    validation["calibrations"]["smallest"]["anchors"] = [anchor]
    record = against_measured.write_run_profiles([m.run for m in measured.values()], {}, out, speed, validation)
    rate = small.calibrate(settings(speed)[0], speed)
    fitted_on = {run_id: entry["fitted_on"] for run_id, entry in record.items()}
    assert fitted_on == {"a-64gpu": "a-64gpu", "a-512gpu": "a-64gpu"}
    assert all(entry["rate_tflops"] == pytest.approx(rate / 1e12) for entry in record.values())
    entries = [line for line in out.read_text().splitlines() if line.startswith("costs")]
    assert len(entries) == record["a-64gpu"]["entries"] == len(set(entries))  # one program: its entries once


def test_each_gpu_and_precision_reports_the_rate_its_run_fits_and_its_share_of_peak():
    """What calibration (a) fits, as a share of the precision's dense peak from the target file,
    beside the share of the source's calibration that (c) carries to those runs."""
    speed = load_speed()
    small = synthetic("a-64gpu", 64, step_s=10.0, flops=5e15, collective_bytes=int(45e9))
    rate = small.calibrate(settings(speed)[0], speed)
    carried = {"a-64gpu": {"calibrated_on": "gb200-nvl72/x", "calibration_precision": "nvfp4", "share_of_peak": 0.42}}
    (found,) = fitted_rates({small.anchor_group: small}, {small.anchor_group: [rate]}, carried, speed)
    assert found["calibrated_on"] == "a-64gpu" and (found["precision"], found["kind"]) == ("bfloat16", "dense")
    assert found["effective_tflops"] == pytest.approx(rate / 1e12)
    assert found["share_of_peak"] == pytest.approx(rate / peak_flops(small.target, "bfloat16", speed))
    assert found["carried"] == carried["a-64gpu"]
    # a group the source's calibration does not reach carries nothing; a rate no setting reaches is none
    (none,) = fitted_rates({small.anchor_group: small}, {small.anchor_group: [None]}, {}, speed)
    assert none["effective_tflops"] is None and none["share_of_peak"] is None and none["carried"] is None


def test_the_page_shows_the_rates_real_runs_fit_beside_the_share_carried_across_hardware(tmp_path, tables):
    """From the validation stage's real result over the 22 H100 runs: each GPU, precision and model
    kind's fitted rate and its share of that precision's dense peak (a physical bound: at most all of
    it); the source's GB200 calibration carries none to them (its Llama rows are NVFP4), and the page
    says why, once per reason."""
    result = FIXTURES / "results/validation/model.json"
    fitted = json.loads(result.read_text())["fitted_rates"]
    assert {(f["target"], f["precision"]) for f in fitted} == {("h100-sxm", "bfloat16"), ("h100-sxm", "fp8")}
    assert all(0 < f["share_of_peak"] <= 1 for f in fitted)
    html = rendered_page(tmp_path, tables, "cpu", [result])
    sentence = " ".join(visible_text(re.search(r'<span id="fitted-rates">.*?</span>', html, re.S).group(0)).split())
    # each group named with the run that calibrates it
    assert "bfloat16 dense on NVIDIA H100, calibrated on llama2-70b-bf16-64gpu" in sentence
    assert "fp8 dense on NVIDIA H100, calibrated on llama2-70b-fp8-64gpu" in sentence
    assert ": 627.1 TFLOP/s, 63.4% of its dense peak" in sentence
    assert ": 1,213.9 TFLOP/s, 61.3% of its dense peak" in sentence
    assert "where (c) carries" not in sentence
    said = " ".join(visible_text(re.search(r'<p id="measured-summary">.*?</p>', html, re.S).group(0)).split())
    assert "(c) predicts none of 11 runs: the source's llama throughputs at bfloat16 would need 151% or more" in said


def test_a_run_file_of_any_maxtext_model_takes_its_kind_from_the_model(tmp_path):
    """No family to choose from a fixed list: Mixtral's config has experts, so its runs are MoE, of
    their own family (mixtral), and take the source's MoE family (its claims' error, its calibration
    under (c)) apart; Llama 3 is dense."""
    data = read_yaml(LLAMA3)
    assert "family" not in data["defaults"]
    dense = load_file(written(tmp_path, data))
    assert {(run.kind, run.family, run.source_family) for run in dense} == {("dense", "llama", "llama")}
    data["defaults"]["model"] = data["defaults"]["maxtext"]["model_name"] = "mixtral-8x7b"
    moe = load_file(written(tmp_path, data))
    assert {(run.kind, run.family, run.source_family) for run in moe} == {("MoE", "mixtral", "deepseek")}
    # the compile takes the source's family of its kind, whose target settings its rows compile with
    assert compiled_as(moe[0], target_for(moe[0]), load_validation(), []).row.family == "deepseek"
    data["defaults"]["family"] = "llama"
    refusal(tmp_path, data, "family")


def test_a_setting_its_model_file_fixes_needs_override_model_config(tmp_path):
    """MaxText refuses a model's dimension set to another value unless override_model_config is true;
    the file is refused first, by file, run and field, and taken once the run says it overrides."""
    data = read_yaml(LLAMA3)
    data["runs"][1]["maxtext"]["base_num_decoder_layers"] = 40
    refusal(tmp_path, data, r"run 2 .*field 'maxtext.base_num_decoder_layers': 40, where .* sets 80")
    data["runs"][1]["maxtext"]["override_model_config"] = True
    run = load_file(written(tmp_path, data))[1]
    assert run.maxtext["base_num_decoder_layers"] == 40
    data["runs"][0]["maxtext"]["base_num_decoder_layers"] = 80  # the model's own value: nothing overridden
    load_file(written(tmp_path, data))


def test_a_run_files_own_substitution_is_applied_and_stated_beside_the_builds(tmp_path):
    data = read_yaml(LLAMA3)
    rule = {"setting": "remat_policy", "value": "save_qkv_proj", "becomes": "full", "reason": "for a test"}
    data["runs"][0]["substitutions"] = [rule]
    path = written(tmp_path, data)
    first, second = (compiled_run(path, data["runs"][index]["id"]) for index in (0, 1))
    assert first.row.remat_policy == "full" and second.row.remat_policy == "save_qkv_proj"
    assert {**rule, "stated_in": str(path)} in first.substitutions
    assert all(s.get("stated_in") != str(path) for s in second.substitutions)
    data["runs"][0]["substitutions"] = [{**rule, "value": "minimal"}]
    refusal(tmp_path, data, r"run 1 .*field 'substitutions\[0\].value': 'minimal' is the remat_policy of no")
