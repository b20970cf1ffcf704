"""Compiled evidence for one row: its full-size MaxText train step compiled for a GPU target.

The program comes from `produce.program` (compiled in a process of its own, or read from the
cache of programs); this module turns it into the row's result: fits / out of memory from the
per-device memory analysis against the target's device memory, the pinned host memory against
the host memory per GPU, and XLA's own memory warnings, each explained. The JSON is written
atomically, whatever happened.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from offload_repro.core import gpu, memory
from offload_repro.core.data import Row, Target
from offload_repro.core.observation import Observation, Observer
from offload_repro.core.process import Launcher, run_subprocess
from offload_repro.core.results import write_result
from offload_repro.produce.analytic import row_accounting
from offload_repro.produce.program import COMPILE_ONLY_FLAGS, DEFAULT_AUTOTUNING, compile_overrides, program_for

__all__ = ["COMPILE_ONLY_FLAGS", "DEFAULT_AUTOTUNING", "compile_overrides", "compile_result", "compile_row"]
REDUCED_TO = re.compile(r"only reduced to [\d.]+GiB \((\d+) bytes\)")


def mechanism(
    row: Row, memory_host_bytes: int, hlo: dict[str, Any], overrides: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Did the placement do what the row says? Host buffers against the analytic offload of the
    row as compiled (`overrides`: its MaxText settings on the target, scale rule included)."""
    accounting = row_accounting(row, overrides)
    expected_bytes = accounting["offloaded_bytes_per_step"]
    expected_buffers = sum(
        len(t["bytes_per_layer"]) for t in accounting["tensors"].values() if t["placement"] == "offload"
    )
    return {
        "offloaded_tensors": row.tensors("offload"),
        "analytic_offload_bytes": expected_bytes,
        "host_buffer_bytes": hlo["host_buffer_bytes"],
        "memory_analysis_host_bytes": memory_host_bytes,
        "analytic_host_buffers": expected_buffers,
        "host_buffers": hlo["host_buffers"],
        "host_bytes_match_analytic": hlo["host_buffer_bytes"] == expected_bytes,
        "offload_took_effect": (hlo["host_buffers"] > 0) == (expected_bytes > 0),
    }


def compile_result(
    row: Row, target: Target, program: dict[str, Any], program_file: Path | None, cached: bool
) -> dict[str, Any]:
    """The row's compiled evidence, from its program (compiled now or read from the cache)."""
    capacity = gpu.capacity_bytes(target)
    stats = program["stats"] or {}
    result: dict[str, Any] = {
        "row": row.id,
        "table": row.table,
        "target": target.name,
        "evidence": "compiled",
        "status": program["status"],
        "message": program["message"],
        "devices": stats.get("devices"),
        "mesh": stats.get("mesh"),
        "capacity_bytes": capacity,
        "xla_memory_warnings": [],
        "compile_seconds": stats.get("compile_seconds"),
        "peak_rss_bytes": stats.get("peak_rss_bytes"),
        "assumptions": list(dict.fromkeys([*target.spec["compile"].get("assumptions", []), *row.assumptions])),
        "program": {
            "key": program["key"],
            "file": str(program_file) if program_file else None,
            "cached": cached,
            "compiled_as": program["compiled_as"],
        },
    }
    if program["status"] == "ok":
        analysis = stats["memory"]
        used, host = memory.device_bytes(analysis), memory.host_bytes(analysis)
        result.update(
            memory=analysis,
            device_bytes=used,
            host_bytes=host,
            **memory.fit(used, capacity),
            hlo=stats["hlo"],
            hlo_sha256=stats["hlo_sha256"],
            mechanism=mechanism(row, host, stats["hlo"], compile_overrides(row, target)),
            xla_memory_warnings=explain_warnings(program["memory_warnings"], used, host),
            **memory.host_fit(host, target.spec["hardware"].get("host_memory_gb_per_gpu")),
            cost=stats.get("cost"),
            model_tflops_per_device_per_step=stats.get("model_tflops_per_device_per_step"),
        )
    result["provenance"] = program["provenance"]
    return result


def compile_row(
    row: Row,
    target: Target,
    out_json: Path,
    work_dir: Path,
    python: str = sys.executable,
    compile_only_flags: tuple[str, ...] = COMPILE_ONLY_FLAGS,
    programs: Path | None = None,
    variant: dict[str, Any] | None = None,
    launcher: Launcher = run_subprocess,
) -> dict[str, Any]:
    """Compile the row (or take its program from the cache `programs`) and write its result;
    `variant`: the alternative to an assumption the row is compiled under, recorded with it;
    `launcher`: how the compile's process starts."""
    program, program_file, cached = program_for(row, target, work_dir, programs, python, compile_only_flags, launcher)
    result = compile_result(row, target, program, program_file, cached)
    if variant is not None:
        result["variant"] = variant
    return write_result(out_json, "compile", result)


def explain_warnings(texts: list[str], device: int, host: int) -> list[dict[str, Any]]:
    """XLA's rematerialisation warnings, each with what it means for this program.

    The pass counts buffers that are about to be offloaded as device memory, so on an offload
    row its 'only reduced to' is device + host, not a contradiction of the device figure."""
    device_gib, host_gib = memory.gib(device), memory.gib(host)
    explained = []
    for text in texts:
        reduced = REDUCED_TO.search(text)
        reduced_gib = memory.gib(int(reduced.group(1))) if reduced else None
        if reduced_gib is None:
            meaning = "XLA could not fit the program under its own limit; the memory analysis is what is judged."
        elif memory.remat_warning_explained(reduced_gib, device_gib, host_gib):
            meaning = (
                f"Not a contradiction: XLA's rematerialisation pass counts the {host_gib:.2f} GiB about to be "
                f"offloaded as device memory ({device_gib:.2f} device + {host_gib:.2f} host = "
                f"{device_gib + host_gib:.2f} GiB); after offloading the device holds {device_gib:.2f} GiB."
            )
        elif abs(reduced_gib - device_gib) <= 0.01 * reduced_gib:
            meaning = f"The program needs {device_gib:.2f} GiB per device: XLA could not rematerialise it smaller."
        else:
            meaning = (
                f"Reported for one computation while scheduling ({reduced_gib:.2f} GiB); the program's final memory "
                f"analysis ({device_gib:.2f} GiB device, {host_gib:.2f} GiB host) is what fits / out of memory is "
                "judged on."
            )
        entry = {"text": text, "reduced_to_gib": reduced_gib, "meaning": meaning}
        if entry not in explained:
            explained.append(entry)
    return explained


def observe(result: dict[str, Any], source: str) -> list[Observation]:
    """A compile's observations: fits or not, device and host memory, the offload mechanism, the program."""
    seen = Observer(result, source, "compiled", result["row"], result["target"])
    seen.status_line()
    seen.add("capacity_gib", memory.gib(result["capacity_bytes"]), "GiB")
    seen.add("compile_s", result.get("compile_seconds"), "s")
    seen.add("compile_peak_rss_gib", memory.gib(result.get("peak_rss_bytes")), "GiB")
    if result["status"] != "ok":
        return seen.observations
    seen.add("outcome", "fits" if result["fits"] else "oom")
    seen.add("gpu_memory_gib", memory.gib(result["device_bytes"]), "GiB")
    seen.add("host_memory_gib", memory.gib(result["host_bytes"]), "GiB")
    seen.add("margin_gib", result["margin_gib"], "GiB")
    check = result["mechanism"]
    seen.add("host_buffers", check["host_buffers"])
    seen.add("expected_host_buffers", check["analytic_host_buffers"])
    seen.add("host_buffer_gib", memory.gib(check["host_buffer_bytes"]), "GiB")
    seen.add("expected_host_buffer_gib", memory.gib(check["analytic_offload_bytes"]), "GiB")
    seen.add("async_pairs", result["hlo"]["async_pairs_total"])
    seen.add("program_digest", result["hlo_sha256"])
    seen.add("host_capacity_gib", memory.gib(result.get("host_capacity_bytes")), "GiB")
    seen.add("host_fits", result.get("host_fits"))
    seen.add("model_tflops_per_step", result.get("model_tflops_per_device_per_step"), "TFLOP/device")
    seen.add("xla_tflops_per_step", (result.get("cost") or {}).get("flops", 0) / 1e12 or None, "TFLOP/device")
    for warning in result["xla_memory_warnings"]:
        seen.add("xla_memory_warning", warning["text"], message=warning["meaning"])
    return seen.observations
