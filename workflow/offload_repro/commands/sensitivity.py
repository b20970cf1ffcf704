"""Every unstated setting's alternatives, compiled, beside the default."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.commands import arguments
from offload_repro.core.data import load_target
from offload_repro.produce.whatif.alternatives import write_sensitivity

PARENTS = (arguments.TARGET, arguments.OUT)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--default", nargs="+", required=True, type=Path, help="the affected rows' compiles")
    parser.add_argument("--variants", nargs="*", default=[], type=Path, help="every alternative's compiles")
    parser.add_argument(
        "--predicted", nargs="*", default=[], type=Path, help="each alternative's prediction: <variant>/predicted.json"
    )
    parser.add_argument("--default-predicted", type=Path, help="the defaults' own prediction")


def run(args: argparse.Namespace) -> int:
    result = write_sensitivity(
        load_target(args.target),
        default_files=args.default,
        variant_files=args.variants,
        predicted_files=args.predicted,
        out=args.out,
        default_predicted=args.default_predicted,
    )
    print(f"{args.out}: {len(result['assumptions'])} unstated settings, {result['variants']} alternatives")
    return 0
