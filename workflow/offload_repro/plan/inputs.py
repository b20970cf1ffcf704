"""What each stage of the workflow depends on, derived from the code itself.

Every rule runs one command of `offload_repro.cli`, whose code is the module
`offload_repro.commands.<command>`. The files a stage's result depends on are the entry point
(`cli.py`) and the modules its command module can import, transitively (read from the source
with `ast`: every import statement, at module level or inside a function, and every module
named in a string such as `python -m offload_repro.produce.compiled.aot_compile`), plus the data files those
modules read by a fixed path (each module lists them in `READS`). The rules take their code
inputs from here (`code=CODE["<command>"]`), so editing any of these files replans exactly the
rules that run a stage that uses it.
"""

from __future__ import annotations

import ast
import glob
import graphlib
import re
from functools import cache
from pathlib import Path

from offload_repro.cli import COMMANDS
from offload_repro.core.files import REPO_ROOT, checkout_relative

PACKAGE = "offload_repro"
PACKAGE_DIR = REPO_ROOT / "workflow" / PACKAGE
CLI = f"{PACKAGE}.cli"
COMMAND_PACKAGE = f"{PACKAGE}.commands"
RULE_FILES = "workflow/rules/*.smk"
# The environment every stage runs in: a change of any pinned version may change any result.
LOCKS = ("envs/requirements.lock",)


def module_file(name: str) -> Path | None:
    """offload_repro.core.data -> workflow/offload_repro/core/data.py (a package: its __init__.py)."""
    if name != PACKAGE and not name.startswith(PACKAGE + "."):
        return None
    base = REPO_ROOT / "workflow" / Path(*name.split("."))
    return next((path for path in (base.with_suffix(".py"), base / "__init__.py") if path.is_file()), None)


@cache
def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _named_in(node: ast.AST) -> set[str]:
    """Modules of the package that `node` imports or names in a string."""
    found: set[str] = set()
    for item in ast.walk(node):
        if isinstance(item, ast.Import):
            found |= {alias.name for alias in item.names}
        elif isinstance(item, ast.ImportFrom) and item.module and item.level == 0:
            found.add(item.module)
            found |= {f"{item.module}.{alias.name}" for alias in item.names}
        elif isinstance(item, ast.Constant) and isinstance(item.value, str):
            text = item.value.split(":", 1)[0]
            if text.startswith(PACKAGE + ".") and text.replace(".", "").replace("_", "").isalnum():
                found.add(text)
    return {name for name in found if module_file(name) is not None}


def _with_packages(names: set[str]) -> set[str]:
    """Importing a.b.c runs a/__init__.py and a/b/__init__.py first."""
    parents = {name.rsplit(".", depth)[0] for name in names for depth in range(1, name.count(".") + 1)}
    return {name for name in names | parents if module_file(name) is not None}


@cache
def direct_imports(module: str) -> frozenset[str]:
    path = module_file(module)
    return frozenset(_with_packages(_named_in(_tree(path))) - {module}) if path else frozenset()


def closure(modules: set[str]) -> set[str]:
    """The modules `modules` can import, transitively, themselves included."""
    seen: set[str] = set()
    stack = list(_with_packages(modules))
    while stack:
        module = stack.pop()
        if module not in seen:
            seen.add(module)
            stack.extend(direct_imports(module) - seen)
    return seen


@cache
def stage_modules(command: str) -> frozenset[str]:
    """What `python -m offload_repro.cli <command>` can import: the entry point, which imports
    only the command's own module (cli.command_module), and that module's closure."""
    if command not in COMMANDS:
        raise KeyError(f"offload_repro.cli has no subcommand '{command}'; it has {sorted(COMMANDS)}")
    return frozenset(closure({CLI, f"{COMMAND_PACKAGE}.{command}"}))


def _reads(module: str) -> list[str]:
    """The module's `READS`: data files (or glob patterns) it reads by a fixed path."""
    for node in _tree(module_file(module)).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "READS" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return []


def module_reads(module: str) -> list[str]:
    """The data files a module reads by a fixed path (its READS, patterns expanded)."""
    files: set[str] = set()
    for pattern in _reads(module):
        matched = glob.glob(pattern, root_dir=REPO_ROOT, recursive=True)
        if not matched:
            raise FileNotFoundError(f"{module_file(module)}: READS names '{pattern}', which matches no file")
        files |= set(matched)
    return sorted(files)


def stage_code(command: str) -> list[str]:
    """Every file the stage's result depends on besides its rule's data inputs: the modules it can
    import, the data files they read and the lock of the environment, relative to the checkout."""
    modules = stage_modules(command)
    files = {checkout_relative(module_file(module)) for module in modules}
    files |= {path for module in modules for path in module_reads(module)}
    return sorted(files) + list(LOCKS)


def package_modules() -> list[str]:
    """Every module of the package, by name."""
    files = [path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts for path in sorted(PACKAGE_DIR.rglob("*.py"))]
    return [".".join(parts[:-1] if parts[-1] == "__init__" else parts) for parts in files]


def cycles() -> list[list[str]]:
    """An import cycle among the package's modules, if any: its modules, each importing the next."""
    try:
        graphlib.TopologicalSorter({module: direct_imports(module) for module in package_modules()}).prepare()
    except graphlib.CycleError as err:
        return [err.args[1][:0:-1]]  # graphlib lists each module after one it imports, the first again at the end
    return []


_RULE = re.compile(r"^[ \t]*rule (\w+):$(.*?)(?=^[ \t]*rule \w+:$|\Z)", re.M | re.S)
_CODE_INPUT = re.compile(r"\bcode=CODE\[\"(\w+)\"\]")


@cache
def rules() -> dict[str, str]:
    """Each rule that runs a command -> that command, as the rule files say (`code=CODE["<command>"]`
    in its inputs), ordered by the registry and then by name."""
    found: dict[str, str] = {}
    for path in sorted(REPO_ROOT.glob(RULE_FILES)):
        for rule in _RULE.finditer(path.read_text(encoding="utf-8")):
            if code := _CODE_INPUT.search(rule.group(2)):
                found[rule.group(1)] = code.group(1)
    return dict(sorted(found.items(), key=lambda item: (COMMANDS.index(item[1]), item[0])))


EDIT_PAGE = REPO_ROOT / "docs" / "rebuilds.md"  # where the table lives


def rebuilt_by() -> dict[str, list[str]]:
    """Each file any stage depends on -> the rules that have it as a code input, in `rules()` order."""
    users: dict[str, list[str]] = {}
    for rule, command in rules().items():
        for path in stage_code(command):
            users.setdefault(path, []).append(rule)
    return users


def edit_table() -> str:
    """The docs' table (docs/rebuilds.md): files grouped by the rules an edit of them replans (directly)."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for path, users in rebuilt_by().items():
        groups.setdefault(tuple(users), []).append(path)
    lines = ["| edit | replans these rules, then every rule that reads their results |", "| --- | --- |"]
    patterns = {
        pattern: glob.glob(pattern, root_dir=REPO_ROOT, recursive=True)
        for module in package_modules()
        for pattern in _reads(module)
    }
    # a data file is shown as the pattern its module reads it by, the widest where two match it (a
    # glob and one of its files: a set's order would pick either); a module without its folder
    by_pattern = {
        path: p for p, paths in sorted(patterns.items(), key=lambda item: (len(item[1]), item[0])) for path in paths
    }
    for users, paths in sorted(groups.items(), key=lambda item: (-len(item[0]), item[0])):
        shown = sorted({by_pattern.get(path, path).removeprefix("workflow/offload_repro/") for path in paths})
        names = "every rule" if len(users) == len(rules()) else ", ".join(f"`{rule}`" for rule in users)
        lines.append(f"| {', '.join(f'`{p}`' for p in shown)} | {names} |")
    return "\n".join(lines)


def with_generated(page: str, name: str, block: str) -> str:
    """`page` with `block` between the markers of its generated part `name` (the docs' pages)."""
    start, end = f"<!-- {name}: generated by python -m offload_repro.plan -->", f"<!-- end of {name} -->"
    return page[: page.index(start) + len(start)] + "\n" + block + "\n" + page[page.index(end) :]
