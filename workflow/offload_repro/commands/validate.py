"""Validate tables and targets; print the rows."""

from __future__ import annotations

import argparse
import sys

from offload_repro.commands import arguments
from offload_repro.core.data import load_rows, load_target

PARENTS = (arguments.TABLES,)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--targets", nargs="*", default=[], help="targets to load and validate by name")


def run(args: argparse.Namespace) -> int:
    rows = load_rows(args.tables)
    for name in args.targets:
        for uncited in load_target(name).uncited:
            print(uncited, file=sys.stderr)
    for row in rows:
        print(f"{row.table}\t{row.id}\t{row.label}")
    return 0
