"""How to redo what a target's page shows: the versions its evidence was produced with, each row's
XLA flags as passed, and the command lines that rerun one row or rebuild the page."""

from __future__ import annotations

from typing import Any

from offload_repro.core.data import Row, Target
from offload_repro.core.optional_stages import SNAKEMAKE
from offload_repro.present.target_command import snakemake_command


def versions(*provenances: dict[str, Any] | None) -> dict[str, str]:
    """Every package version the runs and the compiles recorded, once each ({} when neither did)."""
    found: dict[str, str] = {}
    for recorded in provenances:
        if recorded and recorded.get("python"):
            found.setdefault("Python", recorded["python"])
        for name, version in ((recorded or {}).get("versions") or {}).items():
            if version:
                found.setdefault(name, version)
    return found


def rerun(
    target: Target, rows: list[Row], page: str, run: dict[str, Any] | None, compile: dict[str, Any] | None
) -> dict[str, Any]:
    return {
        "versions": versions(run, compile),
        "everything": snakemake_command(target),
        # the report rule alone, from the verdicts already in results/
        "page": f"{SNAKEMAKE} --cores all results/report/{page} --forcerun report",
        "rows": [
            {
                "row": row,
                "flags": row.xla_flags,
                "unstated": row.unstated_xla_flags,
                # the main job limited to the row: its run, its compile, its prediction, its verdicts
                "command": f"{snakemake_command(target)} 'rows=[\"{row.id}\"]'",
            }
            for row in rows
        ],
    }
