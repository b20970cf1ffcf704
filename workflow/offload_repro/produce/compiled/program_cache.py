"""A row's train step compiled for a GPU target: the program, and the one cache of programs.

Compiling is the expensive part of compiled evidence (14 to 45 s a row on 2 cores). What XLA
gives for a program (memory analysis, HLO summary, its own memory warnings) depends only on what
is compiled, never on the row's name or the claims, so each program is stored once under a key
of everything that decides it, in `results/programs/<target>/<key>.json` (kind `program`). The
grid of rows x targets and the capacity frontier's micro-batch points read the same cache: a
policy's point at its row's micro batch is that row's program, compiled once.

A program is compiled again when code that decides its key changes, each time from the start:
XLA keeps no kernels between compiles. No machine code is assembled for a compile-only GPU
(`produce/compiled/assembler.py`): nothing read back depends on it.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

from offload_repro.core import gpu, maxtext_args, provenance
from offload_repro.core.data import Row, Target
from offload_repro.core.failure import Failure, failure_of
from offload_repro.core.files import REPO_ROOT, checkout_relative, read_json, write_atomically
from offload_repro.core.maxtext_args import RAGGED_DOT_VARIABLE
from offload_repro.core.maxtext_configs import base_config
from offload_repro.core.process import Launcher, fresh_work_dir, package_environment
from offload_repro.core.results import ResultError, read_result, write_result
from offload_repro.core.warm_start import run_warm
from offload_repro.produce.compiled import assembler
from offload_repro.produce.compiled.aot_compile import HLO_FILE, MEMORY_WARNING

# A compile-only GPU gets nothing from autotuning: shard autotuning needs GPUs to share results
# with, and autotune level 0 halves the compile while every row's memory analysis stays
# byte-identical (`workflow/scripts/identity.py autotune` compiles every row both ways to show it, and
# a slow test holds it for one row of each kind; the program digest changes, since untuned fusions
# carry a default backend config).
# XLA's CUB radix sort asks a GPU for its scratch size while compiling ("cudaErrorInvalidDevice"
# without one); XLA's own sort takes its place in a compile-only program that sorts (a dropless MoE
# dispatch), and a program without a sort is unchanged by it.
# LLVM's optimisation of the kernels' machine code is work no compile-only result reads (the program,
# its buffers and schedule are fixed before kernels are emitted): without it a DeepSeek row compiles
# about 2 s sooner, its program digest and memory analysis unchanged (the same slow test holds it).
XLA_SORT = "--xla_gpu_enable_cub_radix_sort=false"
LLVM_UNOPTIMISED = ("--xla_backend_optimization_level=0", "--xla_llvm_disable_expensive_passes=true")
COMPILE_ONLY_FLAGS = ("--xla_gpu_shard_autotuning=false", XLA_SORT, "--xla_gpu_autotune_level=0", *LLVM_UNOPTIMISED)
DEFAULT_AUTOTUNING = ("--xla_gpu_shard_autotuning=false", XLA_SORT)
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
    "core/grouped_matmul.py",
    "core/gpu.py",
)
# The XLA flag that takes a latency profile (produce/predicted/model_profile.py), and XLA's own
# lines saying how much of the program it found in it.
PROFILE_FLAG = "--xla_gpu_pgle_profile_file_or_directory_path"
PROFILE_FOUND = re.compile(r"Found (\d+) instructions from the profile")
PROFILE_MISSING = re.compile(r"Missing (\d+) instructions from the profile")
# A row that turns the latency-hiding scheduler off gets no profile: XLA turns it on for any program
# with one (gpu_hlo_schedule.cc, IsLHSEnabled).
LHS_OFF = "--xla_gpu_enable_latency_hiding_scheduler=false"
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


def compile_description(row: Row, target: Target) -> str:
    """The target's XLA description as the row's compile is given it: its memory planned as a run's
    allocator gives it (core/gpu.py, as_run_allocates)."""
    return gpu.as_run_allocates(gpu.description(target), gpu.allocator_fraction(row.allocator_memory_fraction, target))


@cache
def program_code() -> dict[str, str]:
    return {name: (REPO_ROOT / "workflow/offload_repro" / name).read_text() for name in PROGRAM_CODE}


def program_key(
    row: Row,
    target: Target,
    compile_only_flags: tuple[str, ...] = COMPILE_ONLY_FLAGS,
    overrides: dict[str, Any] | None = None,
    latency_profile: Path | None = None,
) -> str:
    """Everything that decides a compiled program; a program is reused only under the same key.
    The row's id is not part of it: two rows (or a row and a policy's point) that compile the same
    step share one program. `overrides`: the row's `compile_overrides`, where the caller has them;
    `latency_profile`: the profile its scheduler is guided by, by content (where it lies is not)."""
    overrides = compile_overrides(row, target) if overrides is None else overrides
    decided = {
        "arguments": maxtext_args.as_arguments(overrides),
        "xla_flags": maxtext_args.xla_flags(row, list(compile_only_flags)),
        "description": compile_description(row, target),
        "topology": target.spec["compile"]["topology"],
        "ragged_dot": row.ragged_dot,
        "code": program_code(),
        "versions": provenance.versions(),
    }
    if latency_profile is not None:
        decided["latency_profile"] = hashlib.sha256(latency_profile.read_bytes()).hexdigest()
    return hashlib.sha256(json.dumps(decided, sort_keys=True).encode()).hexdigest()[:16]


def compile_program(
    row: Row,
    target: Target,
    work_dir: Path,
    key: str,
    python: str = sys.executable,
    compile_only_flags: tuple[str, ...] = COMPILE_ONLY_FLAGS,
    launcher: Launcher = run_warm,
    overrides: dict[str, Any] | None = None,
    latency_profile: Path | None = None,
    machine_code: bool = False,
) -> dict[str, Any]:
    """Run `offload_repro.produce.compiled.aot_compile` in a process of its own (started by `launcher`) with the
    row's XLA_FLAGS; what XLA gave.
    `machine_code`: assemble the kernels with the real ptxas rather than the stand-in
    (produce/compiled/assembler.py), to show that nothing read back changes. `overrides`: the row's
    `compile_overrides`, where the caller has them (they are not changed). `latency_profile`: a
    profile XLA's scheduler takes in place of its default cost model (produce/predicted/model_profile.py);
    a compile whose program XLA found no instruction of in it fails, saying so."""
    work_dir = fresh_work_dir(work_dir)
    spec = target.spec["compile"]
    description = compile_description(row, target)
    fraction = gpu.allocator_fraction(row.allocator_memory_fraction, target)
    overrides = compile_overrides(row, target) if overrides is None else overrides
    run = {**overrides, "base_output_directory": str(work_dir / "output"), "run_name": row.id}
    arguments = [str(base_config()), *maxtext_args.as_arguments(run)]
    stats_file, log_file = work_dir / "aot.json", work_dir / "compile.log"
    description_path = work_dir / "target.txtpb"
    description_path.write_text(description, encoding="utf-8")
    flags = maxtext_args.xla_flags(row, list(compile_only_flags))
    # the stand-in is not part of the program key: it changes no byte of what is read back
    if not machine_code and (stand_in := assembler.stand_in(work_dir)):
        flags += " " + stand_in
    if latency_profile is not None:  # in the key by its content
        flags += f" {PROFILE_FLAG}={latency_profile.resolve()}"
    env = package_environment({"XLA_FLAGS": flags, "JAX_PLATFORMS": "cpu", RAGGED_DOT_VARIABLE: row.ragged_dot})
    cudnn = gpu.cudnn_version(description)
    command = [python, "-m", "offload_repro.produce.compiled.aot_compile", str(stats_file), str(description_path)]
    command += [spec["topology"], str(cudnn), "--", *arguments]
    returncode, wall_s = launcher(command, env, work_dir, log_file)
    log_text = log_file.read_text(encoding="utf-8", errors="replace")
    stats = read_json(stats_file) if stats_file.exists() else {}
    exception = stats.get("exception")
    compile_log = checkout_relative(log_file)
    cause = None
    matched = profile_matched(log_text) if latency_profile is not None else None
    if returncode != 0 or not stats or exception:
        cause = failure_of(returncode, log_text, compile_log, exception)
    elif matched is not None and not matched["found"]:
        said = (
            f"XLA found none of this program's instructions in the latency profile {latency_profile}: the"
            " profile names each program by the fingerprint XLA gives it before scheduling, and names another"
        )
        cause = Failure(said, "profile_guided_latency_estimator.cc", returncode, None, compile_log)
    return {
        "key": key,
        "target": target.name,
        "compiled_as": row.id,
        "status": "error" if cause else "ok",
        "message": cause.cause if cause else None,
        "failure": cause.record() if cause else None,
        "stats": stats if not cause else None,
        "memory_warnings": memory_warnings(log_text),
        **({"latency_profile": {"file": str(latency_profile), "matched": matched}} if latency_profile else {}),
        "provenance": {
            "maxtext_arguments": arguments,
            "xla_flags": env["XLA_FLAGS"],
            "target_description": spec["description_file"],
            # the share of the GPU's memory XLA planned the program within (core/gpu.py, as_run_allocates)
            "allocator_memory_fraction": fraction,
            "topology": spec["topology"],
            "declared_cudnn": cudnn,
            "versions": provenance.versions(),
            "wall_time_s": round(wall_s, 2),
            "compile_log": compile_log,
            **provenance.stamp(),
        },
    }


def profile_matched(log_text: str) -> dict[str, int] | None:
    """How many of the program's instructions XLA found in the latency profile and how many it
    missed, in XLA's own words; None where it says nothing (it speaks only where it missed some).
    XLA reads the profile for every module it schedules: the train step is the one it found most of."""
    reads = list(zip(PROFILE_FOUND.findall(log_text), PROFILE_MISSING.findall(log_text), strict=False))
    if not reads:
        return None
    found, missing = max(reads, key=lambda read: int(read[0]))
    return {"found": int(found), "missing": int(missing)}


def hlo_path(program_file: Path) -> Path:
    """The program's optimized HLO, kept beside its cache entry (what predicted evidence reads)."""
    return program_file.with_name(program_file.stem + ".hlo.txt.gz")


def memory_warnings(log_text: str) -> list[str]:
    """XLA's memory warnings in a compile's log, each once, in order."""
    return list(dict.fromkeys(found.group(0).strip() for found in MEMORY_WARNING.finditer(log_text)))


def cached_program(
    row: Row, target: Target, programs: Path, key: str | None = None
) -> tuple[dict[str, Any], Path] | None:
    """(program, its file) when the row's program (by default compiled with the compile-only flags)
    is in the cache `programs`, else None. A damaged entry is removed, so that it is compiled again."""
    path = programs / f"{key or program_key(row, target)}.json"
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
    programs: Path | None,
    python: str,
    compile_only_flags: tuple[str, ...],
    launcher: Launcher,
    overrides: dict[str, Any],
    latency_profile: Path | None = None,
) -> tuple[dict[str, Any], Path | None, bool]:
    """(program, its cache file or None, whether it came from the cache). Without `programs` the
    row is always compiled and nothing is stored; `overrides`: the row's `compile_overrides`."""
    key = program_key(row, target, compile_only_flags, overrides, latency_profile)
    if programs is not None and (found := cached_program(row, target, programs, key)):
        return *found, True
    program = compile_program(
        row, target, work_dir, key, python, compile_only_flags, launcher, overrides, latency_profile
    )
    if programs is None or program["status"] != "ok":
        return program, None, False  # a failed compile is not kept: a rerun tries it again
    path = programs / f"{key}.json"
    # the HLO first: an entry is only read with its HLO beside it
    write_atomically(hlo_path(path), (work_dir.resolve() / HLO_FILE).read_bytes())
    return write_result(path, "program", program), path, False
