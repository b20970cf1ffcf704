"""Which MoE expert matmul stays grouped when XLA compiles it for GB200 without a GPU?

`PYTHONPATH=workflow .venv/bin/python workflow/scripts/moe_dispatch_probe.py [CANDIDATE ...] [--cudnn-lib DIR]`
compiles one small grouped matmul (8 experts, 4096 sorted tokens, 1024 -> 2048, bf16), forward and
forward + gradient, for the GB200 compile-only topology (XLA's description in
envs/gpu-targets/NVIDIA_GB200.txtpb), once per candidate, each in a process of its own since
XLA reads XLA_FLAGS once. Per candidate it prints whether the program kept the matmul grouped
(a kernel's custom call, or an XLA loop over token tiles) or expanded it into one dense dot over
every expert, the HLO evidence (custom-call targets, loops and their trip counts, the shape of
the dot the ragged dot became), its temporary bytes, or the error XLA, JAX or the kernel library
gave. About 30 s for all candidates on 2 cores. `--cudnn-lib DIR`: a directory holding a
libcudnn.so.9 (e.g. from the nvidia-cudnn-cu12 wheel) for the cuDNN candidates to load; without
one they meet XLA's own check for a loaded cuDNN.

`... moe_dispatch_probe.py --full-row deepseek-offload-plain` compiles that DeepSeek row at full
scale for GB200 with MaxText's sorted, dropless dispatch (sparse_matmul, capacity factor -1) and
its grouped matmul `jax.lax.ragged_dot` replaced, in the compile's process only, by `tiled_gmm`
below (XLA's sort in place of CUB's, as the `dropless-sorted` alternative compiles), and prints
its device memory, counted FLOPs and whether the program still holds dispatch matmuls. About a
minute and 1 GiB on 2 cores (run one at a time). The result is written under results/moe-dispatch/.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DESCRIPTION = REPO / "envs/gpu-targets/NVIDIA_GB200.txtpb"
OUT = REPO / "results" / "moe-dispatch"
# The small program: DeepSeek's per-expert shapes scaled down, big enough that an expansion shows.
EXPERTS, TOKENS, EMBED, MLP = 8, 4096, 1024, 2048
TILE = 128  # rows per visit of tiled_gmm: the row tile of the grouped GEMM kernels it stands for
# The compile-only flags every compile here takes (program_cache.COMPILE_ONLY_FLAGS).
BASE_FLAGS = "--xla_gpu_shard_autotuning=false --xla_gpu_autotune_level=0"
CUDNN_FUSION = "--xla_gpu_experimental_use_ragged_dot_fusion=true"
# XLA builds a cuDNN graph without a GPU only in this mode, and only with a cuDNN it can load.
CUDNN_DEVICELESS = "--xla_gpu_cudnn_deviceless_compilation_mode=CUDNN_DEVICELESS_COMPILATION_ALWAYS"

# name: (what it is, extra XLA flags, cuDNN version the target declares or None for the file's)
CANDIDATES: dict[str, tuple[str, str, str | None]] = {
    "ragged-dot": ("jax.lax.ragged_dot, XLA's defaults", "", None),
    "ragged-dot-cudnn": ("jax.lax.ragged_dot, XLA's cuDNN ragged-dot fusion", CUDNN_FUSION, None),
    "ragged-dot-cudnn-9.22": (
        "jax.lax.ragged_dot, cuDNN fusion, the target declaring cuDNN 9.22, deviceless cuDNN",
        f"{CUDNN_FUSION} {CUDNN_DEVICELESS}",
        "9.22.0",
    ),
    "ragged-dot-grouped-gemm": (
        "jax.lax.ragged_dot, XLA's cuBLASLt grouped GEMM",
        "--xla_gpu_experimental_use_ragged_dot_grouped_gemm=true",
        None,
    ),
    "tokamax-mosaic-gpu": ("tokamax.ragged_dot, Pallas Mosaic GPU kernel (MaxText use_tokamax_gmm)", "", None),
    "tokamax-triton": ("tokamax.ragged_dot, Pallas Triton kernel", "", None),
    "megablox-interpret": ("MaxText megablox gmm off a TPU (interpret mode)", "", None),
    "tiled-gmm": (f"tiled_gmm: an XLA loop over {TILE}-row tiles of each expert's sorted tokens", "", None),
}


# --- the grouped matmul as XLA loops ----------------------------------------------------------


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


def _tile_rows(lhs: Any, tiles: Any, expert: Any, starts: Any, ends: Any, live: Any, i: Any, tile: int) -> Any:
    """Visit i's tile of `lhs`, rows of other experts zeroed, and its row mask."""
    import jax
    import jax.numpy as jnp

    rows = tiles[i] * tile + jnp.arange(tile)
    mask = (rows >= starts[expert[i]]) & (rows < ends[expert[i]]) & live[i]
    block = jax.lax.dynamic_slice_in_dim(lhs, tiles[i] * tile, tile, 0)
    return jnp.where(mask[:, None], block, jnp.zeros_like(block)), mask


def _grouped(lhs: Any, rhs: Any, group_sizes: Any, tile: int, transpose_rhs: bool) -> Any:
    """out[r] = lhs[r] @ rhs[expert of r] (rhs[e].T where `transpose_rhs`), one tile per visit."""
    import jax
    import jax.numpy as jnp

    rows = lhs.shape[0]
    padded = -(-rows // tile) * tile
    lhs = jnp.pad(lhs, ((0, padded - rows), (0, 0)))
    visits, tiles, expert, starts, ends, live = _visits(group_sizes, rows, tile)
    contract = (((1,), (1,)), ((), ())) if transpose_rhs else (((1,), (0,)), ((), ()))

    def visit(i: Any, out: Any) -> Any:
        block, mask = _tile_rows(lhs, tiles, expert, starts, ends, live, i, tile)
        weights = jax.lax.dynamic_index_in_dim(rhs, expert[i], 0, keepdims=False)
        product = jax.lax.dot_general(block, weights, contract, preferred_element_type=jnp.float32)
        kept = jax.lax.dynamic_slice_in_dim(out, tiles[i] * tile, tile, 0)
        # rows of the tile's other experts keep what their own visit wrote
        merged = jnp.where(mask[:, None], product.astype(out.dtype), kept)
        return jax.lax.dynamic_update_slice_in_dim(out, merged, tiles[i] * tile, 0)

    width = rhs.shape[1] if transpose_rhs else rhs.shape[2]
    out = jax.lax.fori_loop(0, visits, visit, jnp.zeros((padded, width), lhs.dtype))
    return out[:rows]


@functools.cache
def _tiled_gmm() -> Any:
    import jax
    import jax.numpy as jnp

    @functools.partial(jax.custom_vjp, nondiff_argnums=(3,))
    def tiled_gmm(lhs: Any, rhs: Any, group_sizes: Any, tile: int = TILE) -> Any:
        return _grouped(lhs, rhs, group_sizes, tile, transpose_rhs=False)

    def forward(lhs: Any, rhs: Any, group_sizes: Any, tile: int) -> tuple[Any, Any]:
        return _grouped(lhs, rhs, group_sizes, tile, transpose_rhs=False), (lhs, rhs, group_sizes)

    def backward(tile: int, saved: Any, grad: Any) -> tuple[Any, Any, None]:
        # Written out rather than left to autodiff, which would carry a zero-filled copy of every
        # expert's weights per visit: dlhs is the same loop against each expert's weights
        # transposed; drhs adds each visit's tile product into its expert's slice.
        lhs, rhs, group_sizes = saved
        dlhs = _grouped(grad.astype(lhs.dtype), rhs, group_sizes, tile, transpose_rhs=True)
        rows = lhs.shape[0]
        padded = -(-rows // tile) * tile
        lhs_p = jnp.pad(lhs, ((0, padded - rows), (0, 0)))
        grad_p = jnp.pad(grad.astype(lhs.dtype), ((0, padded - rows), (0, 0)))
        visits, tiles, expert, starts, ends, live = _visits(group_sizes, rows, tile)

        def visit(i: Any, drhs: Any) -> Any:
            block, _ = _tile_rows(lhs_p, tiles, expert, starts, ends, live, i, tile)
            g = jax.lax.dynamic_slice_in_dim(grad_p, tiles[i] * tile, tile, 0)
            part = jax.lax.dot_general(block, g, (((0,), (0,)), ((), ())), preferred_element_type=jnp.float32)
            own = jax.lax.dynamic_index_in_dim(drhs, expert[i], 0, keepdims=False)
            return jax.lax.dynamic_update_index_in_dim(drhs, (own + part).astype(drhs.dtype), expert[i], 0)

        drhs = jax.lax.fori_loop(0, visits, visit, jnp.zeros(rhs.shape, rhs.dtype))
        return dlhs, drhs, None

    tiled_gmm.defvjp(forward, backward)
    return tiled_gmm


def tiled_gmm(lhs: Any, rhs: Any, group_sizes: Any, tile: int = TILE) -> Any:
    """A dropless grouped matmul over tokens sorted by expert: for each (tile, expert) visit, one
    tile x (embed -> mlp) GEMM against that expert's weights, in an XLA while loop. What a
    grouped-GEMM kernel (Transformer Engine's, cuDNN's, CUTLASS's) computes, tile by tile."""
    return _tiled_gmm()(lhs, rhs, group_sizes, tile)


def ragged_dot_as_tiled_gmm(lhs: Any, rhs: Any, group_sizes: Any, **kwargs: Any) -> Any:
    """`jax.lax.ragged_dot`'s signature, as MaxText's sparse_matmul calls it, computed by tiled_gmm."""
    import jax.numpy as jnp

    out = tiled_gmm(lhs.astype(rhs.dtype), rhs, group_sizes.astype(jnp.int32))
    return out.astype(kwargs.get("preferred_element_type") or out.dtype)


# --- one candidate, in its own process -------------------------------------------------------


def _program(name: str) -> Any:
    import jax
    import jax.numpy as jnp

    if name.startswith("ragged-dot"):
        return lambda x, w, gs: jax.lax.ragged_dot(x, w, gs, preferred_element_type=jnp.bfloat16)
    if name.startswith("tokamax"):
        import tokamax

        implementation = "mosaic_gpu" if name == "tokamax-mosaic-gpu" else "triton"
        return lambda x, w, gs: tokamax.ragged_dot(
            x, w, group_sizes=gs, implementation=implementation, preferred_element_type=jnp.bfloat16
        )
    if name == "megablox-interpret":
        from maxtext.kernels.megablox import ops

        # MaxText's own tiles (base.yml wi_tile_*) and its choice off a TPU (moe.py megablox_interpret)
        return lambda x, w, gs: ops.gmm(
            x, w, gs, preferred_element_type=jnp.bfloat16, tiling=(512, 1024, 1024) * 3, interpret=True
        )
    return lambda x, w, gs: tiled_gmm(x, w, gs)


def evidence(hlo: str) -> dict[str, Any]:
    """What the optimized program holds: kernels' custom calls, loops, what became of the ragged dot."""
    fusion_kinds = set(re.findall(r'"fusion_backend_config":\{"kind":"([^"]+)"', hlo))
    return {
        "custom_calls": sorted(set(re.findall(r'custom_call_target="([^"]+)"', hlo))),
        "cudnn_fusions": sorted(kind for kind in fusion_kinds if "cudnn" in kind),
        "while_loops": len(re.findall(r" while\(", hlo)),
        "trip_counts": sorted({int(n) for n in re.findall(r'"known_trip_count":\{"n":"(\d+)"', hlo)}),
        "ragged_dots_left": len(re.findall(r" ragged-dot\(", hlo)),
        # the masked copies of every token, one per expert, that XLA's expansion multiplies
        "expanded_operands": sorted(set(re.findall(rf"\w+\[(?:{TOKENS},{EXPERTS}|{EXPERTS},{TOKENS}),\d+\]", hlo))),
    }


def grouped(found: dict[str, Any]) -> str:
    kernels = [call for call in found["custom_calls"] if call.startswith(("mosaic_gpu", "__gpu$xla.gpu.triton"))]
    if found["expanded_operands"]:
        return "no: one dense dot over every expert"
    if kernels or found["cudnn_fusions"]:
        return f"yes: kernel {', '.join(kernels + found['cudnn_fusions'])}"
    if found["while_loops"]:
        return "yes: XLA while loops"
    return "unclear"


def run_one(name: str) -> dict[str, Any]:
    """Compile candidate `name` (forward, and forward with the gradient) for one compile-only GB200."""
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import jax.numpy as jnp
    from jax.experimental.topologies import get_topology_desc
    from jax.sharding import SingleDeviceSharding

    text = DESCRIPTION.read_text(encoding="utf-8")
    if declared := CANDIDATES[name][2]:
        text = re.sub(r'dnn_version: "[\d.]+"', f'dnn_version: "{declared}"', text)
    device = get_topology_desc(platform="cuda", topology="1x1x1", target_config=text).devices[0]
    # tokamax picks its kernel by the default device: make it the compile-only GB200, not the CPU
    jax.config.update("jax_default_device", device)
    sharding = SingleDeviceSharding(device)
    shapes = (
        jax.ShapeDtypeStruct((TOKENS, EMBED), jnp.bfloat16, sharding=sharding),
        jax.ShapeDtypeStruct((EXPERTS, EMBED, MLP), jnp.bfloat16, sharding=sharding),
        jax.ShapeDtypeStruct((EXPERTS,), jnp.int32, sharding=sharding),
    )
    forward = _program(name)

    def loss(x: Any, w: Any, gs: Any) -> Any:
        return forward(x, w, gs).astype(jnp.float32).sum()

    record: dict[str, Any] = {}
    for part, fn in (("forward", forward), ("gradient", jax.grad(loss, argnums=(0, 1)))):
        try:
            compiled = jax.jit(fn).trace(*shapes).lower(lowering_platforms=("cuda",)).compile()
        except Exception as err:  # the failure is the finding
            message = re.sub(r"\s+", " ", str(err))
            record[part] = {"status": "failed", "error": f"{type(err).__name__}: {_cause(message)}"}
            continue
        found = evidence(compiled.as_text())
        temp = compiled.memory_analysis().temp_size_in_bytes
        record[part] = {"status": "compiled", "grouped": grouped(found), "temp_mib": round(temp / 2**20, 1), **found}
    return record


def _cause(message: str) -> str:
    """XLA's own sentence for a failure, not the HLO it quotes."""
    for pattern in (
        r"(Moe grouped matmul requires[^.]*\.\d+\.\d+)",
        r"(Deviceless cuDNN compilation requires[^;]*)",
        r"(Null stream executor is not supported[^.;]*)",
    ):
        if found := re.search(pattern, message):
            return found.group(1)
    return message[:400]


def probe(names: list[str], cudnn_lib: Path | None) -> int:
    print(f"grouped matmul: {EXPERTS} experts, {TOKENS} sorted tokens, {EMBED} -> {MLP}, bf16, for GB200")
    for name in names:
        env = {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": f"{BASE_FLAGS} {CANDIDATES[name][1]}".strip()}
        if cudnn_lib is not None:
            env["LD_LIBRARY_PATH"] = f"{cudnn_lib}:{env.get('LD_LIBRARY_PATH', '')}"
        done = subprocess.run(
            [sys.executable, __file__, "--one", name], env=env, capture_output=True, text=True, timeout=900
        )
        print(f"\n{name}: {CANDIDATES[name][0]}")
        if done.returncode != 0 or not done.stdout.strip():
            # XLA aborts the process on a failed CHECK: its line is the finding
            check = re.findall(r"(?:Check failed|not implemented for opcode)[^\n]*", done.stderr)
            print(f"  process died ({done.returncode}): {' / '.join(check) or done.stderr.strip()[-400:]}")
            continue
        for part, result in json.loads(done.stdout.strip().splitlines()[-1]).items():
            if result["status"] == "failed":
                print(f"  {part}: failed: {result['error']}")
                continue
            shown = {k: v for k, v in result.items() if k not in ("status", "grouped") and v not in ([], 0)}
            print(f"  {part}: grouped: {result['grouped']}; {json.dumps(shown)}")
    return 0


# --- the full-scale row ----------------------------------------------------------------------

# MaxText's sorted, dropless dispatch (moe.py sparse_matmul through jax.lax.ragged_dot), with XLA's
# sort in place of CUB's, which asks a GPU for its scratch size while compiling.
DROPLESS = {
    "maxtext": {"sparse_matmul": True, "megablox": False, "use_tokamax_gmm": False, "capacity_factor": -1.0},
    "row": {"unstated_xla_flags": {"replace": [], "with": ["--xla_gpu_enable_cub_radix_sort=false"]}},
}


def aot_with_tiled_gmm(argv: list[str]) -> int:
    """aot_compile's own entry, with jax.lax.ragged_dot computed by tiled_gmm in this process."""
    import jax

    from offload_repro.produce.compiled import aot_compile

    jax.lax.ragged_dot = ragged_dot_as_tiled_gmm  # MaxText looks it up at each call
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    return aot_compile.main(argv[0], argv[1], argv[2], int(argv[3]), argv[5:])


def full_row(row_id: str) -> int:
    from offload_repro.core.data import load_rows, load_target
    from offload_repro.core.process import run_subprocess
    from offload_repro.core.variants import apply
    from offload_repro.produce.compiled.compiled_row import compile_row

    row = next(row for row in load_rows([REPO / "experiments/rows/deepseek-v3-671b.yaml"]) if row.id == row_id)
    row = apply(row, DROPLESS, "deepseek-moe-dispatch.tiled-gmm")
    target = load_target("gb200-nvl72")

    def launcher(command: list[str], env: dict[str, str], cwd: Path, log: Path) -> tuple[int, float]:
        at = command.index("offload_repro.produce.compiled.aot_compile")
        return run_subprocess([command[0], __file__, "--aot", *command[at + 1 :]], env, cwd, log)

    OUT.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    variant = {"id": "deepseek-moe-dispatch.tiled-gmm", "settings": DROPLESS}
    result = compile_row(row, target, OUT / f"{row_id}.json", OUT / "work" / row_id, variant=variant, launcher=launcher)
    print(f"{row_id} with tiled_gmm: {result['status']} in {time.monotonic() - started:.0f} s")
    if result["status"] == "ok":
        gib = {k: round(result[k] / 2**30, 1) for k in ("device_bytes", "host_bytes")}
        print(f"device {gib['device_bytes']} GiB, host {gib['host_bytes']} GiB, fits: {result['fits']}")
    else:
        print(result.get("message"))
    hlo = OUT / "work" / row_id / "program.hlo.txt.gz"
    if hlo.exists():
        from offload_repro.produce.compiled.hlo_text import parse
        from offload_repro.produce.predicted.hlo_flops import count_flops

        with gzip.open(hlo, "rt", encoding="utf-8") as text:
            program = text.read()
        flops, unknown = count_flops(parse(program))
        counted = {k: round(v / 1e12, 1) for k, v in flops.record().items()}
        found = {k: v for k, v in evidence(program).items() if k != "expanded_operands"}  # small-program shapes
        # `unspent`: FLOPs of MaxText's dense dispatch and combine (ops named /dispatch/, /combine/)
        print(json.dumps({"counted_tflops": counted, "loops_of_unknown_trip_count": len(unknown), **found}))
    return 0 if result["status"] == "ok" else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("candidates", nargs="*", help=f"any of: {', '.join(CANDIDATES)} (default: all)")
    parser.add_argument("--cudnn-lib", type=Path, help="a directory with libcudnn.so.9 for the cuDNN candidates")
    parser.add_argument("--full-row", help="compile this DeepSeek row at full scale with tiled_gmm")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one)))
        return 0
    if args.full_row:
        return full_row(args.full_row)
    if unknown := [name for name in args.candidates if name not in CANDIDATES]:
        parser.error(f"unknown candidates {unknown}: choose from {', '.join(CANDIDATES)}")
    return probe(args.candidates or list(CANDIDATES), args.cudnn_lib)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--aot":
        sys.exit(aot_with_tiled_gmm(sys.argv[2:]))
    sys.exit(main())
