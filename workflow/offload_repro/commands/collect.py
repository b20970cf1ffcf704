"""Run JSONs -> one CSV table."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.commands import arguments
from offload_repro.present.run_table import collect

PARENTS = (arguments.OUT,)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", type=Path, help="the rows' run results")


def run(args: argparse.Namespace) -> int:
    collect(args.runs, args.out)
    return 0
