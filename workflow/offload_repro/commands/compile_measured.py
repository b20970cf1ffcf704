"""Compile one published run measured elsewhere as it ran, for its GPU at its node count; write its JSON."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.commands import arguments
from offload_repro.core.data import DataError
from offload_repro.core.measured_elsewhere import load_measured
from offload_repro.produce.validation.compile_run import compile_measured

PARENTS = (arguments.OUT, arguments.WORK_DIR)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="a run id of experiments/measured-elsewhere/")
    parser.add_argument("--programs", type=Path, help="the cache of compiled programs for the run's target")
    parser.add_argument(
        "--latency-profile", type=Path, help="schedule by this profile of the model's costs (rule measured_profile)"
    )


def run(args: argparse.Namespace) -> int:
    found = [run for run in load_measured() if run.id == args.run]
    if not found:
        raise DataError(f"experiments/measured-elsewhere/: no run '{args.run}'")
    result = compile_measured(
        found[0],
        args.out,
        args.work_dir,
        args.programs,
        latency_profile=args.latency_profile,
    )
    verdict = "fits" if result.get("fits") else "out of memory"
    dropped = result["measured_elsewhere"]["dropped_unknown_flags"]
    print(
        f"{args.run}: {result['status']}"
        + (f", {verdict}" if result["status"] == "ok" else "")
        + (f"; flags this XLA does not know, dropped: {' '.join(dropped)}" if dropped else "")
    )
    return 0
