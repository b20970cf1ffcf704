"""The command line: a registry of commands, one module each with its arguments and its call, and a
run of one command that imports no other command's code."""

from __future__ import annotations

import json

import pytest

from conftest import REPO, run_python
from offload_repro import cli
from offload_repro.plan import inputs as plan

COMMANDS_DIR = REPO / "workflow" / "offload_repro" / "commands"

# Runs main(ARGV) and prints the package's modules that ended up imported.
IMPORTED = """
import json, sys
from offload_repro.cli import main
try:
    main(json.loads(sys.argv[1]))
except SystemExit:
    pass
print(json.dumps(sorted(name for name in sys.modules if name.startswith("offload_repro"))))
"""


def test_every_command_module_is_registered_with_its_help_arguments_and_call():
    runnable = {path.stem for path in COMMANDS_DIR.glob("*.py") if "\ndef run(" in path.read_text()}
    assert runnable == set(cli.COMMANDS)
    for name in cli.COMMANDS:
        module = cli.command_module(name)
        assert module.__doc__ and callable(module.run) and isinstance(module.PARENTS, tuple), name


def test_each_shared_option_is_declared_once():
    source = "".join(path.read_text() for path in sorted(COMMANDS_DIR.glob("*.py")))
    for option in ("--tables", "--out", "--target", "--row", "--work-dir", "--container-runtime", "--speed"):
        assert source.count(f'"{option}"') == 1, option
    parser = cli.parser()
    assert parser.parse_args(["check", "--evidence", "e", "--claims", "c", "--out", "o"]).tables == []
    with pytest.raises(SystemExit):  # every other command that takes --tables requires it
        parser.parse_args(["analytic", "--out", "o"])


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("summary", ["summary", "--verdicts", "missing.json", "--page", "p.html"]),  # read: exit 2
        ("report", ["report", "--help"]),
        ("compile", ["compile", "--help"]),
    ],
)
def test_a_command_imports_nothing_outside_its_stage(command, argv):
    """What a command really imports is within the code inputs plan/inputs.py derives for it: its
    own command module, never another's."""
    done = run_python(IMPORTED, json.dumps(argv))
    imported = set(json.loads(done.stdout.splitlines()[-1]))
    assert f"offload_repro.commands.{command}" in imported
    assert imported <= plan.stage_modules(command)
    assert {name for name in imported if name.startswith("offload_repro.commands.")} <= {
        f"offload_repro.commands.{command}",
        "offload_repro.commands.arguments",
    }


def test_an_unknown_command_is_refused_with_the_list():
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["nope"])
    assert exit_info.value.code == 2
