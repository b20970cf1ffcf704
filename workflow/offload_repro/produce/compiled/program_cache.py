"""A row's train step compiled for a GPU target: the program, and the one cache of programs.

Compiling is the expensive part of compiled evidence (14 to 45 s a row on 2 cores). What XLA
gives for a program (memory analysis, HLO summary, its own memory warnings) depends only on what
is compiled, never on the row's name or the claims, so each program is stored once under a key
of everything that decides it, in `results/programs/<target>/<key>.json` (kind `program`). The
grid of rows x targets and the capacity frontier's micro-batch points read the same cache: a
policy's point at its row's micro batch is that row's program, compiled once.

A program is compiled again when code that decides its key changes; XLA's kernels of each row's
last compile are kept beside the programs (`produce/compiled/kernel_cache.py`), so that the mostly
unchanged program generates little code again. No machine code is assembled for a compile-only
GPU (`produce/compiled/assembler.py`): nothing read back depends on it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from functools import cache
from pathlib import Path
from typing import Any

from offload_repro.core import gpu, maxtext_args, provenance
from offload_repro.core.data import Row, Target
from offload_repro.core.failure import failure_of
from offload_repro.core.files import REPO_ROOT, read_json, write_atomically
from offload_repro.core.maxtext_configs import base_config
from offload_repro.core.process import Launcher, fresh_work_dir, package_environment, run_subprocess
from offload_repro.core.results import ResultError, read_result, write_result
from offload_repro.produce.compiled import assembler, kernel_cache
from offload_repro.produce.compiled.aot_compile import HLO_FILE, MEMORY_WARNING

# A compile-only GPU gets nothing from autotuning: shard autotuning needs GPUs to share results
# with, and autotune level 0 halves the compile while every row's memory analysis stays
# byte-identical (workflow/scripts/autotune_identity.py compiles every row both ways to show it, and a
# slow test holds it for one row of each kind; the program digest changes, since untuned fusions
# carry a default backend config).
COMPILE_ONLY_FLAGS = ("--xla_gpu_shard_autotuning=false", "--xla_gpu_autotune_level=0")
DEFAULT_AUTOTUNING = ("--xla_gpu_shard_autotuning=false",)
# The code that decides what XLA is asked to compile and what is read back from it. The code that
# turns a program into a row's result (produce/compiled/compiled_row.py) is not here: editing it reassembles
# every result from the cache without compiling anything again.
PROGRAM_CODE = (
    "produce/compiled/program_cache.py",
    "produce/compiled/aot_compile.py",
    "produce/compiled/host_offload_hlo.py",
    "produce/compiled/hlo_text.py",
    "core/memory_analysis.py",
    "produce/compiled/model_flops.py",
    "core/gpu.py",
)
KERNELS_FILE = "xla-kernels.bin"  # a compile's private copy of its row's kept kernels, in its work directory
# The GPU compiler plugin is pinned apart from the main lock.
READS = ("envs/requirements-gpu-compile.lock",)


def compile_overrides(row: Row, target: Target) -> dict[str, Any]:
    """The row as it runs on the target (its scale rule applied), set up for a compile-only GPU."""
    spec = target.spec["compile"]
    overrides = maxtext_args.target_overrides(row, target)
    for key in spec.get("drop", []):
        overrides.pop(key, None)
    overrides.update(spec.get("families", {}).get(row.family, {}))
    overrides.update(spec["maxtext"])
    overrides.update(row.maxtext_overrides)  # an assumption's alternative, last
    devices = [int(n) for n in spec["topology"].split("x")]
    overrides.update(
        internal_compile=True,
        internal_compile_num_devices=devices[0] * devices[1] * devices[2],
        compile_topology="gpu-aot",
        compile_topology_num_slices=1,
    )
    return overrides


@cache
def program_code() -> dict[str, str]:
    return {name: (REPO_ROOT / "workflow/offload_repro" / name).read_text() for name in PROGRAM_CODE}


def program_key(
    row: Row,
    target: Target,
    compile_only_flags: tuple[str, ...] = COMPILE_ONLY_FLAGS,
    overrides: dict[str, Any] | None = None,
) -> str:
    """Everything that decides a compiled program; a program is reused only under the same key.
    The row's id is not part of it: two rows (or a row and a policy's point) that compile the same
    step share one program. `overrides`: the row's `compile_overrides`, where the caller has them."""
    if overrides is None:
        overrides = compile_overrides(row, target)
    decided = {
        "arguments": maxtext_args.as_arguments(overrides),
        "xla_flags": maxtext_args.xla_flags(row, list(compile_only_flags)),
        "description": gpu.description(target),
        "topology": target.spec["compile"]["topology"],
        "code": program_code(),
        "versions": provenance.versions(),
    }
    return hashlib.sha256(json.dumps(decided, sort_keys=True).encode()).hexdigest()[:16]


def compile_program(
    row: Row,
    target: Target,
    work_dir: Path,
    key: str,
    python: str = sys.executable,
    compile_only_flags: tuple[str, ...] = COMPILE_ONLY_FLAGS,
    launcher: Launcher = run_subprocess,
    kernels: Path | None = None,
    machine_code: bool = False,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run `offload_repro.produce.compiled.aot_compile` in a process of its own (started by `launcher`) with the
    row's XLA_FLAGS; what XLA gave. `kernels`: where the row's kernels are kept
    (produce/compiled/kernel_cache.py): the compile starts from them and, if it succeeds, replaces them.
    `machine_code`: assemble the kernels with the real ptxas rather than the stand-in
    (produce/compiled/assembler.py), to show that nothing read back changes. `overrides`: the row's
    `compile_overrides`, where the caller has them (they are not changed)."""
    work_dir = fresh_work_dir(work_dir)
    spec = target.spec["compile"]
    description_path, description = gpu.description_path(target), gpu.description(target)
    if overrides is None:
        overrides = compile_overrides(row, target)
    run = {**overrides, "base_output_directory": str(work_dir / "output"), "run_name": row.id}
    arguments = [str(base_config()), *maxtext_args.as_arguments(run)]
    stats_file, log_file = work_dir / "aot.json", work_dir / "compile.log"
    flags = maxtext_args.xla_flags(row, list(compile_only_flags))
    if kernels is not None:  # not part of the program key: it changes no byte of what is read back
        flags += " " + kernel_cache.checkout(kernels, work_dir / KERNELS_FILE)
    if not machine_code and (stand_in := assembler.stand_in(work_dir)):  # not in the key either
        flags += " " + stand_in
    env = package_environment({"XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu"})
    command = [
        python,
        "-m",
        "offload_repro.produce.compiled.aot_compile",
        str(stats_file),
        str(description_path),
        spec["topology"],
    ]
    command += [str(gpu.cudnn_version(description)), "--", *arguments]
    returncode, wall_s = launcher(command, env, work_dir, log_file)
    log_text = log_file.read_text(encoding="utf-8", errors="replace")
    stats = read_json(stats_file) if stats_file.exists() else {}
    exception = stats.get("exception")
    compile_log = str(log_file.relative_to(REPO_ROOT) if log_file.is_relative_to(REPO_ROOT) else log_file)
    cause = None
    if returncode != 0 or not stats or exception:
        cause = failure_of(returncode, log_text, compile_log, exception)
    elif kernels is not None:  # only a compile that finished wrote its kernel file whole
        kernel_cache.publish(work_dir / KERNELS_FILE, kernels)
    return {
        "key": key,
        "target": target.name,
        "compiled_as": row.id,
        "status": "error" if cause else "ok",
        "message": cause.cause if cause else None,
        "failure": cause.record() if cause else None,
        "stats": stats if not cause else None,
        "memory_warnings": memory_warnings(log_text),
        "provenance": {
            "maxtext_arguments": arguments,
            "xla_flags": env["XLA_FLAGS"],
            "target_description": spec["description_file"],
            "topology": spec["topology"],
            "declared_cudnn": gpu.cudnn_version(description),
            "versions": provenance.versions(),
            "wall_time_s": round(wall_s, 2),
            "compile_log": compile_log,
            **provenance.stamp(),
        },
    }


def hlo_path(program_file: Path) -> Path:
    """The program's optimized HLO, kept beside its cache entry (what predicted evidence reads)."""
    return program_file.with_name(program_file.stem + ".hlo.txt.gz")


def memory_warnings(log_text: str) -> list[str]:
    """XLA's memory warnings in a compile's log, each once, in order."""
    return list(dict.fromkeys(found.group(0).strip() for found in MEMORY_WARNING.finditer(log_text)))


def cached_program(
    row: Row,
    target: Target,
    programs: Path,
    compile_only_flags: tuple[str, ...] = COMPILE_ONLY_FLAGS,
    key: str | None = None,
) -> tuple[dict[str, Any], Path] | None:
    """(program, its file) when the row's program is in the cache `programs`, else None. A damaged
    entry is removed, so that it is compiled again."""
    path = programs / f"{key or program_key(row, target, compile_only_flags)}.json"
    if not path.exists() or not hlo_path(path).exists():
        return None
    try:
        return read_result(path, "program"), path
    except ResultError:
        path.unlink()
        return None


def program_for(
    row: Row,
    target: Target,
    work_dir: Path,
    programs: Path | None = None,
    python: str = sys.executable,
    compile_only_flags: tuple[str, ...] = COMPILE_ONLY_FLAGS,
    launcher: Launcher = run_subprocess,
    overrides: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], Path | None, bool]:
    """(program, its cache file or None, whether it came from the cache). Without `programs` the
    row is always compiled and nothing is stored; `launcher` starts the compile; `overrides`: the
    row's `compile_overrides`, computed here where the caller does not hand them down."""
    if overrides is None:
        overrides = compile_overrides(row, target)
    key = program_key(row, target, compile_only_flags, overrides)
    if programs is not None and (found := cached_program(row, target, programs, compile_only_flags, key)):
        return *found, True
    kernels = None
    if programs is not None:
        description, versions = gpu.description(target), provenance.versions()
        kernels = kernel_cache.kept_path(programs, row.id, description, versions, machine_code=False)
    program = compile_program(
        row, target, work_dir, key, python, compile_only_flags, launcher, kernels, overrides=overrides
    )
    if programs is None or program["status"] != "ok":
        return program, None, False  # a failed compile is not kept: a rerun tries it again
    path = programs / f"{key}.json"
    # the HLO first: an entry is only read with its HLO beside it
    write_atomically(hlo_path(path), (work_dir.resolve() / HLO_FILE).read_bytes())
    return write_result(path, "program", program), path, False
