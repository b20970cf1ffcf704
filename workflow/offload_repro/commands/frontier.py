"""The largest micro batch a placement policy fits, by compiling."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.commands import arguments
from offload_repro.core.data import load_target
from offload_repro.produce.whatif.capacity_frontier import write_frontier

PARENTS = (arguments.TABLES, arguments.TARGET, arguments.OUT, arguments.CHOSEN)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--policy", required=True, help="a placement policy of experiments/frontier.yaml")
    parser.add_argument("--programs", required=True, type=Path, help="the cache of compiled programs for the target")


def run(args: argparse.Namespace) -> int:
    rows, target = arguments.rows(args), load_target(args.target)
    result = write_frontier(args.policy, rows, target, args.out, args.programs)
    cached = sum(point["cached"] for point in result["points"])
    note = f"; {result['message']}" if result["message"] else ""
    largest = result["largest_fitting_micro_batch"]
    counted = f"{len(result['points'])} points, {cached} from the cache"
    print(f"{args.target} {args.policy}: largest fitting micro batch {largest} ({counted}){note}")
    return 0
