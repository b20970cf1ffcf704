"""Each type of claim check as one function, in a table by type (CHECKS): whether the rows (or
placement policies) a claim is about, as one evidence kind observed them, pass or fail it.

A function takes the claim, the rule of its `judged_by` that names the evidence kind (with the
measured band of that evidence's figure, where it has one: never a second tolerance) and the
observed rows ({row: {metric: value}}), and returns the judgement:
its verdict and what was observed (`reads_metric`: what a row without the check's metric makes it).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from offload_repro.core.evidence_bands import span
from offload_repro.judge import metric_names as names
from offload_repro.judge.claims import subjects
from offload_repro.judge.spread import number, tolerance_text

Record = dict[str, Any]  # a claim, a rule, a judgement, one row's observations or each row's value
Rows = dict[str, Record]  # {row: {metric: value}}
Check = Callable[[Record, Record, Rows], Record]
MetricCheck = Callable[[Record, Record, Rows, Record], Record]


def within(observed: float, published: float, tolerance: dict[str, Any]) -> bool:
    """Within the claim's tolerance: an absolute one, or relative to the published value."""
    if "absolute" in tolerance:
        return abs(observed - published) <= tolerance["absolute"]
    return abs(observed - published) <= tolerance["relative"] * abs(published)


def _out_of_memory(observed: Record) -> bool:
    return observed.get("outcome") == "oom" or observed.get("status") == "oom"


def ran_out_of_memory(row: str, observed: Record) -> str | None:
    """'<row> ran out of memory (its message)' where the row's evidence says so, else None."""
    if not _out_of_memory(observed):
        return None
    return f"{row} ran out of memory" + (f" ({observed['message']})" if observed.get("message") else "")


def _metric(observed_rows: Rows, metric: str) -> tuple[Record, str | None]:
    values, problems = {}, []
    for row, observed in observed_rows.items():
        if observed.get(metric) is not None:
            values[row] = observed[metric]
        elif out_of_memory := ran_out_of_memory(row, observed):
            problems.append(out_of_memory)
        else:
            problems.append(f"{row} did not report {metric}")
    return values, "; ".join(problems) or None


def reads_metric(judge: MetricCheck) -> Check:
    """A check of the check's metric: `judge` gets each row's value of it (`values`), or is not
    called where a row has none."""

    @functools.wraps(judge)
    def check(claim: Record, rule: Record, observed_rows: Rows) -> Record:
        values, problem = _metric(observed_rows, claim["check"]["metric"])
        if problem:
            # An OOM where the claim needs a number is a result that contradicts it; anything else is an error.
            oom = all(_out_of_memory(observed) for row, observed in observed_rows.items() if row not in values)
            if oom and rule["evidence"] == "predicted":
                # A program that does not fit as compiled has no step time to predict. The source ran
                # the row, so what ran differed from it in a setting the source does not state.
                reason = f"{problem}: no step time is predicted for a program that does not fit"
                return {"verdict": "not-comparable", "reason": reason, "observed_rows": values}
            return {"verdict": "fail" if oom else "error", "reason": problem, "observed_rows": values}
        return judge(claim, rule, observed_rows, values)

    return check


def outcome(claim: Record, rule: Record, observed_rows: Rows) -> Record:
    """The row's outcome (it fits, or it runs out of memory) is the one the check expects; read from a
    figure with a measured band (`rule["band"]`, core/evidence_bands.py), decided only where the whole
    band lies on one side of the limit."""
    check = claim["check"]
    seen = observed_rows[subjects(check)[0]]
    observed = seen.get(names.OUTCOME)
    judged = {"verdict": "pass" if observed == check["expect"] else "fail", "observed": observed}
    if seen.get(names.DEVICE_GIB) is None or seen.get(names.ALLOCATOR_LIMIT_GIB) is None:
        return judged
    # how far the row is from its outcome: what it needs against what the allocator leaves it
    needs, limit = seen[names.DEVICE_GIB], seen[names.ALLOCATOR_LIMIT_GIB]
    judged |= {"needs_gib": needs, "limit_gib": limit}
    if found := rule.get("band"):
        low, high = span(found, needs)
        judged["band"] = {"low": low, "high": high, "name": found["name"]}
        # the outcome a run would meet, from the whole band: it fits below the limit, not above it
        if high <= limit or low > limit:
            met = "fits" if high <= limit else "oom"
            judged["verdict"] = "pass" if met == check["expect"] else "fail"
            if met != observed:
                judged["reason"] = (
                    f"needs {number(needs)} GiB as compiled, under the limit of {number(limit)} GiB; but a run holds"
                    f" {number(low)} to {number(high)} GiB by the gaps measured between such a figure and a run"
                    f" ({found['name']}, experiments/evidence-bands.yaml): wholly above the limit"
                )
        else:
            reason = (
                f"needs {number(needs)} GiB as compiled against a limit of {number(limit)} GiB; a run holds"
                f" {number(low)} to {number(high)} GiB by the gaps measured between such a figure and a run"
                f" ({found['name']}, experiments/evidence-bands.yaml): on both sides of the limit, the compiled"
                " figure does not decide the fit"
            )
            judged |= {"verdict": "inconclusive", "reason": reason}
    return judged


def _against_published(claim: Record, rule: Record, observed: float, values: Record) -> Record:
    """An observed number against the claim's published one, within the claim's one tolerance; a figure
    with a measured band (`rule["band"]`) is decided only where the whole band is inside or outside it."""
    tolerance, published = claim["tolerance"], claim["published"]
    judged = {
        "verdict": "pass" if within(observed, published, tolerance) else "fail",
        "observed": observed,
        "deviation": observed - published,
        "relative_deviation": (observed - published) / published if published else None,
        "tolerance": tolerance,
        "observed_rows": values,
    }
    if found := rule.get("band"):
        low, high = span(found, observed)
        judged["band"] = {"low": low, "high": high, "name": found["name"]}
        inside = within(low, published, tolerance) and within(high, published, tolerance)
        allowed = tolerance["absolute"] if "absolute" in tolerance else tolerance["relative"] * abs(published)
        outside = high < published - allowed or low > published + allowed
        judged["verdict"] = "pass" if inside else "fail" if outside else "inconclusive"
        if judged["verdict"] == "inconclusive":
            judged["reason"] = (
                f"{number(observed)} as compiled: a run holds {number(low)} to {number(high)} by the gaps measured"
                f" between such a figure and a run ({found['name']}, experiments/evidence-bands.yaml), which"
                # the tolerance as the claim states it: its upper end (173.5 for 165.2 ±5%) beside GB200's
                # 173.2 GiB limit would read as a second value of the limit
                f" straddles the claim's tolerance, {number(published)} {tolerance_text(tolerance)}"
            )
    return judged


@reads_metric
def value(claim: Record, rule: Record, observed_rows: Rows, values: Record) -> Record:
    """The row's value is the published one."""
    return _against_published(claim, rule, values[subjects(claim["check"])[0]], values)


@reads_metric
def ratio(claim: Record, rule: Record, observed_rows: Rows, values: Record) -> Record:
    """The first row's value over the second's, less one, is the published change."""
    rows = subjects(claim["check"])
    return _against_published(claim, rule, values[rows[0]] / values[rows[1]] - 1, values)


@reads_metric
def greater(claim: Record, rule: Record, observed_rows: Rows, values: Record) -> Record:
    """The first row's value is above the second's."""
    rows = subjects(claim["check"])
    return {"verdict": "pass" if values[rows[0]] > values[rows[1]] else "fail", "observed_rows": values}


@reads_metric
def equal(claim: Record, rule: Record, observed_rows: Rows, values: Record) -> Record:
    """Each row's value equals its value of another metric (`expect_metric`)."""
    check = claim["check"]
    rows = subjects(check)
    expected, problem = _metric(observed_rows, check["expect_metric"])
    if problem:
        return {"verdict": "error", "reason": problem, "observed_rows": values}
    unequal = [row for row in rows if values[row] != expected[row]]
    return {
        "verdict": "fail" if unequal else "pass",
        "observed": f"{len(rows) - len(unequal)} of {len(rows)} rows equal",
        "reason": f"differ: {', '.join(f'{r} {values[r]} vs {expected[r]}' for r in unequal)}" if unequal else None,
        "observed_rows": values,
    }


@reads_metric
def between(claim: Record, rule: Record, observed_rows: Rows, values: Record) -> Record:
    """The row's value is at least `min` (where given) and below `below` (where given)."""
    check = claim["check"]
    found = values[subjects(check)[0]]
    inside = found >= check.get("min", found) and ("below" not in check or found < check["below"])
    return {"verdict": "pass" if inside else "fail", "observed": found, "observed_rows": values}


@reads_metric
def distinct(claim: Record, rule: Record, observed_rows: Rows, values: Record) -> Record:
    """No two rows have the same value."""
    check = claim["check"]
    rows = subjects(check)
    same = sorted({row for row in rows for other in rows if other != row and values[row] == values[other]})
    return {
        "verdict": "fail" if same else "pass",
        "observed": f"{len(set(values.values()))} distinct of {len(rows)}",
        "reason": f"same {check['metric']}: {', '.join(same)}" if same else None,
        "observed_rows": values,
    }


def _chosen(pick: Callable[..., str], claim: Record, values: Record) -> Record:
    chosen = pick(values, key=values.__getitem__)
    return {
        "verdict": "pass" if chosen == claim["check"]["expect"] else "fail",
        "observed": chosen,
        "observed_rows": values,
    }


@reads_metric
def fastest(claim: Record, rule: Record, observed_rows: Rows, values: Record) -> Record:
    """The row the check expects has the largest value (a throughput)."""
    return _chosen(max, claim, values)


@reads_metric
def slowest(claim: Record, rule: Record, observed_rows: Rows, values: Record) -> Record:
    """The row the check expects has the smallest value."""
    return _chosen(min, claim, values)


# Every type the claims schema (workflow/schemas/claims.schema.yaml) allows, in its order, by its function's name.
CHECKS: dict[str, Check] = {
    check.__name__: check for check in (value, ratio, greater, fastest, slowest, outcome, equal, distinct, between)
}


def evaluate(claim: Record, rule: Record, observed_rows: Rows) -> Record:
    """A claim's check on the rows one evidence kind observed, by its type's function."""
    return CHECKS[claim["check"]["type"]](claim, rule, observed_rows)
