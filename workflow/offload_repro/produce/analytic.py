"""Analytic evidence: bytes of every saved or offloaded activation, from MaxText's own configs.

Dimensions come from the installed MaxText's base.yml and the row's model YAML (nothing is
re-typed here); shapes per tensor come from experiments/tensors.yaml.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

from offload_repro.core import memory
from offload_repro.core.data import Row, validate
from offload_repro.core.files import REPO_ROOT, read_yaml
from offload_repro.core.observation import Observation, Observer
from offload_repro.core.results import write_result
from offload_repro.produce import maxtext_args

TENSORS_FILE = REPO_ROOT / "experiments" / "tensors.yaml"
READS = ("experiments/tensors.yaml",)
DTYPE_BYTES = {"bfloat16": 2, "float32": 4}


@cache
def tensor_shapes() -> dict[str, Any]:
    data = read_yaml(TENSORS_FILE)
    validate(data, "tensors", TENSORS_FILE)
    return data["tensors"]


@cache
def model_config(model: str) -> dict[str, Any]:
    """MaxText's defaults overlaid with the named model's YAML, as shipped in the package."""
    configs = maxtext_args.base_config().parent
    return {**read_yaml(configs / "base.yml"), **read_yaml(configs / "models" / f"{model}.yml")}


def layer_counts(config: dict[str, Any]) -> dict[str, int]:
    layers = config["base_num_decoder_layers"]
    dense = config["first_num_dense_layers"] if config.get("num_experts", 1) > 1 else layers
    return {"dense": dense, "moe": layers - dense}


def tensor_bytes_per_layer(row: Row, tensor: str, overrides: dict[str, Any] | None = None) -> dict[str, int]:
    """{layer kind: bytes per device per layer} for one named tensor of one row (as published,
    or with a target's overrides such as a scale rule's layer and expert counts)."""
    overrides = overrides or {}
    config = {**model_config(row.model), **overrides}
    sizes = {
        **config,
        "batch": overrides.get("per_device_batch_size", row.per_device_batch_size),
        "length": overrides.get("max_target_length", row.max_target_length),
    }
    counts = layer_counts(config)
    result = {}
    for kind, dims in tensor_shapes()[tensor]["layers"].items():
        kinds = ["dense", "moe"] if kind == "all" else [kind]
        for layer_kind in kinds:
            if counts[layer_kind]:
                elements = math.prod(sizes[dim] for dim in dims)
                result[layer_kind] = int(elements * DTYPE_BYTES[row.dtype])
    return result


def row_accounting(row: Row, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """Per tensor, per layer and per step bytes of what the row saves on device or offloads."""
    counts = layer_counts({**model_config(row.model), **(overrides or {})})
    tensors: dict[str, Any] = {}
    totals = {"device": 0, "offload": 0}
    for tensor, placement in row.placement.items():
        per_layer = tensor_bytes_per_layer(row, tensor, overrides)
        per_step = sum(size * counts[kind] for kind, size in per_layer.items())
        tensors[tensor] = {"placement": placement, "bytes_per_layer": per_layer, "bytes_per_step": per_step}
        if placement in totals:
            totals[placement] += per_step
    first_kind = "moe" if counts["moe"] else "dense"
    return {
        "row": row.id,
        "evidence": "analytic",
        "layers": counts,
        "tensors": tensors,
        "offloaded_bytes_per_step": totals["offload"],
        "device_saved_bytes_per_step": totals["device"],
        # per-layer sums for the layer kind that dominates the stack
        "offloaded_bytes_per_layer": sum(
            t["bytes_per_layer"].get(first_kind, 0) for t in tensors.values() if t["placement"] == "offload"
        ),
        "maxtext_config_source": str(maxtext_args.base_config().parent / "models" / f"{row.model}.yml"),
    }


def write_accounting(rows: list[Row], out_json: str) -> dict[str, Any]:
    """Every row's accounting as published (full scale), as one result file."""
    from importlib import metadata

    return write_result(
        out_json,
        "analytic",
        {
            "status": "ok",
            "message": None,
            "maxtext_version": metadata.version("maxtext"),
            "rows": [row_accounting(row) for row in rows],
        },
    )


def observe(result: dict[str, Any], source: str) -> list[Observation]:
    observations = []
    for accounting in result["rows"]:
        seen = Observer(result, source, "analytic", accounting["row"], None)
        seen.add("host_memory_gib", memory.gib(accounting["offloaded_bytes_per_step"]), "GiB")
        seen.add("device_saved_gib", memory.gib(accounting["device_saved_bytes_per_step"]), "GiB")
        seen.add("offloaded_mib_per_layer", memory.mib(accounting["offloaded_bytes_per_layer"]), "MiB")
        for tensor, sizes in accounting["tensors"].items():
            per_layer = sizes["bytes_per_layer"]
            seen.add(f"{tensor}_mib_per_layer", memory.mib(per_layer["moe" if "moe" in per_layer else "dense"]), "MiB")
        observations += seen.observations
    return observations
