"""Print a target's verdict counts, its failed rows with their causes, and where its report is."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.commands import arguments
from offload_repro.present.closing_lines import summary_lines

PARENTS = (arguments.VERDICTS,)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--page", required=True, type=Path, help="the report's entry page")
    parser.add_argument("--evidence", type=Path, help="the target's evidence table: each failed row with its cause")


def run(args: argparse.Namespace) -> int:
    print("\n".join(summary_lines(args.verdicts, args.page, args.evidence)))
    return 0
