"""Compile MaxText's real train step ahead of time for a GPU target, on a machine with no GPU.

Used as `python -m offload_repro.produce.compiled.aot_compile STATS_JSON TARGET_TXTPB TOPOLOGY
CUDNN_VERSION -- key=value...` in a process of its own: the GPU plugin reads XLA_FLAGS once, and
two small shims must be in place before MaxText builds anything.

- Devices: `jax.experimental.topologies.get_topology_desc(platform="cuda", ...)` with an XLA GPU
  target description gives compile-only GPUs. MaxText's `train_compile` (abstract train state,
  sharding rules, remat policies, `jit_and_compile`) is used unchanged; only its
  `get_topology_desc`, which it calls for TPUs, is pointed at these GPUs.
- Grouped matmul: `jax.lax.ragged_dot` is what the row's `ragged_dot` says
  (core/grouped_matmul.py), set in the environment by the caller.
- cuDNN: jax asks the *local* cuDNN for its version before emitting cuDNN flash attention;
  there is none here, so the target container's version is declared instead. The compiled
  program then counts the attention workspace as 0 bytes: a stated gap of this evidence.
"""

from __future__ import annotations

import hashlib
import os
import re
import resource
import sys
import time
from pathlib import Path
from typing import Any

from offload_repro.core import gpu
from offload_repro.core.files import write_gzip_text, write_json
from offload_repro.core.grouped_matmul import install_from
from offload_repro.core.memory_analysis import memory_analysis_dict
from offload_repro.produce.compiled.host_offload_hlo import canonical, summarize_hlo
from offload_repro.produce.compiled.model_flops import components

# XLA's own warnings while fitting the program into device memory (hlo_rematerialization).
HLO_FILE = "program.hlo.txt.gz"  # beside the stats file
MEMORY_WARNING = re.compile(r"Can't reduce memory use below.*|.*exceeds the memory limit.*")


def declare_cudnn(version: int, capability: tuple[int, int]) -> None:
    from jax._src.cudnn import fused_attention_stablehlo as cudnn_attention

    def parsed(required: str) -> tuple[int, ...]:
        return tuple(int(part) for part in required.split("."))

    cudnn_attention.check_cudnn_version = lambda: version
    cudnn_attention.check_compute_capability = lambda required: capability >= parsed(required)
    cudnn_attention.is_cuda_compute_capability_equal = lambda required: capability == parsed(required)


def jit_train_step(maxtext_argv: list[str], devices: Any = None) -> tuple[Any, Any, Any]:
    """MaxText's own ahead-of-time path (train_compile: abstract state, sharding rules, remat
    policies, `jit_and_compile`), unchanged: (compiled step, config, mesh). `devices`: the compile-only
    devices its `get_topology_desc` is pointed at; None leaves it MaxText's (a TPU `compile_topology`)."""
    import jax
    from flax.core.spmd import logical_axis_rules
    from maxtext.configs import pyconfig
    from maxtext.trainers.pre_train import train, train_compile
    from maxtext.utils import maxtext_utils, sharding

    if devices is not None:
        train_compile.get_topology_desc = lambda *_args, **_kwargs: devices
    jax.config.update("jax_default_prng_impl", "unsafe_rbg")  # as train_compile.main does
    config = pyconfig.initialize(["aot", *maxtext_argv])
    train_compile.validate_config(config)
    mesh = train_compile.get_topology_mesh(config)
    shaped_args, shaped_kwargs, state_shardings, _, model = train_compile.get_shaped_inputs(mesh, config)
    params_shardings, state_shardings = sharding.maybe_update_params_sharding_with_opt(config, state_shardings)
    input_shardings = sharding.build_zero1_input_state_mesh_shardings(config, state_shardings, params_shardings)
    data_sharding = sharding.get_input_data_sharding(config, mesh)
    func, in_shard, out_shard, static_argnums, donate_argnums = maxtext_utils.get_functional_train_with_signature(
        train.train_step, data_sharding, input_shardings, model, config, params_shardings
    )
    rules = logical_axis_rules(config.logical_axis_rules)
    compiled = train_compile.jit_and_compile(
        func, shaped_args, shaped_kwargs, mesh, in_shard, out_shard, static_argnums, donate_argnums, config, rules
    )
    return compiled, config, mesh


def compile_train_step(target_text: str, topology: str, maxtext_argv: list[str]) -> tuple[Any, dict[str, Any]]:
    from jax.experimental.topologies import get_topology_desc
    from maxtext.utils import maxtext_utils

    gpus = get_topology_desc(platform="cuda", topology=topology, target_config=target_text)
    compiled, config, mesh = jit_train_step(maxtext_argv, gpus)
    model_tflops, _, _ = maxtext_utils.calculate_tflops_training_per_device(config, log=False)
    return compiled, {
        "devices": len(gpus.devices),
        "mesh": {k: int(v) for k, v in mesh.shape.items() if v > 1},
        "model_tflops_per_device_per_step": float(model_tflops),  # MaxText's own count, from the config
        "model_tflops_components": components(config),  # the same count, per model component
    }


def cost(compiled: Any) -> dict[str, float] | None:
    """XLA's cost analysis of the compiled step (FLOPs and bytes per device), where it gives one."""
    try:
        analysis = compiled.cost_analysis()
    except Exception:  # not every backend implements it for an AOT compile
        return None
    if isinstance(analysis, list):
        analysis = analysis[0] if analysis else None
    if not analysis or "flops" not in analysis:
        return None
    return {"flops": float(analysis["flops"]), "bytes_accessed": float(analysis.get("bytes accessed", 0.0))}


def main(stats_path: str, target_path: str, topology: str, cudnn_version: int, maxtext_argv: list[str]) -> int:
    started = time.monotonic()
    target_text = Path(target_path).read_text(encoding="utf-8")
    declare_cudnn(cudnn_version, gpu.compute_capability(target_text))
    record: dict[str, Any] = {"exception": None}
    try:
        compiled, mesh = compile_train_step(target_text, topology, maxtext_argv)
        hlo = compiled.as_text()
        # The optimized, scheduled program, kept for what is read from it later (FLOPs, copies,
        # collectives, overlap), so that reading more from it never compiles it again.
        write_gzip_text(Path(stats_path).with_name(HLO_FILE), hlo)
        record.update(
            mesh,
            memory=memory_analysis_dict(compiled.memory_analysis()),
            hlo=summarize_hlo(hlo),
            hlo_sha256=hashlib.sha256(canonical(hlo).encode()).hexdigest(),
            cost=cost(compiled),
        )
    except Exception as err:  # recorded; the parent decides what it means
        record["exception"] = {"type": type(err).__name__, "message": str(err)[-4000:]}
    record["compile_seconds"] = round(time.monotonic() - started, 2)
    own, tools = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU time: on 2 cores, what a side-by-side stage pays; ptxas runs as child processes
    record["cpu_seconds"] = round(own.ru_utime + own.ru_stime + tools.ru_utime + tools.ru_stime, 2)
    record["peak_rss_bytes"] = own.ru_maxrss * 1024
    write_json(stats_path, record)
    return 0 if record["exception"] is None else 1


if __name__ == "__main__":
    if len(sys.argv) < 6 or sys.argv[5] != "--":
        sys.exit(
            "usage: python -m offload_repro.produce.compiled.aot_compile"
            " STATS_JSON TARGET_TXTPB TOPOLOGY CUDNN_VERSION -- key=value ..."
        )
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    install_from(os.environ)
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[6:]))
