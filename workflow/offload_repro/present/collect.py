"""All of a target's run JSONs -> one table, a line per row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from offload_repro.core.files import read_json, write_atomically


def device_bytes(memory: dict[str, int] | None) -> int | None:
    """Per-device peak estimate from a memory analysis: arguments + outputs not aliased + temporaries."""
    if not memory:
        return None
    return (
        memory["argument_size_in_bytes"]
        + memory["output_size_in_bytes"]
        - memory["alias_size_in_bytes"]
        + memory["temp_size_in_bytes"]
    )


def host_bytes(memory: dict[str, int] | None) -> int | None:
    if not memory:
        return None
    return sum(memory.get(f"host_{kind}_size_in_bytes", 0) for kind in ("argument", "output", "temp")) - memory.get(
        "host_alias_size_in_bytes", 0
    )


def table_line(result: dict[str, Any]) -> dict[str, Any]:
    provenance = result["provenance"]
    runtime = result.get("runtime_memory") or {}
    losses = result.get("losses") or []
    return {
        "row": result["row"],
        "table": result["table"],
        "label": result["label"],
        "target": result["target"],
        "evidence": result["evidence"],
        "status": result["status"],
        "published_outcome": result["published_outcome"],
        "message": result["message"],
        "steps_completed": result["steps_completed"],
        "step_time_s": result.get("step_time_s"),
        "tflops_per_device": result.get("tflops_per_device"),
        "tokens_per_s_per_device": result.get("tokens_per_s_per_device"),
        "first_loss": losses[0] if losses else None,
        "final_loss": losses[-1] if losses else None,
        "compiled_device_bytes": device_bytes(result.get("compiled_memory")),
        "compiled_host_bytes": host_bytes(result.get("compiled_memory")),
        "runtime_peak_device_bytes": runtime.get("peak_bytes_in_use"),
        "host_peak_rss_bytes": result.get("host_peak_rss_bytes"),
        "devices": result.get("devices"),
        "device_kind": provenance.get("device_kind"),
        "xla_flags": provenance.get("xla_flags"),
        "jax": (provenance.get("versions") or {}).get("jax"),
        "maxtext": (provenance.get("versions") or {}).get("maxtext"),
        "wall_time_s": provenance.get("wall_time_s"),
        "project_commit": provenance.get("project_commit"),
    }


def collect(run_files: list[str | Path], out_csv: str | Path) -> pd.DataFrame:
    frame = pd.DataFrame([table_line(read_json(path)) for path in run_files])
    write_atomically(out_csv, frame.to_csv(index=False))
    return frame
