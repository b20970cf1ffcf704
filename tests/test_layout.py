"""The layout's rules, read from the source: the workflow never imports test helpers."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEST_MODULES = {path.stem for path in (REPO / "tests").glob("*.py")}


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
    assert sorted(included) == files and len(files) == 7
