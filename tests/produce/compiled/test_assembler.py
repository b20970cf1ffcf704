"""The ptxas stand-in of a compile-only GPU: the real version, empty images, and only where asked."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from offload_repro.core.data import load_target
from offload_repro.core.files import write_json
from offload_repro.produce.compiled import assembler, program_cache

VERSION = "Cuda compilation tools, release 13.0, V13.0.88"


@pytest.fixture
def real_ptxas(tmp_path, monkeypatch) -> Path:
    """A ptxas that only answers for its version, where the stand-in looks first."""
    real = tmp_path / "cuda" / "bin" / "ptxas"
    real.parent.mkdir(parents=True)
    real.write_text(f'#!/bin/sh\n[ "$1" = --version ] && echo "{VERSION}" && exit 0\nexit 9\n')
    real.chmod(0o755)
    monkeypatch.setattr(assembler, "CUDA_ROOT_PTXAS", real)
    return real


def test_the_stand_in_answers_with_the_real_version_and_writes_an_empty_image_or_fails_loudly(real_ptxas, tmp_path):
    flag = assembler.stand_in(tmp_path / "work")
    root = tmp_path.resolve() / "work" / assembler.STAND_IN_DIR
    assert flag == f"--xla_gpu_cuda_data_dir={root}"
    ptxas = root / "bin" / "ptxas"
    answer = subprocess.run([ptxas, "--version"], capture_output=True, text=True, check=True)
    assert answer.stdout.strip() == VERSION  # XLA picks the PTX it emits by this version

    ptx, image = tmp_path / "kernel.ptx", tmp_path / "kernel.cubin"
    ptx.write_text(".version 8.8\n")
    # the arguments XLA passes (stream_executor's subprocess compilation)
    subprocess.run([ptxas, ptx, "-o", image, "-arch=sm_100a", "--warn-on-spills"], check=True)
    assert image.read_bytes() == b""
    no_output = subprocess.run([ptxas, ptx], capture_output=True, text=True)
    assert no_output.returncode == 2 and "no -o OUTPUT" in no_output.stderr


def test_without_a_real_ptxas_there_is_no_stand_in(tmp_path, monkeypatch):
    monkeypatch.setattr(assembler, "CUDA_ROOT_PTXAS", tmp_path / "absent")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert assembler.stand_in(tmp_path / "work") is None
    assert not (tmp_path / "work").exists()


def test_compile_only_programs_use_the_stand_in_unless_machine_code_is_asked_for(real_ptxas, rows, tmp_path):
    gb200, row = load_target("gb200-nvl72"), rows["llama-baseline"]
    flags = []

    def launch(command, env, cwd, log_file):  # stands in for the compile process
        flags.append(env["XLA_FLAGS"])
        log_file.write_text("")
        write_json(cwd / "aot.json", {"exception": None, "memory": {}, "hlo": {}, "hlo_sha256": "0" * 64})
        return 0, 1.0

    program_cache.compile_program(row, gb200, tmp_path / "a", "k", launcher=launch)
    program_cache.compile_program(row, gb200, tmp_path / "b", "k", launcher=launch, machine_code=True)
    stand_in, real = flags
    assert f"{assembler.FLAG}={(tmp_path / 'a' / assembler.STAND_IN_DIR).resolve()}" in stand_in.split()
    assert assembler.FLAG not in real
    # the program key never sees it: it changes no byte of what is read back
    assert assembler.FLAG not in program_cache.maxtext_args.xla_flags(row, list(program_cache.COMPILE_ONLY_FLAGS))
