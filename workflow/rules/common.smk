# Configuration, rows and targets: validated and planned while the DAG is built, before anything
# runs. Every decision is made by the tested offload_repro.plan; this file only hands it over.
import json
import os
import re
import shlex
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

# Rules import the package from the checkout (locally and on cluster nodes): no install step.
PACKAGE_DIR = os.path.join(workflow.basedir, "workflow")
sys.path.insert(0, PACKAGE_DIR)

from offload_repro.core.data import DataError, load_target  # noqa: E402
from offload_repro.plan.inputs import COMMANDS, stage_code  # noqa: E402
from offload_repro.plan.jobs import FRONTIER_PRIORITY, as_bool, kept_programs, kept_results, make_plan  # noqa: E402
from offload_repro.plan.jobs import kept_sweep, pair_devices  # noqa: E402

validate(config, "../schemas/config.schema.yaml")
config["allow_unpinned_container"] = as_bool(config["allow_unpinned_container"])

try:
    PLAN = make_plan(config, workflow.global_resources)
except DataError as err:
    raise WorkflowError(str(err)) from None

TARGET, COMPILE_TARGET = PLAN.target, PLAN.compile_target
# the devices whose kept programs or sweep give pairs measured on a device
PAIR_DEVICES = pair_devices([TARGET.name, *PLAN.device_targets])
TARGET_FILE = f"experiments/targets/{TARGET.name}.yaml"
COMPILE_TARGET_FILE = f"experiments/targets/{COMPILE_TARGET.name}.yaml"
CLAIMS_FILE = "experiments/claims.yaml"

# The MaxText processes of run_row (CPU rows), compile_row and the optional stages run XLA (a CPU
# training run or an ahead-of-time GPU compile), which keeps a pool of threads on every core it
# finds: a job's threads used 1.3 to 2.1 times its main thread's CPU
# time (two rows' compiles and CPU runs). Their rules declare no `threads:` all the same: claiming 2
# cores a job ran them one at a time on 2 cores, and the main job took 277 s and 279 s against
# 176 s and 153 s with them side by side (workflow/scripts/benchmark.py --repeats 2, alternating):
# side by side, their parts on one thread overlap and the cores stay busy (1.9 jobs at once, not 1.0).


# The pinned environment every rule runs in (.venv from the same locks when not --use-conda).
CONDA_ENV = "../../envs/offload-repro.conda.yaml"
# The command line every rule calls. Under --use-conda the rule's environment provides `python`;
# otherwise it is Snakemake's own (.venv). The package's path is relative to the working directory.
_CONDA = "CONDA" in {method.name for method in workflow.deployment_settings.deployment_method}
PYTHON = "python" if _CONDA else shlex.quote(sys.executable)
CLI = f"PYTHONPATH={shlex.quote(os.path.relpath(PACKAGE_DIR))} {PYTHON} -m offload_repro.cli"


# Every rule's shell is `{params.cli} <command> ... > {log} 2>&1 || (cat {log} >&2; exit 1)`: the
# command's output goes to the rule's log, and a failure prints that log (its traceback) on the
# console. Where the interpreter and the package lie is no part of what a job computes (the
# environment's versions are: envs/requirements.lock is a code input of every rule), so `cli`
# is computed from `input` and kept out of the params rerun trigger, and no shell string names a path, which keeps the code rerun trigger (a shell's text) still too: a
# moved or copied workflow, or another .venv path, reruns nothing (tests/workflow/test_workflow.py).
def cli(wildcards, input):
    return CLI


# Each stage's code inputs: the entry point and the modules its command's module
# (offload_repro/commands/<command>.py) can import, the data files they read by a fixed path and
# the lock, derived from the source (offload_repro.plan.inputs): an edit replans exactly the
# stages that import or read the edited file. A rule names its command as `code=CODE["<command>"]`,
# which is also how the plan finds the rules of each command.
CODE = {command: stage_code(command) for command in COMMANDS}


wildcard_constraints:
    row="|".join(PLAN.row_ids),
    variant="|".join(re.escape(name) for name in PLAN.variants) or "no-variant",
    # this run's target, and the targets whose measured runs are kept as data (their pages are built too)
    target="|".join(re.escape(name) for name in [TARGET.name, *PLAN.device_targets]),
    # the calibration target too: another target's prediction scales from its calibration
    gpu_target="|".join(dict.fromkeys([*PLAN.grid_targets, PLAN.calibration_target])),
    policy="|".join(PLAN.policies),
    measured_run="|".join(re.escape(name) for name in PLAN.measured_runs) or "no-run",


# Steps that only read JSON (and the predictions, which replay programs already compiled): on a
# cluster they run where Snakemake runs, never as jobs of their own.
localrules:
    collect_runs,
    analytic,
    analytic_defaults,
    budget,
    predict,
    predict_defaults,
    latency_profile,
    measured_profile,
    validate_model,
    evidence_table,
    evidence_defaults,
    check_claims,
    report,
    index,
