"""The stack carried to a TPU machine without a package index (envs/device/tpu-stack/): packed here,
its pieces rejoin to the manifest's checksum, and the unpacked tree, on its own Python, imports
MaxText's trainer and this package's run path. What needs the chip itself is not tested here."""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import REPO

STACK = REPO / "envs" / "device" / "tpu-stack"


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    pieces = tmp_path_factory.mktemp("pieces")
    # xz level 0 and small pieces: fast, and several pieces to rejoin
    env = os.environ | {"XZ_LEVEL": "0", "PIECE_MIB": "200"}
    done = subprocess.run([STACK / "pack.sh", pieces], capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return pieces


@pytest.mark.slow
def test_unpacked_stack_imports_maxtexts_trainer(packed, tmp_path):
    manifest = dict(line.split(" ", 1) for line in (packed / "manifest").read_text().splitlines())
    pieces = manifest["pieces"].split()
    assert len(pieces) > 1 and pieces == sorted(p.name for p in packed.glob("p??"))
    assert "libtpu==0.0.50.1" in manifest["stack"] and "maxtext==0.2.5" in manifest["stack"]

    prefix = tmp_path / "stack"
    unpacked = subprocess.run([STACK / "unpack.sh", packed, prefix], capture_output=True, text=True, timeout=300)
    assert unpacked.returncode == 0, unpacked.stderr
    assert not prefix.with_name("stack.partial").exists()

    code = (
        "import sys, jax, libtpu, maxtext.trainers.pre_train.train, offload_repro.produce.measured.launch;"
        "import maxtext.input_pipeline.input_pipeline_interface;"  # what the trainer imports only while it runs
        "print(sys.prefix, jax.__version__, jax.devices()[0].platform)"
    )
    workflow = REPO / "workflow"
    shell = f'source {STACK / "env.sh"} {prefix} && export PYTHONPATH="$PYTHONPATH:{workflow}" && python3 -c "{code}"'
    env = {"PATH": os.environ["PATH"], "JAX_PLATFORMS": "cpu", "HOME": str(tmp_path)}
    ran = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.split()[-3:] == [str(prefix / "py312"), "0.12.0.1", "cpu"]


@pytest.mark.slow
def test_a_changed_piece_is_refused(packed, tmp_path):
    copy = tmp_path / "pieces"
    copy.mkdir()
    for path in packed.iterdir():
        (copy / path.name).symlink_to(path)
    (copy / "p00").unlink()
    (copy / "p00").write_bytes(b"\0" + (packed / "p00").read_bytes()[1:])
    refused = subprocess.run([STACK / "unpack.sh", copy, tmp_path / "stack"], capture_output=True, text=True)
    assert refused.returncode == 1
    assert "sha256" in refused.stderr and not (tmp_path / "stack").exists()
