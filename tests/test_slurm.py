"""Rows through a real single-node SLURM (Debian slurm-wlm + munge), started and stopped here.

The cluster lives in a scratch directory (tests/slurm/start.sh, stop.sh); Snakemake submits
with its SLURM executor plugin and the test profile (squeue for status: no accounting here).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require
from workflow_copy import copy_workflow

HERE = Path(__file__).resolve().parent / "slurm"
TWO_ROWS = '["llama-baseline","llama-qkv-offload-lhs"]'


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    for program in ("slurmctld", "slurmd", "munged"):
        require(program)
    if os.geteuid() != 0:
        pytest.skip("slurmd must run as root")
    scratch = tmp_path_factory.mktemp("slurm")
    env = {**os.environ, "SLURM_TEST_DIR": str(scratch), "SLURMCTLD_PORT": "16817", "SLURMD_PORT": "16818"}
    started = subprocess.run(["bash", HERE / "start.sh"], env=env, capture_output=True, text=True, timeout=90)
    try:
        assert started.returncode == 0, started.stderr
        exports = dict(re.findall(r"(\w+)=(\S+)", started.stdout.strip().removeprefix("export ")))
        yield {
            **env,
            "SLURM_CONF": exports["SLURM_CONF"],
            # wrappers that pin SLURM_CONF: the jobstep plugin drops SLURM_* before its inner srun
            "PATH": f"{scratch}/bin:{Path(sys.executable).parent}:{env['PATH']}",
        }
    finally:
        subprocess.run(["bash", HERE / "stop.sh"], env=env, capture_output=True, timeout=90)


@pytest.mark.slow
@pytest.mark.slurm
def test_two_rows_run_through_slurm_to_their_json(cluster, tmp_path):
    directory = copy_workflow(tmp_path)
    shutil.copytree(HERE / "profile", directory / "slurm-profile")
    command = [
        "timeout",
        "-k",
        "15",
        "900",
        sys.executable,
        "-m",
        "snakemake",
        "--profile",
        "slurm-profile",
        "--config",
        f"rows={TWO_ROWS}",
        "--",
        "results/cpu/table.csv",
    ]
    done = subprocess.run(command, cwd=directory, env=cluster, capture_output=True, text=True, timeout=960)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-4000:]
    assert "Job " in log and "has been submitted with SLURM jobid" in log
    calls = (Path(cluster["SLURM_CONF"]).parents[1] / "log" / "sbatch.calls").read_text()
    assert calls.count("--nodes=1") == 2 and "--cpus-per-task=2" in calls and "--mem 6000" in calls
    submitted = re.findall(r"--comment '?rule_([a-z_]+?)(?:_wildcards|'|\s)", calls)
    assert submitted == ["run_row", "run_row"], submitted  # collect_runs is a local rule
    for row in ("llama-baseline", "llama-qkv-offload-lhs"):
        result = json.loads((directory / f"results/cpu/runs/{row}.json").read_text())
        assert result["status"] == "ok" and result["steps_completed"] == 10
        assert result["provenance"]["slurm_job_id"]  # written inside a SLURM job
    slurm_logs = list((directory / ".snakemake" / "slurm_logs").rglob("*.log"))
    assert len(slurm_logs) >= 2
