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

from offload_repro.core import provenance
from offload_repro.core.data import Row, Target
from offload_repro.core.files import REPO_ROOT, read_json, write_json
from offload_repro.core.process import fresh_work_dir, package_environment, run_logged
from offload_repro.present.collect import device_bytes, host_bytes
from offload_repro.produce import maxtext_args
from offload_repro.produce.analytic import GIB, row_accounting
from offload_repro.produce.aot import MEMORY_WARNING


def cudnn_version(description: str) -> int:
    """'dnn_version: "9.15.0"' -> 91500, the integer jax's cuDNN check returns."""
    found = re.search(r'dnn_version:\s*"(\d+)\.(\d+)\.(\d+)"', description)
    if not found:
        raise ValueError("target description has no dnn_version")
    major, minor, patch = (int(part) for part in found.groups())
    return major * 10000 + minor * 100 + patch


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
    row: Row, target: Target, out_json: Path, work_dir: Path, python: str = sys.executable
) -> dict[str, Any]:
    work_dir = fresh_work_dir(work_dir)
    spec = target.spec["compile"]
    description_path = REPO_ROOT / spec["description_file"]
    description = description_path.read_text(encoding="utf-8")
    overrides = compile_overrides(row, target)
    overrides.update(base_output_directory=str(work_dir / "output"), run_name=row.id)
    arguments = [str(maxtext_args.base_config()), *maxtext_args.as_arguments(overrides)]
    stats_file, log_file = work_dir / "aot.json", work_dir / "compile.log"
    # Shard autotuning needs GPUs to share results with; off for a compile-only target.
    env = package_environment(
        {"XLA_FLAGS": maxtext_args.xla_flags(row, ["--xla_gpu_shard_autotuning=false"]), "JAX_PLATFORMS": "cpu"}
    )
    command = [
        python,
        "-m",
        "offload_repro.produce.aot",
        str(stats_file),
        str(description_path),
        spec["topology"],
        str(cudnn_version(description)),
        "--",
        *arguments,
    ]

    returncode, wall_s = run_logged(command, env, work_dir, log_file)
    log_text = log_file.read_text(encoding="utf-8", errors="replace")
    stats = read_json(stats_file) if stats_file.exists() else {}
    capacity = int(re.search(r"device_memory_size:\s*(\d+)", description).group(1))

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
        "xla_memory_warnings": sorted(set(MEMORY_WARNING.findall(log_text))),
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
        memory = stats["memory"]
        used = device_bytes(memory)
        host = host_bytes(memory)
        result.update(
            memory=memory,
            device_bytes=used,
            host_bytes=host,
            fits=used <= capacity,
            margin_gib=(capacity - used) / GIB,
            hlo=stats["hlo"],
            hlo_sha256=stats["hlo_sha256"],
            mechanism=mechanism(row, host, stats["hlo"], overrides),
        )
    result["provenance"] = {
        "maxtext_arguments": arguments,
        "xla_flags": env["XLA_FLAGS"],
        "target_description": spec["description_file"],
        "topology": spec["topology"],
        "declared_cudnn": cudnn_version(description),
        "versions": {name: metadata.version(name) for name in ("jax", "jaxlib", "jax-cuda12-plugin", "maxtext")},
        "wall_time_s": round(wall_s, 2),
        "compile_log": str(log_file.relative_to(REPO_ROOT) if log_file.is_relative_to(REPO_ROOT) else log_file),
        **provenance.stamp(),
    }
    write_json(out_json, result)
    return result
