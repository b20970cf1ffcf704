"""Every result file -> one table of observations (results/<target>/evidence.json).

Each file is read and validated against the schema its own `kind` names, then turned into
observations by the observer its kind registers (offload_repro.judge.result_kinds). The table also lists
every file it read, with its status and provenance, so a reader can follow a number to its file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from offload_repro.core.observation import Observation
from offload_repro.core.results import read_any, write_result
from offload_repro.judge.result_kinds import RESULT_KINDS

SOURCE_FIELDS = ("row", "target", "status", "message", "failure")
# Facts of a whole result that the report shows as they are (predicted evidence: its calibration,
# its measured error and that of simpler models and other precisions, its cross-checks by
# construction; validation evidence: its error tables, weak scaling, where the model is off, its
# calibrations and how the runs were compiled); absent from other kinds.
DETAIL_FIELDS = (
    "calibration",
    "uncalibrated",
    "model_error",
    "ablation",
    "by_precision",
    "ruled_out_precisions",
    "cross_checks",
    "errors",
    "weak_scaling",
    "where_off",
    "calibrations",
    "compile",
)


def observe_files(paths: list[str | Path]) -> tuple[list[Observation], list[dict[str, Any]]]:
    observations: list[Observation] = []
    sources: list[dict[str, Any]] = []
    for path in paths:
        result = read_any(path)
        kind = RESULT_KINDS.get(result["kind"])
        if kind is None:
            continue  # evidence tables and verdicts are not evidence
        observations += kind.observe(result, str(path))
        sources.append(
            {
                "file": str(path),
                "kind": kind.name,
                "evidence": kind.evidence,
                **{name: result.get(name) for name in SOURCE_FIELDS},
                "provenance": result.get("provenance"),
                "assumptions": result.get("assumptions", []),
                **{name: result[name] for name in DETAIL_FIELDS if name in result},
            }
        )
    return observations, sources


def build(paths: list[str | Path], target: str, out_json: str | Path) -> dict[str, Any]:
    observations, sources = observe_files(paths)
    return write_result(
        out_json,
        "evidence",
        {"target": target, "observations": [o.record() for o in observations], "sources": sources},
    )
