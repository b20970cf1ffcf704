"""The declared search for settings under which every outcome the source reports holds.

Candidates are combinations of the declared settings' alternatives (experiments/assumptions.yaml),
tried in a stated, bounded order (experiments/outcome-settings.yaml, `search`): each alternative
singly; where none holds, every pair of alternatives of two settings that each raise a failing
constraint's margin; where no pair holds, greedily, the alternative that most raises the best
candidate's smallest margin, up to `max_changes`. A candidate compiles the constrained rows it
affects, those whose outcome fails under the defaults first; the others only once those hold (a
candidate that leaves one failing cannot be chosen, and its other margins could not change that).
A row it does not affect keeps the defaults' program, so its margin is the defaults'.

Under which candidates every constraint holds, and which is chosen, is decided by the rule of
`search.rank`, which reads the compiled margins and the `published_in_view` marks, never a
published GiB or throughput.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from offload_repro.core.assumptions import load_assumptions
from offload_repro.core.outcome_settings import Constraint, in_view, split_change

# (changes, rows) -> each row's compile result under those changes ({} changes: the defaults)
Compile = Callable[[tuple[str, ...], list[str]], dict[str, dict[str, Any]]]
MOVED_GIB = 0.01  # a margin raised by less than this is a program the change did not touch
WORDS_OF_XLA = 300  # the part of a failed compile's message a record keeps


@dataclass
class Candidate:
    changes: tuple[str, ...]
    round: str  # single | pair | greedy
    margins: dict[str, float | None] = field(default_factory=dict)
    not_compiled: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)

    @property
    def holds(self) -> bool:
        return bool(self.margins) and all(m is not None and m >= 0 for m in self.margins.values())

    @property
    def smallest(self) -> float:
        """Its smallest margin over the rows it was judged on (-inf where one did not compile)."""
        known = [float("-inf") if m is None else m for r, m in self.margins.items() if r not in self.not_compiled]
        return min(known, default=float("-inf"))

    def record(self) -> dict[str, Any]:
        found: dict[str, Any] = {
            "changes": list(self.changes),
            "round": self.round,
            "margins_gib": {row: None if m is None else round(m, 2) for row, m in self.margins.items()},
        }
        if self.not_compiled:
            found["not_compiled"] = dict(self.not_compiled)
        if self.errors:
            found["errors"] = dict(self.errors)
        found["holds"] = self.holds
        return found


def affected_rows(changes: tuple[str, ...]) -> set[str]:
    return {row for change in changes for row in split_change(change, "search")[0].get("affects", [])}


def setting_of(change: str) -> str:
    return change.partition(".")[0]


def margins_of(
    constraints: list[Constraint], results: dict[str, dict[str, Any]]
) -> tuple[dict[str, float | None], dict[str, str]]:
    """Each constraint's margin from its row's compile, and XLA's words where it did not compile."""
    margins, errors = {}, {}
    for constraint in constraints:
        if constraint.row not in results:
            continue
        result = results[constraint.row]
        margins[constraint.row] = constraint.margin(result)
        if margins[constraint.row] is None:
            errors[constraint.row] = " ".join((result.get("message") or "did not compile").split())[:WORDS_OF_XLA]
    return margins, errors


class Search:
    def __init__(self, spec: dict[str, Any], constraints: list[Constraint], compile_rows: Compile) -> None:
        self.spec, self.constraints, self.compile = spec, constraints, compile_rows
        self.by_row = {c.row: c for c in constraints}
        self.defaults, self.default_errors = margins_of(constraints, compile_rows((), sorted(self.by_row)))
        self.failing = {row for row, m in self.defaults.items() if m is None or m < 0}
        self.tried: list[Candidate] = []

    def evaluate(self, changes: tuple[str, ...], round_name: str) -> Candidate:
        candidate = Candidate(changes, round_name, margins=dict(self.defaults))
        affected = affected_rows(changes) & set(self.by_row)
        first, rest = sorted(affected & self.failing), sorted(affected - self.failing)
        for rows in (first, rest):
            if rows is rest and not all(
                candidate.margins[row] is not None and candidate.margins[row] >= 0 for row in self.failing
            ):
                still = sorted(row for row in self.failing if (candidate.margins[row] or -1) < 0)
                candidate.not_compiled = {row: f"not compiled: {', '.join(still)} still fails under it" for row in rest}
                candidate.margins.update(dict.fromkeys(rest))  # unknown: it changes them, and they were not compiled
                break
            if rows:
                margins, errors = margins_of(self.constraints, self.compile(changes, rows))
                candidate.margins.update(margins)
                candidate.errors.update(errors)
        self.tried.append(candidate)
        return candidate

    def singles(self) -> list[Candidate]:
        known = load_assumptions()
        return [
            self.evaluate((f"{setting}.{alternative['id']}",), "single")
            for setting in self.spec["settings"]
            for alternative in known[setting]["alternatives"]
        ]

    def movers(self, singles: list[Candidate]) -> list[str]:
        """The alternatives that raise some failing constraint's margin, singly."""
        return [
            s.changes[0]
            for s in singles
            if any(
                s.margins[row] is not None
                and (self.defaults[row] is None or s.margins[row] > self.defaults[row] + MOVED_GIB)
                for row in self.failing
            )
        ]

    def run(self) -> None:
        if not self.failing:
            return
        singles = self.singles()
        if any(c.holds for c in singles) or self.spec["max_changes"] < 2:
            return
        movers = self.movers(singles)
        pairs = [
            self.evaluate((a, b), "pair")
            for a, b in itertools.combinations(movers, 2)
            if setting_of(a) != setting_of(b)
        ]
        if any(c.holds for c in pairs):
            return
        best = max(pairs or singles, key=lambda c: c.smallest)
        while len(best.changes) < self.spec["max_changes"]:
            used = {setting_of(change) for change in best.changes}
            grown = [self.evaluate((*best.changes, m), "greedy") for m in movers if setting_of(m) not in used]
            if not grown or any(c.holds for c in grown):
                return
            widest = max(grown, key=lambda c: c.smallest)
            if widest.smallest <= best.smallest:
                return  # no alternative raises it further: greedy ends
            best = widest

    def result(self) -> dict[str, Any]:
        """What the search found, as experiments/outcome-settings.yaml records it (less the date)."""
        holding = sorted((c for c in self.tried if c.holds), key=lambda c: rank_key(c, self.spec["rank"]))
        found: dict[str, Any] = {
            "defaults": {"margins_gib": {row: None if m is None else round(m, 2) for row, m in self.defaults.items()}},
            "candidates": [c.record() for c in self.tried],
            "chosen": list(holding[0].changes) if holding else None,
        }
        if not self.failing:
            found["why"] = "Every outcome the source reports holds under the defaults: nothing is searched."
        elif holding:
            found["why"] = why_chosen(holding, self.spec["rank"])
        else:
            unmet = {
                row: round(
                    max(
                        (c.margins[row] for c in self.tried if c.margins.get(row) is not None),
                        default=self.defaults[row] or 0.0,
                    ),
                    2,
                )
                for row in sorted(self.failing)
                if not any((c.margins.get(row) or -1) >= 0 for c in self.tried)
            }
            found["why"] = (
                f"No candidate of the {len(self.tried)} tried meets every constraint: "
                + "; ".join(f"{row} is at best {margin:+.2f} GiB" for row, margin in unmet.items())
                + "."
            )
            found["unmet"] = unmet
        return found


def rank_key(candidate: Candidate, rank: list[str]) -> tuple[Any, ...]:
    """The candidate's place by the rule `rank` (lower first)."""
    order = file_order()
    keys = {
        "fewest_changes": len(candidate.changes),
        "none_in_view": 1 if in_view(list(candidate.changes)) else 0,
        "widest_smallest_margin": -candidate.smallest,
        "file_order": tuple(order.index(change) for change in candidate.changes),
    }
    return tuple(keys[name] for name in rank)


def file_order() -> list[str]:
    """Every alternative's id, in the order of experiments/assumptions.yaml."""
    return [f"{a['id']}.{alt['id']}" for a in load_assumptions().values() for alt in a.get("alternatives", [])]


RULE_WORDS = {
    "fewest_changes": "the fewest alternatives changed from the defaults",
    "none_in_view": "none found with a published value in view",
    "widest_smallest_margin": "the widest smallest margin",
    "file_order": "the first in experiments/assumptions.yaml",
}


def why_chosen(holding: list[Candidate], rank: list[str]) -> str:
    """The rule that chose the first of `holding` over the next, in words."""
    chosen = holding[0]
    held = f"{len(holding)} candidates meet" if len(holding) > 1 else "1 candidate meets"
    held += " every constraint"
    if len(holding) == 1:
        return f"{held}: {' + '.join(chosen.changes)}, smallest margin {chosen.smallest:+.2f} GiB."
    first, second = rank_key(chosen, rank), rank_key(holding[1], rank)
    deciding = next((name for depth, name in enumerate(rank) if first[depth] != second[depth]), rank[-1])
    return (
        f"{held} ({', '.join(' + '.join(c.changes) for c in holding)}); chosen by {RULE_WORDS[deciding]}:"
        f" {' + '.join(chosen.changes)}, smallest margin {chosen.smallest:+.2f} GiB."
    )


def differences(record: dict[str, Any] | None, found: dict[str, Any]) -> list[str]:
    """What the search found that the record does not say (empty where it holds); the margins are
    compared as recorded, to the hundredth of a GiB."""
    if record is None:
        return ["nothing recorded yet"]
    said = []
    for key in ("defaults", "chosen", "unmet"):
        if record.get(key) != found.get(key):
            said.append(f"'{key}' records {record.get(key)}, the search found {found.get(key)}")
    recorded = {tuple(c["changes"]): c for c in record["candidates"]}
    tried = {tuple(c["changes"]): c for c in found["candidates"]}
    if missing := [list(k) for k in recorded if k not in tried]:
        said.append(f"'candidates' records {missing}, which the search did not try")
    if added := [list(k) for k in tried if k not in recorded]:
        said.append(f"the search tried {added}, which 'candidates' does not record")
    for key in recorded.keys() & tried.keys():
        if recorded[key] != tried[key]:
            said.append(f"candidate {list(key)}: records {recorded[key]}, the search found {tried[key]}")
    return said
