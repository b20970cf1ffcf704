"""Train one row on one target with MaxText, write its JSON."""

from __future__ import annotations

import argparse

from offload_repro.commands import arguments
from offload_repro.core.data import load_rows, load_target
from offload_repro.produce.measured.runner import run_row, same_program_record

PARENTS = (*arguments.ONE_ROW, arguments.CONTAINER)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--repeats",
        type=int,
        help="how many times to run the row (default: the target's repeats); the record says how many ran",
    )
    parser.add_argument(
        "--once-per-program",
        action="store_true",
        help="where a row that is one program with this one on the target (a TPU reads none of XLA:GPU's"
        " flags) already has a record beside --out, file that record for this row instead of training again",
    )


def run(args: argparse.Namespace) -> int:
    row, target = arguments.row(args), load_target(args.target)
    result = same_program_record(row, load_rows(args.tables), target, args.out) if args.once_per_program else None
    if result is not None:
        print(f"{row.id}: {result['status']} (the record of {result['same_program_as']}: one program on {target.name})")
        return 0
    result = run_row(
        row,
        target,
        args.out,
        args.work_dir,
        container_runtime=args.container_runtime,
        allow_unpinned=args.allow_unpinned_container,
        times=args.repeats,
    )
    print(f"{result['row']}: {result['status']}" + (f" ({result['message']})" if result["message"] else ""))
    return 0
