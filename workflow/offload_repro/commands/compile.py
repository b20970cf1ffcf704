"""AOT-compile one row as it runs on a GPU target, write its JSON."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from offload_repro.commands import arguments
from offload_repro.core import maxtext_args
from offload_repro.core.data import DataError, Row, load_target
from offload_repro.core.variants import SEPARATOR, apply_all, schedules_by_profile
from offload_repro.produce.compiled.compiled_row import compile_row
from offload_repro.produce.compiled.program_cache import LHS_OFF

PARENTS = (*arguments.ONE_ROW, arguments.CHOSEN)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--programs", type=Path, help="the cache of compiled programs for this target")
    parser.add_argument("--variant", help="compile the row under this alternative (assumption.alternative)")
    parser.add_argument(
        "--variant-settings",
        type=json.loads,
        help="the alternative's settings, as JSON: one alternative's, or a list of several (a combination)",
    )
    parser.add_argument(
        "--latency-profile",
        type=Path,
        help="the profile an alternative with `latency_profile: step-model` schedules by (rule latency_profile)",
    )


def as_list(settings: dict[str, Any] | list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """One alternative's settings, or a combination's, as the list apply_all takes."""
    if settings is None:
        return []
    return settings if isinstance(settings, list) else [settings]


def guided_by(row: Row, variant: dict[str, Any], profile: Path | None) -> Path | None:
    """The latency profile the alternative schedules the row by, if it asks for one."""
    if not any(schedules_by_profile(one) for one in as_list(variant["settings"])):
        return None
    if profile is None:
        raise DataError(f"alternative '{variant['id']}': it schedules by a latency profile, and none was given")
    if LHS_OFF in maxtext_args.xla_flags(row):
        raise DataError(
            f"alternative '{variant['id']}', row '{row.id}': the row turns the latency-hiding scheduler off,"
            " which XLA turns on for a program with a profile; it cannot be among the rows the alternative affects"
        )
    return profile


def run(args: argparse.Namespace) -> int:
    row, target = arguments.row(args), load_target(args.target)
    variant, profile = None, None
    if args.variant:
        variant = {"id": args.variant, "settings": args.variant_settings or {}}
        row = apply_all(row, as_list(variant["settings"]), args.variant)
        profile = guided_by(row, variant, args.latency_profile)
    result = compile_row(
        row,
        target,
        args.out,
        args.work_dir,
        programs=args.programs,
        variant=variant,
        latency_profile=profile,
        settings=[chosen["id"] for chosen in args.chosen if row.id.partition(SEPARATOR)[0] in chosen["rows"]],
    )
    verdict = "fits" if result.get("fits") else "out of memory"
    cached = f" (program {result['program']['key']} from the cache)" if result["program"]["cached"] else ""
    print(f"{result['row']}: {result['status']}" + (f", {verdict}" if result["status"] == "ok" else "") + cached)
    return 0
