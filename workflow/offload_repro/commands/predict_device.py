"""The step-time model against the steps a device measured: each program its kept runs ran, replayed
from the kept HLO under each calibration (the chip's own rows in turn, the recorded runs measured
elsewhere, the source's rows) and each model. The source's calibration carried to the device is a
measured carry across hardware: the result is held to what experiments/validation.yaml records of it."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.commands import arguments
from offload_repro.core.data import DataError, load_target
from offload_repro.core.files import DEVICE_RESULTS_DIR, REPO_ROOT
from offload_repro.core.measured_elsewhere import load_validation
from offload_repro.core.results import read_result, write_result
from offload_repro.core.validation_record import unrecorded_carries
from offload_repro.produce.predicted.device_prediction import predict

PARENTS = (arguments.TARGET, arguments.OUT)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--calibrated-by", type=Path, help="the source's rows' prediction (its calibration is carried)")


def run(args: argparse.Namespace) -> int:
    source = read_result(args.calibrated_by, "predicted") if args.calibrated_by else None
    found = predict(load_target(args.target), REPO_ROOT / DEVICE_RESULTS_DIR, source)
    # every prediction for hardware nobody has run on takes the recorded carry error as its band: a
    # device that measures the carry otherwise stops here, naming the value to record
    if source and (differs := unrecorded_carries(found["carry_errors"], args.target, load_validation())):
        raise DataError("; ".join(differs) + " (record it, so that every prediction's band takes it)")
    result = write_result(args.out, "device-prediction", found)
    for model, by_model in result["models"].items():
        said = ", ".join(f"{by} {e['mean_abs']:.1%} mean" for by, e in by_model["errors"].items() if e)
        print(f"{args.target}: {model}: {said}")
    print(f"{args.target}: kept model: {result['kept_model']}")
    return 0
