"""Settings decided by what the source ran (experiments/outcome-settings.yaml).

The source reports outcomes besides numbers: which rows trained and which ran out of memory. Each
row states its outcome once (`published.outcome`, with the row's citation); those outcomes are the
constraints that choose among the declared alternatives of experiments/assumptions.yaml, and no
published GiB or throughput enters the choice. The search (produce/whatif/settings_search.py) records
what it found in the same file; every stage that compiles for a GPU reads the chosen settings from
that record, through the plan, and the defaults are compiled beside them so that each claim is
judged under both.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from offload_repro.core.assumptions import load_assumptions
from offload_repro.core.data import DataError, Row, did_you_mean, validate
from offload_repro.core.files import REPO_ROOT, checkout_relative, read_yaml
from offload_repro.core.variants import resolved

SETTINGS_FILE = REPO_ROOT / "experiments" / "outcome-settings.yaml"
READS = ("experiments/outcome-settings.yaml",)
FITS, OOM = "fits", "oom"


@dataclass(frozen=True)
class Constraint:
    """A row's published outcome, as the compiled program must reproduce it."""

    row: str
    outcome: str  # fits | oom
    quote: str  # the row's citation: what says it ran, or ran out of memory

    def margin(self, compiled: dict[str, Any]) -> float | None:
        """GiB by which the compiled row reproduces the outcome (negative: by which it does not);
        None where it did not compile."""
        if compiled.get("status") != "ok" or compiled.get("margin_gib") is None:
            return None
        room = float(compiled["margin_gib"])  # the allocator's limit less the program's need
        return room if self.outcome == FITS else -room


def constraints(
    rows: list[Row], claims: list[dict[str, Any]], claims_file: str = "experiments/claims.yaml"
) -> list[Constraint]:
    """Every row's published outcome, each stated once in its row; an outcome claim must agree with
    the rows it names (it restates their outcome to judge it), else it is refused by file and field."""
    by_id = {row.id: row for row in rows}
    for claim in claims:
        check = claim["check"]
        if check["type"] != "outcome":
            continue
        for row_id in check["rows"]:
            if row_id not in by_id:
                raise DataError(
                    f"{claims_file}: claim '{claim['id']}', field 'check.rows': unknown row '{row_id}'"
                    + did_you_mean(row_id, by_id)
                )
            published, table = (
                by_id[row_id].published.get("outcome"),
                checkout_relative(Path(by_id[row_id].source_file)),
            )
            if published != check["expect"]:
                raise DataError(
                    f"{claims_file}: claim '{claim['id']}', field 'check.expect': '{check['expect']}', while row"
                    f" '{row_id}' ({table}) publishes outcome '{published}'"
                )
    return [
        Constraint(row.id, row.published["outcome"], row.citation.get("quote", ""))
        for row in rows
        if row.published.get("outcome") in (FITS, OOM)
    ]


def split_change(change: str, where: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """('<assumption>', '<alternative>') of experiments/assumptions.yaml, or a refusal naming `where`."""
    known = load_assumptions()
    assumption_id, _, alternative_id = change.partition(".")
    if assumption_id not in known:
        raise DataError(f"{where}: unknown setting '{assumption_id}'" + did_you_mean(assumption_id, known))
    assumption = known[assumption_id]
    alternatives = {alt["id"]: alt for alt in assumption.get("alternatives", [])}
    if alternative_id not in alternatives:
        raise DataError(
            f"{where}: setting '{assumption_id}' has no alternative '{alternative_id}'"
            + did_you_mean(alternative_id, alternatives)
            + f" (it has {sorted(alternatives) or 'none'})"
        )
    return assumption, alternatives[alternative_id]


def load(path: Path = SETTINGS_FILE) -> dict[str, Any]:
    """The declared search and its record, checked against experiments/assumptions.yaml."""
    data = validate(read_yaml(path), "outcome_settings", path)
    search, known = data["search"], load_assumptions()
    if search["max_changes"] < 1:
        raise DataError(f"{path}: field 'search.max_changes': {search['max_changes']} searches nothing; at least 1")
    for number, setting in enumerate(search["settings"]):
        where = f"{path}: field 'search.settings[{number}]'"
        if setting not in known:
            raise DataError(f"{where}: unknown setting '{setting}'" + did_you_mean(setting, known))
        if not known[setting].get("alternatives"):
            raise DataError(f"{where}: setting '{setting}' has no alternatives to search")
    record = data["record"]
    if record is not None:
        for number, candidate in enumerate(record["candidates"]):
            check_changes(candidate["changes"], f"{path}: record, candidate {number + 1}, field 'changes'")
        if record["chosen"] is not None:
            check_changes(record["chosen"], f"{path}: record, field 'chosen'")
            if record["chosen"] not in [c["changes"] for c in record["candidates"]]:
                raise DataError(f"{path}: record, field 'chosen': {record['chosen']} is not among its candidates")
    return data


def check_changes(changes: list[str], where: str) -> None:
    """Each change an alternative, and no setting changed twice."""
    settings = [split_change(change, where)[0]["id"] for change in changes]
    if twice := sorted({s for s in settings if settings.count(s) > 1}):
        raise DataError(f"{where}: setting {twice} changed twice in one candidate")


def chosen(data: dict[str, Any]) -> list[str]:
    """The recorded choice's changes ([] where nothing is recorded or no candidate held)."""
    record = data["record"]
    return list(record["chosen"] or []) if record else []


def settings_of(changes: list[str]) -> list[dict[str, Any]]:
    """Each change as a row takes it (core/variants.apply_all): its id, its resolved settings and
    the rows it affects."""
    found = []
    for change in changes:
        assumption, alternative = split_change(change, "outcome settings")
        found.append(
            {"id": change, "settings": resolved(assumption, alternative["settings"]), "rows": assumption["affects"]}
        )
    return found


def in_view(changes: list[str]) -> list[dict[str, str]]:
    """The published values in view when any of `changes` entered the declared alternatives."""
    return [
        {"change": change, **item}
        for change in changes
        for item in split_change(change, "outcome settings")[1].get("published_in_view", [])
    ]
