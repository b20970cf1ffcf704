"""Every result file -> one table of observations (results/<target>/evidence.json).

Each file is read and validated against the schema its own `kind` names, then turned into
observations by the observer its kind registers (offload_repro.judge.result_kinds); every metric
is one judge/metric_names.py knows. Where a row was both predicted and measured on one target, the
prediction's error against the run is an observation too. The table also lists every file it read,
with its status and provenance, so a reader can follow a number to its file, and, as `details`,
the facts of a whole result that the report shows as they are (a prediction's calibration and
error tables, the validation stage's), under the result kind that declares them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from offload_repro.core.observation import Observation
from offload_repro.core.results import read_any, write_result
from offload_repro.judge import metric_names, observers
from offload_repro.judge.result_kinds import RESULT_KINDS

SOURCE_FIELDS = ("row", "target", "status", "message", "failure", "provenance")


class UnknownMetric(ValueError):
    pass


def observe_files(paths: list[str | Path]) -> tuple[list[Observation], list[dict[str, Any]], list[dict[str, Any]]]:
    """(observations, sources, details) of the result files."""
    observations: list[Observation] = []
    sources: list[dict[str, Any]] = []
    details: list[dict[str, Any]] = []
    for path in paths:
        result = read_any(path)
        kind = RESULT_KINDS.get(result["kind"])
        if kind is None:
            continue  # evidence tables and verdicts are not evidence
        found = kind.observe(result, str(path))
        unknown = sorted({o.metric for o in found if not metric_names.known(o.metric)})
        if unknown:
            raise UnknownMetric(f"{path}: metrics {unknown} are not named in offload_repro/judge/metric_names.py")
        observations += found
        copied = {name: result.get(name) for name in SOURCE_FIELDS} | {"assumptions": result.get("assumptions", [])}
        sources.append({"file": str(path), "kind": kind.name, "evidence": kind.evidence, **copied})
        if kind.details:
            fields = {name: result[name] for name in kind.details if name in result}
            details.append({"kind": kind.name, "target": result.get("target"), "file": str(path), "fields": fields})
    return observations + observers.against_measured(observations), sources, details


def detail(evidence: dict[str, Any], kind: str, target: str | None = None) -> dict[str, Any] | None:
    """The details of the result of `kind` (for `target`, where given) the table holds, with its file."""
    for entry in evidence.get("details", []):
        if entry["kind"] == kind and (target is None or entry["target"] == target):
            return {**entry["fields"], "file": entry["file"]}
    return None


def first_source(sources: list[dict[str, Any]], kind: str, **where: Any) -> dict[str, Any] | None:
    """The first source file of `kind` whose fields match `where` (e.g. a run with provenance)."""
    for source in sources:
        if source["kind"] == kind and all(source.get(name) == value for name, value in where.items()):
            return source
    return None


def build(paths: list[str | Path], target: str, out_json: str | Path) -> dict[str, Any]:
    observations, sources, details = observe_files(paths)
    table = {
        "target": target,
        "observations": [o.record() for o in observations],
        "sources": sources,
        "details": details,
    }
    return write_result(out_json, "evidence", table)
