"""Render one target's HTML page."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.commands import arguments
from offload_repro.core.data import load_rows
from offload_repro.present.pages import render_target

PARENTS = (arguments.TABLES, arguments.OUT, arguments.EVIDENCE, arguments.VERDICTS)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--assumptions", type=Path, help="the sensitivity stage's result, for its section")
    parser.add_argument("--pairs", type=Path, help="the step-time model's error on ratios, for its chart")


def run(args: argparse.Namespace) -> int:
    render_target(load_rows(args.tables), args.evidence, args.verdicts, args.out, args.assumptions, args.pairs)
    return 0
