"""Transfer budget and recompute cost (what-if), from the compiled programs of every GPU target.

Per offload row and target: the bytes the compiled program keeps in host memory per device
(copied to the host in the forward pass and back in the backward pass), the host link's
bandwidth per direction (cited in the target file), and the time those copies need against the
step time the row would have there. The step time on the source's hardware is MaxText's own
model FLOPs per step (from the compiled config) over the published TFLOPs/s/device; elsewhere
the achieved throughput is scaled by the target's peak dense throughput at the same model-FLOPs
utilisation (an assumption, stated in the result). Recompute cost: XLA's cost analysis of each
compiled step, remat against device-save and offload at the same batch.
Every number here is a what-if: it never judges a throughput claim.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from offload_repro.core.data import Row, Target, load_target
from offload_repro.core.memory import GB
from offload_repro.core.results import read_result, write_result

SOURCE_TARGET = "gb200-nvl72"
ASSUMPTIONS = [
    "Step time on the source's hardware: MaxText's model FLOPs per step and device (from the compiled config) "
    "over the published TFLOPs/s/device of the row.",
    "Step time elsewhere: the same model-FLOPs utilisation as on GB200, scaled by the target's peak dense "
    "throughput for the row's dtype (target file, hardware.peak_dense_tflops, cited).",
    "Copies: every offloaded byte goes to the host once (forward) and back once (backward) per step, at the "
    "link's bandwidth per direction (at most each GPU's share of its CPU's memory bandwidth, where the target"
    " file cites it: every GPU of a CPU copies at once), one direction at a time; no copy overlaps another.",
    "Share of the step: copy time over step time. Under 1 the copies can hide under compute if the schedule "
    "overlaps them; over 1 they cannot, whatever the schedule.",
]


def peak(target: Target, dtype: str) -> float | None:
    return (target.spec["hardware"].get("peak_dense_tflops") or {}).get(dtype)


def budget_line(row: Row, compiled: dict[str, Any], target: Target, source: Target) -> dict[str, Any]:
    host = compiled["hlo"]["host_buffer_bytes"]
    bandwidth = target.host_copy_gb_s_per_direction
    copy_s = 2 * host / (bandwidth * GB) if bandwidth else None
    published = row.published["tflops_per_device"]
    model_tflops = compiled.get("model_tflops_per_device_per_step")
    target_peak, source_peak = peak(target, row.dtype), peak(source, row.dtype)
    achieved = published * target_peak / source_peak if published and target_peak and source_peak else None
    step_s = model_tflops / achieved if model_tflops and achieved else None
    why = None
    if not published:
        why = "the source publishes no throughput for this row"
    elif not target_peak:
        why = f"no peak dense {row.dtype} throughput in experiments/targets/{target.name}.yaml"
    return {
        "row": row.id,
        "target": target.name,
        "offloaded_bytes": host,
        "link": (target.spec["hardware"].get("host_link") or {}).get("name"),
        "link_gb_s_per_direction": bandwidth,
        "copy_s_per_step": copy_s,
        "model_tflops_per_step": model_tflops,
        "achieved_tflops_per_device": achieved,
        "step_s": step_s,
        "copy_share_of_step": copy_s / step_s if copy_s and step_s else None,
        "why_no_share": why,
    }


def write_budget(rows: list[Row], compile_files: list[Path], out_json: Path) -> dict[str, Any]:
    by_id = {row.id: row for row in rows}
    compiled = [read_result(path, "compile") for path in compile_files]
    source = load_target(SOURCE_TARGET)
    lines, recompute = [], []
    for result in compiled:
        row = by_id[result["row"]]
        if result["status"] != "ok":
            continue
        if row.tensors("offload"):
            lines.append(budget_line(row, result, load_target(result["target"]), source))
        if result.get("cost"):
            recompute.append(
                {
                    "row": row.id,
                    "target": result["target"],
                    "xla_tflops_per_step": result["cost"]["flops"] / 1e12,
                    "model_tflops_per_step": result.get("model_tflops_per_device_per_step"),
                }
            )
    message = None if recompute else "XLA gave no cost analysis for these compiles"
    record = {
        "status": "ok",
        "message": message,
        "assumptions": ASSUMPTIONS,
        "transfers": lines,
        "recompute": recompute,
    }
    return write_result(out_json, "budget", record)
