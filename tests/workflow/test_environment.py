"""The pinned environment: the locks are complete, so the conda declaration of the rules
(envs/offload-repro.conda.yaml, pip without --no-deps) installs exactly what .venv has."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO


@pytest.mark.slow
def test_the_locks_resolve_to_exactly_themselves_without_no_deps(tmp_path):
    spec = yaml.safe_load((REPO / "envs/offload-repro.conda.yaml").read_text())
    pip = next(item["pip"] for item in spec["dependencies"] if isinstance(item, dict))
    locks = [REPO / "envs" / line.split(maxsplit=1)[1] for line in pip if line.startswith("-r ")]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    uv = Path(sys.executable).parent / "uv"
    done = subprocess.run(
        [str(uv), "pip", "install", "--dry-run", "--python", str(venv / "bin/python"), "--require-hashes"]
        + [arg for lock in locks for arg in ("-r", str(lock))],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    planned = set(re.findall(r"^ \+ (\S+)$", done.stderr + done.stdout, re.M))
    pinned = {
        match.lower().replace("_", "-")
        for lock in locks
        for match in re.findall(r"^([A-Za-z0-9_.\-]+==[^\s;\\]+)", lock.read_text(), re.M)
    }
    assert {p.lower().replace("_", "-") for p in planned} == pinned


def test_the_tpu_lock_is_the_cpu_lock_and_libtpu():
    def pins(name: str) -> dict[str, str]:
        text = (REPO / "envs" / name).read_text()
        return dict(re.findall(r"^([A-Za-z0-9_.\-]+)==([^\s;\\]+)", text, re.M))

    cpu, tpu = pins("requirements.lock"), pins("requirements-tpu.lock")
    assert {name: version for name, version in tpu.items() if name in cpu} == cpu
    assert set(tpu) - set(cpu) == {"libtpu"} and tpu["libtpu"] == "0.0.50.1"  # what jax[tpu]==0.12.0.1 asks for
