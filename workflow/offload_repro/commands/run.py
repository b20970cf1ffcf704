"""Train one row on one target with MaxText, write its JSON."""

from __future__ import annotations

import argparse

from offload_repro.commands import arguments
from offload_repro.core.data import load_target
from offload_repro.produce.measured.runner import run_row

PARENTS = (*arguments.ONE_ROW, arguments.CONTAINER)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repeats",
        type=int,
        help="how many times to run the row (default: the target's repeats); the record says how many ran",
    )


def run(args: argparse.Namespace) -> int:
    result = run_row(
        arguments.row(args),
        load_target(args.target),
        args.out,
        args.work_dir,
        container_runtime=args.container_runtime,
        allow_unpinned=args.allow_unpinned_container,
        times=args.repeats,
    )
    print(f"{result['row']}: {result['status']}" + (f" ({result['message']})" if result["message"] else ""))
    return 0
