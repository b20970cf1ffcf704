"""AOT-compile one row as it runs on a GPU target, write its JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from offload_repro.commands import arguments, fork_server_option
from offload_repro.core.data import load_target
from offload_repro.core.variants import apply
from offload_repro.produce.compiled.compiled_row import compile_row

PARENTS = (*arguments.ONE_ROW, fork_server_option.FORK_SERVER)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--programs", type=Path, help="the cache of compiled programs for this target")
    parser.add_argument("--variant", help="compile the row under this alternative (assumption.alternative)")
    parser.add_argument("--variant-settings", type=json.loads, help="the alternative's settings, as JSON")


def run(args: argparse.Namespace) -> int:
    row, target = arguments.row(args), load_target(args.target)
    variant = None
    if args.variant:
        variant = {"id": args.variant, "settings": args.variant_settings or {}}
        row = apply(row, variant["settings"], args.variant)
    result = compile_row(
        row,
        target,
        args.out,
        args.work_dir,
        programs=args.programs,
        variant=variant,
        launcher=fork_server_option.launcher(args),
    )
    verdict = "fits" if result.get("fits") else "out of memory"
    cached = f" (program {result['program']['key']} from the cache)" if result["program"]["cached"] else ""
    print(f"{result['row']}: {result['status']}" + (f", {verdict}" if result["status"] == "ok" else "") + cached)
    return 0
