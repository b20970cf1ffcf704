# Configuration, rows and targets: validated while the DAG is built, before anything runs.
import os
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

# Rules import the package from the checkout (locally and on cluster nodes): no install step.
sys.path.insert(0, os.path.join(workflow.basedir, "workflow"))

from offload_repro.cli import run_logged  # noqa: E402
from offload_repro.core.data import DataError, load_rows, load_target  # noqa: E402
from offload_repro.cluster.slurm import container_for, job_resources  # noqa: E402

validate(config, "../schemas/config.schema.yaml")

try:
    ALL_ROWS = load_rows(config["tables"])
    TARGET = load_target(config["target"])
    COMPILE_TARGET = load_target(config["compile_target"])
except DataError as err:
    raise WorkflowError(str(err)) from None

_unknown = sorted(set(config["rows"]) - {row.id for row in ALL_ROWS})
if _unknown:
    raise WorkflowError(f"config 'rows': unknown row ids {_unknown}; known: {[row.id for row in ALL_ROWS]}")
ROWS = [row for row in ALL_ROWS if not config["rows"] or row.id in config["rows"]]
ROW_IDS = [row.id for row in ROWS]
TARGET_FILE = f"experiments/targets/{TARGET.name}.yaml"
# A single local GPU also measures its host link (the transfer probe).
PROBE = [f"results/{TARGET.name}/probe.json"] if TARGET.kind == "gpu" and TARGET.launcher == "local" else []
# What each row's job asks a cluster for (ignored by local runs).
RUN_RESOURCES = job_resources(TARGET)
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
COMPILED = expand("results/compiled/{gpu_target}/{row}.json", gpu_target=COMPILE_TARGET.name, row=ROW_IDS)


wildcard_constraints:
    row="|".join(ROW_IDS),
    target=TARGET.name,
    gpu_target=COMPILE_TARGET.name,


def evidence_arguments(input, target):
    """The command-line arguments naming every evidence file, shared by check and report."""
    return [
        "--tables", *input.tables, "--claims", input.claims, "--target", target,
        "--compile-target", COMPILE_TARGET.name, "--compiled", *input.compiled, "--runs", *input.runs,
    ]
