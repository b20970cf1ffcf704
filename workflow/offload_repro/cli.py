"""Command line of the package; each Snakemake rule calls one subcommand.

Exit status: 0 done; 1 an unexpected failure (its traceback on stderr); 2 bad input (the message
names the file, the row and the field); 3 `check --fail-on` found a verdict it was told to fail on;
143 the cluster ended a row's job (no result written: Snakemake retries it).
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from offload_repro.core.data import DataError, Row, hardware_classes, load_rows, load_target

if TYPE_CHECKING:
    from offload_repro.core.process import Launcher


def _row(tables: list[str], row_id: str) -> Row:
    for row in load_rows(tables):
        if row.id == row_id:
            return row
    raise DataError(f"no row with id '{row_id}' in {', '.join(tables)}")


def _add_fork_server(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fork-server",
        nargs="?",
        const="",
        metavar="DIR",
        help="fork the MaxText processes from a server that imported MaxText once (core/forkserver.py), its"
        " sockets in DIR (without DIR: a per-user directory in the temp directory); absent: plain processes",
    )


def _launcher(args: argparse.Namespace) -> Launcher:
    """How the subcommand starts its MaxText processes, from --fork-server."""
    from offload_repro.core.forkserver import launcher

    return launcher(args.fork_server)


def _check(args: argparse.Namespace) -> int:
    from offload_repro.core import provenance
    from offload_repro.core.results import read_result, write_result
    from offload_repro.judge.check import check_claims, load_claims, views

    evidence = read_result(args.evidence, "evidence")
    claims = load_claims(args.claims)
    qualifying = hardware_classes()
    names = {name for targets in qualifying.values() for name in targets}
    names |= {obs["target"] for obs in evidence["observations"] if obs["target"]}
    targets = {name: load_target(name) for name in sorted(names)}
    verdicts = check_claims(claims, views(evidence["observations"], targets), qualifying)
    if args.assumptions:
        from offload_repro.core.files import read_yaml
        from offload_repro.judge.robustness import policy_points, robustness, varied_verdicts

        sensitivity = read_result(args.assumptions, "assumptions")
        points, micro_batches = policy_points(read_yaml(args.frontier)["policies"], load_rows(args.tables))
        judge = varied_verdicts(
            lambda chosen, observations: check_claims(chosen, views(observations, targets), qualifying)
        )
        found = robustness(claims, evidence["observations"], sensitivity, judge, points, micro_batches)
        for claim in verdicts["claims"]:
            if claim["id"] in found:
                claim["robustness"] = found[claim["id"]]
    compiled = sorted({obs["target"] for obs in evidence["observations"] if obs["evidence"] == "compiled"})
    write_result(
        args.out,
        "verdicts",
        {
            "target": evidence["target"],
            "compile_target": compiled[0] if compiled else None,
            "built_from": {
                "evidence": str(args.evidence),
                "claims": str(args.claims),
                "project_commit": provenance.project_commit(),
                "built_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            },
            **verdicts,
        },
    )
    counts = verdicts["counts"]
    print(f"{evidence['target']}: " + ", ".join(f"{count} {verdict}" for verdict, count in counts.items()))
    failing = [verdict for verdict in args.fail_on if counts.get(verdict)]
    if failing:
        print(f"check: failing on {', '.join(f'{counts[v]} {v}' for v in failing)} (--fail-on)", file=sys.stderr)
        return 3
    return 0


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="offload_repro", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    validate = sub.add_parser("validate", help="validate tables and targets; print the rows")
    validate.add_argument("--tables", nargs="+", required=True)
    validate.add_argument("--targets", nargs="*", default=[])

    for name, help_text in (
        ("run", "train one row on one target with MaxText, write its JSON"),
        ("compile", "AOT-compile one row as it runs on a GPU target, write its JSON"),
    ):
        one_row = sub.add_parser(name, help=help_text)
        one_row.add_argument("--tables", nargs="+", required=True)
        one_row.add_argument("--row", required=True)
        one_row.add_argument("--target", required=True)
        one_row.add_argument("--out", required=True, type=Path)
        one_row.add_argument("--work-dir", required=True, type=Path)
        _add_fork_server(one_row)
        if name == "compile":
            one_row.add_argument("--programs", type=Path, help="the cache of compiled programs for this target")
            one_row.add_argument("--variant", help="compile the row under this alternative (assumption.alternative)")
            one_row.add_argument("--variant-settings", type=json.loads, help="the alternative's settings, as JSON")
        if name == "run":
            one_row.add_argument("--container-runtime", default="pyxis", choices=["pyxis", "apptainer"])
            one_row.add_argument("--allow-unpinned-container", action="store_true")

    preflight = sub.add_parser("preflight", help="inside a SLURM job: check image, MaxText, GPUs, memory, start")
    preflight.add_argument("--tables", nargs="+", required=True)
    preflight.add_argument("--target", required=True)
    preflight.add_argument("--out", required=True, type=Path)
    preflight.add_argument("--work-dir", required=True, type=Path)
    preflight.add_argument("--container-runtime", default="pyxis", choices=["pyxis", "apptainer"])
    preflight.add_argument("--allow-unpinned-container", action="store_true")
    preflight.add_argument("compiled", nargs="*", type=Path, help="the rows' compiled results on this target")

    analytic = sub.add_parser("analytic", help="bytes of every saved or offloaded activation, per row")
    analytic.add_argument("--tables", nargs="+", required=True)
    analytic.add_argument("--out", required=True, type=Path)

    frontier = sub.add_parser("frontier", help="the largest micro batch a placement policy fits, by compiling")
    frontier.add_argument("--tables", nargs="+", required=True)
    frontier.add_argument("--policy", required=True)
    frontier.add_argument("--target", required=True)
    frontier.add_argument("--out", required=True, type=Path)
    frontier.add_argument("--programs", required=True, type=Path, help="the cache of compiled programs for the target")
    _add_fork_server(frontier)

    budget = sub.add_parser("budget", help="what-if transfer budget and recompute cost from compiled programs")
    budget.add_argument("--tables", nargs="+", required=True)
    budget.add_argument("--out", required=True, type=Path)
    budget.add_argument("compiled", nargs="+", type=Path)

    predict = sub.add_parser("predict", help="predicted step time and throughput of each compiled row on a target")
    predict.add_argument("--tables", nargs="+", required=True)
    predict.add_argument("--target", required=True)
    predict.add_argument("--out", required=True, type=Path)
    predict.add_argument("--speed", default="experiments/speed.yaml", type=Path, help="the step-time model's inputs")
    predict.add_argument("--calibrated-by", type=Path, help="the calibration target's own prediction (what-if targets)")
    predict.add_argument("compiled", nargs="+", type=Path, help="the rows' compiled results on the target")

    sensitivity = sub.add_parser(
        "sensitivity", help="every unstated setting's alternatives, compiled, beside the default"
    )
    sensitivity.add_argument("--tables", nargs="+", required=True)
    sensitivity.add_argument("--target", required=True)
    sensitivity.add_argument("--out", required=True, type=Path)
    sensitivity.add_argument("--programs", required=True, type=Path, help="the cache of compiled programs")
    sensitivity.add_argument("--work-dir", required=True, type=Path)
    sensitivity.add_argument("--default", nargs="+", required=True, type=Path, help="the affected rows' compiles")
    sensitivity.add_argument("--variants", nargs="*", default=[], type=Path, help="every alternative's compiles")
    sensitivity.add_argument(
        "--predicted",
        nargs="*",
        default=[],
        type=Path,
        help="each alternative's prediction: <variant>/predicted.json",
    )
    _add_fork_server(sensitivity)

    probe = sub.add_parser("probe", help="measure host<->device bandwidth at the offloaded tensors' sizes")
    probe.add_argument("--tables", nargs="+", required=True)
    probe.add_argument("--target", required=True)
    probe.add_argument("--out", required=True, type=Path)
    probe.add_argument("--repeats", type=int, default=5)

    collect = sub.add_parser("collect", help="run JSONs -> one CSV table")
    collect.add_argument("--out", required=True, type=Path)
    collect.add_argument("runs", nargs="+", type=Path)

    evidence = sub.add_parser("evidence", help="result files of every kind -> one table of observations")
    evidence.add_argument("--target", required=True)
    evidence.add_argument("--out", required=True, type=Path)
    evidence.add_argument("results", nargs="+", type=Path)

    check = sub.add_parser("check", help="claims x evidence table -> verdicts JSON")
    check.add_argument("--evidence", required=True, type=Path)
    check.add_argument("--claims", required=True, type=Path)
    check.add_argument("--out", required=True, type=Path)
    check.add_argument("--assumptions", type=Path, help="the sensitivity stage's result: mark each claim robust or not")
    check.add_argument("--tables", nargs="+", default=[], help="the rows (with --assumptions)")
    check.add_argument("--frontier", type=Path, default=Path("experiments/frontier.yaml"), help="(with --assumptions)")
    check.add_argument(
        "--fail-on",
        type=lambda text: [v for v in text.split(",") if v],
        default=[],
        help="comma-separated verdicts (fail,error,not-comparable) that make the exit status 3, for CI gates",
    )

    report = sub.add_parser("report", help="render one target's HTML page")
    report.add_argument("--tables", nargs="+", required=True)
    report.add_argument("--evidence", required=True, type=Path)
    report.add_argument("--verdicts", required=True, type=Path)
    report.add_argument("--out", required=True, type=Path)
    report.add_argument("--assumptions", type=Path, help="the sensitivity stage's result, for its section")

    index = sub.add_parser("index", help="the entry page and the comparison of every target with results")
    index.add_argument("--tables", nargs="+", required=True)
    index.add_argument("--out", required=True, type=Path)
    index.add_argument("--compare", required=True, type=Path)
    index.add_argument("--pages", nargs="+", required=True, type=Path, help="each target's page")
    index.add_argument("--verdicts", nargs="+", required=True, type=Path, help="each target's verdicts, same order")
    index.add_argument("--evidence", nargs="+", required=True, type=Path, help="each target's evidence, same order")

    summary = sub.add_parser("summary", help="print a target's verdict counts, its failed rows and where its report is")
    summary.add_argument("--verdicts", required=True, type=Path)
    summary.add_argument("--page", required=True, type=Path)
    summary.add_argument("--evidence", type=Path, help="the target's evidence table: each failed row with its cause")
    return parser


def dispatch(args: argparse.Namespace) -> int:
    if args.command == "validate":
        rows = load_rows(args.tables)
        for name in args.targets:
            load_target(name)
        for row in rows:
            print(f"{row.table}\t{row.id}\t{row.label}")
    elif args.command == "run":
        from offload_repro.produce.runner import run_row

        result = run_row(
            _row(args.tables, args.row),
            load_target(args.target),
            args.out,
            args.work_dir,
            container_runtime=args.container_runtime,
            allow_unpinned=args.allow_unpinned_container,
            launcher=_launcher(args),
        )
        print(f"{result['row']}: {result['status']}" + (f" ({result['message']})" if result["message"] else ""))
    elif args.command == "compile":
        from offload_repro.produce.compile import compile_row

        row, target = _row(args.tables, args.row), load_target(args.target)
        variant = None
        if args.variant:
            from offload_repro.core.variants import apply

            variant = {"id": args.variant, "settings": args.variant_settings or {}}
            row = apply(row, variant["settings"], args.variant)
        result = compile_row(
            row, target, args.out, args.work_dir, programs=args.programs, variant=variant, launcher=_launcher(args)
        )
        verdict = "fits" if result.get("fits") else "out of memory"
        cached = f" (program {result['program']['key']} from the cache)" if result["program"]["cached"] else ""
        print(f"{result['row']}: {result['status']}" + (f", {verdict}" if result["status"] == "ok" else "") + cached)
    elif args.command == "preflight":
        from offload_repro.cluster.preflight import write_preflight

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
    elif args.command == "analytic":
        from offload_repro.produce.analytic import write_accounting

        write_accounting(load_rows(args.tables), args.out)
    elif args.command == "frontier":
        from offload_repro.produce.frontier import write_frontier

        rows, target = load_rows(args.tables), load_target(args.target)
        result = write_frontier(args.policy, rows, target, args.out, args.programs, _launcher(args))
        cached = sum(point["cached"] for point in result["points"])
        note = f"; {result['message']}" if result["message"] else ""
        largest = result["largest_fitting_micro_batch"]
        counted = f"{len(result['points'])} points, {cached} from the cache"
        print(f"{args.target} {args.policy}: largest fitting micro batch {largest} ({counted}){note}")
    elif args.command == "budget":
        from offload_repro.produce.budget import write_budget

        write_budget(load_rows(args.tables), args.compiled, args.out)
    elif args.command == "predict":
        from offload_repro.produce.predict import load_speed, write_prediction

        speed = load_speed(args.speed)
        predicted = write_prediction(
            load_rows(args.tables),
            load_target(args.target),
            args.compiled,
            args.out,
            args.speed,
            load_target(speed["calibration"]["target"]),
            args.calibrated_by,
        )
        calibrated = sum(1 for row in predicted["rows"] if row.get("calibrated_on"))
        print(f"{args.target}: {len(predicted['rows'])} rows predicted, {calibrated} calibrated")
    elif args.command == "sensitivity":
        from offload_repro.produce.sensitivity import write_sensitivity

        result = write_sensitivity(
            load_rows(args.tables),
            load_target(args.target),
            default_files=args.default,
            variant_files=args.variants,
            predicted_files=args.predicted,
            out=args.out,
            programs=args.programs,
            work_dir=args.work_dir,
            launcher=_launcher(args),
        )
        best = result["fit"]["best"]
        if best:
            print(f"{args.target}: best fit {best['combination'] or 'the defaults'}, distance {best['distance']:.3f}")
    elif args.command == "probe":
        from offload_repro.produce.probe import write_probe

        write_probe(load_target(args.target), load_rows(args.tables), args.out, args.repeats)
    elif args.command == "collect":
        from offload_repro.present.collect import collect as collect_runs

        collect_runs(args.runs, args.out)
    elif args.command == "evidence":
        from offload_repro.judge.evidence_table import build

        table = build(args.results, args.target, args.out)
        print(f"{args.out}: {len(table['observations'])} observations from {len(table['sources'])} files")
    elif args.command == "check":
        return _check(args)
    elif args.command == "report":
        from offload_repro.present.report import render_target

        render_target(load_rows(args.tables), args.evidence, args.verdicts, args.out, args.assumptions)
    elif args.command == "index":
        from offload_repro.present.report import render_index

        render_index(load_rows(args.tables), args.pages, args.verdicts, args.evidence, args.out, args.compare)
    elif args.command == "summary":
        from offload_repro.present.summary import summary_lines

        print("\n".join(summary_lines(args.verdicts, args.page, args.evidence)))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return dispatch(args)
    except DataError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except InterruptedError as err:
        print(f"interrupted: {err}; no result written, so Snakemake runs the row again", file=sys.stderr)
        return 143
    except Exception:  # the traceback goes to stderr, which every rule keeps in its log
        traceback.print_exc()
        print(f"error: offload_repro {args.command} failed unexpectedly (traceback above)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
