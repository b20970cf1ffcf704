"""A latency profile for XLA's scheduler from the step-time model's costs of each published run's program."""

from __future__ import annotations

import argparse

from offload_repro.commands import arguments
from offload_repro.core.measured_elsewhere import load_measured, load_validation
from offload_repro.core.published import load_speed
from offload_repro.core.results import read_by_row
from offload_repro.produce.predicted.model_profile import entry_line
from offload_repro.produce.validation.against_measured import write_run_profiles

PARENTS = (arguments.OUT, arguments.RUNS_COMPILED)


def run(args: argparse.Namespace) -> int:
    compiled = read_by_row(args.compiled, "compile")
    record = write_run_profiles(load_measured(), compiled, args.out, load_speed(), load_validation())
    for run_id, entry in record.items():
        print(entry_line(run_id, entry))
    return 0
