"""Inside a SLURM job: check image, MaxText, GPUs, memory, start."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.cluster.preflight_checks import write_preflight
from offload_repro.commands import arguments
from offload_repro.core.data import load_rows, load_target

PARENTS = (arguments.TABLES, arguments.TARGET, arguments.OUT, arguments.WORK_DIR, arguments.CONTAINER)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("compiled", nargs="*", type=Path, help="the rows' compiled results on this target")


def run(args: argparse.Namespace) -> int:
    passed = write_preflight(
        load_rows(args.tables),
        load_target(args.target),
        args.compiled,
        args.out,
        args.work_dir.resolve(),
        args.container_runtime,
        args.allow_unpinned_container,
    )
    return 0 if passed else 1
