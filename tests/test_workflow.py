"""Snakemake end to end on copies of the workflow: real MaxText runs for two rows."""

from __future__ import annotations

import csv
import json

import pytest
import yaml
from workflow_copy import copy_workflow, snakemake

TWO_LLAMA_ROWS = '["llama-baseline","llama-qkv-offload-lhs"]'


@pytest.fixture(scope="module")
def two_rows_run(tmp_path_factory):
    directory = copy_workflow(tmp_path_factory.mktemp("wf"))
    done = snakemake(directory, "--cores", "2", "--config", f"rows={TWO_LLAMA_ROWS}", "results/cpu/table.csv")
    assert done.returncode == 0, done.stderr[-3000:]
    return directory


@pytest.mark.slow
def test_two_rows_train_for_real_and_are_collected(two_rows_run):
    runs = {p.stem: json.loads(p.read_text()) for p in (two_rows_run / "results/cpu/runs").glob("*.json")}
    assert set(runs) == {"llama-baseline", "llama-qkv-offload-lhs"}
    for result in runs.values():
        assert result["status"] == "ok", result["message"]
        assert result["steps_completed"] == 10
        assert result["step_time_s"] > 0 and result["tflops_per_device"] > 0
        assert len(result["losses"]) == 10 and result["losses"][-1] < result["losses"][0]
        assert result["compiled_memory"]["temp_size_in_bytes"] > 0
        provenance = result["provenance"]
        assert provenance["versions"]["maxtext"] == "0.2.5"
        assert provenance["device_kind"] == "cpu"
        assert any(arg.startswith("model_name=llama3.1-405b") for arg in provenance["maxtext_arguments"])
    assert "query_proj=offload" in runs["llama-qkv-offload-lhs"]["provenance"]["maxtext_arguments"]
    with open(two_rows_run / "results/cpu/table.csv") as handle:
        lines = list(csv.DictReader(handle))
    assert [line["row"] for line in lines] == ["llama-baseline", "llama-qkv-offload-lhs"]


@pytest.mark.slow
def test_placement_does_not_change_what_is_learned(two_rows_run):
    runs = [json.loads(p.read_text()) for p in (two_rows_run / "results/cpu/runs").glob("*.json")]
    baseline, offload = (run["losses"] for run in sorted(runs, key=lambda r: r["row"]))
    assert max(abs(a - b) for a, b in zip(baseline, offload, strict=True)) < 1e-3


@pytest.mark.slow
def test_second_invocation_has_nothing_to_do(two_rows_run):
    done = snakemake(two_rows_run, "-n", "--config", f"rows={TWO_LLAMA_ROWS}", "results/cpu/table.csv")
    assert done.returncode == 0
    assert "Nothing to be done" in done.stdout + done.stderr


def test_malformed_table_fails_before_anything_runs(tmp_path):
    directory = copy_workflow(tmp_path)
    table = directory / "experiments/rows/deepseek-v3-671b.yaml"
    data = yaml.safe_load(table.read_text())
    data["rows"][4]["published"]["outcome"] = "maybe"
    table.write_text(yaml.safe_dump(data))
    done = snakemake(directory, "-n")
    assert done.returncode != 0
    assert (
        "experiments/rows/deepseek-v3-671b.yaml: row 5 (id 'deepseek-device-mb8'), field 'published.outcome'"
        in done.stderr
    )
    assert not (directory / "results").exists()


def test_unknown_row_in_config_is_refused(tmp_path):
    done = snakemake(copy_workflow(tmp_path), "-n", "--config", 'rows=["llama-nope"]')
    assert done.returncode != 0 and "unknown row ids ['llama-nope']" in done.stderr
