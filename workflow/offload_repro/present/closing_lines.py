"""The main job's closing lines: the verdict counts, each row that failed with its cause, the page.

They only print what the verdicts and the evidence table hold: a failed result's status line
carries its cause as its message (core/failure.py wrote it where the process failed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from offload_repro.core.results import read_result

PREFIX = "offload-repro:"
WHERE = {"measured": "on", "compiled": "for", "predicted": "for"}


def failed(observations: list[dict[str, Any]]) -> list[str]:
    """One line per failed row and cause, with every evidence that failed with it: status `error`,
    and a measured run that ran out of memory (a prediction's `oom` is a program that does not fit,
    not a failure)."""
    causes: dict[tuple[str, str, str], list[str]] = {}
    for obs in observations:
        if obs["metric"] != "status" or obs["at"] is not None or obs["value"] == "ok":
            continue
        if obs["value"] == "oom" and obs["evidence"] != "measured":
            continue
        subject = obs["row"] or (f"policy {obs['policy']}" if obs.get("policy") else obs["source"])
        cause = " ".join((obs["message"] or "no message").split())  # one console line
        where = (
            f"{obs['evidence']} {WHERE.get(obs['evidence'], 'on')} {obs['target']}"
            if obs["target"]
            else obs["evidence"]
        )
        causes.setdefault((obs["value"], subject, cause), []).append(where)
    return [
        f"{PREFIX} {status}: {subject} ({', '.join(wheres)}): {cause}"
        for (status, subject, cause), wheres in causes.items()
    ]


def summary_lines(verdicts_path: Path, page: Path, evidence_path: Path | None = None) -> list[str]:
    verdicts = read_result(verdicts_path, "verdicts")
    counts = ", ".join(f"{count} {verdict}" for verdict, count in verdicts["finding_counts"].items())
    checks = verdicts["check_counts"]
    held = ", ".join(f"{count} {verdict}" for verdict, count in checks.items() if count)
    claims, findings = sum(verdicts["counts"].values()), len(verdicts["findings"])
    line = f"{PREFIX} {verdicts['target']}: {counts} (of {findings} findings, the source's {claims} claims)"
    lines = [line + (f"; its own checks: {held} (of {sum(checks.values())})" if held else "")]
    chosen = (verdicts.get("settings") or {}).get("chosen") or []
    if chosen and verdicts.get("under_defaults"):
        # the headline is under the settings the source's outcomes chose; the defaults beside it
        defaults = verdicts["under_defaults"]["finding_counts"]
        under = ", ".join(f"{count} {verdict}" for verdict, count in defaults.items())
        lines[0] += f"; under {' + '.join(chosen)}, which the source's outcomes chose"
        lines.append(f"{PREFIX} {verdicts['target']}: under the defaults: {under}")
    if evidence_path is not None:
        lines += failed(read_result(evidence_path, "evidence")["observations"])
    return [*lines, f"{PREFIX} report: {page}"]
