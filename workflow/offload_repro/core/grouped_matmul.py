"""A dropless grouped matmul as XLA loops over token tiles: what a row with `ragged_dot: tiled`
computes in place of `jax.lax.ragged_dot`.

MaxText's sorted, dropless MoE dispatch (`sparse_matmul: true, megablox: false`) multiplies each
expert's tokens by its weights with `jax.lax.ragged_dot`. This XLA lowers that on CUDA to one dense
dot over every expert (2,851 GiB a device for DeepSeek's offload row) unless it may hand it to a
cuDNN newer than the GPU plugin was built against (docs/moe-dispatch.md). `tiled_gmm` computes the
same product the way a grouped-GEMM kernel does (Transformer Engine's, cuDNN's, CUTLASS's): one
tile x (in -> out) GEMM per (tile, expert) visit over the tokens sorted by expert, so the program
holds only the work and buffers the sorted tokens need. Its gradient is written out: autodiff of the
loop would carry a zeroed copy of every expert's weights per visit.

`install_from(os.environ)` puts it in place of `jax.lax.ragged_dot` in a row's process (compile or
run) before MaxText builds its model, where the row says so; MaxText looks `jax.lax.ragged_dot` up at
each call.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from offload_repro.core.maxtext_args import RAGGED_DOT_VARIABLE

TILE = 128  # rows per visit: the row tile of the grouped GEMM kernels tiled_gmm stands for
# The name scope of its loops: the step-time model charges a loop so named as the one grouped GEMM
# it stands for (produce/predicted/hlo_schedule.py), not as the loop moves memory.
SCOPE = "tiled_gmm"
CHOICES = ("xla", "tiled")  # a row's `ragged_dot`: XLA's own lowering, or tiled_gmm


def _visits(group_sizes: Any, rows: int, tile: int) -> tuple[int, Any, Any, Any, Any, Any]:
    """The (tile, expert) pairs a grouped GEMM visits over `rows` sorted tokens: each expert's
    tokens cover whole or part tiles, so at most tiles + experts - 1 visits (a static bound, which
    XLA gives the loop as its trip count); visits past the last are empty."""
    import jax.numpy as jnp

    experts = group_sizes.shape[0]
    ends = jnp.cumsum(group_sizes)
    starts = ends - group_sizes
    first, last = starts // tile, jnp.maximum(ends - 1, 0) // tile
    count = jnp.where(group_sizes > 0, last - first + 1, 0)
    visit_end = jnp.cumsum(count)
    visit = jnp.arange(-(-rows // tile) + experts - 1)
    expert = jnp.minimum(jnp.searchsorted(visit_end, visit, side="right"), experts - 1)
    live = visit < visit_end[-1]
    tiles = jnp.where(live, first[expert] + visit - (visit_end - count)[expert], 0)
    return visit.shape[0], tiles, expert, starts, ends, live


def _tile_rows(lhs: Any, plan: tuple[Any, ...], i: Any, tile: int) -> tuple[Any, Any]:
    """Visit i's tile of `lhs` with the rows of other experts zeroed, and its row mask."""
    import jax
    import jax.numpy as jnp

    tiles, expert, starts, ends, live = plan
    rows = tiles[i] * tile + jnp.arange(tile)
    mask = (rows >= starts[expert[i]]) & (rows < ends[expert[i]]) & live[i]
    block = jax.lax.dynamic_slice_in_dim(lhs, tiles[i] * tile, tile, 0)
    return jnp.where(mask[:, None], block, jnp.zeros_like(block)), mask


def _padded(array: Any, tile: int) -> Any:
    import jax.numpy as jnp

    return jnp.pad(array, ((0, -array.shape[0] % tile), (0, 0)))


def _grouped(lhs: Any, rhs: Any, group_sizes: Any, tile: int, transpose_rhs: bool) -> Any:
    """out[r] = lhs[r] @ rhs[expert of r] (rhs[e].T where `transpose_rhs`), one tile per visit."""
    import jax
    import jax.numpy as jnp

    rows = lhs.shape[0]
    lhs = _padded(lhs, tile)
    visits, *plan = _visits(group_sizes, rows, tile)
    tiles, expert = plan[0], plan[1]
    contract = (((1,), (1,)), ((), ())) if transpose_rhs else (((1,), (0,)), ((), ()))

    def visit(i: Any, out: Any) -> Any:
        block, mask = _tile_rows(lhs, tuple(plan), i, tile)
        weights = jax.lax.dynamic_index_in_dim(rhs, expert[i], 0, keepdims=False)
        product = jax.lax.dot_general(block, weights, contract, preferred_element_type=jnp.float32)
        kept = jax.lax.dynamic_slice_in_dim(out, tiles[i] * tile, tile, 0)
        # rows of the tile's other experts keep what their own visit wrote
        merged = jnp.where(mask[:, None], product.astype(out.dtype), kept)
        return jax.lax.dynamic_update_slice_in_dim(out, merged, tiles[i] * tile, 0)

    width = rhs.shape[1] if transpose_rhs else rhs.shape[2]
    with jax.named_scope(SCOPE):
        out = jax.lax.fori_loop(0, visits, visit, jnp.zeros((lhs.shape[0], width), lhs.dtype))
    return out[:rows]


def _weight_gradient(lhs: Any, grad: Any, group_sizes: Any, shape: tuple[int, ...], dtype: Any, tile: int) -> Any:
    """drhs[e] = sum over expert e's rows of lhs[r]^T grad[r]: each visit's tile product added into its expert."""
    import jax
    import jax.numpy as jnp

    visits, *plan = _visits(group_sizes, lhs.shape[0], tile)
    tiles, expert = plan[0], plan[1]
    lhs, grad = _padded(lhs, tile), _padded(grad, tile)

    def visit(i: Any, drhs: Any) -> Any:
        block, _ = _tile_rows(lhs, tuple(plan), i, tile)
        g = jax.lax.dynamic_slice_in_dim(grad, tiles[i] * tile, tile, 0)
        part = jax.lax.dot_general(block, g, (((0,), (0,)), ((), ())), preferred_element_type=jnp.float32)
        own = jax.lax.dynamic_index_in_dim(drhs, expert[i], 0, keepdims=False)
        return jax.lax.dynamic_update_index_in_dim(drhs, (own + part).astype(dtype), expert[i], 0)

    # Kept in the weights' dtype, as the gradient a grouped GEMM writes: a float32 copy of a layer's
    # expert weights would be a buffer the source's program never held. A kernel sums an expert's
    # tiles in float32 registers; here each visit's sum is rounded to `dtype`.
    with jax.named_scope(SCOPE):
        return jax.lax.fori_loop(0, visits, visit, jnp.zeros(shape, dtype))


@functools.cache
def _tiled_gmm() -> Any:
    import jax

    @functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
    def tiled_gmm(lhs: Any, rhs: Any, group_sizes: Any, tile: int) -> Any:
        return _grouped(lhs, rhs, group_sizes, tile, transpose_rhs=False)

    def forward(lhs: Any, rhs: Any, group_sizes: Any, tile: int) -> tuple[Any, Any]:
        return _grouped(lhs, rhs, group_sizes, tile, transpose_rhs=False), (lhs, rhs, group_sizes)

    def backward(tile: int, saved: Any, grad: Any) -> tuple[Any, Any, None]:
        lhs, rhs, group_sizes = saved
        grad = grad.astype(lhs.dtype)
        dlhs = _grouped(grad, rhs, group_sizes, tile, transpose_rhs=True)
        drhs = _weight_gradient(lhs, grad, group_sizes, rhs.shape, rhs.dtype, tile)
        return dlhs, drhs, None

    tiled_gmm.defvjp(forward, backward)
    return tiled_gmm


def tiled_gmm(lhs: Any, rhs: Any, group_sizes: Any, tile: int = TILE) -> Any:
    """lhs [rows, in] sorted by expert, rhs [experts, in, out], group_sizes [experts] -> [rows, out]:
    row r times the weights of the expert whose group holds it; rows past the groups give zeros."""
    return _tiled_gmm()(lhs, rhs, group_sizes, tile)


def ragged_dot(
    lhs: Any, rhs: Any, group_sizes: Any, precision: Any = None, preferred_element_type: Any = None, **unused: Any
) -> Any:
    """`jax.lax.ragged_dot`'s signature, as MaxText's sparse dispatch calls it, computed by tiled_gmm."""
    import jax.numpy as jnp

    if unused.get("group_offset") is not None:
        raise NotImplementedError("tiled_gmm computes every group: a group_offset would need expert parallelism")
    out = tiled_gmm(lhs.astype(rhs.dtype), rhs, group_sizes.astype(jnp.int32))
    return out.astype(preferred_element_type or out.dtype)


def install(choice: str) -> None:
    """Make `choice` (a row's `ragged_dot`) what `jax.lax.ragged_dot` computes in this process."""
    if choice not in CHOICES:
        raise ValueError(f"ragged_dot: {choice!r} is not one of {', '.join(CHOICES)}")
    if choice == "tiled":
        import jax

        jax.lax.ragged_dot = ragged_dot


def install_from(environment: Mapping[str, str]) -> None:
    """The row's choice, as its process was started with it (core/maxtext_args.py, environment)."""
    install(environment.get(RAGGED_DOT_VARIABLE, "xla"))
