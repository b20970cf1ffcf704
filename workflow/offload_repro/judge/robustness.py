"""Which verdicts hang on settings the source does not state.

Under each alternative of the sensitivity stage (results/whatif/assumptions.json), the compiled
observations of the rows it affects are replaced by those of that alternative's compiles, and the
predicted observations of the target by that alternative's prediction of every row (the stage lists
their result files; the observers read them here, under the rows' own ids). Every claim judged by
compiled or predicted evidence is judged again, by that evidence. A claim is *robust* when its
verdict is the same under every alternative, and otherwise *depends on* the assumptions whose
alternatives change it.

A capacity-frontier claim (a check on a placement policy) is judged under an alternative from the
policy's published rows instead of a new search: memory grows with the micro batch, so a row that
fits bounds the largest fitting micro batch from below and one that does not, from above. Where
those bounds do not decide the claim, it is said so.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from offload_repro.core.results import read_result
from offload_repro.core.variants import variant_id
from offload_repro.judge.observers import compile_observations, predicted_observations

Judge = Callable[[list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]]
VARIED = ("compiled", "predicted")  # the evidence an alternative assumption changes


def substituted(
    observations: list[dict[str, Any]],
    replacement: list[dict[str, Any]],
    rows: set[str],
    target: str,
    predicted_rows: set[str] | None = None,
) -> list[dict[str, Any]]:
    """The observations with the target's compiled ones of `rows` replaced, and, when the replacement
    has a prediction, the predicted ones of `predicted_rows` (all of them where it is None): a row
    whose model the alternative does not touch keeps the default prediction, band and all."""
    predicted = any(o["evidence"] == "predicted" for o in replacement)

    def varied(o: dict[str, Any]) -> bool:
        return predicted_rows is None or o["row"] in predicted_rows

    def replaced(o: dict[str, Any]) -> bool:
        compiled = o["evidence"] == "compiled" and o["row"] in rows
        return o["target"] == target and (compiled or (o["evidence"] == "predicted" and predicted and varied(o)))

    kept = [o for o in replacement if o["evidence"] != "predicted" or varied(o)]
    return [o for o in observations if not replaced(o)] + kept


def predicted_rows(prediction: dict[str, Any] | None, affects: list[str]) -> set[str] | None:
    """The rows whose prediction an alternative can change: every row of a model an affected row
    belongs to (a model is calibrated as a whole); None where it has no prediction. The others keep
    the default's, which also covers programs an alternative's own prediction does not (its band)."""
    if prediction is None:
        return None
    kind_of = predicted_kinds(prediction)
    touched = {kind_of[row][0] for row in affects if row in kind_of}
    return {row for row, (family, _) in kind_of.items() if family in touched}


def predicted_kinds(prediction: dict[str, Any]) -> dict[str, tuple[str, str | None]]:
    """Each row a prediction predicted: its model family and the precision it is predicted at."""
    return {row["row"]: (row["family"], row.get("precision")) for row in prediction["rows"]}


def frontier_verdict(
    claim: dict[str, Any], outcomes: dict[str, tuple[float, str]], policy_rows: dict[str, list[str]]
) -> tuple[str, str]:
    """(verdict, why) of a `between` claim on a frontier policy, from its rows' fits / OOM."""
    (policy,) = claim["check"]["policies"]
    points = [outcomes[row] for row in policy_rows.get(policy, []) if row in outcomes]
    fitting = [mb for mb, outcome in points if outcome == "fits"]
    failing = [mb for mb, outcome in points if outcome == "oom"]
    low = max(fitting, default=None)  # the largest fitting micro batch is at least this
    high = min(failing, default=None)  # ... and below this
    lowest, below = claim["check"].get("min"), claim["check"].get("below")
    if (high is not None and lowest is not None and high <= lowest) or (
        low is not None and below is not None and low >= below
    ):
        return "fail", f"bounded by its rows to [{low}, {high})"
    holds_low = lowest is None or (low is not None and low >= lowest)
    holds_high = below is None or (high is not None and high <= below)
    if holds_low and holds_high:
        return "pass", f"bounded by its rows to [{low}, {high})"
    return "undetermined", f"its rows bound it only to [{low}, {high}): a frontier search under it would decide"


def alternative_observations(
    alternative: dict[str, Any], target: str, prediction: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The compiled observations of an alternative's rows, from their result files, under the rows'
    own ids and the target they replace, and those of its `prediction`."""
    found = []
    for row, compiled in alternative["results"].items():
        if compiled and compiled.get("file"):
            result = read_result(compiled["file"], "compile")
            found += [
                {**o.record(), "row": row, "target": target} for o in compile_observations(result, compiled["file"])
            ]
    if prediction is not None:
        found += [o.record() for o in predicted_observations(prediction, alternative["predicted"])]
    return found


def uncalibrated(prediction: dict[str, Any] | None) -> dict[str, list[str]]:
    """Per row an alternative's `prediction` predicted, why its model family could not be calibrated
    under it at the precision it is predicted at (no entry where it could): a claim left unjudged is
    told its own family's reasons, not another family's nor those of a precision it is not predicted at."""
    if prediction is None:
        return {}
    predicted = predicted_kinds(prediction)
    reasons: dict[tuple[str, str | None], list[str]] = {}
    for key, entry in prediction.get("uncalibrated", {}).items():
        family = predicted.get(entry["row"], ("", None))[0]
        reasons.setdefault((family, key.rpartition("/")[2]), []).append(entry["reason"])
    return {row: reasons[kind] for row, kind in predicted.items() if kind in reasons}


def verdicts_of(
    claims: list[dict[str, Any]],
    observations: list[dict[str, Any]],
    judge: Judge,
    target: str,
    policy_rows: dict[str, list[str]],
    micro_batches: dict[str, float],
) -> dict[str, tuple[str, str | None]]:
    """Each claim's compiled verdict on these observations (a frontier claim's from its rows' bounds)."""
    judged = judge(claims, observations)
    outcomes = {
        o["row"]: (micro_batches.get(o["row"], 0), o["value"])
        for o in observations
        if o["evidence"] == "compiled" and o["target"] == target and o["metric"] == "outcome" and o["at"] is None
    }
    found: dict[str, tuple[str, str | None]] = {}
    for claim in claims:
        if "policies" in claim["check"]:
            found[claim["id"]] = frontier_verdict(claim, outcomes, policy_rows)
        else:
            verdict = judged[claim["id"]]  # a verdict, or (verdict, reason)
            found[claim["id"]] = verdict if isinstance(verdict, tuple) else (verdict, None)
    return found


def robustness(
    claims: list[dict[str, Any]],
    observations: list[dict[str, Any]],
    sensitivity: dict[str, Any],
    judge: Judge,
    policy_rows: dict[str, list[str]],
    micro_batches: dict[str, float],
) -> dict[str, dict[str, Any]]:
    """Per claim judged by compiled or predicted evidence: robust, or the assumptions whose
    alternatives change its verdict, with the verdict under each alternative. An alternative that
    does not compile decides nothing: it is listed as untested, as is a claim its evidence cannot
    judge under an alternative (no prediction, none calibrated, a row out of memory)."""
    target = sensitivity["target"]
    verdicts = functools.partial(
        verdicts_of, judge=judge, target=target, policy_rows=policy_rows, micro_batches=micro_batches
    )
    varied = [c for c in claims if any(rule["evidence"] in VARIED for rule in c["judged_by"])]
    default = verdicts(varied, observations)
    # a claim its evidence cannot judge by default (a calibration row's own throughput) is neither
    # robust nor dependent: it is left out
    compiled_claims = [c for c in varied if default[c["id"]][0] != "not-comparable"]
    found = {
        c["id"]: dict(robust=True, by=varied_by(c), default=default[c["id"]][0], under=[], depends_on=[], untested=[])
        for c in compiled_claims
    }
    for entry in sensitivity["assumptions"]:
        for alternative in entry["alternatives"]:
            # read once, for everything below
            prediction = read_result(alternative["predicted"], "predicted") if alternative.get("predicted") else None
            replacement = alternative_observations(alternative, target, prediction)
            rows = {o["row"] for o in replacement if o["evidence"] == "compiled"}
            results = [(row, r) for row, r in alternative["results"].items() if r]
            errors = {row: f"{row} does not compile: {r['message']}" for row, r in results if r["status"] == "error"}
            # a row that does not fit is not predicted: a speed claim on it is left untested, saying so
            too_big = {
                row: f"{row} is out of memory under it ({r['device_gib']:.1f} GiB)"
                for row, r in results
                if r["status"] == "ok" and not r.get("fits", True)
            }
            seen = substituted(observations, replacement, rows, target, predicted_rows(prediction, entry["affects"]))
            under = verdicts(compiled_claims, seen)
            name = variant_id(entry, alternative)
            gaps = uncalibrated(prediction)
            for claim in compiled_claims:
                verdict, why = under[claim["id"]]
                mine = found[claim["id"]]
                check = claim["check"]
                touched = set(check.get("rows", [])) | {
                    row for policy in check.get("policies", []) for row in policy_rows.get(policy, [])
                }
                if touched & errors.keys():
                    verdict, why = "untested", "; ".join(errors[row] for row in sorted(touched & errors.keys()))
                elif varied_by(claim) == "predicted" and not alternative.get("predicted"):
                    verdict, why = "untested", "no prediction under it"
                elif varied_by(claim) == "predicted" and touched & too_big.keys():
                    verdict, why = "untested", "; ".join(too_big[row] for row in sorted(touched & too_big.keys()))
                elif verdict in ("not-comparable", "error"):  # its evidence cannot judge it under this alternative
                    own = "; ".join(dict.fromkeys(reason for row in sorted(touched) for reason in gaps.get(row, [])))
                    verdict, why = "untested", own or why or f"{verdict} under it"
                record = {"assumption": entry["id"], "alternative": alternative["id"], "verdict": verdict, "why": why}
                mine["under"].append(record)
                if verdict == "untested":
                    mine["untested"].append(name)
                elif verdict != "undetermined" and verdict != mine["default"]:
                    mine["robust"] = False
                    if entry["id"] not in mine["depends_on"]:
                        mine["depends_on"].append(entry["id"])
    return found


def changes_by_alternative(claims: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Per alternative ('<assumption>.<alternative>'), the claims whose verdict it changes: the
    claim, its verdict under the alternative and by default (claims as `robustness` marked them)."""
    changes: dict[str, list[dict[str, Any]]] = {}
    for claim in claims:
        found = claim.get("robustness")
        for record in (found or {}).get("under", []):
            if record["verdict"] not in (found["default"], "undetermined", "untested"):
                changes.setdefault(f"{record['assumption']}.{record['alternative']}", []).append(
                    {"claim": claim["id"], "verdict": record["verdict"], "default": found["default"]}
                )
    return changes


def policy_points(policies: list[dict[str, Any]], rows: list[Any]) -> tuple[dict[str, list[str]], dict[str, float]]:
    """Each frontier policy's published rows (its row's model, placement and flags at any micro
    batch), and every row's micro batch."""
    by_id = {row.id: row for row in rows}
    points: dict[str, list[str]] = {}
    for policy in policies:
        base = by_id.get(policy["row"])
        if base is None or policy.get("placement"):
            continue  # a policy no table has: no published rows bound it
        points[policy["id"]] = [
            row.id
            for row in rows
            if (row.model, row.placement, row.xla_flags) == (base.model, base.placement, base.xla_flags)
        ]
    return points, {row.id: row.per_device_batch_size for row in rows}


def varied_by(claim: dict[str, Any]) -> str:
    """The evidence an alternative changes that judges the claim: compiled before predicted."""
    kinds = {rule["evidence"] for rule in claim["judged_by"]}
    return next(kind for kind in VARIED if kind in kinds)


def varied_verdicts(check: Callable[..., dict[str, Any]]) -> Judge:
    """A judge that gives each claim's (verdict, reason) by the evidence an alternative changes
    (compiled, else predicted), or its overall verdict where that evidence gave none."""

    def judge(claims: list[dict[str, Any]], observations: list[dict[str, Any]]) -> dict[str, Any]:
        checked = check(claims, observations)
        varied = {c["id"]: varied_by(c) for c in claims}
        return {
            c["id"]: next(
                ((j["verdict"], j.get("reason")) for j in c["judgements"] if j["evidence"] == varied[c["id"]]),
                (c["verdict"], None),
            )
            for c in checked["claims"]
        }

    return judge
