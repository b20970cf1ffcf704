"""Compiled evidence for one row: its full-size MaxText train step compiled for a GPU target.

Runs `offload_repro.produce.aot` in a process of its own with the row's XLA_FLAGS, then judges fits /
out of memory from the per-device memory analysis against the target's device memory, checks
the offload mechanism (host buffers against the analytic bytes of the offloaded tensors) and
records XLA's own memory warnings. The JSON is written atomically, whatever happened.
"""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from offload_repro.core import gpu, memory, provenance
from offload_repro.core.data import Row, Target
from offload_repro.core.files import REPO_ROOT, read_json
from offload_repro.core.observation import Observation, Observer
from offload_repro.core.process import fresh_work_dir, package_environment, run_logged
from offload_repro.core.results import write_result
from offload_repro.produce import maxtext_args
from offload_repro.produce.analytic import row_accounting
from offload_repro.produce.aot import MEMORY_WARNING

# A compile-only GPU gets nothing from autotuning: shard autotuning needs GPUs to share results
# with, and autotune level 0 halves the compile while every row's memory analysis stays
# byte-identical (tests/test_workflow.py compiles every row both ways to show it; the program
# digest changes, since untuned fusions carry a default backend config).
COMPILE_ONLY_FLAGS = ("--xla_gpu_shard_autotuning=false", "--xla_gpu_autotune_level=0")
DEFAULT_AUTOTUNING = ("--xla_gpu_shard_autotuning=false",)
REDUCED_TO = re.compile(r"only reduced to [\d.]+GiB \((\d+) bytes\)")


def compile_overrides(row: Row, target: Target) -> dict[str, Any]:
    """The row as it runs on the target (its scale rule applied), set up for a compile-only GPU."""
    spec = target.spec["compile"]
    overrides = maxtext_args.target_overrides(row, target)
    for key in spec.get("drop", []):
        overrides.pop(key, None)
    overrides.update(spec.get("families", {}).get(row.family, {}))
    overrides.update(spec["maxtext"])
    devices = [int(n) for n in spec["topology"].split("x")]
    overrides.update(
        internal_compile=True,
        internal_compile_num_devices=devices[0] * devices[1] * devices[2],
        compile_topology="gpu-aot",
        compile_topology_num_slices=1,
    )
    return overrides


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


def compile_row(
    row: Row,
    target: Target,
    out_json: Path,
    work_dir: Path,
    python: str = sys.executable,
    compile_only_flags: tuple[str, ...] = COMPILE_ONLY_FLAGS,
) -> dict[str, Any]:
    work_dir = fresh_work_dir(work_dir)
    spec = target.spec["compile"]
    description_path = REPO_ROOT / spec["description_file"]
    description = description_path.read_text(encoding="utf-8")
    overrides = compile_overrides(row, target)
    overrides.update(base_output_directory=str(work_dir / "output"), run_name=row.id)
    arguments = [str(maxtext_args.base_config()), *maxtext_args.as_arguments(overrides)]
    stats_file, log_file = work_dir / "aot.json", work_dir / "compile.log"
    env = package_environment(
        {"XLA_FLAGS": maxtext_args.xla_flags(row, list(compile_only_flags)), "JAX_PLATFORMS": "cpu"}
    )
    command = [
        python,
        "-m",
        "offload_repro.produce.aot",
        str(stats_file),
        str(description_path),
        spec["topology"],
        str(gpu.cudnn_version(description)),
        "--",
        *arguments,
    ]

    returncode, wall_s = run_logged(command, env, work_dir, log_file)
    log_text = log_file.read_text(encoding="utf-8", errors="replace")
    stats = read_json(stats_file) if stats_file.exists() else {}
    capacity = gpu.capacity_bytes_of(description)

    result: dict[str, Any] = {
        "row": row.id,
        "table": row.table,
        "target": target.name,
        "evidence": "compiled",
        "status": "ok",
        "message": None,
        "devices": stats.get("devices"),
        "mesh": stats.get("mesh"),
        "capacity_bytes": capacity,
        "xla_memory_warnings": [],
        "compile_seconds": stats.get("compile_seconds"),
        "peak_rss_bytes": stats.get("peak_rss_bytes"),
        "assumptions": [*spec.get("assumptions", []), *row.assumptions],
    }
    exception = stats.get("exception")
    if returncode != 0 or not stats or exception:
        result["status"] = "error"
        result["message"] = (
            f"{exception['type']}: {exception['message']}" if exception else f"compile exited with status {returncode}"
        )[:2000]
    else:
        analysis = stats["memory"]
        used, host = memory.device_bytes(analysis), memory.host_bytes(analysis)
        result.update(
            memory=analysis,
            device_bytes=used,
            host_bytes=host,
            **memory.fit(used, capacity),
            hlo=stats["hlo"],
            hlo_sha256=stats["hlo_sha256"],
            mechanism=mechanism(row, host, stats["hlo"], overrides),
            xla_memory_warnings=explain_warnings(log_text, used, host),
            **memory.host_fit(host, target.spec["hardware"].get("host_memory_gb_per_gpu")),
            cost=stats.get("cost"),
            model_tflops_per_device_per_step=stats.get("model_tflops_per_device_per_step"),
        )
    result["provenance"] = {
        "maxtext_arguments": arguments,
        "xla_flags": env["XLA_FLAGS"],
        "target_description": spec["description_file"],
        "topology": spec["topology"],
        "declared_cudnn": gpu.cudnn_version(description),
        "versions": {name: metadata.version(name) for name in ("jax", "jaxlib", "jax-cuda12-plugin", "maxtext")},
        "wall_time_s": round(wall_s, 2),
        "compile_log": str(log_file.relative_to(REPO_ROOT) if log_file.is_relative_to(REPO_ROOT) else log_file),
        **provenance.stamp(),
    }
    return write_result(out_json, "compile", result)


def explain_warnings(log_text: str, device: int, host: int) -> list[dict[str, Any]]:
    """XLA's rematerialisation warnings, each with what it means for this program.

    The pass counts buffers that are about to be offloaded as device memory, so on an offload
    row its 'only reduced to' is device + host, not a contradiction of the device figure."""
    device_gib, host_gib = memory.gib(device), memory.gib(host)
    explained = []
    for found in MEMORY_WARNING.finditer(log_text):
        text = found.group(0).strip()
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
