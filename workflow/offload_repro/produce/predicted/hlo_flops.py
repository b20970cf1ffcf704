"""The FLOPs a compiled program computes per step, counted from its optimized HLO text: how many
times each computation runs, and what each of its dots, cuBLAS GEMMs and cuDNN attention calls
computes.

Deviceless GPU compiles give no cost analysis, and XLA's generic one counts a while body once,
so the FLOPs are counted here, every computation as many times as it runs:
- the entry runs once; a while body runs its `known_trip_count` times per run of its caller (the
  layer scan); a fused, called or async-wrapped computation runs once per run of its caller;
- dots (inside Triton GEMM fusions when autotuning is off): 2 x output elements x contracted size;
- cuBLAS GEMM custom calls: the same, from their dot dimension numbers;
- cuDNN flash attention (`__cudnn$fmhaSoftmax*`): each of its matmuls is 2 x batch x heads x
  query length x key length x head dim (the query-key or the value head dim, which MLA makes
  differ), halved under a causal mask; the forward pass has two (QK^T, PV), the backward pass
  five (QK^T again, dV, dP, dQ, dK).
- XLA:TPU prints its dots as convolutions: 2 x the output's batch and feature elements x the
  contracted input features x the window taps that land inside the unpadded input (a dot becomes
  a convolution whose window slides over padding; only the taps inside count).
- MaxText's splash attention on TPU (Pallas `tpu_custom_call`s named `splash_mha_fwd*`,
  `*_dkv*`, `*_dq*`): the same matmuls from its query, key and value shapes, each kernel
  recomputing QK^T: forward QK^T and PV; dkv QK^T, dP, dV and dK; dq QK^T, dP and dQ; halved, as
  under the causal mask MaxText's decoders attend with (its block mask is data, not printed).
- MaxText's MoE grouped matmuls on TPU (megablox `gmm` and its weight gradient `tgmm`, Pallas
  kernels): 2 x the routed rows x the contracted size x the output size, each row multiplied by
  one expert's weights.
Each FLOP is labelled by the op that produced it: `rematted_computation` in its metadata is
JAX's checkpoint recompute; `/dispatch/` and `/combine/` are MaxText's dense MoE dispatch.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass

from offload_repro.produce.compiled.hlo_text import (
    ARRAY,
    Computation,
    Instruction,
    backend_config,
    balanced,
    called,
    parse_dims,
    trip_count,
)

CONTRACTING = re.compile(r"lhs_contracting_dims=\{([\d,]*)\}")
REMAT_LABEL = "rematted_computation"
UNSPENT_LABELS = ("/dispatch/", "/combine/")  # MaxText's dense MoE dispatch; the source used TE's permutation


def executions(computations: dict[str, Computation]) -> tuple[dict[str, int], list[str]]:
    """How many times each computation runs per step, and the while loops of unknown trip count
    (counted once, and said so)."""
    runs: dict[str, int] = defaultdict(int, {c.name: 1 for c in computations.values() if c.entry})
    unknown: list[str] = []
    for computation in reversed(list(computations.values())):  # callers are printed after their callees
        count = runs.get(computation.name, 0)
        if not count:
            continue
        for instruction in computation.instructions:
            for how, name in called(instruction):
                if how == "to_apply":
                    continue  # scalar reductions: no FLOPs counted
                if how == "body":
                    trips = trip_count(instruction)
                    if trips is None:
                        unknown.append(instruction.name)
                    runs[name] += count * (trips or 1)
                elif how == "condition":
                    runs[name] += count * ((trip_count(instruction) or 1) + 1)
                else:
                    runs[name] += count
    return dict(runs), unknown


def _operand_dims(computation: Computation, operand: str) -> list[int]:
    arrays = ARRAY.findall(computation.shapes.get(operand, ""))
    return parse_dims(arrays[0][1]) if arrays else []


def gemm_flops(computation: Computation, instruction: Instruction, contracting: list[int] | None) -> int:
    """A dot's or a cuBLAS GEMM's: 2 x output elements x the size of the lhs's `contracting` dims
    (None: none printed)."""
    out = instruction.arrays
    lhs = _operand_dims(computation, instruction.operands[0]) if instruction.operands else []
    if not out or contracting is None or not lhs:
        return 0
    return 2 * math.prod(out[0][1]) * math.prod(lhs[d] for d in contracting)


WINDOW = re.compile(r"window=\{([^}]*)\}")
DIM_LABELS = re.compile(r"dim_labels=(\w+)_(\w+)->(\w+)")


def _window(attributes: str) -> dict[str, list[str]]:
    """A convolution's window: each field ('size', 'pad', 'stride', ...) split per spatial dimension."""
    found = WINDOW.search(attributes)
    fields = dict(part.split("=", 1) for part in found.group(1).split()) if found else {}
    return {name: value.split("x") for name, value in fields.items()}


def inside_taps(size: int, window: int, pad_low: int, stride: int = 1, lhs_dilate: int = 1, rhs_dilate: int = 1) -> int:
    """Over all output positions of one spatial dimension, how many window taps land on an input
    element (not on padding, not between dilated elements)."""
    dilated = (size - 1) * lhs_dilate + 1
    span = (window - 1) * rhs_dilate + 1
    outputs = max(0, (dilated + pad_low * 2 - span) // stride + 1) if stride else 0
    total = 0
    for position in range(outputs):
        first = position * stride - pad_low
        if lhs_dilate == 1 and rhs_dilate == 1:
            total += max(0, min(window, dilated - first) - max(0, -first))
        else:
            total += sum(
                1
                for tap in range(window)
                if 0 <= first + tap * rhs_dilate < dilated and (first + tap * rhs_dilate) % lhs_dilate == 0
            )
    return total


def convolution_flops(computation: Computation, instruction: Instruction) -> int:
    """2 x the output's batch and feature elements x the contracted input features (the kernel's
    `i` dimension) x the window taps inside the input, per spatial dimension."""
    labels = DIM_LABELS.search(instruction.attributes)
    if not labels or len(instruction.operands) < 2 or not instruction.arrays:
        return 0
    lhs_labels, rhs_labels, out_labels = labels.groups()
    lhs = _operand_dims(computation, instruction.operands[0])
    rhs = _operand_dims(computation, instruction.operands[1])
    out = instruction.arrays[0][1]
    if len(lhs) != len(lhs_labels) or len(rhs) != len(rhs_labels) or len(out) != len(out_labels):
        return 0
    window = _window(instruction.attributes)
    spatial = sorted(label for label in lhs_labels if label.isdigit())
    taps = 1
    for d, label in enumerate(spatial):
        pad_low = int(window["pad"][d].split("_")[0]) if "pad" in window else 0

        def field(name: str, d: int = d) -> int:
            return int(window[name][d]) if name in window else 1

        size = rhs[rhs_labels.index(label)]
        taps *= inside_taps(
            lhs[lhs_labels.index(label)], size, pad_low, field("stride"), field("lhs_dilate"), field("rhs_dilate")
        )
    batch_and_features = out[out_labels.index("b")] * out[out_labels.index("f")]
    return 2 * batch_and_features * taps * rhs[rhs_labels.index("i")]


SPLASH_MATMULS = {"fwd": (1, 1), "dkv": (2, 2), "dq": (2, 1)}  # (QK-sized, PV-sized) matmuls per kernel


def _constrained_arrays(instruction: Instruction) -> list[list[int]]:
    """The dimensions of each operand a custom call lists in its layout constraints."""
    start = instruction.attributes.find("operand_layout_constraints={")
    if start < 0:
        return []
    listed = instruction.attributes[start : balanced(instruction.attributes, instruction.attributes.find("{", start))]
    return [parse_dims(dims) for _, dims, _ in ARRAY.findall(listed)]


def grouped_matmul_flops(instruction: Instruction) -> int:
    """megablox: gmm multiplies rows [M, K] by their experts' [E, K, N] into [M, N]; tgmm, the weight
    gradient, multiplies [M, K] by [M, N] into [E, K, N]. Either way 2 x M x K x N."""
    arrays = [dims for dims in _constrained_arrays(instruction) if len(dims) >= 2]
    out = instruction.arrays[0][1] if instruction.arrays else []
    if instruction.name.startswith("gmm") and len(out) == 2 and arrays and len(arrays[0]) == 2:
        return 2 * out[0] * out[1] * arrays[0][1]
    two = [dims for dims in arrays if len(dims) == 2]
    if instruction.name.startswith("tgmm") and len(out) == 3 and len(two) >= 2 and two[0][0] == two[1][0]:
        return 2 * two[0][0] * out[1] * out[2]
    return 0


def splash_attention_flops(instruction: Instruction) -> int:
    """A splash attention kernel's matmuls, from the query, key and value it is given (the first
    three 4-D operands of its layout constraints: batch, heads, length, head dim), halved as causal."""
    kernel = next((k for k in SPLASH_MATMULS if f"_{k}_" in instruction.name + "_"), None)
    arrays = _constrained_arrays(instruction)
    four = [dims for dims in arrays if len(dims) == 4]
    if kernel is None or len(four) < 3:
        return 0
    query, key, value = four[:3]
    scores = 2 * query[0] * query[1] * query[2] * key[2]
    qk_sized, pv_sized = SPLASH_MATMULS[kernel]
    return (qk_sized * scores * query[3] + pv_sized * scores * value[3]) // 2


def attention_flops(instruction: Instruction) -> int:
    """cuDNN flash attention: its matmuls from the query, key and value shapes and the dot dimension
    numbers. Each matmul is score-sized (batch x heads x query length x key length) times a head
    dim: the forward pass contracts the query-key head dim once (QK^T) and produces the value head
    dim once (PV); the backward pass recomputes QK^T and forms dQ and dK (query-key head dim), dV
    and dP (value head dim). All halved under a causal mask."""
    config = backend_config(instruction).get("cudnn_fmha_backend_config", {})
    constraints = re.search(r"operand_layout_constraints=\{(.*?)\}, api_version", instruction.attributes)
    # The backward's config names no QK^T; its dP = dO V^T is laid out as QK^T over the same
    # operand layout (jax/_src/cudnn/fused_attention_stablehlo.py), so its numbers read Q and K.
    numbers = config.get("bmm1_dot_dimension_numbers") or config.get("bmm2_grad_gemm2_dot_dimension_numbers", {})
    arrays = [parse_dims(dims) for _, dims, _ in ARRAY.findall(constraints.group(1))] if constraints else []
    if len(arrays) < 3 or not numbers:
        return 0
    query, key, value = arrays[:3]  # forward and backward both take Q, K, V first
    batch = [int(d) for d in numbers.get("lhs_batch_dimensions", [])]
    contracting = [int(d) for d in numbers.get("lhs_contracting_dimensions", [])]
    key_batch = [int(d) for d in numbers.get("rhs_batch_dimensions", [])]
    key_contracting = [int(d) for d in numbers.get("rhs_contracting_dimensions", [])]
    query_length = math.prod(n for i, n in enumerate(query) if i not in batch + contracting)
    key_length = math.prod(n for i, n in enumerate(key) if i not in key_batch + key_contracting)
    scores = 2 * math.prod(query[i] for i in batch) * query_length * key_length
    qk = scores * math.prod(query[i] for i in contracting)
    pv = scores * math.prod(value[i] for i in key_contracting)  # V is laid out as K
    if config.get("mask_type") == "CAUSAL":
        qk, pv = qk // 2, pv // 2
    backward = "Backward" in instruction.attributes.split("custom_call_target=", 1)[-1][:40]
    return 3 * qk + 2 * pv if backward else qk + pv


def own_flops(computation: Computation, instruction: Instruction) -> tuple[int, str]:
    """(FLOPs, kind) of one instruction itself, not of what it calls."""
    if instruction.op == "dot":
        dims = CONTRACTING.search(instruction.attributes)
        return gemm_flops(computation, instruction, parse_dims(dims.group(1)) if dims else None), "gemm"
    if instruction.op == "convolution":
        return convolution_flops(computation, instruction), "gemm"
    if instruction.op == "custom-call":
        target = re.search(r'custom_call_target="([^"]+)"', instruction.attributes)
        name = target.group(1) if target else ""
        if name == "tpu_custom_call" and instruction.name.startswith("splash_mha_"):
            return splash_attention_flops(instruction), "attention"
        if name == "tpu_custom_call" and instruction.name.split(".")[0] in ("gmm", "tgmm"):
            return grouped_matmul_flops(instruction), "gemm"
        if name.startswith("__cudnn$fmha"):
            return attention_flops(instruction), "attention"
        if name.startswith("__cublas"):
            numbers = backend_config(instruction).get("gemm_backend_config", {}).get("dot_dimension_numbers", {})
            dims = [int(d) for d in numbers.get("lhs_contracting_dimensions", [])] if numbers else None
            return gemm_flops(computation, instruction, dims), "gemm"
    return 0, ""


def labels(op_name: str) -> tuple[bool, bool]:
    """(JAX checkpoint recompute, MoE dispatch the source did not spend)."""
    return REMAT_LABEL in op_name, any(label in op_name for label in UNSPENT_LABELS)


@dataclass
class Flops:
    total: int = 0
    gemm: int = 0
    attention: int = 0
    rematted: int = 0  # labelled recompute (JAX's checkpoint)
    unspent: int = 0  # dense MoE dispatch / combine
    # Neither label: what compares with the model's own FLOPs, kind by kind
    unlabelled_gemm: int = 0
    unlabelled_attention: int = 0

    def add(self, flops: int, kind: str, op_name: str, times: int = 1) -> None:
        flops *= times
        self.total += flops
        setattr(self, kind, getattr(self, kind) + flops)
        rematted, unspent = labels(op_name)
        self.rematted += flops if rematted else 0
        self.unspent += flops if unspent else 0
        if not rematted and not unspent:
            setattr(self, f"unlabelled_{kind}", getattr(self, f"unlabelled_{kind}") + flops)


def count_flops(computations: dict[str, Computation]) -> tuple[Flops, list[str]]:
    """Per step, every computation counted as many times as it runs."""
    runs, unknown = executions(computations)
    flops = Flops()
    for computation in computations.values():
        times = runs.get(computation.name, 0)
        for instruction in computation.instructions if times else ():
            value, kind = own_flops(computation, instruction)
            if value:
                flops.add(value, kind, instruction.op_name, times)
    return flops, unknown


@dataclass(frozen=True)
class FusedFlops:
    total: int = 0
    unspent: int = 0
    attention: int = 0

    def __add__(self, other: FusedFlops) -> FusedFlops:
        return FusedFlops(self.total + other.total, self.unspent + other.unspent, self.attention + other.attention)


def flops_of(computation: Computation, instruction: Instruction) -> FusedFlops:
    value, kind = own_flops(computation, instruction)
    unspent = value if labels(instruction.op_name)[1] else 0
    return FusedFlops(value, unspent, value if kind == "attention" else 0)


def fused_flops(computations: dict[str, Computation], name: str, memo: dict[str, FusedFlops]) -> FusedFlops:
    """The FLOPs of a fused computation and what it calls in turn, per run."""
    if name in memo:
        return memo[name]
    memo[name] = FusedFlops()
    found = FusedFlops()
    computation = computations.get(name)
    for instruction in computation.instructions if computation else ():
        found += flops_of(computation, instruction)
        for how, callee in called(instruction):
            if how == "calls":
                found += fused_flops(computations, callee, memo)
    memo[name] = found
    return found
