"""Command line of the package; each Snakemake rule calls one subcommand."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

from offload_repro.core.data import DataError, hardware_classes, load_rows, load_target


def _row(tables: list[str], row_id: str):
    for row in load_rows(tables):
        if row.id == row_id:
            return row
    raise DataError(f"no row with id '{row_id}' in {', '.join(tables)}")


def _check_or_report(args: argparse.Namespace) -> None:
    from offload_repro.core.files import read_json, write_json
    from offload_repro.judge import evidence
    from offload_repro.judge.check import check_claims, load_claims

    rows = load_rows(args.tables)
    target = load_target(args.target)
    compile_target = load_target(args.compile_target) if args.compile_target else None
    claims = load_claims(args.claims)
    if args.command == "check":
        kinds = {"analytic": evidence.analytic(rows)}
        if args.runs:
            kinds["measured"] = evidence.measured(args.runs, target)
        if args.compiled and compile_target:
            kinds["compiled"] = evidence.compiled(args.compiled, compile_target)
        verdicts = check_claims(claims, kinds, hardware_classes())
        verdicts = {
            "target": target.name,
            "compile_target": compile_target.name if compile_target else None,
            "evidence": {kind: found.source for kind, found in kinds.items()},
            **verdicts,
        }
        write_json(args.out, verdicts)
        print(" ".join(f"{verdict}={count}" for verdict, count in verdicts["counts"].items()))
    else:
        from offload_repro.present.report import render

        runs = {path.stem: read_json(path) for path in args.runs}
        compiled = {path.stem: read_json(path) for path in args.compiled}
        probe = read_json(args.probe) if args.probe else None
        render(rows, target, compile_target, runs, compiled, read_json(args.verdicts), args.out, probe)


def main(argv: list[str] | None = None) -> int:
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
        if name == "run":
            one_row.add_argument("--container-runtime", default="pyxis", choices=["pyxis", "apptainer"])
            one_row.add_argument("--allow-unpinned-container", action="store_true")

    probe = sub.add_parser("probe", help="measure host<->device bandwidth at the offloaded tensors' sizes")
    probe.add_argument("--tables", nargs="+", required=True)
    probe.add_argument("--target", required=True)
    probe.add_argument("--out", required=True, type=Path)
    probe.add_argument("--repeats", type=int, default=5)

    collect = sub.add_parser("collect", help="run JSONs -> one CSV table")
    collect.add_argument("--out", required=True, type=Path)
    collect.add_argument("runs", nargs="+", type=Path)

    for name, help_text in (("check", "claims x evidence -> verdicts JSON"), ("report", "render the HTML report")):
        command = sub.add_parser(name, help=help_text)
        command.add_argument("--tables", nargs="+", required=True)
        command.add_argument("--claims", required=True, type=Path)
        command.add_argument("--target", required=True)
        command.add_argument("--compile-target")
        command.add_argument("--runs", nargs="*", default=[], type=Path)
        command.add_argument("--compiled", nargs="*", default=[], type=Path)
        command.add_argument("--out", required=True, type=Path)
        if name == "report":
            command.add_argument("--verdicts", required=True, type=Path)
            command.add_argument("--probe", type=Path)

    args = parser.parse_args(argv)
    try:
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
            )
            print(f"{result['row']}: {result['status']}" + (f" ({result['message']})" if result["message"] else ""))
        elif args.command == "compile":
            from offload_repro.produce.compile import compile_row

            result = compile_row(_row(args.tables, args.row), load_target(args.target), args.out, args.work_dir)
            verdict = "fits" if result.get("fits") else "out of memory"
            print(f"{result['row']}: {result['status']}" + (f", {verdict}" if result["status"] == "ok" else ""))
        elif args.command == "probe":
            from offload_repro.core.files import write_json
            from offload_repro.produce import probe as transfer

            target = load_target(args.target)
            rows = load_rows(args.tables)
            # per-layer tensor sizes: one-GPU scale rules keep width, batch and sequence
            result = transfer.measure(transfer.offloaded_sizes(rows), transfer.link_limit_gb_s(target), args.repeats)
            write_json(args.out, {"target": target.name, **result})
        elif args.command == "collect":
            from offload_repro.present.collect import collect as collect_runs

            collect_runs(args.runs, args.out)
        elif args.command in ("check", "report"):
            _check_or_report(args)
    except DataError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


def run_logged(argv: list[str], log_path: str | Path) -> None:
    """Run one subcommand from a Snakemake `run:` block, its output going to the rule's log."""
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w", encoding="utf-8") as log, contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        status = main(argv)
    if status != 0:
        raise RuntimeError(f"offload_repro {' '.join(argv)} failed with status {status}; see {log_path}")


if __name__ == "__main__":
    sys.exit(main())
