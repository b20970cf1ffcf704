"""Result files of every kind -> one table of observations."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.commands import arguments
from offload_repro.judge.evidence_table import build

PARENTS = (arguments.TARGET, arguments.OUT)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="+", type=Path, help="result files of any kind")


def run(args: argparse.Namespace) -> int:
    table = build(args.results, args.target, args.out)
    print(f"{args.out}: {len(table['observations'])} observations from {len(table['sources'])} files")
    return 0
