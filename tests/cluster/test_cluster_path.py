"""The pieces of the cluster path that need no cluster: target inheritance, job geometry, the
time-limit stop, rank failures, attempts, and the preflight's checks on GPU facts.
(tests/workflow/test_slurm.py runs the whole path on a real SLURM.)"""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import time

import pytest
import yaml
from test_slurm_commands import sbatch_line

from conftest import RESULTS
from offload_repro.cluster import preflight_checks, slurm
from offload_repro.core import maxtext_args
from offload_repro.core.data import DataError, load_rows, load_target
from offload_repro.core.files import write_json
from offload_repro.core.process import run_supervised
from offload_repro.core.results import read_result
from offload_repro.produce.measured import runner


def test_a_target_extends_another_and_overrides_only_what_it_names():
    cpu, two = load_target("cpu"), load_target("cpu-slurm-2")
    assert two.scale["families"] == cpu.scale["families"] and two.maxtext == cpu.maxtext
    assert two.launcher == "slurm" and two.scale["devices"] == 2 and two.processes == 2
    assert two.scale["steps"] == cpu.scale["steps"] and two.repeats == 1


def test_extends_refuses_a_cycle_and_names_a_missing_base(tmp_path):
    for name, base in (("a", "b"), ("b", "a")):
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump({"extends": base, "name": name}))
    with pytest.raises(DataError, match=r"a\.yaml: field 'extends': 'b' extends itself through b -> a"):
        load_target("b", tmp_path)
    (tmp_path / "c.yaml").write_text(yaml.safe_dump({"extends": "nowhere", "name": "c"}))
    with pytest.raises(DataError, match=r"nowhere\.yaml: no such target \(extended by c\)"):
        load_target("c", tmp_path)


def test_two_processes_share_the_one_process_global_batch(rows):
    two = load_target("cpu-slurm-2")
    assert maxtext_args.target_overrides(rows["llama-baseline"], two)["per_device_batch_size"] == 1
    assert maxtext_args.target_overrides(rows["deepseek-device-mb8"], two)["per_device_batch_size"] == 4
    odd = type(two)(two.name, two.kind, two.launcher, {**two.spec, "scale": {**two.scale, "devices": 3}})
    with pytest.raises(ValueError, match="global batch of 2, which does not split evenly over 3 devices"):
        maxtext_args.target_overrides(rows["llama-baseline"], odd)


def test_the_preflight_job_spans_two_nodes_with_all_their_gpus():
    line = sbatch_line(slurm.preflight_resources(load_target("gb200-nvl72")))
    assert "--nodes=2" in line and "--ntasks=2" in line and "--gres=gpu:4" in line and "-t 15" in line
    assert "--ntasks-per-gpu" not in line
    cpu = sbatch_line(slurm.preflight_resources(load_target("cpu-slurm-2")))
    assert "--nodes=1" in cpu and "--ntasks=2" in cpu and "--mem 8000" in cpu


@pytest.mark.parametrize(
    ("text", "seconds"), [("1:00", 60), ("15:00", 900), ("1:00:00", 3600), ("2-00:30:00", 174600), ("0:30", 30)]
)
def test_slurm_durations(text, seconds):
    assert slurm.parse_duration(text) == seconds


def test_the_runner_stops_a_quarter_of_the_limit_early_between_15_s_and_2_minutes():
    assert runner.stop_deadline(slurm.TimeLimit("1", 60, 1000.0)) == 985.0
    assert runner.stop_deadline(slurm.TimeLimit("1", 240, 1000.0)) == 940.0
    assert runner.stop_deadline(slurm.TimeLimit("1", 3600, 10000.0)) == 9880.0
    assert runner.stop_deadline(None) is None


def test_a_deadline_stops_the_process_and_says_so(tmp_path):
    started = time.time()
    outcome = run_supervised(["sleep", "60"], dict(os.environ), tmp_path, tmp_path / "log", started + 1.0, 5)
    assert outcome.ended_by == "deadline" and outcome.returncode == -signal.SIGTERM
    assert time.time() - started < 10


def test_a_sigterm_to_the_runner_stops_the_process_as_the_clusters_doing(tmp_path):
    threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGTERM)).start()
    outcome = run_supervised(["sleep", "60"], dict(os.environ), tmp_path, tmp_path / "log", None, 5)
    assert outcome.ended_by == "terminated" and outcome.returncode == -signal.SIGTERM
    exited = run_supervised([sys.executable, "-c", "raise SystemExit(3)"], {}, tmp_path, tmp_path / "log", None)
    assert exited.ended_by == "exit" and exited.returncode == 3


def test_a_ranks_own_exception_is_the_rows_message(tmp_path):
    ended = {"state": "ended", "log": str(tmp_path / "r.log")}
    bad_shape = {"type": "ValueError", "message": "bad shape"}
    ranks = [
        ended | {"task": 0, "host": "n1", "exit_status": 0, "exception": None},
        ended | {"task": 1, "host": "n2", "exit_status": 1, "exception": bad_shape},
    ]
    record, message = runner.row_failure(1, None, "", tmp_path / "train.log", ranks, 0, 10)
    assert message == "rank 1 on n2: ValueError: bad shape"
    assert [(rank["task"], rank["found_in"]) for rank in record["ranks"]] == [(1, "exception record")]


def test_a_rank_killed_outright_is_named_from_sruns_line(tmp_path):
    ranks = [{"task": task, "state": "joined", "log": str(tmp_path / f"r{task}.log")} for task in (0, 1)]
    srun_log = "srun: error: node7: task 1: Killed\nsrun: error: node7: task 0: Terminated\n"
    record, message = runner.row_failure(-9, None, srun_log, tmp_path / "train.log", ranks, 0, 10)
    assert message == "rank 1 on node7: killed by SIGKILL; rank 0 on node7: killed by SIGTERM"
    assert record["log"] == str(tmp_path / "r1.log") and record["signal"] == "SIGKILL"


def test_an_attempt_that_left_no_record_is_an_interruption_of_the_next(tmp_path, monkeypatch):
    work = tmp_path / "work" / "row"
    monkeypatch.setenv("SLURM_JOB_ID", "41")
    assert runner.begin_attempt(work) == []  # first attempt: nothing before it
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    earlier = runner.begin_attempt(work)  # the first never wrote its record
    assert [attempt["slurm_job_id"] for attempt in earlier] == ["41"]
    assert "cancelled, preempted or node lost" in earlier[0]["reason"]


GB200_NODE = {
    "host": "gb-01",
    "maxtext_version": "0.2.5",
    "maxtext_error": None,
    "refused_keys": [],
    "gpus": [{"name": "NVIDIA GB200", "memory_mib": 189471}] * 4,
    "memory": {"node_bytes": 960 * 10**9, "cgroup_bytes": None, "slurm_job_bytes": None},
}


def test_gpus_are_counted_and_named_against_the_target():
    target = load_target("gb200-nvl72")
    assert preflight_checks.check_gpus(GB200_NODE, target).status == "ok"
    three_h100 = {**GB200_NODE, "gpus": [{"name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559}] * 3}
    finding = preflight_checks.check_gpus(three_h100, target)
    said = "has 3 x ['NVIDIA H100 80GB HBM3']; the target wants 4 x NVIDIA GB200"
    assert finding.status == "fail" and said in finding.detail
    assert preflight_checks.check_gpus({**GB200_NODE, "gpus": None}, target).status == "fail"


def test_host_memory_is_checked_against_the_largest_compiled_offload_row():
    target = load_target("gb200-nvl72")
    largest = preflight_checks.largest_host_bytes(sorted((RESULTS / "compiled" / "gb200-nvl72").glob("*.json")))
    assert largest == ("deepseek-offload-plain", 155558346752)
    assert preflight_checks.check_host_memory(GB200_NODE, target, largest).status == "ok"  # 4 x 145 GiB < 960 GB
    small = {**GB200_NODE, "memory": {**GB200_NODE["memory"], "slurm_job_bytes": 256 * 2**30}}
    finding = preflight_checks.check_host_memory(small, target, largest)
    assert finding.status == "fail" and "256.0 GiB may be used on gb-01 (the slurm job bytes)" in finding.detail
    assert "deepseek-offload-plain compiles to 144.9 GiB of host buffers per GPU, 579.5 GiB for 4" in finding.detail
    tight = type(target)(target.name, target.kind, target.launcher, yaml.safe_load(yaml.safe_dump(target.spec)))
    tight.spec["cluster"]["environment"]["XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB"] = "100"
    over_pinned = preflight_checks.check_host_memory(GB200_NODE, tight, largest)
    assert over_pinned.status == "fail" and "more than XLA_PJRT_GPU_HOST_MEMORY_LIMIT_GB=100" in over_pinned.detail


def test_maxtext_version_and_keys_each_get_a_line(tables):
    keys = preflight_checks.keys_by_row(load_rows(tables), load_target("gb200-nvl72"))
    assert {"metrics_file", "run_name", "remat_policy", "query_proj"} <= keys.keys()
    assert preflight_checks.pinned_maxtext() == "0.2.5"
    older = {**GB200_NODE, "maxtext_version": "0.2.4", "refused_keys": ["query_proj"]}
    findings = preflight_checks.check_maxtext(older, keys, "0.2.5")
    assert [f.line() for f in findings] == [
        "FAIL  maxtext      gb-01 has MaxText 0.2.4; the rows were written for 0.2.5",
        "FAIL  maxtext keys MaxText 0.2.4 refuses key 'query_proj', passed by 4 rows "
        "(llama-baseline, llama-qkv-offload-lhs, llama-qkv-offload-nolhs, ...)",
    ]


def test_two_nodes_must_each_report_the_sum():
    good = [{"host": f"n{i}", "process_count": 2, "sum": 3.0, "backend": "gpu", "task": i} for i in range(2)]
    joined = preflight_checks.check_distributed(good, 2, 2)
    assert joined.detail == "2 processes on 2 nodes (n0, n1) joined and summed to 3 on gpu"
    assert preflight_checks.check_distributed(good[:1], 2, 2).status == "fail"


def test_a_local_gpu_target_needs_a_gpu_limit(tmp_path):
    from workflow_copy import copy_workflow, snakemake

    directory = copy_workflow(tmp_path)
    config = ["--config", "target=h200-1", "compile_target=h200-1"]
    refused = snakemake(directory, "--dry-run", *config, timeout=120)
    assert refused.returncode != 0 and "add --resources gpu=1" in refused.stdout + refused.stderr
    planned = snakemake(directory, "--dry-run", "--resources", "gpu=1", *config, timeout=120)
    assert planned.returncode == 0, planned.stderr[-2000:]
    jobs = re.split(r"\n(?=(?:local)?rule \w+:)", planned.stdout)
    for rule in ("run_row", "probe_transfers"):
        assert all("gpu=1" in job for job in jobs if f"rule {rule}:" in job)
    assert not any("gpu=1" in job for job in jobs if "rule compile_row:" in job)


def test_the_row_record_schema_keeps_ranks_and_interruptions(tmp_path):
    run = read_result(RESULTS / "cpu" / "runs" / "llama-qkv-offload-lhs.json", "run")
    ranks = [{"task": 0, "state": "never joined", "log": "x.log"}]
    interruptions = [{"reason": "ended without a record", "slurm_job_id": "4"}]
    write_json(tmp_path / "r.json", run | {"ended_by": "own failure", "ranks": ranks, "interruptions": interruptions})
    assert read_result(tmp_path / "r.json", "run")["ranks"][0]["state"] == "never joined"
