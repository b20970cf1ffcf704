"""Predicted step time and throughput of each compiled row on a target."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.commands import arguments
from offload_repro.core.data import load_rows, load_target
from offload_repro.core.published import load_speed
from offload_repro.produce.predicted.prediction import write_prediction

PARENTS = (arguments.TABLES, arguments.TARGET, arguments.OUT, arguments.SPEED, arguments.CLAIMS, arguments.COMPILED)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--calibrated-by", type=Path, help="the calibration target's own prediction (what-if targets)")


def run(args: argparse.Namespace) -> int:
    speed = load_speed(args.speed)
    predicted = write_prediction(
        load_rows(args.tables),
        load_target(args.target),
        args.compiled,
        args.out,
        args.speed,
        load_target(speed["calibration"]["target"]),
        args.calibrated_by,
        args.claims,
    )
    calibrated = sum(1 for row in predicted["rows"] if row.get("calibrated_on"))
    print(f"{args.target}: {len(predicted['rows'])} rows predicted, {calibrated} calibrated")
    return 0
