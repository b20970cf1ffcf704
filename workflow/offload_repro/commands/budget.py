"""What-if transfer budget and recompute cost from compiled programs."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.commands import arguments
from offload_repro.core.data import load_rows
from offload_repro.produce.whatif.transfer_budget import write_budget

PARENTS = (arguments.TABLES, arguments.OUT)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("compiled", nargs="+", type=Path, help="the rows' compiled results on every target")


def run(args: argparse.Namespace) -> int:
    write_budget(load_rows(args.tables), args.compiled, args.out)
    return 0
