"""What each stage depends on, derived from the source: checked against what Python really imports,
against the rules' inputs as Snakemake plans them, and against the README."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from conftest import REPO, run_python
from offload_repro.core.files import checkout_relative, read_yaml
from offload_repro.plan import inputs as plan
from offload_repro.plan import layout
from offload_repro.plan.__main__ import GENERATED
from offload_repro.plan.configuration import DEFAULTS, SCHEMA, config_table

# Imports every module of the package with builtins.__import__ wrapped, and prints each import
# edge (importing module -> imported module of the package) that Python executed.
RECORD_IMPORTS = """
import builtins, importlib, json, sys
edges, real_import = set(), builtins.__import__

def recording(name, globals=None, locals=None, fromlist=(), level=0):
    module = real_import(name, globals, locals, fromlist, level)
    importer = (globals or {}).get("__name__", "")
    if level == 0 and name.startswith("offload_repro") and importer.startswith("offload_repro"):
        edges.add((importer, name))
        for item in fromlist or ():
            if f"{name}.{item}" in sys.modules:
                edges.add((importer, f"{name}.{item}"))
    return module

builtins.__import__ = recording
for name in sys.argv[1:]:
    importlib.import_module(name)
print(json.dumps(sorted(edges)))
"""


def test_every_import_python_executes_is_in_the_derived_graph():
    modules = [m for m in plan.package_modules() if m != "offload_repro.produce.compiled.derive_scale"]
    done = run_python(RECORD_IMPORTS, *modules)
    assert done.returncode == 0, done.stderr[-3000:]
    edges = [tuple(edge) for edge in json.loads(done.stdout.splitlines()[-1])]
    assert len(edges) > 50
    missing = [(a, b) for a, b in edges if a != b and b not in plan.direct_imports(a) and a != "__main__"]
    assert missing == []


def test_modules_run_by_name_are_dependencies_of_the_module_that_runs_them():
    assert "offload_repro.produce.compiled.aot_compile" in plan.direct_imports(
        "offload_repro.produce.compiled.program_cache"
    )  # python -m
    assert "offload_repro.produce.measured.launch" in plan.direct_imports("offload_repro.produce.measured.runner")


@pytest.mark.parametrize(
    ("command", "needs", "never"),
    [
        ("run", ["produce/measured/launch.py", "core/process.py", "produce/measured/runner.py"], ["present/pages.py"]),
        # the compile records the program; what it is expected to offload is judged from tensors.yaml
        (
            "compile",
            ["core/memory_analysis.py", "core/process.py"],
            ["produce/measured/runner.py", "produce/measured/launch.py", "experiments/tensors.yaml"],
        ),
        (
            "evidence",
            ["judge/observers.py", "experiments/tensors.yaml"],
            ["produce/compiled/compiled_row.py", "cluster/slurm.py"],
        ),
        ("frontier", ["experiments/frontier.yaml", "produce/compiled/program_cache.py"], ["present/pages.py"]),
        ("report", ["report/target.html.j2", "report/style.css"], ["cluster/preflight_checks.py"]),
        ("check", ["judge/verdicts.py"], ["present/pages.py", "experiments/frontier.yaml"]),
    ],
)
def test_each_stage_depends_on_what_it_imports_and_reads(command, needs, never):
    files = plan.stage_code(command)
    shown = {path.removeprefix("workflow/offload_repro/") for path in files}
    assert set(needs) <= shown and not set(never) & shown
    assert "envs/requirements.lock" in files and "workflow/offload_repro/cli.py" in files


def test_every_rule_takes_its_code_inputs_from_the_plan(tmp_path):
    """A dry run of a fresh copy lists every job's inputs: each rule's package and data files are
    exactly its stage's (the rule files never list code by hand), and every rule with package files
    among its inputs is one that `plan.rules()` found."""
    from workflow_copy import copy_workflow, snakemake

    directory = copy_workflow(tmp_path)
    done = snakemake(directory, "-n", "--config", "whatif=True", "assumptions=True", timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen: dict[str, set[str]] = {}
    for job in re.split(r"\n(?=(?:local)?rule \w+:)", done.stdout):
        name = re.match(r"(?:local)?rule (\w+):", job.strip())
        inputs = re.search(r"^\s*input: (.*)$", job, re.M)
        if name and inputs:
            seen.setdefault(name.group(1), set()).update(inputs.group(1).split(", "))
    ours = {path for command in plan.COMMANDS for path in plan.stage_code(command)}
    for rule, command in plan.rules().items():
        if rule in seen:  # preflight and probe_transfers run only on SLURM and one-GPU targets
            assert seen[rule] & ours == set(plan.stage_code(command)), rule
    with_code = {rule for rule, inputs in seen.items() if any(p.startswith("workflow/offload_repro/") for p in inputs)}
    assert with_code <= set(plan.rules())
    assert with_code >= {"run_row", "compile_row", "compile_variant", "predict_variant", "sensitivity", "frontier"}


def test_the_rules_of_each_command_are_read_from_the_rule_files():
    found = plan.rules()
    assert found["compile_row"] == found["compile_variant"] == "compile"
    assert found["predict"] == found["predict_variant"] == "predict"
    assert found["preflight"] == "preflight"  # defined inside an `if` of its rule file
    assert set(found.values()) == set(plan.COMMANDS) - {"validate", "summary"}  # those two run outside rules


def test_every_data_file_a_module_names_is_in_its_reads():
    """A module that names a data file of the checkout by a fixed path lists it in READS."""
    data = [*(REPO / "experiments").glob("*.yaml"), *(REPO / "report").glob("*"), REPO / "envs" / "containers.yaml"]
    sources = {module: plan.module_file(module).read_text() for module in plan.package_modules()}
    quoted = {path: re.compile(rf"[\"']{re.escape(path.name)}[\"']") for path in data}
    named = [(module, path) for module, text in sources.items() for path in data if quoted[path].search(text)]
    unlisted = [
        (module, path.name) for module, path in named if checkout_relative(path) not in plan.module_reads(module)
    ]
    assert named and unlisted == []


def test_judging_and_drawing_import_no_producer_and_no_cluster_code():
    """Data flows one way: produce -> evidence table -> judge -> present."""
    for folder in ("judge", "present"):
        modules = [m for m in plan.package_modules() if m.startswith(f"offload_repro.{folder}.")]
        assert modules, folder
        for module in modules:
            reached = plan.closure({module}) - {module}
            wrong = sorted(m for m in reached if m.startswith(("offload_repro.produce", "offload_repro.cluster")))
            assert wrong == [], module


def test_the_package_has_no_import_cycles():
    assert plan.cycles() == []


def test_a_cycle_would_be_found(monkeypatch):
    edges = {"offload_repro.a": {"offload_repro.b"}, "offload_repro.b": {"offload_repro.a"}}
    monkeypatch.setattr(plan, "package_modules", lambda: sorted(edges))
    monkeypatch.setattr(plan, "direct_imports", lambda module: frozenset(edges[module]))
    assert plan.cycles() == [["offload_repro.a", "offload_repro.b"]]


@pytest.mark.parametrize(("page", "name", "block"), GENERATED, ids=["edit-table", "configuration", "layout", "times"])
def test_the_generated_parts_of_the_docs_are_up_to_date(page, name, block):
    text = page.read_text()
    assert plan.with_generated(text, name, block()) == text, (
        "run: PYTHONPATH=workflow python -m offload_repro.plan --write"
    )


def test_every_key_of_the_config_is_described_and_has_a_default():
    schema = read_yaml(SCHEMA)
    assert set(schema["properties"]) == set(schema["required"]) == set(read_yaml(DEFAULTS))
    undescribed = [key for key, spec in schema["properties"].items() if len(spec.get("description", "")) < 20]
    assert undescribed == []
    assert "| `frontier_targets` | `[gb200-nvl72, vr-nvl144]` |" in config_table()


def test_a_stage_that_does_not_exist_is_named():
    with pytest.raises(KeyError, match="has no subcommand 'nope'"):
        plan.stage_modules("nope")


def test_reads_that_match_nothing_are_refused(monkeypatch):
    monkeypatch.setattr(plan, "_reads", lambda module: ["experiments/missing-*.yaml"])
    with pytest.raises(FileNotFoundError, match="matches no file"):
        plan.stage_code("summary")


def test_the_layout_lists_every_module_under_its_folder(tmp_path, monkeypatch):
    """A module added to a folder appears in the block, under its folder's line."""
    package = tmp_path / "workflow" / "offload_repro"
    shutil.copytree(layout.PACKAGE_DIR, package, ignore=shutil.ignore_patterns("__pycache__"))
    (package / "judge" / "new_observer.py").write_text('"""A new observer."""\n')
    monkeypatch.setattr(layout, "PACKAGE_DIR", package)
    block = layout.layout_block().splitlines()
    judge = next(i for i, line in enumerate(block) if line.startswith("  judge/ "))
    present = next(i for i, line in enumerate(block) if line.startswith("  present/ "))
    assert "new_observer" in " ".join(block[judge:present])
    (package / "loose").mkdir()
    (package / "loose" / "module.py").write_text('"""A folder on no floor."""\n')
    with pytest.raises(KeyError, match="loose: on no floor"):
        layout.layout_block()
