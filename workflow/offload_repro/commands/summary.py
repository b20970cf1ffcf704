"""Print a target's verdict counts and where its report is."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.core.results import read_result

PARENTS = ()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--verdicts", required=True, type=Path, help="the target's verdicts")
    parser.add_argument("--page", required=True, type=Path, help="the report's entry page")


def run(args: argparse.Namespace) -> int:
    verdicts = read_result(args.verdicts, "verdicts")
    counts = ", ".join(f"{count} {verdict}" for verdict, count in verdicts["counts"].items())
    print(f"offload-repro: {verdicts['target']}: {counts} (of {len(verdicts['claims'])} claims)")
    print(f"offload-repro: report: {args.page}")
    return 0
