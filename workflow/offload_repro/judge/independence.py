"""Which passes are independent of the published values they confirm.

A setting the source does not state was sometimes chosen with one of its published values in view
(experiments/assumptions.yaml, `published_in_view`): the allocator's share of each GPU, so that
the optimized DeepSeek row's published 165.2 GiB fits. A claim that passes on evidence the
reproduction built under that setting (compiled, analytic or predicted, not measured on the
source's hardware) and that is about the same published value cannot confirm it: it is
consistent by construction. Its verdict stays the evidence's, marked so, and the counts keep it
apart from the independent passes.
"""

from __future__ import annotations

from typing import Any

from offload_repro.core import outcome_settings
from offload_repro.core.data import DataError, Row

BY_CONSTRUCTION = "consistent-by-construction"  # the count of passes that are not independent
BUILT = ("compiled", "analytic", "predicted")  # evidence the reproduction's own settings shape


def in_view(assumptions: dict[str, dict[str, Any]], claim_ids: set[str]) -> dict[str, list[dict[str, str]]]:
    """claim id -> [{assumption, how}] of every setting chosen with that claim's published value in view."""
    found: dict[str, list[dict[str, str]]] = {}
    for entry in assumptions.values():
        chosen = [("", item) for item in entry["published_in_view"]]
        found_with = [
            (f", alternative '{a['id']}'", i)
            for a in entry.get("alternatives", [])
            for i in a.get("published_in_view", [])
        ]
        for where, item in chosen + found_with:
            if item["claim"] not in claim_ids:
                raise DataError(
                    f"experiments/assumptions.yaml: assumption '{entry['id']}'{where}, field 'published_in_view':"
                    f" unknown claim '{item['claim']}'"
                )
        for _, item in chosen:  # only a default shapes the default run's evidence
            found.setdefault(item["claim"], []).append({"assumption": entry["id"], "how": item["how"]})
    return found


def settings_of(rows: list[Row], subjects: list[str], assumptions: dict[str, dict[str, Any]]) -> set[str]:
    """The assumptions the claim's rows were built under: those the rows name and those that affect them."""
    named = {a for row in rows if row.id in subjects for a in row.assumptions}
    return named | {a for a, entry in assumptions.items() if set(entry.get("affects", [])) & set(subjects)}


def chosen_in_view(
    claims: list[dict[str, Any]], chosen: list[str], constrained: set[str]
) -> dict[str, list[dict[str, str]]]:
    """claim id -> [{assumption, how}] that the settings chosen by the source's outcomes
    (experiments/outcome-settings.yaml) rest on: every outcome claim whose rows are constraints (the
    choice made it hold), and every published value in view when a chosen alternative was found."""
    if not chosen:
        return {}
    found: dict[str, list[dict[str, str]]] = {}
    named = " + ".join(chosen)
    for claim in claims:
        rows = set(claim["check"].get("rows", []))
        if claim["check"]["type"] == "outcome" and rows and rows <= constrained:
            how = f"{named} was chosen so that the source's reported outcomes, this one among them, hold"
            found.setdefault(claim["id"], []).extend({"assumption": change, "how": how} for change in chosen)
    for item in outcome_settings.in_view(chosen):
        found.setdefault(item["claim"], []).append({"assumption": item["change"], "how": item["how"]})
    return found


def mark(
    claims: list[dict[str, Any]],
    rows: list[Row],
    assumptions: dict[str, dict[str, Any]],
    chosen: dict[str, list[dict[str, str]]] | None = None,
) -> None:
    """Each judged claim gets `independent`, and one decided by evidence the reproduction built gets
    `built_under`, the unstated settings its rows were built under (a failure may lie in one of
    them). A pass resting on a setting chosen with its own published value in view gets
    `independent: false` and `by_construction`, the settings it rests on (its verdict stays;
    judge/verdicts.py, `tally`, counts it apart). `chosen`: what the settings chosen by the source's
    outcomes rest on (`chosen_in_view`), which every compiled row they change is built under."""
    chosen_with = in_view(assumptions, {claim["id"] for claim in claims})
    for claim_id, items in (chosen or {}).items():
        chosen_with.setdefault(claim_id, []).extend(items)
    for claim in claims:
        claim["independent"] = True
        if claim["summary"]["evidence"] not in BUILT:
            continue
        built_under = settings_of(rows, claim["subjects"], assumptions)
        claim["built_under"] = sorted(built_under)
        if claim["verdict"] != "pass":
            continue
        resting = [
            item
            for item in chosen_with.get(claim["id"], [])
            # a chosen alternative is named '<assumption>.<alternative>'
            if item["assumption"].partition(".")[0] in built_under
        ]
        if not resting:
            continue
        claim["independent"] = False
        claim["by_construction"] = resting


def mark_scale(claims: list[dict[str, Any]], scale: dict[str, Any], where: str) -> None:
    """A target whose rows were scaled by a rule that looked at the source's outcomes (its
    `scale.derivation.outcomes_in_view`: claim ids) cannot confirm them: a pass of one of those claims
    there, by any evidence, is consistent by construction, resting on the derivation's rule."""
    derivation = scale.get("derivation") or {}
    named = derivation.get("outcomes_in_view") or []
    known = {claim["id"] for claim in claims}
    if unknown := sorted(set(named) - known):
        raise DataError(f"{where}: scale.derivation, field 'outcomes_in_view': unknown claims {unknown}")
    for claim in claims:
        if claim["id"] in named and claim["verdict"] == "pass":
            claim["independent"] = False
            claim["by_construction"] = [
                {"assumption": "scale.derivation", "how": f"the scale was chosen by the rule: {derivation['rule']}"}
            ]
