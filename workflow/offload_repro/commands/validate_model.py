"""The step-time model against every published run measured elsewhere: predicted from each run's
compiled program, calibrated three ways, against its measured step."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.commands import arguments
from offload_repro.core.data import DataError, load_target
from offload_repro.core.measured_elsewhere import VALIDATION_FILE, load_measured, load_validation
from offload_repro.core.published import load_speed
from offload_repro.core.results import read_by_row, read_result, write_result
from offload_repro.core.validation_record import VALIDATION_RUNS, unrecorded_carries, unrecorded_pairs
from offload_repro.produce.validation.against_measured import unrecorded, validate_model
from offload_repro.produce.validation.since_record import share

PARENTS = (arguments.OUT, arguments.RUNS_COMPILED)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--calibrated-by", type=Path, help="the source's prediction on its own hardware (calibration (c))"
    )
    parser.add_argument(
        "--profiled",
        nargs="*",
        default=[],
        type=Path,
        help="each run compiled again with a profile of the model's costs",
    )


def run(args: argparse.Namespace) -> int:
    validation, runs = load_validation(), load_measured()
    # what the run files alone show, as the plan checks it before any compile
    if differs := unrecorded_pairs(runs, validation):
        raise DataError("; ".join(differs))
    speed = load_speed()
    compiled = read_by_row(args.compiled, "compile")
    profiled = read_by_row(args.profiled, "compile")
    source = read_result(args.calibrated_by, "predicted") if args.calibrated_by else None
    calibration_target = load_target(speed["calibration"]["target"])
    found = validate_model(runs, compiled, speed, validation, source, calibration_target, profiled or None)
    # every verdict takes the recorded errors: over the runs they were recorded over, the stage must
    # compute them again, or it stops, naming the value to record
    since = found["since_record"]
    differs = unrecorded(since["real_hardware_error"], validation["kinds"], VALIDATION_FILE)
    if source:  # the carry from the source's hardware ran
        differs += unrecorded_carries(since["across_hardware"], VALIDATION_RUNS, validation)
    if differs:
        raise DataError("; ".join(differs) + " (record it, so that every run's verdicts take it)")
    written = write_result(args.out, "validation", found)
    model = written["errors"]["by_model"][written["errors"]["model"]]["smallest"]
    simple = written["errors"]["by_model"][written["errors"]["simple_model"]]["smallest"]
    predicted = sum(1 for r in written["runs"] if r["status"] == "ok")
    print(
        f"validation: {predicted} of {len(written['runs'])} runs predicted; each group's named anchor calibrating (a):"
        f" mean {share(model['mean_abs'])}, largest {share(model['largest_abs'])} over {model['pairs']} predictions"
        f" of {model.get('runs', 0)} runs on {', '.join(model.get('gpus', [])) or 'no GPU'}"
        f" (counted FLOPs over one rate: {share(simple['mean_abs'])}, {share(simple['largest_abs'])})"
    )
    # what runs added beside the recorded ones moved, and what recording with them would change
    for line in written["since_record"]["lines"]:
        print(f"validation: {line}")
    return 0
