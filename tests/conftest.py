"""Shared fixtures: the repository's own data, and small files written per test.

The test modules sit in folders named after the package folder they test (tests/core/ tests
offload_repro/core/). pytest imports them in its default `prepend` mode, by file name, with no
__init__.py: every test module's name is unique across tests/. This file's folder is on sys.path,
so test modules import REPO, FIXTURES, the fixture results' paths and require from `conftest`, and
the helpers beside it (workflow_copy, report_page) by name."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from offload_repro.core.data import load_rows
from offload_repro.core.results import read_result
from offload_repro.judge.claims import load_claims

REPO = Path(__file__).resolve().parents[1]  # the checkout
FIXTURES = REPO / "tests" / "fixtures"  # small real result files, logs and HLO (fixtures/README.md)
TABLES = sorted(str(p) for p in (REPO / "experiments" / "rows").glob("*.yaml"))
CLAIMS = REPO / "experiments" / "claims.yaml"
RESULTS = FIXTURES / "results"  # real result files of this workflow
COMPILED = sorted((RESULTS / "compiled" / "gb200-nvl72").glob("*.json"))  # real compiles for GB200
PREDICTED = RESULTS / "predicted" / "gb200-nvl72.json"
# GB200's BF16 DeepSeek share carried to the chip, as experiments/validation.yaml recorded it under the
# defaults (under the outcome-chosen settings GB200 gives no DeepSeek share, and the file records none)
CHIP_CARRY = {
    "family": "deepseek",
    "precision": "bfloat16",
    "measured_by": "tpu-v5e-1",
    "largest_abs": 0.2800,
    "mean_abs": 0.1979,
    "pairs": 3,
    "recorded_from": "results/tpu-v5e-1/device-prediction.json under the defaults, 2026-12-07",
}  # a real GB200 prediction of five compiled rows


def require(program: str) -> None:
    """Skip when a system program is missing, unless CI demands every test run."""
    if shutil.which(program) is None:
        message = f"{program} is not installed (envs/test.sh installs it as root)"
        if os.environ.get("OFFLOAD_REPRO_REQUIRE_ALL"):
            pytest.fail(message)
        pytest.skip(message)


def run_python(code: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -c code args` in the checkout, with the package on the path, JAX on the CPU and `env`."""
    env = {"PYTHONPATH": str(REPO / "workflow"), "PYTHONDONTWRITEBYTECODE": "1", "JAX_PLATFORMS": "cpu"} | (env or {})
    command = [sys.executable, "-c", code, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=REPO, env=env)


@pytest.fixture
def skopeo(tmp_path, monkeypatch):
    """A stand-in `skopeo`, first on PATH: `skopeo(body)` writes its shell body and returns the
    file where it records its arguments, one a line."""
    bin_dir = tmp_path / "stand-in-bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    def stand_in(body: str) -> Path:
        script = bin_dir / "skopeo"
        script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > "{bin_dir}/args"\n{body}\n')
        script.chmod(0o755)
        return bin_dir / "args"

    return stand_in


@pytest.fixture(scope="session")
def tables() -> list[str]:
    return TABLES


@pytest.fixture(scope="module")
def rows(tables) -> dict:
    """The rows of the tables, by id."""
    return {row.id: row for row in load_rows(tables)}


@pytest.fixture(scope="module")
def claims() -> list[dict]:
    """The claims of experiments/claims.yaml, in its order."""
    return load_claims(CLAIMS)


@pytest.fixture(scope="module")
def claim_by_id(claims) -> dict[str, dict]:
    return {claim["id"]: claim for claim in claims}


@pytest.fixture(scope="module")
def gb200_prediction() -> dict:
    """The real GB200 prediction (PREDICTED), read and checked against its schema once per module."""
    return read_result(PREDICTED, "predicted")


@pytest.fixture(scope="session")
def main_job(tmp_path_factory):
    """The README's main job (`snakemake --cores all`, here 2 cores) on a copy of the workflow."""
    from workflow_copy import copy_workflow, snakemake

    directory = copy_workflow(tmp_path_factory.mktemp("wf"))
    done = snakemake(directory, "--cores", "2", timeout=2400)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    (directory / "main-job.out").write_text(done.stdout + done.stderr)
    return directory


def program_of(compiled: dict) -> dict:
    """The program a real compile result was made from, as the cache holds it."""
    stats = {key: compiled[key] for key in ("memory", "hlo", "hlo_sha256", "devices", "mesh")}
    stats |= {"compile_seconds": compiled["compile_seconds"], "peak_rss_bytes": compiled["peak_rss_bytes"]}
    return {
        "key": "0123456789abcdef",
        "target": compiled["target"],
        "compiled_as": compiled["row"],
        "status": "ok",
        "message": None,
        "stats": stats,
        "memory_warnings": compiled["xla_memory_warnings"],
        "provenance": compiled["provenance"],
    }
