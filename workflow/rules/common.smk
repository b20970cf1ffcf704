# Configuration, rows and targets: validated while the DAG is built, before anything runs.
import os
import sys

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

# Rules import the package from the checkout (locally and on cluster nodes): no install step.
sys.path.insert(0, os.path.join(workflow.basedir, "workflow"))

from offload_repro.cli import run_logged  # noqa: E402
from offload_repro.data import DataError, load_rows, load_target  # noqa: E402

validate(config, "../schemas/config.schema.yaml")

try:
    ALL_ROWS = load_rows(config["tables"])
    TARGET = load_target(config["target"])
except DataError as err:
    raise WorkflowError(str(err)) from None

_unknown = sorted(set(config["rows"]) - {row.id for row in ALL_ROWS})
if _unknown:
    raise WorkflowError(f"config 'rows': unknown row ids {_unknown}; known: {[row.id for row in ALL_ROWS]}")
ROWS = [row for row in ALL_ROWS if not config["rows"] or row.id in config["rows"]]
ROW_IDS = [row.id for row in ROWS]
TARGET_FILE = f"experiments/targets/{TARGET.name}.yaml"


wildcard_constraints:
    row="|".join(ROW_IDS),
    target=TARGET.name,
