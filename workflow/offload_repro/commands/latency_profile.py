"""A latency profile for XLA's scheduler from the step-time model's costs of each compiled row."""

from __future__ import annotations

import argparse

from offload_repro.commands import arguments
from offload_repro.core.data import load_rows, load_target
from offload_repro.core.published import load_speed
from offload_repro.core.results import read_result
from offload_repro.produce.predicted.model_profile import entry_line, write_profile

PARENTS = (arguments.TABLES, arguments.TARGET, arguments.OUT, arguments.SPEED, arguments.CLAIMS, arguments.COMPILED)


def run(args: argparse.Namespace) -> int:
    compiled = [read_result(path, "compile") for path in args.compiled]
    record = write_profile(
        load_rows(args.tables), load_target(args.target), compiled, args.out, load_speed(args.speed), args.claims
    )
    for row_id, entry in record.items():
        print(entry_line(row_id, entry))
    return 0
