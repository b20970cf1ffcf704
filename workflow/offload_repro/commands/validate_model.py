"""The step-time model against every published run measured elsewhere: predicted from each run's
compiled program, calibrated three ways, against its measured step."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.commands import arguments
from offload_repro.core.data import DataError, load_target
from offload_repro.core.measured_elsewhere import VALIDATION_FILE, load_measured, load_validation, unrecorded_pairs
from offload_repro.core.published import load_speed
from offload_repro.core.results import read_by_row, read_result, write_result
from offload_repro.produce.validation.against_measured import (
    unlike_across_hardware,
    unrecorded,
    unrecorded_across_hardware,
    validate_model,
)

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
    if differs := unrecorded_pairs(runs, validation["kinds"]):
        raise DataError("; ".join(differs))
    speed = load_speed()
    compiled = read_by_row(args.compiled, "compile")
    profiled = read_by_row(args.profiled, "compile")
    source = read_result(args.calibrated_by, "predicted") if args.calibrated_by else None
    calibration_target = load_target(speed["calibration"]["target"])
    found = validate_model(runs, compiled, speed, validation, source, calibration_target, profiled or None)
    # every run's verdicts take the recorded error: a stage that computes another stops, naming it
    differs = unrecorded(found["real_hardware_error"], validation["kinds"], VALIDATION_FILE)
    unlike = None
    if source:  # the carry from the source's hardware ran: the error every what-if prediction takes
        recorded = validation["calibrations"]["across_hardware"]["recorded_error"]
        differs += unrecorded_across_hardware(found["errors"]["across_hardware"], recorded, VALIDATION_FILE)
        unlike = unlike_across_hardware(found["errors"]["across_hardware"], recorded, VALIDATION_FILE)
    if differs:
        raise DataError("; ".join(differs) + " (record it, so that every run's verdicts take it)")
    written = write_result(args.out, "validation", found)
    model = written["errors"]["by_model"][written["errors"]["model"]]["smallest"]
    simple = written["errors"]["by_model"][written["errors"]["simple_model"]]["smallest"]
    predicted = sum(1 for r in written["runs"] if r["status"] == "ok")
    print(
        f"validation: {predicted} of {len(written['runs'])} runs predicted; each group's named anchor calibrating (a):"
        f" mean {model['mean_abs']:.1%}, largest {model['largest_abs']:.1%} over {model['pairs']} predictions of"
        f" {model['runs']} runs on {', '.join(model['gpus']) or 'no GPU'}"
        f" (counted FLOPs over one rate: {simple['mean_abs']:.1%}, {simple['largest_abs']:.1%})"
    )
    if unlike:  # a record of another carry is kept, not compared: the value to record again
        print(f"validation: {unlike}")
    return 0
