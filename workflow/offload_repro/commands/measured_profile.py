"""A latency profile for XLA's scheduler from the step-time model's costs of each published run's program."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.commands import arguments
from offload_repro.core.measured_elsewhere import load_measured
from offload_repro.core.results import read_result
from offload_repro.produce.predicted.target_rates import load_speed
from offload_repro.produce.validation.run_profiles import write_run_profiles

PARENTS = (arguments.OUT,)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("compiled", nargs="+", type=Path, help="each run's compiled result")


def run(args: argparse.Namespace) -> int:
    compiled = {}
    for path in args.compiled:
        result = read_result(path, "compile")
        compiled[result["row"]] = result
    record = write_run_profiles(load_measured(), compiled, args.out, load_speed())
    for run_id, entry in record.items():
        said = entry.get("skipped") and f"no profile: {entry['skipped']}"
        print(f"{run_id}: " + (said or f"{entry['entries']} instructions at {entry['rate_tflops']:.0f} TFLOP/s"))
    return 0
