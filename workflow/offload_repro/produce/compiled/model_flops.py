"""MaxText's model FLOPs per device per train step, split by the model's components.

MaxText's `calculate_tflops_training_per_device` (maxtext/utils/maxtext_utils.py, MaxText 0.2.5,
lines 1157-1401) returns only the total and its learnable-weight and attention parts; a compiled
program is compared with the model piece by piece, so the pieces it adds up are recorded too.
Each comes from the same helper MaxText calls (its FFN, DeepSeek's routed and shared experts,
MLA) or, where MaxText computes it inline, the same expression on the same config fields, and is
scaled as MaxText scales the total: forward x 3 for training, per 10^12, x gradient accumulation
steps. tests/produce/compiled/test_model_flops.py holds their sum to MaxText's own total for both model families.

Split only where MaxText's total is FFN + (QKV + output projection) x layers + unembedding +
causal attention x layers (lines 1264-1318): the two decoder blocks this project compiles, with
no multi-token prediction, Engram, vision layers or DPO. Anything else gives None, and MaxText's
total stands alone.

MaxText is imported inside the functions: this module is imported (through produce.compiled.aot_compile) by
processes that never build a MaxText config.
"""

from __future__ import annotations

from typing import Any

SPLIT_BLOCKS = ("llama2", "deepseek")  # DecoderBlockType values; their totals take the plain sum
COMPONENTS = ("ffn", "qkv", "output_projection", "attention", "embedding")


def splittable(config: Any) -> bool:
    """Whether MaxText forms this config's total from the five components alone."""
    return (
        config.decoder_block.value in SPLIT_BLOCKS
        and not getattr(config, "mtp_num_layers", 0)
        and not config.engram_layers
        and not config.use_multimodal
        and not config.use_dpo
    )


def ffn_flops(config: Any) -> float:
    """Every decoder layer's FFN, forward (lines 1159-1191): dense, DeepSeek's gate + shared +
    routed experts over its dense and MoE layers, or another MoE's gate + routed experts."""
    from maxtext.utils import maxtext_utils as mt

    if config.num_experts <= 1:
        return mt.calculate_ffn_mamtul_tflops_per_device(config, config.mlp_dim) * config.num_decoder_layers
    if config.decoder_block == mt.DecoderBlockType.DEEPSEEK:
        return mt.calculate_routed_and_shared_ffn_tflops_per_device(config)  # every layer already
    gate = 2 * config.per_device_batch_size * config.max_target_length * config.emb_dim * config.num_experts
    routed = mt.calculate_ffn_mamtul_tflops_per_device(config, config.moe_mlp_dim) * config.num_experts_per_tok
    return (gate + routed) * config.num_decoder_layers


def attention_flops(config: Any) -> tuple[float, float, float]:
    """(QKV projections, causal attention, output projection) of one layer, forward: MLA's helper,
    or the expressions lines 1196-1222 compute inline for grouped-query attention."""
    from maxtext.utils import maxtext_utils as mt

    if config.attention_type == "mla":
        return mt.calculate_mla_tflops_per_device(config)  # its attention is already causal
    tokens = config.per_device_batch_size * config.max_target_length
    kv_multiplier = 1 if config.share_kv_projections else 2
    qkv = 2 * tokens * config.emb_dim * (config.num_query_heads + kv_multiplier * config.num_kv_heads) * config.head_dim
    batch, length = config.per_device_batch_size, config.max_target_length
    noncausal = 4 * batch * length**2 * config.num_query_heads * config.head_dim
    projection = 2 * tokens * config.emb_dim * config.num_query_heads * config.head_dim
    return qkv, noncausal / 2, projection  # halved by the causal mask, as MaxText does


def embedding_flops(config: Any) -> float:
    """The unembedding (logits) projection, forward (line 1226); the embedding lookup is a gather."""
    return 2 * config.per_device_batch_size * config.max_target_length * config.emb_dim * config.vocab_size


def components(config: Any) -> dict[str, float] | None:
    """TFLOP per device per train step of each component, in MaxText's units; None where MaxText's
    total is not their plain sum (see `splittable`)."""
    if not splittable(config):
        return None
    qkv, attention, projection = attention_flops(config)
    layers = config.num_decoder_layers
    forward = {
        "ffn": ffn_flops(config),
        "qkv": qkv * layers,
        "output_projection": projection * layers,
        "attention": attention * layers,
        "embedding": embedding_flops(config),
    }
    # forward + backward (2 x forward), per 10^12, per gradient accumulation step (lines 1311-1381)
    scale = 3 / 10**12 * config.gradient_accumulation_steps
    return {name: float(forward[name] * scale) for name in COMPONENTS}
