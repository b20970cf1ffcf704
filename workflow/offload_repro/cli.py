"""Command line of the package; each Snakemake rule calls one subcommand."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from offload_repro.data import DataError, load_rows, load_target


def _row(tables: list[str], row_id: str):
    for row in load_rows(tables):
        if row.id == row_id:
            return row
    raise DataError(f"no row with id '{row_id}' in {', '.join(tables)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="offload_repro", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    validate = sub.add_parser("validate", help="validate tables and targets; print the rows")
    validate.add_argument("--tables", nargs="+", required=True)
    validate.add_argument("--targets", nargs="*", default=[])

    run = sub.add_parser("run", help="train one row on one target with MaxText, write its JSON")
    run.add_argument("--tables", nargs="+", required=True)
    run.add_argument("--row", required=True)
    run.add_argument("--target", required=True)
    run.add_argument("--out", required=True, type=Path)
    run.add_argument("--work-dir", required=True, type=Path)

    collect = sub.add_parser("collect", help="run JSONs -> one CSV table")
    collect.add_argument("--out", required=True, type=Path)
    collect.add_argument("runs", nargs="+", type=Path)

    args = parser.parse_args(argv)
    try:
        if args.command == "validate":
            rows = load_rows(args.tables)
            for name in args.targets:
                load_target(name)
            for row in rows:
                print(f"{row.table}\t{row.id}\t{row.label}")
        elif args.command == "run":
            from offload_repro.runner import run_row

            result = run_row(_row(args.tables, args.row), load_target(args.target), args.out, args.work_dir)
            print(f"{result['row']}: {result['status']}" + (f" ({result['message']})" if result["message"] else ""))
        elif args.command == "collect":
            from offload_repro.collect import collect as collect_runs

            collect_runs(args.runs, args.out)
    except DataError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


def run_logged(argv: list[str], log_path: str | Path) -> None:
    """Run one subcommand from a Snakemake `run:` block, its output going to the rule's log."""
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w", encoding="utf-8") as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        status = main(argv)
    if status != 0:
        raise RuntimeError(f"offload_repro {' '.join(argv)} failed with status {status}; see {log_path}")


if __name__ == "__main__":
    sys.exit(main())
