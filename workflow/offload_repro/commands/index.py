"""The entry page of every target with results."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.commands import arguments
from offload_repro.present.pages import render_index

PARENTS = (arguments.OUT,)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pages", nargs="+", required=True, type=Path, help="each target's page")
    parser.add_argument("--verdicts", nargs="+", required=True, type=Path, help="each target's verdicts, same order")


def run(args: argparse.Namespace) -> int:
    render_index(args.pages, args.verdicts, args.out)
    return 0
