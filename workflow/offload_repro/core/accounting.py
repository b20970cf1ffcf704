"""Bytes of every saved or offloaded activation, from MaxText's own configs: the analytic arithmetic.

Dimensions come from the installed MaxText's base.yml and the model's YAML (nothing is re-typed
here); shapes per tensor come from experiments/tensors.yaml. The analytic producer writes this
for every row as published; the compile observer compares a compiled program's host buffers
with it for the row as compiled (its MaxText settings on that target).
"""

from __future__ import annotations

import math
from functools import cache
from typing import Any

from offload_repro.core.data import Row, validate
from offload_repro.core.files import REPO_ROOT, read_yaml
from offload_repro.core.maxtext_configs import model_config, model_file

TENSORS_FILE = REPO_ROOT / "experiments" / "tensors.yaml"
READS = ("experiments/tensors.yaml",)
DTYPE_BYTES = {"bfloat16": 2, "float32": 4}


@cache
def tensor_shapes() -> dict[str, Any]:
    return validate(read_yaml(TENSORS_FILE), "tensors", TENSORS_FILE)["tensors"]


def layer_counts(config: dict[str, Any]) -> dict[str, int]:
    layers = config["base_num_decoder_layers"]
    dense = config["first_num_dense_layers"] if config.get("num_experts", 1) > 1 else layers
    return {"dense": dense, "moe": layers - dense}


def routed_slots(config: dict[str, Any]) -> int:
    """The expert slots of one sequence in a MoE layer. MaxText's dense dispatch with a capacity
    factor above 0 gives each expert int(max(ceil(length x k / experts) x factor, factor)) slots
    (layers/moe.py, generate_masks), filled or not; a dropless dispatch (sparse_matmul, or no
    capacity factor) holds each token's k copies."""
    length, chosen, experts = config["max_target_length"], config["num_experts_per_tok"], config["num_experts"]
    factor = config.get("capacity_factor", -1)
    if config.get("sparse_matmul") or factor <= 0:
        return length * chosen
    return experts * int(max(math.ceil(length * chosen / experts) * factor, factor))


def _bytes_per_layer(tensor: str, config: dict[str, Any], dtype: str) -> dict[str, int]:
    """{layer kind: bytes per device per layer} of one named tensor under MaxText settings `config`."""
    sizes = {**config, "batch": config["per_device_batch_size"], "length": config["max_target_length"]}
    if config.get("num_experts", 1) > 1:
        sizes["routed_slots"] = routed_slots(config)
    counts = layer_counts(config)
    result = {}
    for kind, dims in tensor_shapes()[tensor]["layers"].items():
        for layer_kind in ["dense", "moe"] if kind == "all" else [kind]:
            if counts[layer_kind]:
                result[layer_kind] = int(math.prod(sizes[dim] for dim in dims) * DTYPE_BYTES[dtype])
    return result


def accounting(model: str, dtype: str, placement: dict[str, str], settings: dict[str, Any]) -> dict[str, Any]:
    """Per tensor, per layer and per step bytes of what a placement saves on device or offloads,
    under MaxText `settings` (batch and sequence length included) over the model's own config."""
    config = {**model_config(model), **settings}
    counts = layer_counts(config)
    tensors: dict[str, Any] = {}
    totals = {"device": 0, "offload": 0}
    for tensor, where in placement.items():
        per_layer = _bytes_per_layer(tensor, config, dtype)
        per_step = sum(size * counts[kind] for kind, size in per_layer.items())
        tensors[tensor] = {"placement": where, "bytes_per_layer": per_layer, "bytes_per_step": per_step}
        if where in totals:
            totals[where] += per_step
    first_kind = "moe" if counts["moe"] else "dense"
    return {
        "layers": counts,
        "tensors": tensors,
        "offloaded_bytes_per_step": totals["offload"],
        "device_saved_bytes_per_step": totals["device"],
        # per-layer sums for the layer kind that dominates the stack
        "offloaded_bytes_per_layer": sum(
            t["bytes_per_layer"].get(first_kind, 0) for t in tensors.values() if t["placement"] == "offload"
        ),
    }


def row_accounting(row: Row, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """A row's accounting as published, or with MaxText `overrides` (a target's scale rule)."""
    settings = {"per_device_batch_size": row.per_device_batch_size, "max_target_length": row.max_target_length}
    return {
        "row": row.id,
        **accounting(row.model, row.dtype, row.placement, settings | (overrides or {})),
        "maxtext_config_source": str(model_file(row.model)),
    }


def compiled_accounting(overrides: dict[str, Any]) -> dict[str, Any]:
    """The accounting of a program from the MaxText settings it was compiled with (a compile
    result's `maxtext_overrides`): model, dtype, batch, length and each tensor's placement."""
    placement = {name: overrides[name] for name in tensor_shapes() if name in overrides}
    return accounting(overrides["model_name"], overrides["dtype"], placement, overrides)
