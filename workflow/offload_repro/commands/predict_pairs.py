"""The step-time model's error on ratios, per kind of pair, in percentage points: the source's pairs of
published throughputs, the chip's pairs of rows and of sweep points (where its sweep is kept), each
with and without the host-copy and overlap terms; every pair's regime and the speed claims' records."""

from __future__ import annotations

import argparse
from pathlib import Path

from offload_repro.commands import arguments
from offload_repro.core.data import TARGET_DIR, load_rows, load_target
from offload_repro.core.files import DEVICE_RESULTS_DIR, REPO_ROOT, read_yaml
from offload_repro.core.published import load_speed, published_throughputs
from offload_repro.core.results import read_result, write_result
from offload_repro.produce.predicted.pair_errors import PLACEMENTS, pair_errors
from offload_repro.produce.predicted.pair_record import load_record
from offload_repro.produce.predicted.prediction import network_shape, read_program

PARENTS = (
    arguments.TABLES,
    arguments.TARGET,
    arguments.OUT,
    arguments.SPEED,
    arguments.CLAIMS,
    arguments.COMPILED,
    arguments.CHOSEN,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--prediction", type=Path, required=True, help="the target's prediction (held to it)")
    parser.add_argument("--devices", nargs="*", default=[], help="device targets whose runs are kept as data")
    parser.add_argument("--validation", type=Path, help="the validation stage's result: two scales of one placement")


def run(args: argparse.Namespace) -> int:
    speed = load_speed(args.speed)
    rows = load_rows(args.tables)
    by_id = {row.id: row for row in rows}
    source = load_target(args.target)
    shape = network_shape(source, speed)
    programs = {}
    for path in args.compiled:
        compiled = read_result(path, "compile")
        if compiled["row"] in by_id and compiled["status"] == "ok" and compiled["fits"]:
            programs[compiled["row"]] = read_program(compiled, shape)
    gpus = [load_target(path.stem) for path in sorted(TARGET_DIR.glob("*.yaml"))]
    found = pair_errors(
        rows,
        source,
        programs,
        published_throughputs(by_id, speed, args.claims),
        [(load_target(name), REPO_ROOT / DEVICE_RESULTS_DIR / name) for name in args.devices],
        [target for target in gpus if target.kind == "gpu"],
        read_yaml(args.claims)["claims"],
        speed,
        read_result(args.prediction, "predicted"),
        load_record(),
        read_result(args.validation, "validation") if args.validation else None,
        # the source's rows as compiled and predicted: under the chosen settings (the chip's keep their own)
        regime_rows=arguments.rows(args),
    )
    result = write_result(args.out, "pair-errors", found)
    for name, summary in result["summaries"][PLACEMENTS].items():
        said = ", ".join(
            f"{model} {s['mean_abs_pp']:.1f} pp mean, {s['largest_abs_pp']:.1f} largest,"
            f" sign {s['sign_agrees']}/{s['pairs']}"
            for model, s in summary["by_model"].items()
        )
        print(f"pairs {name}: {said or 'none'}")
    print(f"kept model: {result['kept_model']}")
    return 0
