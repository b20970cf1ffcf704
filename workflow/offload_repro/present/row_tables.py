"""The page's tables of rows: each row's flags and placement beside its measured, compiled and
analytic values, grouped by table with the assumptions the table's rows make."""

from __future__ import annotations

from typing import Any

from offload_repro.core.assumptions import sentence
from offload_repro.core.data import Row
from offload_repro.judge import metric_names as names
from offload_repro.present.lookup import Lookup
from offload_repro.present.text import flag_summary, placement_summary


def row_lines(rows: list[Row], lookup: Lookup) -> list[dict[str, Any]]:
    return [
        {
            "row": row,
            "flags": flag_summary(row),
            "placement": placement_summary(row),
            "measured": {
                "status": lookup.value(row.id, "measured", "status"),
                "message": lookup.message(row.id, "measured", "status"),
                "failure": lookup.failure_note(row.id, "measured"),
                "tflops": lookup.value(row.id, "measured", "tflops_per_device"),
                "tflops_spread": lookup.spread(row.id, "measured", "tflops_per_device"),
                "step_s": lookup.value(row.id, "measured", "step_time_s"),
                "step_spread": lookup.spread(row.id, "measured", "step_time_s"),
                "final_loss": lookup.value(row.id, "measured", "final_loss"),
            },
            "compiled": {
                "status": lookup.value(row.id, "compiled", "status"),
                "message": lookup.message(row.id, "compiled", "status"),
                "failure": lookup.failure_note(row.id, "compiled"),
                names.DEVICE_GIB: lookup.value(row.id, "compiled", names.DEVICE_GIB),
                names.HOST_GIB: lookup.value(row.id, "compiled", names.HOST_GIB),
                names.OUTCOME: lookup.value(row.id, "compiled", names.OUTCOME),
                names.MARGIN_GIB: lookup.value(row.id, "compiled", names.MARGIN_GIB),
                "host_buffers": lookup.value(row.id, "compiled", "host_buffers"),
                "expected_host_buffers": lookup.value(row.id, "compiled", "expected_host_buffers"),
                "host_buffer_gib": lookup.value(row.id, "compiled", "host_buffer_gib"),
                "expected_host_buffer_gib": lookup.value(row.id, "compiled", "expected_host_buffer_gib"),
                "async_pairs": lookup.value(row.id, "compiled", "async_pairs"),
                names.HLO_SHA256: lookup.value(row.id, "compiled", names.HLO_SHA256),
                "warnings": lookup.all(row.id, "compiled", "xla_memory_warning"),
                "moe_dispatch": lookup.value(row.id, "compiled", "moe_dispatch"),
            },
            "analytic": {m: lookup.value(row.id, "analytic", m) for m in (names.DEVICE_SAVED_GIB, names.OFFLOADED_GIB)},
        }
        for row in rows
    ]


def tables(rows: list[Row], lookup: Lookup) -> list[dict[str, Any]]:
    grouped: dict[str, dict[str, Any]] = {}
    for row, line in zip(rows, row_lines(rows, lookup), strict=True):
        table = grouped.setdefault(row.table, {"name": row.table, "lines": [], "assumptions": []})
        table["lines"].append(line)
        table["assumptions"] += [sentence(a) for a in row.assumptions if sentence(a) not in table["assumptions"]]
    return list(grouped.values())
