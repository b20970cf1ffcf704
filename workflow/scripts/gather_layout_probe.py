"""Does XLA copy a whole stack of layer weights to all-gather each layer's slice?

`JAX_PLATFORMS=cpu .venv/bin/python workflow/scripts/gather_layout_probe.py` compiles, for the GB200
compile-only topology (8 devices), the gradient of a 4-layer scan over a stack of 16 experts'
weights `f32[layers, experts, embed, mlp]`, each layer's slice all-gathered before use, as FSDP
does. It prints, for the stack sharded on its embedding dimension (as MaxText's FSDP shards expert
weights) and on its expert dimension, every whole-stack transpose in the optimized program: the
program lays the gathered dimension out most major, and JAX fixes the parameters' layout, so a
gather along a dimension that is not most major costs a copy of the stack. A few seconds.
"""

import os
import re
from pathlib import Path

os.environ["XLA_FLAGS"] = "--xla_gpu_shard_autotuning=false --xla_gpu_autotune_level=0"  # compile-only
import jax
import jax.numpy as jnp
from jax.experimental.topologies import get_topology_desc
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

DESCRIPTION = Path(__file__).resolve().parents[2] / "envs/gpu-targets/NVIDIA_GB200.txtpb"
LAYERS, EXPERTS, EMBED, MLP, TOKENS = 4, 16, 256, 512, 1024

topology = get_topology_desc(platform="cuda", topology="1x2x4", target_config=DESCRIPTION.read_text())
mesh = Mesh(topology.devices, ("fsdp",))


def loss(stack, x):
    def layer(h, weights):  # one layer's experts, gathered whole as FSDP does before using them
        weights = jax.lax.with_sharding_constraint(weights.astype(jnp.bfloat16), NamedSharding(mesh, P()))
        return h + jnp.einsum("td,edf->tf", h, weights)[:, :EMBED], None

    return (jax.lax.scan(layer, x, stack)[0].astype(jnp.float32) ** 2).mean()


for sharded_on, spec in (("embedding", P(None, None, "fsdp", None)), ("experts", P(None, "fsdp", None, None))):
    stack = jax.ShapeDtypeStruct((LAYERS, EXPERTS, EMBED, MLP), jnp.float32, sharding=NamedSharding(mesh, spec))
    x = jax.ShapeDtypeStruct((TOKENS, EMBED), jnp.bfloat16, sharding=NamedSharding(mesh, P("fsdp", None)))
    hlo = jax.jit(jax.grad(loss)).trace(stack, x).lower(lowering_platforms=("cuda",)).compile().as_text()
    copies = re.findall(r"^%wrapped_transpose\S* \(\S+ (f32\[[\d,]+\])\) -> (f32\[[\d,]+\])", hlo, re.M)
    said = ", ".join(f"{a} -> {b}" for a, b in copies) or "none"
    print(f"stack sharded on {sharded_on}: whole-stack transposes: {said}")
