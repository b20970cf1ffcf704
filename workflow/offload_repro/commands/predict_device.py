"""The step-time model against the steps a device measured: each program its kept runs ran, replayed
from the kept HLO under each calibration (the chip's own rows in turn, H100's, GB200's) and each model."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.commands import arguments
from offload_repro.core.data import load_target
from offload_repro.core.files import DEVICE_RESULTS_DIR, REPO_ROOT
from offload_repro.core.results import read_result, write_result
from offload_repro.produce.predicted.device_prediction import predict

PARENTS = (arguments.TARGET, arguments.OUT)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gb200", type=Path, help="the source's rows' prediction (its calibration is carried)")


def run(args: argparse.Namespace) -> int:
    gb200 = read_result(args.gb200, "predicted") if args.gb200 else None
    result = write_result(
        args.out, "device-prediction", predict(load_target(args.target), REPO_ROOT / DEVICE_RESULTS_DIR, gb200)
    )
    for model, found in result["models"].items():
        said = ", ".join(f"{source} {e['mean_abs']:.1%} mean" for source, e in found["errors"].items() if e)
        print(f"{args.target}: {model}: {said}")
    print(f"{args.target}: kept model: {result['kept_model']}")
    return 0
