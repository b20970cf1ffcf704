"""The cluster path, executed on a real single-node SLURM (Debian slurm-wlm + munge) started here.

Rows of `cpu-slurm-2` run as a GPU cluster runs them: one job per row, `srun` starting one JAX
process per task, joined by jax.distributed (gloo on CPU). Snakemake submits with its SLURM
executor plugin and the test profile (squeue for status: no accounting here). Tests share one
workflow copy and run in file order: preflight, rows, a killed rank then a cancelled job, a time limit.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from conftest import REPO, require
from workflow_copy import copy_workflow

pytestmark = [pytest.mark.slow, pytest.mark.slurm]

SLURM_FILES = REPO / "tests" / "slurm"
TARGET = "cpu-slurm-2"
TWO_ROWS = ["llama-baseline", "llama-qkv-offload-lhs"]
# The 2-process run reduces gradients across processes (gloo) in another order than one process
# does; Adam divides each update by the gradient's own running size, so a rounding difference in a
# near-zero gradient moves its parameter by a whole step. The first loss (no update yet) is equal;
# later ones drift by ~1e-4 relative (1.9e-4 at step 9, measured).
FIRST_STEP_RELATIVE = 1e-6
LATER_STEPS_RELATIVE = 1e-3


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    for program in ("slurmctld", "slurmd", "munged"):
        require(program)
    if os.geteuid() != 0:
        pytest.skip("slurmd must run as root")
    scratch = tmp_path_factory.mktemp("slurm")
    env = {**os.environ, "SLURM_TEST_DIR": str(scratch), "SLURMCTLD_PORT": "16817", "SLURMD_PORT": "16818"}
    started = subprocess.run(["bash", SLURM_FILES / "start.sh"], env=env, capture_output=True, text=True, timeout=90)
    try:
        assert started.returncode == 0, started.stderr
        exports = dict(re.findall(r"(\w+)=(\S+)", started.stdout.strip().removeprefix("export ")))
        yield {
            **env,
            "SLURM_CONF": exports["SLURM_CONF"],
            # wrappers that pin SLURM_CONF (and log sbatch calls), then this interpreter's scripts
            "PATH": f"{scratch}/bin:{Path(sys.executable).parent}:{env['PATH']}",
        }
    finally:
        subprocess.run(["bash", SLURM_FILES / "stop.sh"], env=env, capture_output=True, timeout=90)


@pytest.fixture(scope="module")
def workflow(tmp_path_factory):
    directory = copy_workflow(tmp_path_factory.mktemp("workflow"))
    shutil.copytree(SLURM_FILES / "profile", directory / "slurm-profile")
    return directory


def snakemake(*arguments: str, rows: list[str] = TWO_ROWS, target: str = TARGET) -> list[str]:
    """The command line a cluster user types, with the test profile instead of the site's."""
    config = ["--config", f"target={target}", f"rows={json.dumps(rows)}"]
    command = [sys.executable, "-m", "snakemake", "--profile", "slurm-profile", *config]
    return ["timeout", "-k", "15", "900", *command, *arguments]


def run(directory: Path, env: dict, *arguments: str, **options) -> subprocess.CompletedProcess:
    command = snakemake(*arguments, **options)
    return subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, timeout=960)


def result(directory: Path, row: str, target: str = TARGET) -> dict:
    return json.loads((directory / f"results/{target}/runs/{row}.json").read_text())


def submitted_rules(env: dict) -> list[str]:
    """The rule of every job submitted to this cluster so far, in order."""
    calls = Path(env["SLURM_CONF"]).parents[1] / "log" / "sbatch.calls"
    return re.findall(r"--comment '?rule_([a-z_]+?)(?:_wildcards|'|\s)", calls.read_text()) if calls.exists() else []


def rank_record(directory: Path, row: str, task: int, target: str = TARGET) -> dict | None:
    path = directory / f"results/{target}/work/{row}/ranks/rank-{task}.json"
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):  # not there yet, or being replaced
        return None


def test_preflight_checks_the_cpu_parts_one_line_each(cluster, workflow):
    before = len(submitted_rules(cluster))
    done = run(workflow, cluster, "--", f"results/{TARGET}/preflight.json")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    lines = (workflow / f"results/{TARGET}/logs/preflight.log").read_text().splitlines()
    status = {line[8:20].strip(): line[2:7].strip() for line in lines if line.startswith("  ")}
    assert status == {
        "container": "SKIP",
        "maxtext": "OK",
        "maxtext keys": "OK",
        "gpus": "SKIP",
        "host memory": "OK",
        "distributed": "OK",
    }, lines
    text = "\n".join(lines)
    assert "0.2.5 on " in text and "2 processes on 1 node" in text and "summed to 3 on cpu" in text
    assert "7.8 GiB may be used" in text  # the job's 8000 MB, asked of SLURM
    record = json.loads((workflow / f"results/{TARGET}/preflight.json").read_text())
    assert record["kind"] == "preflight" and record["facts"]["maxtext_version"] == "0.2.5"
    assert submitted_rules(cluster)[before:] == ["preflight"]


def test_preflight_fails_with_one_line_per_problem_and_no_row_runs(cluster, workflow):
    bad = {"extends": TARGET, "name": "cpu-slurm-bad", "maxtext": {"not_a_maxtext_key": 1, "neither_is_this": 2}}
    (workflow / "experiments/targets/cpu-slurm-bad.yaml").write_text(yaml.safe_dump(bad))
    before = len(submitted_rules(cluster))
    try:
        done = run(workflow, cluster, "--", "results/cpu-slurm-bad/table.csv", target="cpu-slurm-bad")
    finally:
        (workflow / "experiments/targets/cpu-slurm-bad.yaml").unlink()
    console = done.stdout + done.stderr
    assert done.returncode != 0
    assert re.search(r"FAIL  maxtext keys MaxText 0\.2\.5 refuses key 'not_a_maxtext_key', passed by 9 rows", console)
    assert re.search(r"FAIL  maxtext keys MaxText 0\.2\.5 refuses key 'neither_is_this', passed by 9 rows", console)
    assert "preflight: 2 problem(s); no row is run until they are fixed" in console
    assert not (workflow / "results/cpu-slurm-bad/preflight.json").exists()
    assert not list((workflow / "results/cpu-slurm-bad").glob("runs/*.json"))
    assert submitted_rules(cluster)[before:] == ["preflight"]


def test_two_process_rows_run_through_srun_and_match_the_one_process_run(cluster, workflow, main_job):
    """Against the main job's one-process runs of the same rows (same code, same scale)."""
    before = len(submitted_rules(cluster))
    done = run(workflow, cluster, "--", f"results/{TARGET}/table.csv")
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    # collect_runs is a local rule: only the rows (and the preflight, unless done) were jobs
    assert [rule for rule in submitted_rules(cluster)[before:] if rule != "preflight"] == ["run_row", "run_row"]
    calls = (Path(cluster["SLURM_CONF"]).parents[1] / "log" / "sbatch.calls").read_text().splitlines()
    assert all("--ntasks-per-node=2" in line and "--mem 8000" in line for line in calls if "rule_run_row" in line)
    for row in TWO_ROWS:
        two, one = result(workflow, row), result(main_job, row, "cpu")
        assert two["status"] == "ok" and two["ended_by"] == "completed" and two["steps_completed"] == 10
        assert two["processes"] == 2 and two["devices"] == 2 and one["devices"] == 1
        srun = two["provenance"]["command"]
        assert srun[0] == "srun" and "--ntasks-per-node=2" in srun and "--kill-on-bad-exit=1" in srun
        assert two["provenance"]["nodes"] == [os.uname().nodename.split(".")[0]]
        assert [rank["task"] for rank in two["ranks"]] == [0, 1]
        for rank in two["ranks"]:
            assert rank["state"] == "ended" and rank["exit_status"] == 0 and rank["process_count"] == 2
            assert rank["host"] and rank["slurm_job_id"] == two["provenance"]["slurm_job_id"]
            assert "completed step" in (workflow / rank["log"]).read_text()  # each rank's own log, kept
        first_two, first_one = two["losses"][0], one["losses"][0]
        assert abs(first_two - first_one) <= FIRST_STEP_RELATIVE * first_one
        for step, (a, b) in enumerate(zip(two["losses"], one["losses"], strict=True)):
            assert abs(a - b) <= LATER_STEPS_RELATIVE * b, (row, step, a, b)


def interrupted_run(directory: Path, env: dict, row: str, interrupt, *arguments: str) -> tuple[str, dict]:
    """Run one row; once a rank of its new job has joined, `interrupt(rank_record)`; wait for the end."""
    before = rank_record(directory, row, 1)
    output = f"results/{TARGET}/runs/{row}.json"
    command = snakemake(*arguments, "--forcerun", output, "--", output, rows=[row])
    job = subprocess.Popen(command, cwd=directory, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            record = rank_record(directory, row, 1)
            if record and record["slurm_job_id"] != (before or {}).get("slurm_job_id"):
                interrupt(record)
                break
            time.sleep(0.5)
        else:
            pytest.fail("rank 1 never joined")
        console = job.communicate(timeout=600)[0].decode()
    finally:
        job.kill()
    assert job.returncode == 0, console[-3000:]
    return console, record


def test_a_killed_rank_is_the_rows_error_and_a_rerun_survives_a_cancelled_job(cluster, workflow):
    row = "llama-baseline"
    _, rank = interrupted_run(workflow, cluster, row, lambda rank: os.kill(rank["pid"], signal.SIGKILL))
    killed = result(workflow, row)  # an error of the row's own is its result, not a crash
    assert killed["status"] == "error" and killed["ended_by"] == "own failure"
    # each failed rank with its cause, the killed one first; srun then stops rank 0 (killed or terminated)
    killed_first = (f"rank 1 on {rank['host']}: killed by SIGKILL", f"ranks 1, 0 on {rank['host']}: killed by SIGKILL")
    assert killed["message"].startswith(killed_first), killed["message"]
    first = killed["failure"]["ranks"][0]
    assert (first["task"], first["signal"], first["found_in"]) == (1, "SIGKILL", "signal")
    assert killed["failure"]["log"].endswith("ranks/rank-1.log")

    # The rerun's first job is cancelled by the cluster: Snakemake retries it, and the retry says so.
    def cancel(rank: dict) -> None:
        subprocess.run(["scancel", rank["slurm_job_id"]], env=cluster, check=True)

    _, cancelled = interrupted_run(workflow, cluster, row, cancel, "--retries", "1")
    retried = result(workflow, row)
    assert retried["status"] == "ok" and retried["ended_by"] == "completed", retried["message"]
    assert [attempt["slurm_job_id"] for attempt in retried["interruptions"]] == [cancelled["slurm_job_id"]]
    assert retried["provenance"]["slurm_job_id"] != cancelled["slurm_job_id"]


def test_a_job_past_its_time_limit_is_an_error_saying_time_limit_with_the_steps_it_completed(cluster, workflow):
    row = "llama-baseline"
    target_file = workflow / f"experiments/targets/{TARGET}.yaml"
    original = target_file.read_text()
    output = f"results/{TARGET}/runs/{row}.json"
    target_file.write_text(original.replace("scale:\n", "scale:\n  steps: 3000\n", 1))  # far past the limit
    try:
        limited = run(workflow, cluster, "--set-resources", "run_row:runtime=1", "--", output, rows=[row])
    finally:
        target_file.write_text(original)
    assert limited.returncode == 0, (limited.stdout + limited.stderr)[-3000:]
    late = result(workflow, row)
    assert late["status"] == "error" and late["ended_by"] == "time limit"
    assert late["message"].startswith("time limit: stopped after ") and "time limit of 1 min" in late["message"]
    # How far two ranks get in the 45 s before the stop depends on the machine (importing MaxText
    # twice on two cores can take all of it): the record says how many steps, and keeps their losses.
    assert 0 <= late["steps_completed"] < 3000
    assert f"and {late['steps_completed']} of 3000 steps" in late["message"]
    assert len(late["losses"]) == late["steps_completed"]
