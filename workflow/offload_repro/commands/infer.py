"""The settings the source's outcomes decide: the declared search, compiled, checked against its record."""

from __future__ import annotations

import argparse
import datetime
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml

from offload_repro.commands import arguments
from offload_repro.core import outcome_settings
from offload_repro.core.data import DataError, Row, Target, load_rows, load_target
from offload_repro.core.files import checkout_relative
from offload_repro.core.outcome_settings import settings_of
from offload_repro.core.results import write_result
from offload_repro.core.variants import apply_all
from offload_repro.judge.claims import load_claims
from offload_repro.produce.compiled.compiled_row import compile_row
from offload_repro.produce.whatif.settings_search import Compile, Search, differences

PARENTS = (arguments.TABLES, arguments.OUT)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--claims", required=True, type=Path, help="experiments/claims.yaml (its outcome claims)")
    parser.add_argument("--settings-file", type=Path, default=outcome_settings.SETTINGS_FILE)
    parser.add_argument("--programs", required=True, type=Path, help="the cache of compiled programs")
    parser.add_argument("--jobs", type=int, default=2, help="compiles at once")


def compiler(args: argparse.Namespace, target: Target, rows: dict[str, Row], work: Path) -> Compile:
    """The search's compile: each row compiled as the compile stage compiles it (its program in a
    process of its own), `args.jobs` at once, every program through the target's cache (a row a
    candidate does not change is a cache hit)."""

    def compile_rows(changes: tuple[str, ...], names: list[str]) -> dict[str, dict[str, Any]]:
        name = "+".join(changes) or "defaults"
        settings = [s["settings"] for s in settings_of(list(changes))]
        variant = {"id": name, "settings": settings} if changes else None

        def one(row: str) -> tuple[str, dict[str, Any]]:
            out, work_dir = work / name / f"{row}.json", work / "work" / name / row
            # a candidate that does not compile is a result with XLA's words, never a crash
            return row, compile_row(apply_all(rows[row], settings, name), target, out, work_dir, args.programs, variant)

        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            found = dict(pool.map(one, names))
        said = ", ".join(f"{row} {r.get('margin_gib', float('nan')):+.1f}" for row, r in found.items())
        print(f"infer: {name}: {said}", flush=True)
        return found

    return compile_rows


def run(args: argparse.Namespace) -> int:
    declared = outcome_settings.load(args.settings_file)
    spec = declared["search"]
    rows = load_rows(args.tables)
    constraints = outcome_settings.constraints(rows, load_claims(args.claims), str(args.claims))
    work = args.out.parent / "search"
    target = load_target(spec["compile_target"])
    search = Search(spec, constraints, compiler(args, target, {row.id: row for row in rows}, work))
    search.run()
    found = search.result()
    compiles = sum(1 for path in work.glob("*/*.json"))
    write_result(
        args.out,
        "settings-search",
        {"target": spec["compile_target"], "constraints": [c.__dict__ for c in constraints], **found},
    )
    where = checkout_relative(args.settings_file)
    print(f"infer: {len(search.tried)} candidates tried, {compiles} row compiles; chosen: {found['chosen']}")
    print(f"infer: {found['why']}")
    if differs := differences(declared["record"], found):
        block = yaml.safe_dump(
            {"record": {"recorded_on": datetime.date.today().isoformat(), **found}}, sort_keys=False, width=110
        )
        print(f"infer: not recorded, so no stage takes it yet; record this as {where}'s `record`:\n{block}")
        raise DataError(f"{where}: field 'record': " + "; ".join(differs))
    print(f"infer: {where}'s record holds")
    return 0
