"""The entry page and the comparison of every target with results."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.commands import arguments
from offload_repro.core.data import load_rows
from offload_repro.present.pages import render_index

PARENTS = (arguments.TABLES, arguments.OUT)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--compare", required=True, type=Path, help="the comparison page to write")
    parser.add_argument("--pages", nargs="+", required=True, type=Path, help="each target's page")
    parser.add_argument("--verdicts", nargs="+", required=True, type=Path, help="each target's verdicts, same order")
    parser.add_argument("--evidence", nargs="+", required=True, type=Path, help="each target's evidence, same order")


def run(args: argparse.Namespace) -> int:
    render_index(load_rows(args.tables), args.pages, args.verdicts, args.evidence, args.out, args.compare)
    return 0
