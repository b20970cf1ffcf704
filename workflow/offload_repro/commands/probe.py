"""Measure host<->device bandwidth at the offloaded tensors' sizes."""

from __future__ import annotations

import argparse

from offload_repro.commands import arguments
from offload_repro.core.data import load_rows, load_target
from offload_repro.produce.measured.host_link_probe import write_probe

PARENTS = (arguments.TABLES, arguments.TARGET, arguments.OUT)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repeats", type=int, default=5, help="measurements per size and direction")


def run(args: argparse.Namespace) -> int:
    write_probe(load_target(args.target), load_rows(args.tables), args.out, args.repeats)
    return 0
