"""Analytic evidence: every row's saved and offloaded activation bytes as published
(core/accounting.py), written as one result file."""

from __future__ import annotations

from importlib import metadata
from typing import Any

from offload_repro.core.accounting import row_accounting
from offload_repro.core.data import Row
from offload_repro.core.results import write_result


def write_accounting(rows: list[Row], out_json: str) -> dict[str, Any]:
    """Every row's accounting as published (full scale), as one result file."""
    return write_result(
        out_json,
        "analytic",
        {
            "status": "ok",
            "message": None,
            "maxtext_version": metadata.version("maxtext"),
            "rows": [row_accounting(row) for row in rows],
        },
    )
