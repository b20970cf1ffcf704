"""Every `snakemake` command line in the README plans without error (`-n`), as written."""

from __future__ import annotations

import re
import shlex

import pytest

from offload_repro.cluster.commands import snakemake_command
from offload_repro.core.data import load_target
from workflow_copy import REPO, copy_workflow, snakemake

BLOCK = re.compile(r"```bash\n(.*?)```", re.S)


def readme_commands() -> list[str]:
    """The snakemake parts of every bash line of the README (continuations joined, comments cut)."""
    commands = []
    for block in BLOCK.findall((REPO / "README.md").read_text()):
        for line in block.replace("\\\n", " ").splitlines():
            for part in line.split("#", 1)[0].split("&&"):
                if "snakemake" in part:
                    commands.append(" ".join(part.split()))
    return commands


def test_the_readme_has_the_main_job_and_a_cluster_command():
    commands = readme_commands()
    assert ".venv/bin/snakemake --cores all" in commands
    assert any("--workflow-profile workflow/profiles/slurm" in command for command in commands)


@pytest.fixture(scope="module")
def workflow(tmp_path_factory):
    return copy_workflow(tmp_path_factory.mktemp("readme"))


@pytest.mark.parametrize("command", readme_commands())
def test_readme_command_dry_runs(workflow, command):
    words = shlex.split(command)
    assert words[0] == ".venv/bin/snakemake", command
    done = snakemake(workflow, "-n", *words[1:])
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]


@pytest.mark.parametrize("target", ["gb200-nvl72", "vr-nvl144", "h200-1", "h100-1"])
def test_commands_the_report_prints_dry_run(workflow, target):
    words = shlex.split(snakemake_command(load_target(target)))
    done = snakemake(workflow, "-n", *words[1:])
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
