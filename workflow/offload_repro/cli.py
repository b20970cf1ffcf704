"""Command line of the package; each Snakemake rule calls one command.

Exit status: 0 done; 1 an unexpected failure (its traceback on stderr); 2 bad input (the message
names the file, the row and the field); 3 `check --fail-on` found a verdict it was told to fail on;
143 the cluster ended a row's job (no result written: Snakemake retries it).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Iterable
from types import ModuleType

from offload_repro.core.data import DataError

# The registry: each command is the module offload_repro.commands.<name> (its arguments and its
# call), in the order data flows through them.
COMMANDS = (
    "validate",
    "run",
    "preflight",
    "compile",
    "analytic",
    "probe",
    "frontier",
    "budget",
    "sensitivity",
    "infer",
    "predict",
    "predict_device",
    "predict_pairs",
    "latency_profile",
    "compile_measured",
    "measured_profile",
    "validate_model",
    "collect",
    "evidence",
    "check",
    "report",
    "index",
    "summary",
)


def command_module(name: str) -> ModuleType:
    # Imported by name, only when asked for: a stage runs its own command's code and no other's,
    # which is what its code inputs say (plan/inputs.py).
    return importlib.import_module(f".commands.{name}", __package__)


def parser(names: Iterable[str] = COMMANDS) -> argparse.ArgumentParser:
    """The command line with the commands `names` (every command by default)."""
    parser = argparse.ArgumentParser(prog="offload_repro", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    for name in names:
        module = command_module(name)
        doc = module.__doc__ or ""
        command = sub.add_parser(name, help=doc.split("\n\n")[0], description=doc, parents=module.PARENTS)
        if hasattr(module, "add_arguments"):  # a command may take only shared arguments
            module.add_arguments(command)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    named = argv[:1] if argv[:1] and argv[0] in COMMANDS else COMMANDS
    args = parser(named).parse_args(argv)
    try:
        return command_module(args.command).run(args)
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
