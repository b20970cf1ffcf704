"""The layout's rules, read from the source: every import between the package's folders runs down
its floors, names are not repeated, and the workflow never imports test helpers."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from conftest import REPO
from offload_repro.plan import inputs as plan
from offload_repro.plan import layout

TEST_MODULES = {path.stem for path in (REPO / "tests").rglob("*.py")}


def imported_names(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_nothing_under_workflow_imports_from_tests():
    offenders = {}
    for path in [REPO / "Snakefile", *sorted((REPO / "workflow").rglob("*.py")), *(REPO / "workflow").rglob("*.smk")]:
        text = path.read_text()
        if path.suffix != ".py":  # Snakemake files: Python with rule blocks; their import lines only
            text = "\n".join(line for line in text.splitlines() if line.startswith(("import ", "from ")))
        names = imported_names(text) & TEST_MODULES
        if names or '"tests"' in text or "'tests'" in text:
            offenders[str(path.relative_to(REPO))] = sorted(names) or ["a path into tests/"]
    assert offenders == {}


def test_no_function_of_the_package_is_over_100_lines():
    longest = {}
    for path in sorted((REPO / "workflow" / "offload_repro").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                longest[f"{path.relative_to(REPO)}:{node.name}"] = node.end_lineno - node.lineno + 1
    assert len(longest) > 100
    assert {name: lines for name, lines in longest.items() if lines > 100} == {}


def test_the_snakefile_includes_every_rule_file():
    """The rules are split by topic; a rule file the Snakefile does not include would be dead."""
    included = re.findall(r'^include: "(workflow/rules/\w+\.smk)"$', (REPO / "Snakefile").read_text(), re.M)
    files = sorted(str(path.relative_to(REPO)) for path in (REPO / "workflow" / "rules").glob("*.smk"))
    assert sorted(included) == files and len(files) == 9


def is_face(module: str) -> bool:
    """A package's __init__.py: Python runs it with every import of a module below it."""
    return plan.module_file(module).name == "__init__.py"


def back_arrows(imports: Callable[[str], frozenset[str]] = plan.direct_imports) -> tuple[list[str], int]:
    """Each import (as the source names it: plan.direct_imports reads it with ast) from a module of
    one folder to a module of another that does not run down the floors; and how many imports
    between folders there are."""
    wrong, between = [], 0
    for module in plan.package_modules():
        if is_face(module):
            continue
        here = layout.folder_of(plan.module_file(module))
        for imported in sorted(imports(module)):
            there = layout.folder_of(plan.module_file(imported))
            if is_face(imported) or there == here:
                continue
            between += 1
            if layout.floor_of(here) <= layout.floor_of(there):
                wrong.append(f"{module} -> {imported}")
    return wrong, between


def test_every_import_between_folders_runs_down_the_floors():
    wrong, between = back_arrows()
    assert wrong == []
    assert between > 100


def test_an_import_up_or_sideways_would_be_found():
    planted = {
        "offload_repro.core.files": "offload_repro.judge.verdicts",  # up
        "offload_repro.produce.predicted.step_model": "offload_repro.produce.whatif.capacity_frontier",  # beside
    }

    def imports(module: str) -> frozenset[str]:
        return plan.direct_imports(module) | ({planted[module]} if module in planted else set())

    assert back_arrows(imports)[0] == [f"{a} -> {b}" for a, b in planted.items()]


def test_every_folder_of_the_package_is_on_one_floor():
    placed = [folder for floor in layout.FLOORS for folder in floor]
    assert len(placed) == len(set(placed))
    assert set(placed) == set(layout.modules_by_folder())


def test_no_package_face_imports_the_package():
    """Imports of a package's __init__.py are not counted between folders: it must have none."""
    faces = [module for module in plan.package_modules() if is_face(module)]
    assert len(faces) >= 12
    assert {face: sorted(plan.direct_imports(face)) for face in faces if plan.direct_imports(face)} == {}


def test_no_two_modules_or_folders_of_the_package_share_a_name():
    """A module's name says what it holds, once: none repeats another's (with or without its
    underscores: compiled_row and compiledrow are one name), nor a folder's or a command's."""
    package = REPO / "workflow" / "offload_repro"
    names = [path.stem for path in package.rglob("*.py") if path.name not in ("__init__.py", "__main__.py")]
    names += [path.name for path in package.rglob("*") if path.is_dir() and path.name != "__pycache__"]
    spelled = [name.replace("_", "") for name in names]
    assert len(names) > 90
    assert sorted({name for name, same in zip(names, spelled, strict=True) if spelled.count(same) > 1}) == []
