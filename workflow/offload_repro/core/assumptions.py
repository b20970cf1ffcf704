"""Settings the source does not state (experiments/assumptions.yaml): each stated once, by id.

Rows and target files name the ids; results carry the ids, and pages show the sentences. An
assumption with alternatives can be varied (core/variants.py applies one to a row). Only the
stages that show or vary assumptions read this file, so that adding an alternative replans the
new variants and not every compile.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from offload_repro.core.data import DataError, Row, validate
from offload_repro.core.files import REPO_ROOT, read_yaml

ASSUMPTIONS_FILE = REPO_ROOT / "experiments" / "assumptions.yaml"
READS = ("experiments/assumptions.yaml",)


@cache
def load_assumptions(path: Path = ASSUMPTIONS_FILE) -> dict[str, dict[str, Any]]:
    data = validate(read_yaml(path), "assumptions", path)
    found: dict[str, dict[str, Any]] = {}
    for number, entry in enumerate(data["assumptions"], 1):
        if entry["id"] in found:
            raise DataError(f"{path}: assumption {number} (id '{entry['id']}'), field 'id': used twice")
        alternatives = [alternative["id"] for alternative in entry.get("alternatives", [])]
        if len(set(alternatives)) != len(alternatives):
            raise DataError(f"{path}: assumption {number} (id '{entry['id']}'), field 'alternatives': an id used twice")
        found[entry["id"]] = entry
    return found


def sentence(assumption_id: str) -> str:
    entry = load_assumptions().get(assumption_id)
    return entry["sentence"] if entry else assumption_id


def check_ids(named: dict[str, list[str]], rows: list[Row]) -> None:
    """Every id a row or target names exists, every row an assumption affects exists, and every row
    that names an assumption with alternatives is among the rows it affects: the sensitivity stage
    varies exactly those, and a row it left out would be compared, under an alternative, with rows
    compiled under another setting."""
    known = load_assumptions()
    for where, ids in named.items():
        if unknown := [i for i in ids if i not in known]:
            raise DataError(f"{where}, field 'assumptions': unknown ids {unknown}; known: {sorted(known)}")
    row_ids = {row.id for row in rows}
    for entry in known.values():
        if (missing := sorted(set(entry.get("affects", [])) - row_ids)) and rows:
            raise DataError(f"{ASSUMPTIONS_FILE}: assumption '{entry['id']}', field 'affects': unknown rows {missing}")
        if not entry.get("alternatives"):
            continue
        affected = set(entry.get("affects", []))
        if left_out := sorted(row.id for row in rows if entry["id"] in row.assumptions and row.id not in affected):
            raise DataError(
                f"{ASSUMPTIONS_FILE}: assumption '{entry['id']}', field 'affects': rows {left_out} name it"
                " (their 'assumptions') but are not varied with it"
            )


def variants() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(assumption, alternative) for every alternative, in file order."""
    return [(a, alt) for a in load_assumptions().values() for alt in a.get("alternatives", [])]
