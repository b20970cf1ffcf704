"""The page's first screen: what a reviewer needs before the verdict table, selected from
verdicts.json and nothing else (which claims held, by what evidence, which failed, what is left
undecided and what would decide it, where predictions stand against the post). It tallies and
selects the verdicts; it never judges, so the summary can claim no more than they do."""

from __future__ import annotations

from collections import Counter
from typing import Any

from offload_repro.core import optional_stages
from offload_repro.core.assumptions import load_assumptions
from offload_repro.core.data import Target, kept_run_targets, load_target
from offload_repro.judge.ratio_errors import FRACTION, PairError
from offload_repro.judge.verdicts import findings
from offload_repro.present.rerun import snakemake_command
from offload_repro.present.text import claim_tolerance

# How each kind of evidence reached its verdicts, in a few words ({compiled_on}, {target}: machines).
HOW = {
    "compiled": "by XLA's memory analysis of the full-scale programs, compiled for {compiled_on} with no GPU",
    "analytic": "by the saved tensors' bytes, from MaxText's configs",
    "measured": "by training runs on {target}",
    "predicted": "by the step-time model over the compiled programs",
}


def independent_pass(claim: dict[str, Any]) -> bool:
    """A pass that rests on no setting chosen with its published value in view."""
    return claim["verdict"] == "pass" and claim.get("independent", True)


def machine(target: Target) -> str:
    """A target's hardware in three words: '128 NVIDIA GB200 GPUs', '1 Google TPU v5e chip', or its
    title if it has no accelerator."""
    hardware = target.spec["hardware"]
    if not hardware.get("accelerator"):
        return target.spec["title"]
    unit = "chip" if target.kind == "tpu" else "GPU"
    return f"{hardware['devices']} {hardware['accelerator']} {unit}{'s' if hardware['devices'] != 1 else ''}"


def held(
    claims: list[dict[str, Any]], findings: list[dict[str, Any]], target: Target, compiled_on: Target | None
) -> list[dict[str, Any]]:
    """The findings that held independently, per evidence kind that decided them (their first
    claim's): [{evidence, count, claims, how}], `claims` the source's claims they hold."""
    by_id = {claim["id"]: claim for claim in claims}
    passed = [f for f in findings if f["counted_as"] == "pass"]
    counts = Counter(by_id[f["claims"][0]]["summary"]["evidence"] for f in passed)
    covered = Counter()
    for f in passed:
        covered[by_id[f["claims"][0]]["summary"]["evidence"]] += len(f["claims"])
    machines = {"target": machine(target), "compiled_on": machine(compiled_on) if compiled_on else None}
    return [
        {"evidence": kind, "count": n, "claims": covered[kind], "how": HOW.get(kind, "").format(**machines)}
        for kind, n in counts.most_common()
    ]


def differences(claim: dict[str, Any]) -> dict[str, Any]:
    """A claim's published and observed values and how far apart, as the summary writes them: a
    fraction (a speed-up) in percent with its deviation in percentage points, any other value with
    its deviation relative to the published one."""
    summary = claim["summary"]
    fraction = claim.get("unit") == "fraction"
    return {
        "id": claim["id"],
        "statement": claim["statement"],
        "subjects": claim.get("subjects", []),
        "fraction": fraction,
        "unit": claim.get("unit"),
        "published": claim.get("published"),
        "observed": summary.get("observed"),
        "evidence": summary["evidence"],
        "deviation": summary.get("deviation") if fraction else summary.get("relative_deviation"),
        "needs_gib": summary.get("needs_gib"),
        "limit_gib": summary.get("limit_gib"),
    }


def built_under(claims: list[dict[str, Any]], assumptions: dict[str, dict[str, Any]]) -> list[str]:
    """The titles of the unstated settings the claims' rows were built under (judge/independence.py,
    `built_under`), those shared by most claims first, then in the assumptions file's order."""
    shared = Counter(a for claim in claims for a in claim.get("built_under", []))
    position = {a: i for i, a in enumerate(assumptions)}
    return [assumptions[a]["title"] for a in sorted(shared, key=lambda a: (-shared[a], position[a]))]


def passes_under(failed: list[dict[str, Any]], assumptions: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Where the sensitivity stage ran: each alternative under which failed claims pass, in the
    assumptions file's order, with the claims whose published values were in view when it was found
    (a pass under it cannot confirm those)."""
    passing: dict[tuple[str, str], list[str]] = {}
    for claim in failed:
        for record in (claim.get("robustness") or {}).get("under", []):
            if record["verdict"] == "pass":
                passing.setdefault((record["assumption"], record["alternative"]), []).append(claim["id"])
    return [
        {
            "alternative": f"{entry['id']}.{alternative['id']}",
            "claims": passing[entry["id"], alternative["id"]],
            "in_view": [item["claim"] for item in alternative.get("published_in_view", [])],
        }
        for entry in assumptions.values()
        for alternative in entry.get("alternatives", [])
        if (entry["id"], alternative["id"]) in passing
    ]


def would_decide(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The targets whose evidence would judge the undecided claims, with how many each would and
    the command that produces it: [{target, machine, count, command, kept}]; `kept`: its runs are
    kept as data, so its page judges them already."""
    counts: Counter[str] = Counter()
    for claim in claims:
        counts.update({j["would_judge"] for j in claim["judgements"] if j.get("would_judge")})
    kept = kept_run_targets()
    decided = []
    for name, n in counts.most_common():
        target = load_target(name)
        decided.append(
            {
                "target": name,
                "machine": machine(target),
                "count": n,
                "command": snakemake_command(target),
                # its runs are kept as data: its own page, built beside this one, judges them
                "kept": name in kept,
            }
        )
    return decided


def stages_would_decide(claims: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The optional stages that would judge undecided claims, with how many each would and the
    command that adds it: [{stage, title, count, command}]."""
    counts = Counter(j["would_run"] for claim in claims for j in claim["judgements"] if j.get("would_run"))
    return [
        {"stage": stage, "title": optional_stages.TITLES[stage], "count": n, "command": optional_stages.command(stage)}
        for stage, n in counts.most_common()
    ]


# Where a predicted band's error was measured (its `error_from`), as the summary says it.
ERROR_FROM = {
    "real GPUs": "its throughput error across scales on real GPUs",
    "leave-one-out": "its leave-one-out throughput error on the source's rows",
    "chip placement pairs": "its ratio error on placement pairs measured on the chip",
    "source pairs": "its ratio error on pairs of the source's rows",
}


def speed_undecided(claims: list[dict[str, Any]], would_judge: str | None) -> dict[str, Any] | None:
    """Where the speed claims stand when only the model speaks: how many the prediction judged, none
    decided; each band's error (with its unit and where it was measured) beside the claims it
    widens, those left unmeasured, and the claims' tolerances; the speed claims no prediction
    reaches; what would decide them. None where a prediction decided one (pass or fail) or none was
    predicted."""
    predicted = [c for c in claims if c["summary"]["evidence"] == "predicted"]
    if not predicted or any(c["verdict"] in ("pass", "fail") for c in predicted):
        return None
    bands: dict[tuple[str, str], list[str]] = {}
    for claim in predicted:
        if band := claim["summary"].get("band"):
            error = PairError(band["error"], band.get("error_unit", FRACTION)).text()
            where = ERROR_FROM.get(band.get("error_from"), band.get("error_from") or "its measured error")
            bands.setdefault((error, where), []).append(claim["id"])
    # the speed claims: those predicted evidence may judge; unpredicted: its judgement not comparable
    unpredicted = [
        (c["id"], j["reason"])
        for c in claims
        for j in c["judgements"]
        if j["evidence"] == "predicted" and j["verdict"] == "not-comparable"
    ]
    tolerances = sorted(
        {claim_tolerance(c["summary"].get("tolerance") or c.get("tolerance"), c.get("unit")) for c in predicted}
    )
    return {
        "claims": len(predicted),
        "bands": [{"error": error, "where": where, "claims": ids} for (error, where), ids in bands.items()],
        "unmeasured": [c["id"] for c in predicted if not c["summary"].get("band")],
        "unpredicted": [claim for claim, _ in unpredicted],
        # each reason's first clause: the whole stands in the claim's row of the table
        "unpredicted_why": list(dict.fromkeys(reason.split(": ")[0] for _, reason in unpredicted)),
        "tolerances": tolerances,
        "would_judge": would_judge,
    }


def first_screen(verdicts: dict[str, Any], target: Target, compiled_on: Target | None) -> dict[str, Any]:
    """What the summary says, every number from `verdicts`: the claims held independently, those
    consistent by construction, the failures with the unstated settings they were built under, the
    undecided ones with what would decide them, and the predictions against the published values."""
    claims = [claim for claim in verdicts["claims"] if claim["kind"] != "check"]  # own checks are counted apart
    assumptions = load_assumptions()
    failed = [c for c in claims if c["verdict"] == "fail"]
    undecided = [c for c in claims if c["verdict"] in ("inconclusive", "not-comparable")]
    predicted = [
        differences(c)
        for c in claims
        if c["summary"]["evidence"] == "predicted" and c["summary"].get("observed") is not None
    ]
    found = verdicts.get("findings") or findings(claims)  # verdicts written before findings were counted
    return {
        "claims": len(claims),
        "findings": len(found),
        "held": held(claims, found, target, compiled_on),
        "passed": sum(1 for f in found if f["counted_as"] == "pass"),
        "passed_claims": sum(len(f["claims"]) for f in found if f["counted_as"] == "pass"),
        "by_construction": [c["id"] for c in claims if c["verdict"] == "pass" and not independent_pass(c)],
        "failed": [differences(c) for c in failed],
        "failed_under": built_under(failed, assumptions),
        "failed_pass_under": passes_under(failed, assumptions),
        "sensitivity": optional_stages.command("assumptions"),
        "errors": [c["id"] for c in claims if c["verdict"] == "error"],
        # the headline's unit: findings (the targets and stages that would decide them count claims)
        "inconclusive": sum(1 for f in found if f["counted_as"] == "inconclusive"),
        "not_comparable": sum(1 for f in found if f["counted_as"] == "not-comparable"),
        "would_decide": would_decide(undecided),
        "stages_would_decide": stages_would_decide(undecided),
        "predicted": predicted,
        "speed": speed_undecided(claims, machine(compiled_on) if compiled_on else None),
        "sign_disagreements": verdicts.get("sign_disagreements") or [],
        "evidence_from": evidence_from(target, compiled_on),
    }


def evidence_from(target: Target, compiled_on: Target | None) -> str:
    """What the page's evidence was, for its title: the programs compiled for the source's hardware,
    MaxText's configs, and the runs on the target ('scaled-down runs on this machine's CPU' where
    the target is the CPU)."""
    runs = "scaled-down runs on this machine's CPU" if target.kind == "cpu" else f"runs on {machine(target)}"
    compiled = f"programs compiled for {machine(compiled_on)}, " if compiled_on else ""
    return f"{compiled}MaxText's configs and {runs}"
