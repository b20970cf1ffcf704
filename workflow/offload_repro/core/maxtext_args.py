"""Row + target -> MaxText `key=value` overrides, XLA_FLAGS and the environment of the row's process:
the one place that mapping lives."""

from __future__ import annotations

from typing import Any

from offload_repro.core.data import Row, Target
from offload_repro.core.process import package_environment


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def full_scale_overrides(row: Row) -> dict[str, Any]:
    """The row exactly as published: what a GB200 NVL72 run (or its AOT compile) is given."""
    return {
        "model_name": row.model,
        "dataset_type": "synthetic",
        "per_device_batch_size": row.per_device_batch_size,
        "max_target_length": row.max_target_length,
        "dtype": row.dtype,
        "quantization": row.quantization,
        "scan_layers": row.scan_layers,
        "remat_policy": row.remat_policy,
        **row.parallelism,
        **row.placement,
    }


def target_overrides(row: Row, target: Target) -> dict[str, Any]:
    """Apply the target's declared scale rule and its fixed settings to a row."""
    overrides = full_scale_overrides(row)
    scale = target.scale
    for key in scale.get("drop", []):
        overrides.pop(key, None)
    families = scale.get("families", {})
    if families:
        if row.family not in families:
            raise ValueError(f"target '{target.name}' has no scale rule for model family '{row.family}'")
        # MaxText refuses to override a named model's dimensions unless asked to.
        overrides["override_model_config"] = True
        overrides.update(families[row.family])
    if "max_target_length" in scale:
        overrides["max_target_length"] = scale["max_target_length"]
    overrides["steps"] = scale["steps"]
    if "global_batch_devices" in scale:
        global_batch = row.per_device_batch_size * scale["global_batch_devices"]
        if global_batch % scale["devices"]:
            raise ValueError(
                f"target '{target.name}': field 'scale.global_batch_devices': row '{row.id}' has a global batch"
                f" of {global_batch}, which does not split evenly over {scale['devices']} devices"
            )
        overrides["per_device_batch_size"] = global_batch // scale["devices"]
    if scale["devices"] != row.devices:
        # Published parallelism is for the full device count; let MaxText fill the smaller mesh.
        for key in row.parallelism:
            overrides[key] = -1
    # MaxText's base config keeps JAX's compilation cache in ~/jax_cache: outside results/, shared by
    # every checkout and never cleared, so a run's compile time would depend on earlier runs. A
    # target file may name a cache directory of its own.
    overrides["jax_cache_dir"] = ""
    overrides.update(target.maxtext)
    return overrides


def as_arguments(overrides: dict[str, Any]) -> list[str]:
    return [f"{key}={_text(value)}" for key, value in overrides.items()]


def xla_flags(row: Row, extra: list[str] | None = None) -> str:
    return " ".join([*row.xla_flags, *row.unstated_xla_flags, *(extra or [])])


# What `jax.lax.ragged_dot` computes in a row's process (core/grouped_matmul.py): the row's `ragged_dot`.
RAGGED_DOT_VARIABLE = "OFFLOAD_REPRO_RAGGED_DOT"


def environment(row: Row, target: Target) -> dict[str, str]:
    """What a row's MaxText process runs with on the target: its XLA_FLAGS, its grouped matmul and
    the target's variables."""
    env = package_environment({"XLA_FLAGS": xla_flags(row), RAGGED_DOT_VARIABLE: row.ragged_dot})
    if target.kind == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
    env.update({key: str(value) for key, value in target.spec.get("environment", {}).items()})
    return env


def read_flags(flags: str, target: Target) -> tuple[str, ...]:
    """The XLA flags a row's program is built with on the target: a TPU reads none of XLA:GPU's."""
    return tuple(flag for flag in flags.split() if not (target.kind == "tpu" and flag.startswith("--xla_gpu_")))


def same_program_rows(rows: list[Row], target: Target) -> dict[str, list[str]]:
    """Per row, the rows that are one program with it on the target (itself included): the same
    MaxText settings and the same XLA flags as the target reads them. On a TPU, the rows that differ
    only by the latency-hiding scheduler and pipelining flags of XLA:GPU are one program."""

    def key(row: Row) -> tuple[str, ...]:
        return (*as_arguments(target_overrides(row, target)), *sorted(read_flags(xla_flags(row), target)))

    groups: dict[tuple[str, ...], list[str]] = {}
    for row in rows:
        groups.setdefault(key(row), []).append(row.id)
    return {row_id: ids for ids in groups.values() for row_id in ids}
