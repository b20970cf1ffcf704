"""Where a program sits between copy-bound and compute-bound, predicted from its settings alone: the
time its host copies take one way (the offloaded bytes per step, core/accounting.py, over the
target's host link) over the time its FLOPs take (MaxText's own count of a train step's FLOPs, over
the target's dense peak). No compile, no run: it chooses a sweep's regimes before the chip is used,
and sets them beside the source's rows on GB200.

The FLOP count is MaxText 0.2.5's `calculate_tflops_training_per_device` (maxtext/utils/
maxtext_utils.py, lines 1157-1401) for the two decoder blocks this project trains (llama2 with
grouped-query attention, deepseek with MLA), written over the config's plain fields so that no
MaxText config has to be built; tests/produce/predicted/test_regime.py holds it to the count MaxText
itself recorded in the chip's runs. The peak is the dense peak of the precision the family's GEMMs
run at (experiments/speed.yaml, precision: its default), attention at BF16's, as the step-time model
takes them; the host link is the target's one way, at its central achieved share, at most its share
of the CPU's memory bandwidth (target_rates.rates).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from offload_repro.core import maxtext_args
from offload_repro.core.accounting import accounting
from offload_repro.core.data import Row, Target
from offload_repro.core.maxtext_configs import model_config
from offload_repro.core.memory import GB
from offload_repro.core.sweep import Sweep, settings
from offload_repro.produce.predicted.target_rates import link_efficiency, peak_flops

BLOCKS = ("llama2", "deepseek")  # the decoder blocks whose count is written out below


class StepFlops(NamedTuple):
    """A train step's FLOPs per device, as MaxText counts them (forward and backward, no recompute)."""

    weights: float  # the learnable weights' GEMMs (projections, FFN or experts, unembedding)
    attention: float  # the causal attention's own products

    @property
    def total(self) -> float:
        return self.weights + self.attention


def settled(model: str, settings: dict[str, Any]) -> dict[str, Any]:
    """MaxText's defaults and the model's YAML, with `settings` over them (a row's at a target's scale)."""
    config = {**model_config(model), **settings}
    if config.get("global_parameter_scale", 1) != 1:
        raise ValueError(f"{model}: global_parameter_scale {config['global_parameter_scale']} is not counted here")
    if config.get("gradient_accumulation_steps", 1) != 1 or config.get("mtp_num_layers", 0):
        raise ValueError(f"{model}: gradient accumulation and multi-token prediction are not counted here")
    return config


def _ffn(config: dict[str, Any], mlp_dim: int) -> float:
    """One FFN's GEMMs over the step's tokens, forward: each activation's up projection and the down one."""
    tokens = config["per_device_batch_size"] * config["max_target_length"]
    return 2 * tokens * mlp_dim * config["base_emb_dim"] * (len(config["mlp_activations"]) + 1)


def _attention(config: dict[str, Any]) -> tuple[float, float, float]:
    """(query/key/value projections, causal attention, output projection) of one layer, forward."""
    batch, length, width = config["per_device_batch_size"], config["max_target_length"], config["base_emb_dim"]
    tokens, heads = batch * length, config["base_num_query_heads"]
    if config.get("attention_type") == "mla":
        qk = config["qk_nope_head_dim"] + config["qk_rope_head_dim"]
        q_rank, kv_rank = config["q_lora_rank"], config["kv_lora_rank"]
        query = width * heads * qk if q_rank == 0 else width * q_rank + q_rank * heads * qk
        kv = width * (kv_rank + config["qk_rope_head_dim"]) + kv_rank * heads * (
            config["qk_nope_head_dim"] + config["v_head_dim"]
        )
        causal = 2 * tokens * length * heads * (qk + config["v_head_dim"]) / 2
        return 2 * tokens * (query + kv), causal, 2 * tokens * width * heads * config["v_head_dim"]
    head_dim, kv_heads = config["head_dim"], config["base_num_kv_heads"]
    qkv = 2 * tokens * width * (heads + 2 * kv_heads) * head_dim
    causal = 4 * batch * length**2 * heads * head_dim / 2  # halved by the causal mask, as MaxText does
    return qkv, causal, 2 * tokens * width * heads * head_dim


def step_flops(config: dict[str, Any]) -> StepFlops:
    """A train step's FLOPs per device under a settled config (`settled`), as MaxText counts them."""
    block = config["decoder_block"]
    if block not in BLOCKS or (block == "llama2" and config.get("num_experts", 1) > 1):
        raise ValueError(f"decoder block '{block}' is not counted here (only {', '.join(BLOCKS)}, dense llama2)")
    layers = config["base_num_decoder_layers"]
    tokens = config["per_device_batch_size"] * config["max_target_length"]
    if block == "deepseek":
        dense = config["first_num_dense_layers"]
        gate = 2 * tokens * config["base_emb_dim"] * config["num_experts"]
        expert = _ffn(config, config["base_moe_mlp_dim"])
        moe = gate + expert * (config["shared_experts"] + config["num_experts_per_tok"])
        ffn = _ffn(config, config["base_mlp_dim"]) * dense + moe * (layers - dense)
    else:
        ffn = _ffn(config, config["base_mlp_dim"]) * layers
    qkv, causal, projection = _attention(config)
    unembedding = 2 * tokens * config["base_emb_dim"] * config["vocab_size"]
    # forward, and backward as twice the forward
    return StepFlops(3 * (ffn + (qkv + projection) * layers + unembedding), 3 * causal * layers)


class Regime(NamedTuple):
    """A program's predicted host-copy time over its compute time, with both terms."""

    offloaded_bytes: int  # per step, each way (stored in the forward, loaded in the backward)
    host_copy_s: float
    flops: StepFlops
    compute_s: float
    precision: str

    @property
    def copy_to_compute(self) -> float:
        return self.host_copy_s / self.compute_s


def host_bytes_per_s(target: Target, speed: dict[str, Any]) -> float:
    """What the target's copies to or from the host get one way: its link at its central achieved
    share, at most its share of its CPU's memory bandwidth (as target_rates.rates)."""
    link = target.host_link_gb_s_per_direction
    if not link:
        raise ValueError(f"target '{target.name}' states no host link")
    achieved = link * link_efficiency(target, "host_link", "central", speed)
    memory_share = target.spec["hardware"].get("host_memory_gb_s_per_gpu")
    return min(achieved, memory_share or achieved) * GB


def regime(
    model: str,
    dtype: str,
    placement: dict[str, str],
    settings: dict[str, Any],
    target: Target,
    speed: dict[str, Any],
    precision: str,
) -> Regime:
    """The predicted regime of one program: `model` under MaxText `settings` with `placement`, on `target`,
    its GEMMs at `precision`'s dense peak (attention at BF16's)."""
    config = settled(model, settings)
    offloaded = accounting(model, dtype, placement, config)["offloaded_bytes_per_step"]
    flops = step_flops(config)
    gemm, bf16 = peak_flops(target, precision, speed), peak_flops(target, "bfloat16")
    if not gemm or not bf16:
        raise ValueError(f"target '{target.name}' cites no dense peak at {precision} and bfloat16")
    compute_s = flops.weights / gemm + flops.attention / bf16
    return Regime(offloaded, offloaded / host_bytes_per_s(target, speed), flops, compute_s, precision)


def row_regime(row: Row, settings: dict[str, Any], target: Target, speed: dict[str, Any], precision: str) -> Regime:
    """A row's regime under MaxText `settings` (its own as published, or at a target's scale)."""
    return regime(row.model, row.dtype, row.placement, settings, target, speed, precision)


TABLE_FILE = "{target}.regimes.md"  # beside the sweep file
SOURCE_TARGET = "gb200-nvl72"
SOURCE_ROWS = ("llama-qkv-offload-lhs", "deepseek-offload-optimized")  # the source's offload rows


def _precision(speed: dict[str, Any], family: str, target: Target) -> str:
    """The family's default GEMM precision where the target cites its peak, else BF16 (a TPU's only)."""
    default = speed["precision"]["families"].get(family, ["bfloat16"])[0]
    return default if peak_flops(target, default, speed) else "bfloat16"


def sweep_regimes(sweep: Sweep, target: Target, speed: dict[str, Any]) -> dict[str, Regime]:
    """Each regime of the sweep: its offloading point's predicted regime (the other placements of a
    regime offload less or nothing; their copies take no time)."""
    found = {}
    for name, points in sweep.regimes().items():
        offloading = max(points, key=lambda p: len(p.row.tensors("offload")))
        config = settings(offloading, target, sweep.steps)
        found[name] = row_regime(offloading.row, config, target, speed, _precision(speed, offloading.family, target))
    return found


def table(sweep: Sweep, rows: list[Row], target: Target, source: Target, speed: dict[str, Any]) -> str:
    """The sweep's regimes and the source's offload rows on GB200, each at the same measure."""
    by_id = {row.id: row for row in rows}
    head = "| {} | host copy, one way | compute at peak | copy / compute |\n|---|---|---|---|\n"
    lines = [
        f"# Predicted regimes of {Path(sweep.source).name}",
        "",
        "Generated by `python -m offload_repro.produce.predicted.regime --write` (produce/predicted/regime.py);"
        " a test holds it to the sweep file. Host copy: the offloaded bytes per step (experiments/tensors.yaml),"
        " each way, over the host link one way at its central achieved share; compute: MaxText's count of the"
        " step's FLOPs at the dense peak of the GEMMs' precision (attention at BF16's). A regime's ratio is its"
        " offloading point's; its other points copy nothing.",
        "",
        f"## The sweep on {target.name}",
        "",
        head.format("regime | points | overrides").replace("|---|", "|---|---|---|", 1).rstrip("\n"),
    ]
    regimes = sweep_regimes(sweep, target, speed)
    for name, points in sweep.regimes().items():
        found = regimes[name]
        overrides = ", ".join(f"{k}={v}" for k, v in points[0].overrides.items())
        lines.append(
            f"| {name} | {', '.join(p.id for p in points)} | {overrides} | {found.offloaded_bytes / GB:.3f} GB,"
            f" {found.host_copy_s * 1e3:.1f} ms | {found.flops.total / 1e12:.2f} TFLOP, {found.compute_s * 1e3:.1f} ms"
            f" ({found.precision}) | {found.copy_to_compute:.3f} |"
        )
    lines.append("")
    for family in sorted({p.family for p in sweep.points}):
        values = [regimes[p.regime].copy_to_compute for p in sweep.family(family)]
        lines.append(f"- {family}: {min(values):.3f} to {max(values):.3f}, a span of {max(values) / min(values):.1f}x")
    lines += ["", f"## The source's offload rows on {source.name}, as published", "", head.format("row").rstrip("\n")]
    for row_id in SOURCE_ROWS:
        row = by_id[row_id]
        for precision in dict.fromkeys([_precision(speed, row.family, source), "bfloat16"]):
            found = row_regime(row, maxtext_args.full_scale_overrides(row), source, speed, precision)
            lines.append(
                f"| {row_id} | {found.offloaded_bytes / GB:.1f} GB, {found.host_copy_s * 1e3:.0f} ms |"
                f" {found.flops.total / 1e12:.0f} TFLOP, {found.compute_s * 1e3:.0f} ms ({precision}) |"
                f" {found.copy_to_compute:.3f} |"
            )
    return "\n".join(lines) + "\n"


def table_file(sweep: Sweep) -> Path:
    return Path(sweep.source).with_name(TABLE_FILE.format(target=sweep.target))


if __name__ == "__main__":
    import sys

    from offload_repro.core.data import load_rows, load_target
    from offload_repro.core.published import load_speed
    from offload_repro.core.sweep import load_sweep, sweep_file
    from offload_repro.produce.compiled.tpu_programs import TABLES

    if sys.argv[1:] not in ([], ["--write"]):
        sys.exit("usage: python -m offload_repro.produce.predicted.regime [--write]  (tpu-v5e-1's sweep)")
    all_rows = load_rows(list(TABLES))
    chip = load_target("tpu-v5e-1")
    found = load_sweep(sweep_file(chip.name), all_rows, chip)
    text = table(found, all_rows, chip, load_target(SOURCE_TARGET), load_speed())
    if sys.argv[1:] == ["--write"]:
        table_file(found).write_text(text, encoding="utf-8")
    else:
        print(text, end="")
