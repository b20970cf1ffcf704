"""Claims x the evidence table -> verdicts. Every claim gets one; none is silently skipped.

Per claim, each evidence kind allowed to judge it gives a judgement: pass, fail, inconclusive (the
evidence's band straddles the claim's tolerance), not-comparable (with the reason and the target
whose evidence would judge it) or error. The claim's verdict: error if any judgement errs, else
fail if any fails, else pass if any passes, else inconclusive if any is, else not-comparable. Its
summary is the strongest decisive judgement (measured before
compiled before analytic before predicted), which the report shows on the claim's one line.
Predicted evidence never overrides the others: it decides a verdict only where no other evidence
kind gave a pass, fail or error (judge/prediction_verdicts.py says how it judges). The claims
are read by judge/claims.py, the evidence is seen through judge/evidence_views.py, and each type
of check is one function of judge/check_types.py.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from offload_repro.core.measured_elsewhere import load_validation
from offload_repro.core.optional_stages import needs_text
from offload_repro.judge import metric_names as names
from offload_repro.judge import prediction_verdicts, ratio_errors, spread
from offload_repro.judge.check_types import evaluate, ran_out_of_memory
from offload_repro.judge.claims import subjects
from offload_repro.judge.evidence_views import EvidenceView
from offload_repro.judge.independence import BY_CONSTRUCTION

VERDICTS = ("pass", "fail", "inconclusive", "not-comparable", "error")
COUNTED = ("pass", BY_CONSTRUCTION, *VERDICTS[1:])  # what the source's claims are counted as (`tally`)
DECIDED = ("pass", "fail", "inconclusive")
STRENGTH = ("measured", "compiled", "analytic", "predicted")  # strongest first
DECISIVE = ("error", "fail", "pass")
CHECK = "check"  # a claim kind: this reproduction's own consistency check, not a sentence of the source


def _not_comparable(reason: str, would_judge: str | None = None, would_run: str | None = None) -> dict[str, Any]:
    """`would_judge`: a target whose evidence could judge the claim; `would_run`: the optional stage
    that could (the page shows how to run either)."""
    return {"verdict": "not-comparable", "reason": reason, "would_judge": would_judge, "would_run": would_run}


def judge_one(
    claim: dict[str, Any],
    rule: dict[str, Any],
    candidates: list[EvidenceView],
    qualifying: dict[str, list[str]],
    kinds: dict[str, Any] | None = None,
    ratio_record: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One claim judged by one evidence kind; `qualifying` maps a hardware class to its targets;
    `kinds`: the kinds of claim of experiments/validation.yaml, whose recorded error on real GPUs a
    predicted band also takes; `ratio_record`: the claim's record of the pair-error stage, whose
    error on ratios a placement pair's band takes."""
    if rule.get("metric"):  # this evidence measures the claim's quantity by a metric of its own
        claim = {**claim, "check": {**claim["check"], "metric": rule["metric"]}}
    check, kind = claim["check"], rule["evidence"]
    hardware = rule.get("hardware", "any")
    base: dict[str, Any] = {"evidence": kind, "hardware": hardware, "target": None, "source": None}
    if not candidates:
        return base | _not_comparable(f"no {kind} evidence in this run")
    usable = [view for view in candidates if hardware == "any" or hardware in view.judges]
    if not usable:
        targets = qualifying.get(hardware, [])
        listed = " / ".join(targets) or "no target file yet"
        here = "; ".join(view.source for view in candidates)
        reason = f"needs {kind} evidence from {hardware} targets ({listed}); here it is from: {here}"
        return base | {"source": here} | _not_comparable(reason, targets[0] if targets else None)
    evidence = usable[0]
    base |= {"target": evidence.target, "source": evidence.source}
    facts = evidence.facts(check)
    missing = [name for name in subjects(check) if name not in facts]
    if missing:
        needs = claim.get("needs")
        what = "rows" if "rows" in check else "placement policies"
        reason = f"{what} without {kind} evidence here: {', '.join(missing)}"
        if needs:
            return base | _not_comparable(f"{reason}; {needs_text(needs)}", would_run=needs["stage"])
        return base | _not_comparable(reason)
    observed_rows = {name: facts[name] for name in subjects(check)}
    errors = [f"{row}: {obs['message']}" for row, obs in observed_rows.items() if obs["status"] == "error"]
    if errors:
        return base | {"verdict": "error", "reason": "; ".join(errors)}
    # evidence that ended well on every row and never observes the claim's quantity (a device's runs
    # record no host buffers and no program digest) cannot judge it; a row missing what others report can
    metrics = [m for m in (check.get("metric"), check.get("expect_metric")) if m and check["type"] != "outcome"]
    all_ok = all(obs["status"] == "ok" and obs.get("outcome") != "oom" for obs in observed_rows.values())
    if metrics and all_ok and not any(obs.get(m) is not None for obs in observed_rows.values() for m in metrics):
        # a prediction says why it has no throughput for the row, where it knows
        why = next(
            (obs[names.UNPREDICTED_WHY] for obs in observed_rows.values() if obs.get(names.UNPREDICTED_WHY)), None
        )
        return base | _not_comparable(why or f"the {kind} evidence here does not observe {' or '.join(metrics)}")
    refused = [f"{row}: {obs['message']}" for row, obs in observed_rows.items() if obs["status"] == "refused"]
    if refused:  # a prediction the producer declined, saying why
        return base | _not_comparable("; ".join(refused))
    if kind == "predicted":
        return base | _judge_predicted(claim, rule, evidence, observed_rows, kinds or {}, ratio_record)
    judgement = evaluate(claim, rule, observed_rows)
    metric = check.get("metric")
    spreads = {
        row: evidence.spreads[row][metric] for row in check.get("rows", []) if metric in evidence.spreads.get(row, {})
    }
    return base | judgement | spread.qualify(claim, judgement, spreads)


def _judge_predicted(
    claim: dict[str, Any],
    rule: dict[str, Any],
    evidence: EvidenceView,
    observed_rows: dict[str, dict[str, Any]],
    kinds: dict[str, Any],
    ratio_record: dict[str, Any] | None,
) -> dict[str, Any]:
    """A speed claim by prediction: a calibration that is not the claim's own value, the band that
    the model's measured error of the claim's kind of pair gives (a ratio of two placements: its
    error on such ratios, in pp; else the larger of the source rows' leave-one-out error and the
    error on real GPUs recorded for its kind), and a verdict no stronger than that band
    (judge/prediction_verdicts.py)."""
    # a row whose program does not fit has no step to predict, whatever the calibration
    out_of_memory = [reason for row, seen in observed_rows.items() if (reason := ran_out_of_memory(row, seen))]
    if out_of_memory:
        return _not_comparable("; ".join(out_of_memory))
    calibrated_on, basis = prediction_verdicts.choose_calibration(claim, evidence.rows, evidence.predicted)
    if calibrated_on is None:
        return _not_comparable(basis)
    metric = names.TFLOPS
    predicted = {row: evidence.predicted.get(row, prediction_verdicts.UNPREDICTED) for row in observed_rows}
    # each row's throughput as that calibration predicted it, in place of its default calibration's
    under = {row: {**seen, metric: predicted[row].central(calibrated_on)} for row, seen in observed_rows.items()}
    judged = {**claim, "check": {**claim["check"], "metric": metric}}
    judgement = evaluate(judged, rule, under) | {"calibrated_on": calibrated_on}
    if judgement["verdict"] == "error":
        return judgement | {"metric": metric, "note": basis}
    errors: dict[tuple[str, str], ratio_errors.PairError | None] = {}
    whys, sources = {}, {}
    ratio = claim["check"]["type"] != "value"
    for pair in prediction_verdicts.compared_pairs(claim, calibrated_on):
        if ratio and ratio_errors.placement_pair(evidence.rows, pair):
            value, why, sources[pair] = ratio_errors.ratio_error(ratio_record, evidence.target)
            errors[pair] = None if value is None else ratio_errors.PairError(value, ratio_errors.PP)
        else:
            own = prediction_verdicts.measured_error(claim, evidence.rows, evidence.predicted, pair)
            real = prediction_verdicts.real_hardware_error(evidence.rows[pair[0]].get(names.FAMILY), kinds)
            value, why, sources[pair] = prediction_verdicts.larger_error(own, real)
            errors[pair] = None if value is None else ratio_errors.PairError(value)
        whys[pair] = f"{pair[0]} against {pair[1]}: {why}" if len(claim["check"]["rows"]) > 2 else why
    note = f"{basis}; {'; '.join(dict.fromkeys(whys.values()))}"
    unmeasured = [whys[pair] for pair, error in errors.items() if error is None]
    if unmeasured:
        reason = "; ".join(dict.fromkeys(unmeasured))
        return judgement | {"verdict": "inconclusive", "reason": reason, "metric": metric, "note": basis}
    rows = claim["check"]["rows"]
    series = {row: values for row in rows if (values := predicted[row].series(calibrated_on))}
    known = {pair: error for pair, error in errors.items() if error is not None}
    found = prediction_verdicts.band(judged["check"], series, known, predicted[rows[0]].settings)
    if found is None:
        return judgement | {"verdict": "inconclusive", "reason": "no prediction at any setting", "note": note}
    largest = max(known, key=lambda pair: known[pair].as_fraction)
    found["error_from"] = sources[largest]
    tolerance = rule.get("tolerance") or claim.get("tolerance")
    judgement["verdict"] = prediction_verdicts.verdict(judged["check"], found, claim.get("published"), tolerance)
    if "holds_at" in found:
        note += f"; holds at {found['holds_at']} of {found['settings']} settings at the central prediction"
    if judgement["verdict"] == "inconclusive":
        judgement["reason"] = prediction_verdicts.inconclusive_reason(claim, found, tolerance)
    if not any(r.get("outcome") == "oom" for r in observed_rows.values()):
        judgement["explanation"] = prediction_verdicts.explain(claim, observed_rows)
    return judgement | {"metric": metric, "band": found, "note": note}


def overall(judgements: list[dict[str, Any]]) -> str:
    others = [j for j in judgements if j.get("evidence") != "predicted" and j["verdict"] in DECISIVE]
    verdicts = {j["verdict"] for j in (others or judgements)}  # a prediction never overrides evidence
    for verdict in (*DECISIVE, "inconclusive"):
        if verdict in verdicts:
            return verdict
    return "not-comparable"


def strongest(judgements: list[dict[str, Any]], verdict: str) -> dict[str, Any]:
    """The judgement that decided the verdict, strongest evidence first."""
    deciding = [j for j in judgements if j["verdict"] == verdict] or judgements
    if verdict in (*DECISIVE, "inconclusive"):
        deciding = [j for j in deciding if j["evidence"] != "predicted"] or deciding
    return min(deciding, key=lambda j: STRENGTH.index(j["evidence"]))


def check_claims(
    claims: list[dict[str, Any]],
    candidates: list[EvidenceView],
    qualifying: dict[str, list[str]],
    kinds: dict[str, Any] | None = None,
    ratio_records: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Every claim judged; `kinds`: the kinds of claim whose recorded error on real GPUs widens a
    predicted band (experiments/validation.yaml's, read here: the same with or without the
    validation stage); `ratio_records`: by claim, the pair-error stage's record, whose error on
    ratios of placement pairs a predicted ratio's band takes (none given: unmeasured)."""
    results = []
    kinds = load_validation()["kinds"] if kinds is None else kinds
    for claim in claims:
        record = (ratio_records or {}).get(claim["id"])
        judgements = [
            judge_one(claim, rule, [v for v in candidates if v.evidence == rule["evidence"]], qualifying, kinds, record)
            for rule in claim["judged_by"]
        ]
        verdict = overall(judgements)
        decided = strongest(judgements, verdict)
        results.append(
            {
                "id": claim["id"],
                "kind": claim["kind"],
                "finding": claim.get("finding", claim["id"]),
                "statement": claim["statement"],
                "check": claim["check"]["type"],
                "subjects": subjects(claim["check"]),
                "published": claim.get("published"),
                "unit": claim.get("unit"),
                "tolerance": claim.get("tolerance"),
                "citation": claim["citation"],
                "verdict": verdict,
                "summary": {
                    key: decided.get(key)
                    for key in (
                        "evidence",
                        "target",
                        "observed",
                        "observed_spread",
                        "deviation",
                        "relative_deviation",
                        "tolerance",
                        "reason",
                        "note",
                        "explanation",
                        "band",
                        "needs_gib",
                        "limit_gib",
                    )
                },
                "judgements": judgements,
            }
        )
    return tally(results) | {"not_comparable_reasons": not_comparable_reasons(results), "claims": results}


def counted_as(result: dict[str, Any]) -> str:
    """What a claim counts as: its verdict, except a pass that rests on a setting chosen with its own
    published value in view (judge/independence.py, `independent: false`), counted apart."""
    if result["verdict"] == "pass" and result.get("independent") is False:
        return BY_CONSTRUCTION
    return result["verdict"]


def tally(results: list[dict[str, Any]]) -> dict[str, Any]:
    """The counts of the source's claims (overall and by deciding evidence) and, apart, of this
    reproduction's own checks (kind: check), which are never counted as the source's."""
    claimed = [result for result in results if result["kind"] != CHECK]
    counts = Counter(counted_as(result) for result in claimed)
    checks = Counter(result["verdict"] for result in results if result["kind"] == CHECK)
    by_evidence: dict[str, dict[str, int]] = {}
    for result in claimed:
        if (verdict := counted_as(result)) in (*DECIDED, BY_CONSTRUCTION):
            kind = by_evidence.setdefault(result["summary"]["evidence"], dict.fromkeys(DECIDED, 0))
            kind[verdict] = kind.get(verdict, 0) + 1
    found = findings(claimed)
    by_finding = Counter(finding["counted_as"] for finding in found)
    # the headline's unit, per deciding evidence: a finding is decided by its first claim's evidence
    evidence_of = {result["id"]: result["summary"]["evidence"] for result in claimed}
    findings_by_evidence: dict[str, dict[str, int]] = {}
    for finding in found:
        if finding["counted_as"] in (*DECIDED, BY_CONSTRUCTION):
            kind = findings_by_evidence.setdefault(evidence_of[finding["claims"][0]], dict.fromkeys(DECIDED, 0))
            kind[finding["counted_as"]] = kind.get(finding["counted_as"], 0) + 1
    return {
        "counts": {verdict: counts.get(verdict, 0) for verdict in COUNTED},
        "check_counts": {verdict: checks.get(verdict, 0) for verdict in VERDICTS},
        "counts_by_evidence": by_evidence,
        "findings": found,
        "finding_counts": {verdict: by_finding.get(verdict, 0) for verdict in COUNTED},
        "finding_counts_by_evidence": findings_by_evidence,
    }


# A finding of several claims counts as the first of these any of its claims counts as: it held
# only if every one of its claims did.
FINDING_ORDER = ("fail", "error", "inconclusive", BY_CONSTRUCTION, "not-comparable", "pass")


def findings(claimed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The source's claims grouped into findings (a claim whose published value is arithmetic on
    another's is part of that one's finding, experiments/claims.yaml `finding`), in order of first
    claim: each with its claims and what it counts as."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for result in claimed:
        grouped.setdefault(result.get("finding", result["id"]), []).append(result)
    return [
        {
            "id": finding,
            "claims": [result["id"] for result in members],
            "counted_as": next(v for v in FINDING_ORDER if v in {counted_as(result) for result in members}),
        }
        for finding, members in grouped.items()
    ]


def not_comparable_reasons(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each reason a judgement was not comparable, once, in order of first use: how many claims it
    holds back and the target whose evidence would judge them."""
    found: dict[str, dict[str, Any]] = {}
    for result in results:
        for judgement in result["judgements"]:
            reason = judgement.get("reason")
            if reason and judgement["verdict"] == "not-comparable" and reason not in found:
                found[reason] = {"reason": reason, "would_judge": judgement.get("would_judge"), "claims": 0}
    for result in results:
        for reason in {j.get("reason") for j in result["judgements"]} & set(found):
            found[reason]["claims"] += 1
    return list(found.values())
