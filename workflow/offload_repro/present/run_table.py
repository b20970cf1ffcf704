"""All of a target's run JSONs -> one table, a line per row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from offload_repro.core import memory
from offload_repro.core.files import write_atomically
from offload_repro.core.results import read_result


def table_line(result: dict[str, Any]) -> dict[str, Any]:
    provenance = result["provenance"]
    runtime = result.get("runtime_memory") or {}
    losses = result.get("losses") or []
    return {
        "row": result["row"],
        "table": result["table"],
        "label": result["label"],
        "target": result["target"],
        "evidence": "measured",
        "status": result["status"],
        "published_outcome": result["published_outcome"],
        "message": result["message"],
        "steps_completed": result["steps_completed"],
        "step_time_s": result.get("step_time_s"),
        "tflops_per_device": result.get("tflops_per_device"),
        "tokens_per_s_per_device": result.get("tokens_per_s_per_device"),
        "first_loss": losses[0] if losses else None,
        "final_loss": losses[-1] if losses else None,
        "compiled_device_bytes": memory.device_bytes(result.get("compiled_memory")),
        "compiled_host_bytes": memory.host_bytes(result.get("compiled_memory")),
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
    frame = pd.DataFrame([table_line(read_result(path, "run")) for path in run_files])
    write_atomically(out_csv, frame.to_csv(index=False))
    return frame
