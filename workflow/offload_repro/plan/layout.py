"""The docs' layout block (docs/layout.md), generated from the tree, and the floors of the package's folders.

The package is a house of floors. A module may import the modules of its own folder and those of
the folders on lower floors, never one on its floor or above it (tests/workflow/test_layout.py holds every
import to it). The block lists the package's folders floor by floor from the ground up, each with
the sentence its `__init__.py` opens with and its modules by name, between the checkout's other
parts, whose files are listed as they are on disk.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from offload_repro.core.files import REPO_ROOT
from offload_repro.plan.inputs import PACKAGE_DIR

# Lowest first. A folder is named by its path below the package; a module at the package's root
# by its file name. Folders on one floor import nothing of each other.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("cluster",),
    ("produce", "produce/measured"),
    ("produce/compiled",),
    ("produce/predicted", "produce/whatif"),
    ("produce/validation",),
    ("judge",),
    ("present",),
    ("commands",),
    ("cli.py",),
    ("plan",),
)
# The checkout around the package, in the block's order: (path, what it holds, the files listed
# after it). The package itself stands where its path does.
PARTS: tuple[tuple[str, str, str | None], ...] = (
    ("Snakefile", "entry; includes workflow/rules/*.smk, prints the verdict counts at the end", None),
    (
        "workflow/rules/",
        "thin shell rules, each calling one command of offload_repro.cli, a file per topic, as the docs"
        " have a page for each (common hands over the plan and the config):",
        "*.smk",
    ),
    ("workflow/offload_repro/", "", None),
    ("workflow/profiles/slurm/", "Snakemake profile for GPU clusters", None),
    (
        "workflow/scripts/",
        "performance numbers and identity checks of the speed levers, not tests:",
        "*.py",
    ),
    (
        "workflow/schemas/",
        "JSON Schemas of config, tables, targets, claims; results/ for result files; failure (a failed"
        " process's cause, which the result schemas share)",
        None,
    ),
    ("experiments/", "the data:", "*"),
    ("report/", "Jinja templates and stylesheet:", "*"),
    (
        "envs/",
        "requirements.in -> requirements.lock (hashes), bootstrap, test, containers.yaml (+"
        " resolve_containers.py), gpu-targets/ (XLA GPU descriptions), device/ (prepared one-GPU script)",
        None,
    ),
    (
        "tests/",
        "pytest: unit tests on small real fixtures (tests/fixtures/), in folders named after the package's"
        " (tests/core/ tests offload_repro/core/); tests/workflow/: real Snakemake runs on workflow copies, a"
        " real single-node SLURM (tests/slurm/), headless Chromium",
        None,
    ),
)
WIDTH, COLUMN = 100, 26
LAYOUT_PAGE = REPO_ROOT / "docs" / "layout.md"  # where the block lives


def folder_of(path: Path) -> str:
    """A module's folder below the package ('produce/measured'); a module at its root: its file name."""
    relative = path.relative_to(PACKAGE_DIR)
    return str(relative.parent) if len(relative.parts) > 1 else relative.name


def floor_of(folder: str) -> int:
    for number, floor in enumerate(FLOORS):
        if folder in floor:
            return number
    raise KeyError(f"{folder} is on no floor of {__name__}.FLOORS")


def modules_by_folder() -> dict[str, list[str]]:
    """Each folder's modules by name (a package's face, its __init__.py, apart)."""
    found: dict[str, list[str]] = {}
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        if path.name != "__init__.py":
            found.setdefault(folder_of(path), []).append(path.stem)
    return found


def opening(path: Path) -> str:
    """The first paragraph of a module's docstring, in one line."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    return " ".join(doc.split("\n\n")[0].split())


def entry(label: str, text: str) -> list[str]:
    first = label.ljust(COLUMN) if len(label) < COLUMN else label + " "
    return textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=" " * COLUMN, break_on_hyphens=False)


def package_lines() -> list[str]:
    folders = modules_by_folder()
    if unplaced := sorted(set(folders) - {folder for floor in FLOORS for folder in floor}):
        raise KeyError(f"{', '.join(unplaced)}: on no floor of {__name__}.FLOORS")
    shared = "; ".join(" and ".join(f"{folder}/" for folder in floor) for floor in FLOORS if len(floor) > 1)
    lines = entry(
        "workflow/offload_repro/",
        "the package, floor by floor from the ground up: a module imports the modules of its own folder"
        f" and of the floors below it, never of one beside or above it (sharing a floor: {shared})",
    )
    for floor in FLOORS:
        for folder in floor:
            if folder.endswith(".py"):
                lines += entry(f"  {folder}", opening(PACKAGE_DIR / folder))
                continue
            label = "  " * (folder.count("/") + 1) + folder.rsplit("/", 1)[-1] + "/"
            lines += entry(label, f"{opening(PACKAGE_DIR / folder / '__init__.py')} [{', '.join(folders[folder])}]")
    return lines


def layout_block() -> str:
    """The docs' layout of the checkout."""
    lines = []
    for path, text, listed in PARTS:
        if not (REPO_ROOT / path).exists():
            raise FileNotFoundError(f"{__name__}.PARTS names {path}, which is not in the checkout")
        if path == "workflow/offload_repro/":
            lines += package_lines()
            continue
        if listed:
            names = sorted(p.name + ("/" if p.is_dir() else "") for p in (REPO_ROOT / path).glob(listed))
            text = f"{text} {', '.join(names)}"
        lines += entry(path, text)
    return "\n".join(["```", *lines, "```"])
