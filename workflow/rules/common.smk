# Configuration, rows and targets: validated while the DAG is built, before anything runs.
import json
import os
import re
import shlex
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

# Rules import the package from the checkout (locally and on cluster nodes): no install step.
PACKAGE_DIR = os.path.join(workflow.basedir, "workflow")
sys.path.insert(0, PACKAGE_DIR)

from offload_repro.cluster.slurm import container_for, job_resources, preflight_resources  # noqa: E402
from offload_repro.core.assumptions import check_ids, variants  # noqa: E402
from offload_repro.core.variants import variant_id  # noqa: E402
from offload_repro.core.data import DataError, load_rows, load_target  # noqa: E402
from offload_repro.core.files import read_yaml  # noqa: E402
from offload_repro.plan import stage_code, subcommands  # noqa: E402

validate(config, "../schemas/config.schema.yaml")


# --config parses "true" as a string and "True" as a boolean: accept both spellings.
def as_bool(value):
    return str(value).lower() == "true"


config["allow_unpinned_container"] = as_bool(config["allow_unpinned_container"])

try:
    ALL_ROWS = load_rows(config["tables"])
    TARGET = load_target(config["target"])
    COMPILE_TARGET = load_target(config["compile_target"])
    # every assumption a row or target names is stated in experiments/assumptions.yaml
    check_ids(
        {f"{row.source_file}: row '{row.id}'": row.assumptions for row in ALL_ROWS}
        | {
            f"experiments/targets/{t.name}.yaml: compile": t.spec.get("compile", {}).get("assumptions", [])
            for t in (TARGET, COMPILE_TARGET)
        },
        ALL_ROWS,
    )
except DataError as err:
    raise WorkflowError(str(err)) from None

_unknown = sorted(set(config["rows"]) - {row.id for row in ALL_ROWS})
if _unknown:
    raise WorkflowError(f"config 'rows': unknown row ids {_unknown}; known: {[row.id for row in ALL_ROWS]}")
ROWS = [row for row in ALL_ROWS if not config["rows"] or row.id in config["rows"]]
ROW_IDS = [row.id for row in ROWS]
TARGET_FILE = f"experiments/targets/{TARGET.name}.yaml"
# What each row's job asks a cluster for (ignored by local runs).
RUN_RESOURCES = job_resources(TARGET)
# A SLURM target's rows wait for its preflight (one short job that checks the image, MaxText,
# GPUs, host memory and the distributed start); other targets have none.
PREFLIGHT = [f"results/{TARGET.name}/preflight.json"] if TARGET.launcher == "slurm" else []
if TARGET.launcher == "slurm":
    PREFLIGHT_RESOURCES = preflight_resources(TARGET)
# A local GPU runs one MaxText process (or the probe) at a time: each takes 92-95% of its memory.
# Snakemake enforces that only with a limit: --resources gpu=N (N GPUs on this machine).
if TARGET.kind == "gpu" and TARGET.launcher == "local":
    RUN_RESOURCES = {"gpu": TARGET.spec["hardware"]["devices"]}
    if "gpu" not in workflow.global_resources:
        raise WorkflowError(
            f"target '{TARGET.name}' runs on this machine's GPU, one MaxText process at a time: add"
            f" --resources gpu={RUN_RESOURCES['gpu']} (the number of GPUs here) to the snakemake command"
        )
if TARGET.kind == "gpu" and TARGET.launcher == "slurm":
    try:  # a GPU run refuses an image without a digest, before anything is submitted
        for row in ROWS:
            container_for(row).image(config["container_runtime"], config["allow_unpinned_container"])
    except DataError as err:
        raise WorkflowError(str(err)) from None
CLAIMS_FILE = "experiments/claims.yaml"
COMPILE_TARGET_FILE = f"experiments/targets/{COMPILE_TARGET.name}.yaml"
if "compile" not in COMPILE_TARGET.spec:
    raise WorkflowError(f"{COMPILE_TARGET_FILE}: field 'compile': needed for config 'compile_target'")

# The MaxText processes of run_row (CPU rows), compile_row, compile_variant, frontier and
# sensitivity fork from one server per machine that imported MaxText once
# (workflow/offload_repro/core/forkserver.py; a plain process wherever it cannot), or each start
# on their own: a parameter of those rules, given to their command lines. It changes how a
# process starts, never what it computes (workflow/scripts/forkserver_timing.py compares both), so
# it is computed from `input`: Snakemake keeps such parameters out of its params rerun trigger,
# and switching it reruns nothing (tests/test_workflow.py holds this on the main job).
config["fork_server"] = as_bool(config["fork_server"])


def fork_server(wildcards, input):
    return "--fork-server" if config["fork_server"] else ""


# The pinned environment every rule runs in (.venv from the same locks when not --use-conda).
CONDA_ENV = "../../envs/offload-repro.conda.yaml"
# The command line every rule calls; a failure prints the rule's log (its traceback) on the console.
# Under --use-conda the rule's environment provides `python`; otherwise it is Snakemake's own (.venv).
_CONDA = "CONDA" in {method.name for method in workflow.deployment_settings.deployment_method}
PYTHON = "python" if _CONDA else shlex.quote(sys.executable)
# Relative to the working directory, so a moved or copied workflow does not rerun every job.
CLI = f"PYTHONPATH={shlex.quote(os.path.relpath(PACKAGE_DIR))} {PYTHON} -m offload_repro.cli"
LOGGED = "> {log} 2>&1 || {{ cat {log} >&2; exit 1; }}"
TABLES = shlex.join(config["tables"])


# Each stage's code inputs: the modules its subcommand can import, the data files they read by a
# fixed path and the lock, derived from the source (offload_repro.plan): an edit replans exactly the
# stages that import or read the edited file.
CODE = {command: stage_code(command) for command in subcommands()}


# What-if: every row compiled for every GPU target a cluster would run (SLURM GPU targets: a new
# target file enters by itself), and the capacity frontier of each placement policy.
# Once run, the what-if stays part of the evidence (and is kept current) on later default runs, so
# that its claims do not turn back to "not comparable" while its results sit on disk. Deleting
# results/whatif/ drops it.
config["whatif"] = as_bool(config["whatif"]) or os.path.exists("results/whatif/budget.json")
WHATIF_TARGETS = []
if config["whatif"]:
    WHATIF_TARGETS = [
        path.stem
        for path in sorted(Path("experiments/targets").glob("*.yaml"))
        if (spec := load_target(path.stem)).kind == "gpu" and spec.launcher == "slurm" and "compile" in spec.spec
    ]
    _unknown = sorted(set(config["frontier_targets"]) - set(WHATIF_TARGETS))
    if _unknown:
        raise WorkflowError(f"config 'frontier_targets': {_unknown} are not GPU targets with a compile section")
GRID_TARGETS = [COMPILE_TARGET.name, *[name for name in WHATIF_TARGETS if name != COMPILE_TARGET.name]]
# A SLURM GPU target's preflight checks host memory against its own compiled programs.
PREFLIGHT_COMPILED = []
if TARGET.kind == "gpu" and TARGET.launcher == "slurm":
    PREFLIGHT_COMPILED = expand("results/compiled/{gpu_target}/{row}.json", gpu_target=TARGET.name, row=ROW_IDS)
    GRID_TARGETS += [TARGET.name] if TARGET.name not in GRID_TARGETS else []
POLICIES = [policy["id"] for policy in read_yaml("experiments/frontier.yaml")["policies"]]
# Sensitivity (opt-in, like the what-if, and kept current once run): each alternative of
# experiments/assumptions.yaml compiled for the compile target on the rows it affects. A variant's
# settings reach its compile as a parameter, so adding an alternative plans only the new variants.
config["assumptions"] = as_bool(config["assumptions"]) or os.path.exists("results/whatif/assumptions.json")
VARIANTS = {}
if config["assumptions"]:
    for _assumption, _alternative in variants():
        _rows = [row for row in _assumption["affects"] if row in ROW_IDS]
        VARIANTS[variant_id(_assumption, _alternative)] = {"settings": _alternative["settings"], "rows": _rows}
VARIANT_FILES = [
    f"results/whatif/assumptions/{name}/{row}.json" for name, variant in VARIANTS.items() for row in variant["rows"]
]
VARIED_ROWS = sorted({row for variant in VARIANTS.values() for row in variant["rows"]})

# Predicted evidence is calibrated on one target's published rows (experiments/speed.yaml).
CALIBRATION_TARGET = read_yaml("experiments/speed.yaml")["calibration"]["target"]


def calibration_source(gpu_target):
    """The calibration target's prediction, which another target's prediction scales from."""
    if gpu_target == CALIBRATION_TARGET or CALIBRATION_TARGET not in GRID_TARGETS:
        return []
    return [f"results/predicted/{CALIBRATION_TARGET}.json"]


# Every result file the evidence table of this target is built from, by producer.
EVIDENCE_FILES = {
    "run": expand("results/{target}/runs/{row}.json", target=TARGET.name, row=ROW_IDS),
    "compile": expand("results/compiled/{gpu_target}/{row}.json", gpu_target=GRID_TARGETS, row=ROW_IDS),
    "analytic": ["results/analytic.json"],
    "predicted": expand("results/predicted/{gpu_target}.json", gpu_target=GRID_TARGETS),
}
if config["whatif"]:
    EVIDENCE_FILES["frontier"] = expand(
        "results/whatif/{gpu_target}/frontier-{policy}.json", gpu_target=config["frontier_targets"], policy=POLICIES
    )
    EVIDENCE_FILES["budget"] = ["results/whatif/budget.json"]
# A single local GPU also measures its host link (the transfer probe).
if TARGET.kind == "gpu" and TARGET.launcher == "local":
    EVIDENCE_FILES["probe"] = [f"results/{TARGET.name}/probe.json"]


def earlier_targets():
    """Targets other than this run's whose pages exist: the entry page keeps linking them."""
    found = []
    for verdicts in sorted(Path("results").glob("*/verdicts.json")):
        name = verdicts.parent.name
        paths = [f"results/report/{name}.html", str(verdicts), f"results/{name}/evidence.json"]
        if name != TARGET.name and all(os.path.exists(path) for path in paths):
            found.append(name)
    return found


# This run's target first, then every earlier target whose page the entry page keeps linking.
PAGE_TARGETS = [TARGET.name, *earlier_targets()]


wildcard_constraints:
    row="|".join(ROW_IDS),
    variant="|".join(re.escape(name) for name in VARIANTS) or "no-variant",
    target=TARGET.name,
    gpu_target="|".join(GRID_TARGETS),
    policy="|".join(POLICIES),
