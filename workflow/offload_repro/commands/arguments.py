"""Arguments that several commands take, each declared once as an argparse parent, and the
reader of the row they name."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from offload_repro.core.data import DataError, Row, load_rows
from offload_repro.core.variants import apply_chosen


def _option(*names: str, **settings: Any) -> argparse.ArgumentParser:
    """A parent parser holding one option, for `parents=`."""
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(*names, **settings)
    return parent


def _tables(required: bool) -> argparse.ArgumentParser:
    return _option("--tables", nargs="+", required=required, default=[], help="the tables of rows (experiments/rows)")


TABLES = _tables(required=True)
OPTIONAL_TABLES = _tables(required=False)
OUT = _option("--out", required=True, type=Path, help="the file to write")
TARGET = _option("--target", required=True, help="a target's name (experiments/targets/<name>.yaml)")
ROW = _option("--row", required=True, help="the row's id")
WORK_DIR = _option("--work-dir", required=True, type=Path, help="the directory of the MaxText processes' files")
EVIDENCE = _option("--evidence", required=True, type=Path, help="the target's evidence table")
VERDICTS = _option("--verdicts", required=True, type=Path, help="the target's verdicts")
# The step-time model's inputs, and the compiled programs it predicts: the rows' (predict, latency_profile)
# or the runs' measured elsewhere (measured_profile, validate_model).
SPEED = _option("--speed", default="experiments/speed.yaml", type=Path, help="the step-time model's inputs")
CLAIMS = _option("--claims", default="experiments/claims.yaml", type=Path, help="the speedups that imply throughputs")
COMPILED = _option("compiled", nargs="+", type=Path, help="the rows' compiled results on the target")
RUNS_COMPILED = _option("compiled", nargs="+", type=Path, help="each run's compiled result")
# A row's own run (run) and a cluster's preflight run in a container on GPU targets.
CONTAINER = argparse.ArgumentParser(add_help=False)
CONTAINER.add_argument(
    "--container-runtime",
    default="pyxis",
    choices=["pyxis", "apptainer"],
    help="how a GPU target's ranks start their image: pyxis (--container-image) or apptainer (--nv)",
)
CONTAINER.add_argument(
    "--allow-unpinned-container",
    action="store_true",
    help="run an image by its tag where envs/containers.yaml records no digest",
)
# The alternatives the source's outcomes chose (experiments/outcome-settings.yaml's record, through
# the plan), as JSON: [{id, settings, rows}]; a command applies each to the rows it affects.
CHOSEN = _option(
    "--chosen",
    type=json.loads,
    default=[],
    help="the settings chosen by the source's outcomes, as JSON [{id, settings, rows}], each applied where it applies",
)
# The arguments of a command that works on one row of one target.
ONE_ROW = (TABLES, ROW, TARGET, OUT, WORK_DIR)


def rows(args: argparse.Namespace) -> list[Row]:
    """The rows of `--tables`, each under the alternatives of `--chosen` that affect it (where the
    command takes `--chosen`)."""
    return [apply_chosen(found, getattr(args, "chosen", [])) for found in load_rows(args.tables)]


def row(args: argparse.Namespace) -> Row:
    """The row `--row` names, from `--tables`, under the alternatives of `--chosen` that affect it."""
    for found in rows(args):
        if found.id == args.row:
            return found
    raise DataError(f"no row with id '{args.row}' in {', '.join(args.tables)}")
