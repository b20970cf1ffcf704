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
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
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
    "tiled-gmm": (f"tiled_gmm (core/grouped_matmul.py): XLA loops over {TILE}-row tiles", "", None),
}


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
    from offload_repro.core.grouped_matmul import tiled_gmm

    return lambda x, w, gs: tiled_gmm(x, w, gs, tile=TILE)


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("candidates", nargs="*", help=f"any of: {', '.join(CANDIDATES)} (default: all)")
    parser.add_argument("--cudnn-lib", type=Path, help="a directory with libcudnn.so.9 for the cuDNN candidates")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one)))
        return 0
    if unknown := [name for name in args.candidates if name not in CANDIDATES]:
        parser.error(f"unknown candidates {unknown}: choose from {', '.join(CANDIDATES)}")
    return probe(args.candidates or list(CANDIDATES), args.cudnn_lib)


if __name__ == "__main__":
    sys.exit(main())
