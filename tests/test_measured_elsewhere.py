"""Published runs measured elsewhere (experiments/measured-elsewhere/): loaded, validated, each made
into the row a compile here takes, and found by the validation stage without being named anywhere."""

from __future__ import annotations

import shutil

import pytest
import yaml

from offload_repro.core import measured_elsewhere
from offload_repro.core.data import DataError
from offload_repro.core.files import REPO_ROOT, read_yaml
from offload_repro.core.measured_elsewhere import compiled_as, load_file, load_measured, load_validation, target_for
from offload_repro.plan.jobs import make_plan

LLAMA3 = REPO_ROOT / "experiments" / "measured-elsewhere" / "dgxc-llama3-70b.yaml"


def written(tmp_path, data, name="dgxc-llama3-70b"):
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_the_published_files_hold_22_runs_on_h100_nodes_of_8():
    runs = load_measured()
    assert len(runs) == 22
    assert {run.target for run in runs} == {"h100-sxm"}
    assert all(run.gpus == 8 * run.nodes for run in runs)
    by_id = {run.id: run for run in runs}
    assert by_id["llama3-70b-bf16-128gpu"].step_seconds == 15.563
    assert by_id["llama2-70b-fp8-2048gpu"].step_seconds == 4.93


def test_a_misspelt_maxtext_setting_is_refused_naming_file_run_and_field(tmp_path):
    data = read_yaml(LLAMA3)
    data["runs"][2]["maxtext"]["remat_polcy"] = "full"
    path = written(tmp_path, data)
    with pytest.raises(DataError) as err:
        load_file(path)
    message = str(err.value)
    assert str(path) in message and "run 3 (id 'llama3-70b-bf16-512gpu')" in message
    assert "field 'maxtext.remat_polcy'" in message and "did you mean 'remat_policy'" in message


def test_a_malformed_run_is_refused_by_the_schema_naming_file_run_and_field(tmp_path):
    data = read_yaml(LLAMA3)
    data["runs"][0]["precision"] = "fp16"
    path = written(tmp_path, data)
    with pytest.raises(DataError, match=r"run 1 \(id 'llama3-70b-bf16-128gpu'\), field 'precision'"):
        load_file(path)


def test_a_run_whose_parallelism_does_not_span_its_gpus_is_refused(tmp_path):
    data = read_yaml(LLAMA3)
    data["runs"][0]["maxtext"]["dcn_fsdp_parallelism"] = 8
    with pytest.raises(DataError, match=r"field 'maxtext': its parallelism spans 64 devices, not 128"):
        load_file(written(tmp_path, data))


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
    assert {(s["setting"], s["becomes"]) for s in compiled.substitutions} >= {
        ("attention", "cudnn_flash_jax"),
        ("hardware", "gpu"),
    }


def test_a_new_file_of_runs_enters_the_validation_stage_by_itself(tmp_path, monkeypatch):
    shutil.copy(LLAMA3, tmp_path / LLAMA3.name)
    data = read_yaml(LLAMA3)
    data["source"] = "someone-llama3-70b"
    data["runs"] = [{**data["runs"][0], "id": "someone-llama3-70b-bf16-128gpu", "step_seconds": 15.0}]
    written(tmp_path, data, "someone-llama3-70b")
    monkeypatch.setattr(measured_elsewhere, "MEASURED_DIR", tmp_path)
    config = read_yaml(REPO_ROOT / "experiments" / "config.yaml") | {"validation": True}
    plan = make_plan(config, {}, exists=lambda path: False, results=tmp_path / "results")
    assert plan.measured_runs["someone-llama3-70b-bf16-128gpu"] == "h100-sxm"
    assert len(plan.measured_runs) == 11
    assert plan.evidence_files["validation"] == ["results/validation/model.json"]


def test_the_validation_stage_dry_runs_with_a_job_per_published_run(tmp_path):
    from workflow_copy import copy_workflow, snakemake

    directory = copy_workflow(tmp_path)
    done = snakemake(directory, "-n", "--config", "validation=True")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.count("rule compile_measured:") == 22
    assert "results/validation/compiled/llama3-70b-fp8-2048gpu.json" in done.stdout
    assert "rule validate_model:" in done.stdout or "localrule validate_model:" in done.stdout
