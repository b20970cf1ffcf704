"""Every `snakemake` command line in the README and the docs plans without error (`-n`), as
written; the README stays a front door."""

from __future__ import annotations

import os
import re
import shlex
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import REPO
from offload_repro.core.data import load_target
from offload_repro.present.rerun import snakemake_command
from workflow_copy import copy_workflow, snakemake

BLOCK = re.compile(r"```bash\n(.*?)```", re.S)


README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]


def readme_commands() -> list[str]:
    """The snakemake parts of every bash line of the README and the docs (continuations joined,
    comments cut)."""
    commands = []
    for block in BLOCK.findall("\n".join(page.read_text() for page in PAGES)):
        for line in block.replace("\\\n", " ").splitlines():
            for part in line.split("#", 1)[0].split("&&"):
                if "snakemake" in part:
                    commands.append(" ".join(part.split()))
    return commands


def test_the_readme_is_a_front_door_and_links_to_pages_that_exist():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert readme.index("## Quick start") < readme.index("## Layout and flow")
    links = re.findall(r"\]\((docs/[^)]+)\)", readme)
    assert links and all((REPO / link).exists() for link in links)
    assert {f"docs/{page.name}" for page in PAGES[1:] if page.suffix == ".md"} <= set(links)


def test_the_readme_has_the_main_job_and_a_cluster_command():
    commands = readme_commands()
    assert ".venv/bin/snakemake --cores all" in commands
    assert any("--workflow-profile workflow/profiles/slurm" in command for command in commands)


@pytest.fixture(scope="module")
def workflow(tmp_path_factory):
    return copy_workflow(tmp_path_factory.mktemp("readme"))


def dry_run_all(workflow, commands: list[str]) -> dict[str, str]:
    """Each command dry-run on the workflow copy, in parallel (one Snakemake per core): the
    commands that failed, with the end of their output."""

    def dry_run(command: str) -> tuple[str, str | None]:
        words = shlex.split(command)
        if words[0] != ".venv/bin/snakemake":
            return command, "not a .venv/bin/snakemake command"
        done = snakemake(workflow, "-n", *words[1:])
        return command, None if done.returncode == 0 else (done.stdout + done.stderr)[-3000:]

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return {command: error for command, error in pool.map(dry_run, commands) if error}


def test_every_readme_command_dry_runs(workflow):
    commands = readme_commands()
    assert len(commands) >= 5
    assert dry_run_all(workflow, commands) == {}


def test_the_commands_the_report_prints_dry_run(workflow):
    commands = [snakemake_command(load_target(target)) for target in ("gb200-nvl72", "vr-nvl144", "h200-1", "h100-1")]
    assert dry_run_all(workflow, commands) == {}


def test_the_readme_gives_the_main_jobs_size_as_a_fresh_copy_plans_it(workflow):
    """The README's figures of the main job are the plan's, not typed: its jobs and its compiles, as
    Snakemake plans them on a copy with nothing done."""
    said = re.search(r"runs the main job: (\d+) jobs, most of it the (\d+) full-scale compiles", README.read_text())
    assert said, "the README states the main job's jobs and compiles"
    done = snakemake(workflow, "-n")
    stats = dict(re.findall(r"^(\w+)\s+(\d+)$", done.stdout + done.stderr, re.M))
    compiles = sum(int(stats.get(rule, 0)) for rule in ("compile_row", "compile_defaults"))
    assert (int(said.group(1)), int(said.group(2))) == (int(stats["total"]), compiles)
