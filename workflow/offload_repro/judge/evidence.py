"""Observations per evidence kind, in one shape: {row id: {metric: value}} plus where they came from.

measured: the target's run JSONs; compiled: the GPU compile JSONs; analytic: bytes computed
from MaxText's configs. A metric that the evidence cannot observe is simply absent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offload_repro.core.data import Row, Target
from offload_repro.core.files import read_json
from offload_repro.present.collect import device_bytes
from offload_repro.produce.analytic import GIB, MIB, row_accounting

OUTCOME_OF_STATUS = {"ok": "fits", "oom": "oom"}


@dataclass
class Evidence:
    kind: str
    source: str  # what produced it, in words ("1 CPU, scaled-down models")
    target: str | None = None
    judges: tuple[str, ...] = ()  # hardware classes of the target (experiments/targets, `judges`)
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)


def measured(run_files: list[Path], target: Target) -> Evidence:
    evidence = Evidence("measured", target.spec["title"], target=target.name, judges=tuple(target.judges))
    for path in run_files:
        run = read_json(path)
        observed: dict[str, Any] = {"status": run["status"], "message": run["message"]}
        if run["status"] in OUTCOME_OF_STATUS:
            observed["outcome"] = OUTCOME_OF_STATUS[run["status"]]
        if run["status"] == "ok":
            observed["tflops_per_device"] = run.get("tflops_per_device")
            peak = (run.get("runtime_memory") or {}).get("peak_bytes_in_use") or run.get("nvml_peak_used_bytes")
            if peak is not None:
                observed["gpu_memory_gib"] = peak / GIB
        evidence.rows[run["row"]] = observed
    return evidence


def compiled(compile_files: list[Path], target: Target) -> Evidence:
    source = f"XLA memory analysis of the train step compiled for {target.spec['title']}, full scale"
    evidence = Evidence("compiled", source, target=target.name, judges=tuple(target.judges))
    for path in compile_files:
        result = read_json(path)
        observed: dict[str, Any] = {"status": result["status"], "message": result.get("message")}
        if result["status"] == "ok":
            memory = result["memory"]
            observed.update(
                gpu_memory_gib=device_bytes(memory) / GIB,
                host_memory_gib=result["host_bytes"] / GIB,
                outcome="fits" if result["fits"] else "oom",
            )
        evidence.rows[result["row"]] = observed
    return evidence


def analytic(rows: list[Row]) -> Evidence:
    evidence = Evidence("analytic", "bytes computed from MaxText's model configs")
    for row in rows:
        accounting = row_accounting(row)
        observed: dict[str, Any] = {
            "status": "ok",
            "message": None,
            "host_memory_gib": accounting["offloaded_bytes_per_step"] / GIB,
            "device_saved_gib": accounting["device_saved_bytes_per_step"] / GIB,
            "offloaded_mib_per_layer": accounting["offloaded_bytes_per_layer"] / MIB,
        }
        for tensor, sizes in accounting["tensors"].items():
            per_layer = sizes["bytes_per_layer"]
            kind = "moe" if "moe" in per_layer else "dense"
            observed[f"{tensor}_mib_per_layer"] = per_layer[kind] / MIB
        evidence.rows[row.id] = observed
    return evidence
