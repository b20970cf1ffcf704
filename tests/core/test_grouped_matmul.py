"""tiled_gmm against jax.lax.ragged_dot: the same products and gradients, on this machine's CPU."""

from __future__ import annotations

import textwrap

import pytest

from conftest import REPO, run_python

jax = pytest.importorskip("jax")
jnp = jax.numpy

from offload_repro.core import grouped_matmul  # noqa: E402

# Groups that start mid-tile, one empty group, one spanning several tiles, and 5 rows past the last
# group (MaxText pads the sorted tokens to its tiling): 8-row tiles over 45 rows.
GROUPS = [3, 0, 17, 9, 11]
ROWS, IN, OUT, TILE = 45, 16, 24, 8


def operands(dtype):
    keys = jax.random.split(jax.random.key(0), 3)
    lhs = jax.random.normal(keys[0], (ROWS, IN), dtype)
    rhs = jax.random.normal(keys[1], (len(GROUPS), IN, OUT), dtype)
    cotangent = jax.random.normal(keys[2], (ROWS, OUT), dtype)
    return lhs, rhs, jnp.array(GROUPS, jnp.int32), cotangent


def test_tiled_gmm_and_its_written_out_gradient_are_ragged_dots_and_zero_past_the_groups():
    lhs, rhs, groups, cotangent = operands(jnp.float32)

    def pulled(matmul):
        out, vjp = jax.vjp(lambda x, w: matmul(x, w, groups), lhs, rhs)
        return out, *vjp(cotangent)

    out, *gradients = pulled(lambda x, w, g: grouped_matmul.tiled_gmm(x, w, g, tile=TILE))
    reference, *expected = pulled(jax.lax.ragged_dot)
    assert jnp.allclose(out, reference, atol=1e-5) and not jnp.any(out[sum(GROUPS) :])
    for mine, theirs in zip(gradients, expected, strict=True):
        assert jnp.allclose(mine, theirs, atol=1e-4)


def test_in_bfloat16_it_stays_within_bfloat16s_rounding_of_ragged_dot():
    """An expert's weight gradient is rounded to bfloat16 once per tile it spans (a kernel sums in
    float32 registers): within a few bfloat16 ulps of values of order sqrt(rows)."""
    lhs, rhs, groups, cotangent = operands(jnp.bfloat16)
    _, vjp = jax.vjp(lambda w: grouped_matmul.tiled_gmm(lhs, w, groups, tile=TILE), rhs)
    _, reference = jax.vjp(lambda w: jax.lax.ragged_dot(lhs, w, groups, preferred_element_type=jnp.float32), rhs)
    (mine,), (theirs,) = vjp(cotangent), reference(cotangent.astype(jnp.float32))
    assert jnp.max(jnp.abs(mine.astype(jnp.float32) - theirs)) < 0.1


def test_its_loop_visits_each_tile_of_each_expert_once_at_most_tiles_plus_experts_minus_one_times():
    visits, tiles, expert, _, _, live = grouped_matmul._visits(jnp.array(GROUPS), ROWS, TILE)
    assert visits == -(-ROWS // TILE) + len(GROUPS) - 1
    pairs = [(int(t), int(e)) for t, e, alive in zip(tiles, expert, live, strict=True) if alive]
    # expert 0: rows 0-2 (tile 0); 2: rows 3-19 (tiles 0-2); 3: rows 20-28 (tiles 2-3); 4: rows 29-39 (3-4)
    assert pairs == [(0, 0), (0, 2), (1, 2), (2, 2), (2, 3), (3, 3), (3, 4), (4, 4)]


def test_installed_it_is_what_jax_lax_ragged_dot_computes_and_a_wrong_choice_is_named(monkeypatch):
    monkeypatch.setattr(jax.lax, "ragged_dot", jax.lax.ragged_dot)  # undone after the test
    grouped_matmul.install("xla")
    assert jax.lax.ragged_dot is not grouped_matmul.ragged_dot
    grouped_matmul.install("tiled")
    assert jax.lax.ragged_dot is grouped_matmul.ragged_dot
    lhs, rhs, groups, _ = operands(jnp.float32)
    assert jax.lax.ragged_dot(lhs, rhs, groups, preferred_element_type=jnp.bfloat16).dtype == jnp.bfloat16
    with pytest.raises(ValueError, match="ragged_dot: 'cudnn' is not one of xla, tiled"):
        grouped_matmul.install("cudnn")


GB200_PROGRAM = textwrap.dedent(
    """
    import os, sys
    os.environ["XLA_FLAGS"] = sys.argv[3]  # before jax reads it
    import jax, jax.numpy as jnp
    from jax.experimental.topologies import get_topology_desc
    from jax.sharding import SingleDeviceSharding
    from offload_repro.core.grouped_matmul import tiled_gmm

    gpu = get_topology_desc(platform="cuda", topology="1x1x1", target_config=open(sys.argv[1]).read()).devices[0]
    at = SingleDeviceSharding(gpu)
    x = jax.ShapeDtypeStruct((4096, 1024), jnp.bfloat16, sharding=at)
    w = jax.ShapeDtypeStruct((8, 1024, 2048), jnp.bfloat16, sharding=at)
    groups = jax.ShapeDtypeStruct((8,), jnp.int32, sharding=at)

    def loss(x, w, groups):
        return jnp.square(tiled_gmm(x, w, groups).astype(jnp.float32)).sum()  # the gradient needs the product

    compiled = jax.jit(jax.grad(loss, argnums=(0, 1))).trace(x, w, groups).lower(lowering_platforms=("cuda",)).compile()
    open(sys.argv[2], "w").write(compiled.as_text())
    """
)


def test_compiled_for_gb200_it_stays_grouped_and_the_step_model_charges_each_loop_as_one_grouped_gemm(tmp_path):
    """The forward, input-gradient and weight-gradient loops of 8 experts over 4,096 sorted tokens
    (1024 -> 2048, bf16), compiled for GB200 with no GPU: each loop visits at most 32 + 8 - 1 tiles;
    its counted FLOPs lie between the useful work (2 x tokens x 1024 x 2048 per matmul) and that work
    with 7 partial tiles more; and it is charged the HBM bytes of its operands and result once, not
    an expert's weights per visit."""
    from offload_repro.produce.compiled import hlo_text
    from offload_repro.produce.compiled.program_cache import COMPILE_ONLY_FLAGS
    from offload_repro.produce.predicted import hlo_flops, hlo_schedule, step_traffic

    hlo, description = tmp_path / "gmm.hlo", REPO / "envs/gpu-targets/NVIDIA_GB200.txtpb"
    done = run_python(GB200_PROGRAM, str(description), str(hlo), " ".join(COMPILE_ONLY_FLAGS))
    assert done.returncode == 0, done.stderr[-3000:]
    computations = hlo_text.parse(hlo.read_text())
    loops = [i for c in computations.values() for i in c.instructions if i.op == "while" and "tiled_gmm" in i.op_name]
    assert len(loops) == 3 and {hlo_text.trip_count(loop) for loop in loops} == {4096 // 128 + 8 - 1}
    useful = 2 * 4096 * 1024 * 2048
    flops, unknown = hlo_flops.count_flops(computations)
    assert unknown == [] and 3 * useful <= flops.gemm <= 3 * useful * (4096 + 7 * 128) / 4096
    # no dense stand-in: no instruction holds every token once per expert
    shapes = [i.shape for c in computations.values() for i in c.instructions]
    assert not any("[8,4096," in shape or "[4096,8," in shape for shape in shapes)
    schedule = hlo_schedule.schedule(computations)
    charged = [e for events in schedule.values() for e in events if e.kind == "compute" and e.flops >= useful]
    assert len(charged) == 3 and sum(e.flops for e in charged) == flops.gemm
    tokens, weights, out = 4096 * 1024 * 2, 8 * 1024 * 2048 * 2, 4096 * 2048 * 2
    for event in charged:  # the loop's state once: its operands and result, and a few index vectors
        assert min(tokens + weights + out, tokens + 2 * out + weights) <= event.bytes < tokens + weights + 2 * out
    per_visit_weights = hlo_text.trip_count(loops[0]) * 1024 * 2048 * 2
    assert step_traffic.transfers(computations, schedule)["memory_bytes"] < 3 * per_visit_weights
