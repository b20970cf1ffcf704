"""Run MaxText's own training entry point in this process and record what only it can see.

Used as `python -m offload_repro.produce.measured.launch STATS_JSON -- <maxtext args>`. It calls
`maxtext.trainers.pre_train.train.main` unchanged; the only addition is a wrapper around
MaxText's `print_compiled_memory_stats`, so the compiled train step's memory analysis is
kept in bytes (MaxText logs it rounded to 0.1 GB), plus the devices' runtime memory stats.
"""

from __future__ import annotations

import contextlib
import os
import resource
import sys
import threading
import time
import traceback
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from offload_repro.core import provenance
from offload_repro.core.files import write_json
from offload_repro.core.memory_analysis import memory_analysis_dict


def device_memory_stats() -> dict[str, Any] | None:
    import jax

    stats = jax.local_devices()[0].memory_stats()
    if not stats:  # XLA:CPU reports none
        return None
    # Every counter the runtime keeps: on a TPU the step's temporaries are in peak_bytes_reserved,
    # not in peak_bytes_in_use (which holds the weights and optimizer state there).
    return {key: int(value) for key, value in sorted(stats.items()) if isinstance(value, int)}


def cuda_packages(distributions: Iterable[metadata.Distribution] | None = None) -> dict[str, str]:
    """The installed NVIDIA wheels and JAX's CUDA plugins (`nvidia-*`, `jax-cuda*`), name -> version,
    sorted by name: the CUDA libraries a GPU run could load, as installed, not as loaded."""
    found: dict[str, str] = {}
    for distribution in metadata.distributions() if distributions is None else distributions:
        name = distribution.metadata.get("Name") or ""
        if name.lower().replace("_", "-").startswith(("nvidia-", "jax-cuda")):
            found.setdefault(name, distribution.version)  # the first on sys.path is the one imported
    return dict(sorted(found.items()))


def environment() -> dict[str, Any]:
    """JAX's own environment report (`jax.print_environment_info`: JAX's, jaxlib's, NumPy's and
    Python's versions, uname, the devices JAX sees, the JAX_/XLA_ variables and nvidia-smi's output
    where present) and the installed CUDA wheels. Call it after JAX has started its backends."""
    import jax

    return {"environment_info": jax.print_environment_info(return_string=True), "cuda_packages": cuda_packages()}


class NvmlPeak:
    """Largest GPU memory in use seen by NVML while training (sampled), where NVML is present."""

    def __init__(self, interval_s: float = 0.2) -> None:
        self.interval_s, self.peak_bytes, self._stop = interval_s, None, threading.Event()
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        except Exception:  # no NVML library or no GPU: nothing to sample
            self._handles = []

    def _sample(self) -> None:
        while not self._stop.wait(self.interval_s):
            used = max(self._nvml.nvmlDeviceGetMemoryInfo(handle).used for handle in self._handles)
            self.peak_bytes = max(used, self.peak_bytes or 0)

    def __enter__(self) -> NvmlPeak:
        if self._handles:
            threading.Thread(target=self._sample, daemon=True).start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()


PACKAGE_CONFIG = "maxtext:"
# Set by the runner for rows whose copies and compute are to be traced (perfetto JSON).
TRACE_DIR_VARIABLE = "OFFLOAD_REPRO_TRACE_DIR"


def profiler_trace(trace_dir: str | None) -> contextlib.AbstractContextManager[Any]:
    if not trace_dir:
        return contextlib.nullcontext()
    import jax

    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0  # Python frames would swamp the device events (5M-event cap)
    options.host_tracer_level = 1
    return jax.profiler.trace(trace_dir, create_perfetto_trace=True, profiler_options=options)


def resolve_config(argument: str) -> str:
    """'maxtext:configs/base.yml' -> that file in the MaxText this process imports (which, in a
    container, is the container's, not the launching machine's)."""
    if not argument.startswith(PACKAGE_CONFIG):
        return argument
    import maxtext

    return str(Path(maxtext.__file__).parent / argument.removeprefix(PACKAGE_CONFIG))


def rank_arguments(maxtext_argv: list[str], task: int) -> list[str]:
    """Every MaxText process appends to `metrics_file`: ranks after the first get one of their own."""
    if task == 0:
        return maxtext_argv
    prefix = "metrics_file="
    return [
        f"{prefix}{Path(arg.removeprefix(prefix)).with_suffix(f'.rank{task}.jsonl')}" if arg.startswith(prefix) else arg
        for arg in maxtext_argv
    ]


def main(stats_path: str, maxtext_argv: list[str]) -> int:
    from offload_repro.cluster import jax_distributed
    from offload_repro.core.grouped_matmul import install_from

    install_from(os.environ)  # the row's grouped matmul, before MaxText builds its model
    rank = jax_distributed.start()  # before anything touches a JAX backend
    if rank is not None:
        maxtext_argv = rank_arguments(maxtext_argv, rank["task"])
    from absl import app
    from maxtext.trainers.pre_train import train
    from maxtext.utils import max_utils

    record: dict[str, Any] = {"compiled_memory": None, "exception": None}
    original = max_utils.print_compiled_memory_stats

    def capture(compiled_stats: Any, prefix: str = "") -> None:
        if prefix == "train" and compiled_stats is not None:
            record["compiled_memory"] = memory_analysis_dict(compiled_stats)
        original(compiled_stats, prefix=prefix)

    max_utils.print_compiled_memory_stats = capture
    started = time.monotonic()
    status = 0
    nvml = NvmlPeak()
    trace_dir = os.environ.get(TRACE_DIR_VARIABLE)
    try:
        # absl's app.run, as MaxText's own __main__ does: it parses flags and sets up logging.
        with nvml, profiler_trace(trace_dir):
            app.run(train.main, argv=["train", resolve_config(maxtext_argv[0]), *maxtext_argv[1:]])
    except SystemExit as done:
        status = 0 if done.code in (None, 0) else 1
    except BaseException as err:  # recorded for the runner, which classifies OOM vs error
        record["exception"] = jax_distributed.exception_record(err)
        traceback.print_exc()
        status = 1
    import jax

    devices = jax.devices()
    record.update(
        **environment(),  # what a reviewer needs to trust a GPU number: JAX's own report, the CUDA wheels
        versions=provenance.versions(),
        python=sys.version.split()[0],
        train_seconds=round(time.monotonic() - started, 3),
        device_kind=devices[0].device_kind,
        device_count=len(devices),
        platform=devices[0].platform,
        runtime_memory=device_memory_stats(),
        nvml_peak_used_bytes=nvml.peak_bytes,
        process_count=jax.process_count(),
        host_peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    )
    if jax.process_index() == 0:  # one record per run, from rank 0, as on the CPU path
        write_json(stats_path, record)
    jax_distributed.finish(rank, status, record["exception"])
    return status


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[2] != "--":
        sys.exit(
            "usage: python -m offload_repro.produce.measured.launch STATS_JSON -- <maxtext base.yml> key=value ..."
        )
    sys.exit(main(sys.argv[1], sys.argv[3:]))
