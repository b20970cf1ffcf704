"""Compiled evidence for one row: its full-size MaxText train step compiled for a GPU target.

The program comes from `produce.compiled.program_cache` (compiled in a process of its own, or read from the
cache of programs); this module turns it into the row's result: fits / out of memory from the
per-device memory analysis against the memory JAX's allocator takes of the target's GPU, the pinned host memory against
the host memory per GPU, XLA's own memory warnings as it printed them, and the MaxText settings
the program was compiled with (what the compile observer, in judge/, explains the warnings and
checks the offload against). The JSON is written atomically, whatever happened.
"""

from __future__ import annotations

import re
import sys
from functools import partial
from pathlib import Path
from typing import Any

from offload_repro.core import gpu, memory
from offload_repro.core.data import Row, Target
from offload_repro.core.process import Launcher
from offload_repro.core.results import write_result
from offload_repro.core.warm_start import run_warm
from offload_repro.produce.compiled.program_cache import (
    COMPILE_ONLY_FLAGS,
    DEFAULT_AUTOTUNING,
    compile_overrides,
    program_for,
)

# XLA's words when autotune level 0 leaves a fusion without a kernel config: no backend offers a
# default one for it (a Triton GEMM of an odd shape), which autotuning would have chosen.
NO_DEFAULT_CONFIG = re.compile(r"No supported config found for HLO|Failed to get configs for")
WHY_LENGTH = 240


def compile_result(
    row: Row,
    target: Target,
    program: dict[str, Any],
    program_file: Path | None,
    cached: bool,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The row's compiled evidence, from its program (compiled now or read from the cache);
    `overrides`: the row's `compile_overrides`, where the caller has them."""
    capacity = gpu.capacity_bytes(target)
    # A run can use only what JAX's allocator takes: its share of the GPU (an H200 at 0.95 refused
    # 75.5 GiB on top of 69.7 with 132.8 of 140.4 GiB its limit), so a program fits within that,
    # not within the device's memory. JAX takes the share of what is free when it starts, after
    # CUDA's own context (about 0.6 GiB there), so the real limit is a little lower still.
    fraction = (program.get("provenance") or {}).get("allocator_memory_fraction")
    limit = round(capacity * fraction) if capacity and fraction else capacity
    stats = program["stats"] or {}
    result: dict[str, Any] = {
        "row": row.id,
        "table": row.table,
        "target": target.name,
        "evidence": "compiled",
        "status": program["status"],
        "message": program["message"],
        "failure": program.get("failure"),  # a cached program compiled, and has none
        "devices": stats.get("devices"),
        "mesh": stats.get("mesh"),
        "capacity_bytes": capacity,
        "allocator_limit_bytes": limit,
        "xla_memory_warnings": [],
        "compile_seconds": stats.get("compile_seconds"),
        "peak_rss_bytes": stats.get("peak_rss_bytes"),
        "maxtext_overrides": compile_overrides(row, target) if overrides is None else overrides,
        "ragged_dot": row.ragged_dot,
        "assumptions": list(dict.fromkeys([*target.spec["compile"].get("assumptions", []), *row.assumptions])),
        "program": {
            "key": program["key"],
            "file": str(program_file) if program_file else None,
            "cached": cached,
            "compiled_as": program["compiled_as"],
        },
    }
    if program.get("latency_profile"):  # the profile its scheduler took, and what XLA found in it
        result["latency_profile"] = program["latency_profile"]
    if program["status"] == "ok":
        analysis = stats["memory"]
        used, host = memory.device_bytes(analysis), memory.host_bytes(analysis)
        result.update(
            memory=analysis,
            device_bytes=used,
            host_bytes=host,
            **memory.fit(used, limit),
            hlo=stats["hlo"],
            hlo_sha256=stats["hlo_sha256"],
            xla_memory_warnings=program["memory_warnings"],
            **memory.host_fit(host, target.spec["hardware"].get("host_memory_gb_per_gpu")),
            cost=stats.get("cost"),
            model_tflops_per_device_per_step=stats.get("model_tflops_per_device_per_step"),
            model_tflops_components=stats.get("model_tflops_components"),
        )
    result["provenance"] = program["provenance"]
    return result


def compiled_evidence(
    row: Row,
    target: Target,
    work_dir: Path,
    programs: Path | None = None,
    python: str = sys.executable,
    launcher: Launcher = run_warm,
    latency_profile: Path | None = None,
) -> dict[str, Any]:
    """The row's compiled evidence, not yet written: its program, from the cache `programs` or
    compiled now (`launcher` starts the compile), made into its result. The row's overrides are
    computed once, here, and handed to the program's key, its compile and the result.
    `latency_profile`: the profile its scheduler is guided by (produce/predicted/model_profile.py)."""
    overrides = compile_overrides(row, target)
    compiled_with = partial(
        program_for, row, target, work_dir, programs, python, overrides=overrides, latency_profile=latency_profile
    )
    program, program_file, cached = compiled_with(COMPILE_ONLY_FLAGS, launcher)
    fallback = None
    if NO_DEFAULT_CONFIG.search(program["message"] or ""):
        # the one failure autotuning itself avoids: compile again at XLA's default level, and say so
        said = " ".join(line.strip() for line in program["message"].splitlines()[:2])  # the count and an example
        fallback = {"compile_only_flags": list(DEFAULT_AUTOTUNING), "why": said[:WHY_LENGTH]}
        program, program_file, cached = compiled_with(DEFAULT_AUTOTUNING, launcher)
    result = compile_result(row, target, program, program_file, cached, overrides)
    if fallback:
        result["autotuning_fallback"] = fallback
    return result


def compile_row(
    row: Row,
    target: Target,
    out_json: Path,
    work_dir: Path,
    programs: Path | None = None,
    variant: dict[str, Any] | None = None,
    launcher: Launcher = run_warm,
    latency_profile: Path | None = None,
    settings: list[str] | None = None,
) -> dict[str, Any]:
    """Compile the row (or take its program from the cache `programs`) and write its result;
    `variant`: the alternative to an assumption the row is compiled under, recorded with it;
    `settings`: the alternatives chosen by the source's outcomes it was compiled under (recorded)."""
    result = compiled_evidence(row, target, work_dir, programs, launcher=launcher, latency_profile=latency_profile)
    if settings:
        result["settings_chosen"] = settings
    if variant is not None:
        result["variant"] = variant
    return write_result(out_json, "compile", result)
