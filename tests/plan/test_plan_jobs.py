"""The plan of a run (offload_repro.plan.jobs): what every configuration decides and refuses,
before Snakemake builds a job. The rule files only hand the plan over."""

from __future__ import annotations

import pytest

from conftest import REPO
from offload_repro.core.data import DataError
from offload_repro.core.files import read_yaml
from offload_repro.plan.jobs import FRONTIER_PRIORITY, make_plan

DEFAULT = read_yaml(REPO / "experiments" / "config.yaml")


def planned(nothing_on_disk: bool = True, resources: dict | None = None, **config):
    results = REPO / "tests" / "nothing-here"
    return make_plan(DEFAULT | config, resources or {}, exists=lambda path: not nothing_on_disk, results=results)


def test_the_default_run_compiles_for_the_source_gpu_and_predicts_from_it():
    plan = planned()
    assert plan.target.name == "cpu" and plan.grid_targets == ["gb200-nvl72"] and len(plan.row_ids) == 9
    assert plan.evidence_files["compile"] == [f"results/compiled/gb200-nvl72/{row}.json" for row in plan.row_ids]
    assert plan.evidence_files["predicted"] == ["results/predicted/gb200-nvl72.json"]
    assert "frontier" not in plan.evidence_files and plan.preflight == []
    # the default run compiles what it judges: the rows, no alternative (the sensitivity stage's)
    assert plan.variants == {} and plan.variant_files == [] and plan.variant_predictions == []
    assert plan.calibration_source("gb200-nvl72") == []
    # the chip's kept runs build their own page (experiments/device-results/), from those files alone
    assert plan.page_targets == ["cpu", "tpu-v5e-1"] and plan.device_targets == ["tpu-v5e-1"]
    kept = plan.evidence_inputs("tpu-v5e-1")
    assert kept[-3:] == [
        "experiments/device-results/tpu-v5e-1/probe.json",
        "results/tpu-v5e-1/device-prediction.json",  # from the programs kept beside the runs
        "results/analytic.json",
    ]
    runs = sorted(
        f"experiments/device-results/tpu-v5e-1/runs/{p.name}"
        for p in (REPO / "experiments/device-results/tpu-v5e-1/runs").glob("*.json")
    )
    assert kept[:-3] == runs and len(runs) == 9
    assert plan.evidence_inputs("cpu") == [path for paths in plan.evidence_files.values() for path in paths]


def test_the_what_if_grid_takes_every_cluster_gpu_target_with_a_compile_section():
    plan = planned(whatif=True)
    assert plan.grid_targets[0] == "gb200-nvl72"
    assert set(plan.grid_targets) == {"gb200-nvl72", "gb300-nvl72", "h100-sxm", "h200-8", "vr-nvl144"}
    assert "results/whatif/vr-nvl144/frontier-deepseek-offload.json" in plan.evidence_files["frontier"]
    assert plan.calibration_source("gb300-nvl72") == ["results/predicted/gb200-nvl72.json"]


def test_a_frontier_targets_rows_compile_first_and_its_searches_before_any_row():
    plan = planned(whatif=True)
    assert plan.frontier_targets == DEFAULT["frontier_targets"]
    first = {name for name in plan.grid_targets if plan.compile_priority(name) == 1}
    assert first == set(DEFAULT["frontier_targets"]) and plan.compile_priority("h200-8") == 0
    assert max(plan.compile_priority(name) for name in plan.grid_targets) < FRONTIER_PRIORITY
    assert planned().frontier_targets == []  # no what-if: every compile alike


def test_results_on_disk_never_add_a_stage_only_the_command_does():
    """The same command plans the same jobs whatever `results/` holds: an optional stage's result
    left by an earlier run neither enters the evidence nor reruns its stage."""
    plan = planned(nothing_on_disk=False)
    assert plan.evidence_files == planned().evidence_files
    assert set(plan.evidence_files) == {"run", "compile", "analytic", "predicted"}
    assert not plan.sensitivity and plan.variants == {} and plan.measured_runs == {}
    asked = planned(assumptions=True)
    assert len(asked.variant_files) >= 6 and set(asked.varied_rows) <= set(asked.row_ids)


def test_rows_can_be_chosen_and_an_unknown_one_is_named():
    assert planned(rows=["llama-baseline"]).row_ids == ["llama-baseline"]
    with pytest.raises(DataError, match=r"config 'rows': unknown row ids \['llama-9000'\]"):
        planned(rows=["llama-9000"])


def test_a_local_gpu_needs_its_gpus_declared_and_runs_one_process_at_a_time():
    with pytest.raises(DataError, match="add --resources gpu=1"):
        planned(target="h200-1", compile_target="h200-1")
    plan = planned(target="h200-1", compile_target="h200-1", resources={"gpu": 1})
    assert plan.run_resources == {"gpu": 1} and plan.evidence_files["probe"] == ["results/h200-1/probe.json"]


def test_a_cluster_gpu_run_refuses_an_image_without_a_digest_unless_told():
    with pytest.raises(DataError, match=r"envs/containers.yaml: container 'jax-maxtext' .*: field 'digest' is null"):
        planned(target="gb200-nvl72")
    plan = planned(target="gb200-nvl72", allow_unpinned_container=True)
    assert plan.preflight == ["results/gb200-nvl72/preflight.json"] and plan.preflight_resources
    assert plan.preflight_compiled == [f"results/compiled/gb200-nvl72/{row}.json" for row in plan.row_ids]
    assert plan.run_resources["gres"] == "gpu:4"


def test_a_compile_target_without_a_compile_section_and_an_unknown_frontier_target_are_named():
    with pytest.raises(DataError, match=r"experiments/targets/cpu.yaml: field 'compile'"):
        planned(compile_target="cpu")
    with pytest.raises(DataError, match=r"config 'frontier_targets': \['cpu'\]"):
        planned(whatif=True, frontier_targets=["cpu"])


def test_each_alternative_predicts_every_row_from_its_own_compiles_where_it_has_them():
    plan = planned(assumptions=True)
    # only the profile-guided schedule takes the profile of the compile target's default programs
    assert plan.variant_profile("xla-rematerialization.xla-default") == []
    guided = "xla-latency-estimator.profile-guided"
    assert plan.variant_profile(guided) == ["results/profiles/gb200-nvl72.pbtxt"]
    assert "llama-qkv-offload-nolhs" not in plan.variants[guided]["rows"]
    name = next(iter(plan.variants))
    varied = set(plan.variants[name]["rows"])
    compiled = plan.variant_compiled(name)
    assert f"results/whatif/assumptions/{name}/predicted.json" in plan.variant_predictions
    assert compiled == [
        f"results/whatif/assumptions/{name}/{row}.json" if row in varied else f"results/compiled/gb200-nvl72/{row}.json"
        for row in plan.row_ids
    ]


def test_kept_runs_of_a_target_without_a_file_are_named(monkeypatch, tmp_path):
    from offload_repro.core import data
    from offload_repro.plan import jobs

    (tmp_path / jobs.DEVICE_RESULTS_DIR / "tpu-v9-1" / "runs").mkdir(parents=True)
    (tmp_path / jobs.DEVICE_RESULTS_DIR / "tpu-v9-1" / "runs" / "llama-baseline.json").write_text("{}")
    monkeypatch.setattr(jobs, "REPO_ROOT", tmp_path)
    monkeypatch.setattr(data, "REPO_ROOT", tmp_path)
    with pytest.raises(DataError, match="device-results/tpu-v9-1: kept results of a target with no"):
        jobs.device_targets("cpu")


def test_a_device_targets_own_run_does_not_also_build_its_kept_page():
    assert "tpu-v5e-1" not in planned(target="tpu-v5e-1").device_targets


def with_record(monkeypatch, chosen: list[str] | None) -> None:
    """experiments/outcome-settings.yaml as if its search had recorded `chosen`."""
    from offload_repro.core import outcome_settings
    from offload_repro.plan import jobs

    declared = outcome_settings.load()
    record = {
        "recorded_on": "2026-12-07",
        "defaults": {"margins_gib": {}},
        "candidates": [],
        "chosen": chosen,
        "why": "x",
    }
    monkeypatch.setattr(jobs, "load_outcome_settings", lambda: declared | {"record": record})


def test_without_a_choice_recorded_every_row_compiles_under_the_defaults_alone(monkeypatch):
    with_record(monkeypatch, None)
    plan = planned()
    assert plan.chosen == [] and plan.defaults_rows == []
    assert plan.chosen_option == ""


def test_the_recorded_choice_reaches_every_compile_of_the_rows_it_changes_and_those_compile_under_the_defaults_too(
    monkeypatch,
):
    with_record(monkeypatch, ["deepseek-parallelism.fsdp-over-experts"])
    plan = planned(assumptions=True)
    deepseek = [row for row in plan.row_ids if row.startswith("deepseek")]
    assert plan.defaults_rows == deepseek
    option = plan.chosen_option
    assert option.startswith("--chosen ") and '"id": "deepseek-parallelism.fsdp-over-experts"' in option
    assert '"param_scan_axis": 0' in option and '"rows": ["deepseek-remat", ' in option
    # 9 compiles and 5 again under the defaults: the main job stays within 15
    assert len(plan.evidence_files["compile"]) + len(plan.defaults_rows) == 14
    compiled = plan.defaults_compiled("gb200-nvl72")
    assert compiled[plan.row_ids.index("deepseek-remat")] == "results/defaults/compiled/deepseek-remat.json"
    assert compiled[plan.row_ids.index("llama-baseline")] == "results/compiled/gb200-nvl72/llama-baseline.json"
    inputs = plan.defaults_evidence_inputs("cpu")
    assert (
        "results/defaults/predicted/gb200-nvl72.json" in inputs and "results/predicted/gb200-nvl72.json" not in inputs
    )
    assert "results/defaults/compiled/deepseek-remat.json" in inputs
    assert "results/defaults/analytic.json" in inputs and "results/analytic.json" not in inputs
    # the sensitivity stage varies around the choice: the chosen alternative is the base, not a variant,
    # and an alternative of another setting takes the choice with it
    assert "deepseek-parallelism.fsdp-over-experts" not in plan.variants
    stacked = plan.variant_settings("deepseek-sequence-length.seq-2048", "deepseek-remat")
    assert stacked[0]["maxtext"]["param_scan_axis"] == 0 and stacked[-1] == {"row": {"max_target_length": 2048}}
    # another alternative of the chosen setting replaces it
    assert plan.variant_settings("deepseek-parallelism.expert-8", "deepseek-remat") == [
        plan.variants["deepseek-parallelism.expert-8"]["settings"]
    ]


def test_a_kept_sweep_enters_the_pairs_and_a_device_with_neither_programs_nor_sweep_does_not(monkeypatch, tmp_path):
    from offload_repro.plan import jobs

    monkeypatch.setattr(jobs, "REPO_ROOT", tmp_path)
    kept = tmp_path / "experiments" / "device-results"
    (kept / "chip-a" / "sweep" / "points").mkdir(parents=True)
    (kept / "chip-a" / "sweep" / "programs").mkdir()
    (kept / "chip-a" / "sweep" / "points" / "p1.json").write_text("{}")
    (kept / "chip-a" / "sweep" / "programs" / "p1.hlo.gz").write_bytes(b"")
    (kept / "chip-b" / "runs").mkdir(parents=True)
    assert jobs.kept_sweep("chip-a") == [
        "experiments/device-results/chip-a/sweep/points/p1.json",
        "experiments/device-results/chip-a/sweep/programs/p1.hlo.gz",
    ]
    assert jobs.kept_sweep("chip-b") == [] and jobs.pair_devices(["chip-a", "chip-b", "chip-a"]) == ["chip-a"]
