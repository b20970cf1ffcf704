"""What the identity scripts share: the rows asked for and the check.

Each `*_identity.py` script compiles rows two ways that must give the same program and prints a
table; this module parses their common command line (`[ROW ...] [--target T]`).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from glob import glob
from pathlib import Path
from typing import Any

from offload_repro.core.data import Row, Target, load_rows, load_target
from offload_repro.core.files import REPO_ROOT


def same(a: Any, b: Any) -> str:
    """'yes' when both are byte-identical as JSON, else 'NO'."""
    return "yes" if json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) else "NO"


def same_program(a: dict[str, Any], b: dict[str, Any]) -> str:
    """The table's columns memory | HLO sha256 | HLO summary of two compiles' stats."""
    return " | ".join(same(a[key], b[key]) for key in ("memory", "hlo_sha256", "hlo"))


def rows_asked(ids: list[str]) -> list[Row]:
    """The rows of experiments/rows/ with these ids, in table order (all of them for none)."""
    rows = load_rows(sorted(glob(str(REPO_ROOT / "experiments" / "rows" / "*.yaml"))))
    return [row for row in rows if not ids or row.id in ids]


def comparison(description: str, prefix: str) -> tuple[Target, list[Row], Path]:
    """(the target, the rows asked for, a fresh directory for the compiles' work)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("rows", nargs="*")
    parser.add_argument("--target", default="gb200-nvl72")
    options = parser.parse_args()
    return load_target(options.target), rows_asked(options.rows), Path(tempfile.mkdtemp(prefix=prefix))
