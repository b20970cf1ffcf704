"""Claims x evidence table -> verdicts JSON."""

from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path
from typing import Any

from offload_repro.commands import arguments
from offload_repro.core import outcome_settings, provenance
from offload_repro.core.assumptions import load_assumptions
from offload_repro.core.data import Target, hardware_classes, load_rows, load_target
from offload_repro.core.files import read_yaml
from offload_repro.core.results import read_result, write_result
from offload_repro.judge.claims import load_claims
from offload_repro.judge.evidence_views import views
from offload_repro.judge.independence import chosen_in_view, mark, mark_scale
from offload_repro.judge.robustness import changes_by_alternative, policy_points, robustness, varied_verdicts
from offload_repro.judge.sign_disagreements import ratio_records, read_pairs, sign_disagreements
from offload_repro.judge.verdicts import check_claims, counted_as, tally

PARENTS = (arguments.OUT, arguments.OPTIONAL_TABLES, arguments.EVIDENCE)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--claims", required=True, type=Path, help="the claims (experiments/claims.yaml)")
    parser.add_argument(
        "--compile-target",
        help="the GPU target whose compiled programs and prediction the page shows (the run's compile_target)",
    )
    parser.add_argument(
        "--assumptions", type=Path, help="the sensitivity stage's result: mark each claim robust or not"
    )
    parser.add_argument(
        "--defaults-evidence",
        type=Path,
        help="the evidence with the compile target's programs under the defaults, where the settings the"
        " source's outcomes chose change a row: every claim is judged under it too",
    )
    parser.add_argument(
        "--pair-errors",
        type=Path,
        help="the pair-error stage's result: a predicted ratio of two placements takes its error on such ratios,"
        " and the page states where the model's sign disagrees with the post's",
    )
    parser.add_argument("--frontier", type=Path, default=Path("experiments/frontier.yaml"), help="(with --assumptions)")
    parser.add_argument(
        "--fail-on",
        type=lambda text: [v for v in text.split(",") if v],
        default=[],
        help="comma-separated verdicts (fail,error,inconclusive,not-comparable) that make the exit status 3 (CI gates)",
    )


def _mark_robustness(
    args: argparse.Namespace,
    claims: list[dict[str, Any]],
    evidence: dict[str, Any],
    verdicts: dict[str, Any],
    targets: dict[str, Target],
    qualifying: dict[str, list[str]],
    records: dict[str, dict[str, Any]],
) -> None:
    """Each claim's verdict under every alternative assumption (the sensitivity stage's result)."""
    sensitivity = read_result(args.assumptions, "assumptions")
    points, micro_batches = policy_points(read_yaml(args.frontier)["policies"], load_rows(args.tables))
    judge = varied_verdicts(
        lambda chosen, observations: check_claims(
            chosen, views(observations, targets), qualifying, ratio_records=records
        )
    )
    found = robustness(claims, evidence["observations"], sensitivity, judge, points, micro_batches)
    for claim in verdicts["claims"]:
        if claim["id"] in found:
            claim["robustness"] = found[claim["id"]]
    verdicts["changes_by_alternative"] = changes_by_alternative(verdicts["claims"])


def under_defaults(
    args: argparse.Namespace,
    claims: list[dict[str, Any]],
    verdicts: dict[str, Any],
    targets: dict[str, Target],
    qualifying: dict[str, list[str]],
    records: dict[str, dict[str, Any]],
) -> None:
    """Each claim judged again on the evidence under the defaults; its verdict there beside its own,
    and the counts under the defaults beside the headline's."""
    evidence = read_result(args.defaults_evidence, "evidence")
    judged = check_claims(claims, views(evidence["observations"], targets), qualifying, ratio_records=records)
    mark(judged["claims"], load_rows(args.tables) if args.tables else [], load_assumptions())
    by_id = {claim["id"]: claim for claim in judged["claims"]}
    for claim in verdicts["claims"]:
        other = by_id[claim["id"]]
        claim["under_defaults"] = {
            "verdict": other["verdict"],
            "counted_as": counted_as(other),
            "evidence": other["summary"]["evidence"],
            "observed": other["summary"].get("observed"),
            "reason": other["summary"].get("reason"),
            "deviation": other["summary"].get("deviation"),
            "band": other["summary"].get("band"),
        }
    verdicts["under_defaults"] = tally(judged["claims"])


def run(args: argparse.Namespace) -> int:
    evidence = read_result(args.evidence, "evidence")
    claims = load_claims(args.claims)
    qualifying = hardware_classes()
    names = {name for targets in qualifying.values() for name in targets}
    names |= {obs["target"] for obs in evidence["observations"] if obs["target"]}
    targets = {name: load_target(name) for name in sorted(names)}
    pairs = read_pairs(args.pair_errors)  # read once: the records and the sign disagreements come from it
    records = ratio_records(pairs)
    verdicts = check_claims(claims, views(evidence["observations"], targets), qualifying, ratio_records=records)
    if args.assumptions:
        _mark_robustness(args, claims, evidence, verdicts, targets, qualifying, records)
    rows = load_rows(args.tables) if args.tables else []
    chosen = outcome_settings.chosen(outcome_settings.load()) if args.compile_target else []
    constrained = {c.row for c in outcome_settings.constraints(rows, claims, str(args.claims))} if rows else set()
    # a pass on a setting chosen with its own published value in view is counted apart, and so is an
    # outcome the settings were chosen to reproduce
    mark(verdicts["claims"], rows, load_assumptions(), chosen_in_view(claims, chosen, constrained))
    # a target scaled by a rule that looked at the source's outcomes cannot confirm them
    target = targets.get(evidence["target"]) or load_target(evidence["target"])
    mark_scale(verdicts["claims"], target.spec.get("scale") or {}, f"experiments/targets/{target.name}.yaml")
    if args.defaults_evidence:
        under_defaults(args, claims, verdicts, targets, qualifying, records)
    verdicts["settings"] = {"chosen": chosen, "headline": "chosen" if chosen else "defaults"}
    verdicts["sign_disagreements"] = sign_disagreements(pairs)
    verdicts |= tally(verdicts["claims"])
    write_result(
        args.out,
        "verdicts",
        {
            "target": evidence["target"],
            "compile_target": args.compile_target,
            "built_from": {
                "evidence": str(args.evidence),
                "claims": str(args.claims),
                "project_commit": provenance.project_commit(),
                "built_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            },
            **verdicts,
        },
    )
    counts = verdicts["counts"]
    print(f"{evidence['target']}: " + ", ".join(f"{count} {verdict}" for verdict, count in counts.items()))
    failing = [verdict for verdict in args.fail_on if counts.get(verdict)]
    if failing:
        print(f"check: failing on {', '.join(f'{counts[v]} {v}' for v in failing)} (--fail-on)", file=sys.stderr)
        return 3
    return 0
