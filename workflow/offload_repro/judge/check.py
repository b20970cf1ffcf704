"""Claims x evidence -> verdicts. Every claim gets one; none is silently skipped.

Per claim, each evidence kind allowed to judge it gives a judgement: pass, fail,
not-comparable (with the reason and the command that would judge it) or error. The claim's
verdict: error if any judgement errs, else fail if any fails, else pass if any passes,
else not-comparable.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from offload_repro.core.data import DataError, validate
from offload_repro.core.files import read_yaml
from offload_repro.judge.evidence import Evidence

VERDICTS = ("pass", "fail", "not-comparable", "error")


def load_claims(path: str | Path) -> list[dict[str, Any]]:
    data = read_yaml(path)
    validate(data, "claims", path)
    ids = [claim["id"] for claim in data["claims"]]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise DataError(f"{path}: claim ids used twice: {duplicates}")
    return data["claims"]


def judge_command(target: str) -> str:
    return f".venv/bin/snakemake --workflow-profile workflow/profiles/slurm --config target={target}"


def within(observed: float, published: float, tolerance: dict[str, Any]) -> bool:
    if "absolute" in tolerance:
        return abs(observed - published) <= tolerance["absolute"]
    return abs(observed - published) <= tolerance["relative"] * abs(published)


def _not_comparable(reason: str, command: str | None = None) -> dict[str, Any]:
    return {"verdict": "not-comparable", "reason": reason, "command": command}


def judge_one(
    claim: dict[str, Any], rule: dict[str, Any], evidence: Evidence | None, qualifying: dict[str, list[str]]
) -> dict[str, Any]:
    """One claim judged by one evidence kind; `qualifying` maps a hardware class to its targets."""
    check, kind = claim["check"], rule["evidence"]
    hardware = rule.get("hardware")
    base = {"evidence": kind, "source": evidence.source if evidence else None}
    if evidence is None:
        return base | _not_comparable(f"no {kind} evidence in this run")
    if hardware and hardware not in evidence.judges:
        targets = qualifying.get(hardware, [])
        names = " / ".join(targets) or "no target file yet"
        reason = f"needs {kind} evidence from {hardware} targets ({names}); here it is from: {evidence.source}"
        return base | _not_comparable(reason, judge_command(targets[0]) if targets else None)
    missing = [row for row in check["rows"] if row not in evidence.rows]
    if missing:
        return base | _not_comparable(f"rows not run here: {', '.join(missing)}")
    observed_rows = {row: evidence.rows[row] for row in check["rows"]}
    errors = [f"{row}: {obs['message']}" for row, obs in observed_rows.items() if obs["status"] == "error"]
    if errors:
        return base | {"verdict": "error", "reason": "; ".join(errors)}
    return base | _evaluate(claim, rule, observed_rows)


def _metric(observed_rows: dict[str, dict[str, Any]], metric: str) -> tuple[dict[str, float], str | None]:
    values, problems = {}, []
    for row, observed in observed_rows.items():
        if observed.get(metric) is not None:
            values[row] = observed[metric]
        elif observed.get("outcome") == "oom":
            problems.append(f"{row} ran out of memory")
        else:
            problems.append(f"{row} did not report {metric}")
    return values, "; ".join(problems) or None


def _evaluate(claim: dict[str, Any], rule: dict[str, Any], observed_rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    check = claim["check"]
    rows = check["rows"]
    if check["type"] == "outcome":
        outcome = observed_rows[rows[0]].get("outcome")
        return {"verdict": "pass" if outcome == check["expect"] else "fail", "observed": outcome}
    values, problem = _metric(observed_rows, check["metric"])
    if problem:
        # An OOM where the claim needs a number is a result that contradicts it; anything else is an error.
        oom = all("out of memory" in part for part in problem.split("; "))
        return {"verdict": "fail" if oom else "error", "reason": problem, "observed_rows": values}
    if check["type"] in ("value", "ratio"):
        observed = values[rows[0]] if check["type"] == "value" else values[rows[0]] / values[rows[1]] - 1
        tolerance = rule.get("tolerance", claim["tolerance"])
        published = claim["published"]
        return {
            "verdict": "pass" if within(observed, published, tolerance) else "fail",
            "observed": observed,
            "deviation": observed - published,
            "relative_deviation": (observed - published) / published if published else None,
            "tolerance": tolerance,
            "observed_rows": values,
        }
    if check["type"] == "greater":
        return {"verdict": "pass" if values[rows[0]] > values[rows[1]] else "fail", "observed_rows": values}
    pick = max if check["type"] == "fastest" else min
    chosen = pick(values, key=values.__getitem__)
    return {"verdict": "pass" if chosen == check["expect"] else "fail", "observed": chosen, "observed_rows": values}


def overall(judgements: list[dict[str, Any]]) -> str:
    verdicts = {j["verdict"] for j in judgements}
    for verdict in ("error", "fail", "pass"):
        if verdict in verdicts:
            return verdict
    return "not-comparable"


def check_claims(
    claims: list[dict[str, Any]], evidence: dict[str, Evidence], qualifying: dict[str, list[str]]
) -> dict[str, Any]:
    results = []
    for claim in claims:
        judgements = [judge_one(claim, rule, evidence.get(rule["evidence"]), qualifying) for rule in claim["judged_by"]]
        results.append(
            {
                "id": claim["id"],
                "kind": claim["kind"],
                "statement": claim["statement"],
                "published": claim.get("published"),
                "unit": claim.get("unit"),
                "tolerance": claim.get("tolerance"),
                "citation": claim["citation"],
                "verdict": overall(judgements),
                "judgements": judgements,
            }
        )
    counts = Counter(result["verdict"] for result in results)
    return {"counts": {verdict: counts.get(verdict, 0) for verdict in VERDICTS}, "claims": results}
