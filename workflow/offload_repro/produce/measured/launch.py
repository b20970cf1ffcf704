"""Run MaxText's own training entry point in this process and record what only it can see.

Used as `python -m offload_repro.produce.measured.launch STATS_JSON [STATS_JSON ...] -- <maxtext args>`.
It calls `maxtext.trainers.pre_train.train.main` unchanged; the only addition is a wrapper around
MaxText's `print_compiled_memory_stats`, so the compiled train step's memory analysis is
kept in bytes (MaxText logs it rounded to 0.1 GB), plus the devices' runtime memory stats.

With several STATS_JSON, MaxText trains once per file, one after the other in this process (the
repeats of a row: the import, the runtime's start and the compile are paid once), each repeat's
`metrics_file` and `base_output_directory` moved into its file's directory. Each repeat starts with
the line REPEAT_MARKER in the log, and records the device memory in use as it starts (what an
earlier repeat left behind).
"""

from __future__ import annotations

import contextlib
import gc
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


REPEAT_MARKER = "offload-repro: repeat {number} of {count}"
MOVED = ("metrics_file", "base_output_directory")  # each repeat's own, in its directory


def repeat_arguments(maxtext_argv: list[str], stats_path: str) -> list[str]:
    """The arguments of a repeat whose record is `stats_path`: its metrics and output in that directory."""
    directory = Path(stats_path).parent
    moved = {"metrics_file": str(directory / "metrics.jsonl"), "base_output_directory": str(directory / "output")}
    return [f"{key}={moved[key]}" if (key := arg.split("=", 1)[0]) in MOVED else arg for arg in maxtext_argv]


def left_behind() -> dict[str, int | None]:
    """What earlier repeats left on the device, after a collection: JAX's live arrays and the bytes
    the runtime holds (None where it keeps no count, as XLA:CPU)."""
    import jax

    gc.collect()
    in_use = (jax.local_devices()[0].memory_stats() or {}).get("bytes_in_use")
    return {"live_arrays_at_start": len(jax.live_arrays()), "bytes_in_use_at_start": in_use}


def main(stats_paths: list[str], maxtext_argv: list[str]) -> int:
    from offload_repro.cluster import jax_distributed
    from offload_repro.core.grouped_matmul import install_from

    install_from(os.environ)  # the row's grouped matmul, before MaxText builds its model
    rank = jax_distributed.start()  # before anything touches a JAX backend
    if rank is not None:
        maxtext_argv = rank_arguments(maxtext_argv, rank["task"])
    from absl import app
    from maxtext.trainers.pre_train import train
    from maxtext.utils import max_utils

    captured: dict[str, Any] = {"compiled_memory": None}
    original = max_utils.print_compiled_memory_stats

    def capture(compiled_stats: Any, prefix: str = "") -> None:
        if prefix == "train" and compiled_stats is not None:
            captured["compiled_memory"] = memory_analysis_dict(compiled_stats)
        original(compiled_stats, prefix=prefix)

    max_utils.print_compiled_memory_stats = capture
    records: list[dict[str, Any]] = []
    trace_dir = os.environ.get(TRACE_DIR_VARIABLE)

    def train_each(_argv: list[str]) -> None:
        for number, stats_path in enumerate(stats_paths, 1):
            argv = repeat_arguments(maxtext_argv, stats_path) if len(stats_paths) > 1 else maxtext_argv
            print(REPEAT_MARKER.format(number=number, count=len(stats_paths)), flush=True)
            captured["compiled_memory"] = None
            record: dict[str, Any] = {"exception": None, "live_arrays_at_start": None, "bytes_in_use_at_start": None}
            if records:  # before the first, no backend has started
                record.update(left_behind())
            started = time.monotonic()
            nvml = NvmlPeak()
            try:
                with nvml, profiler_trace(trace_dir if number == 1 else None):  # one repeat is profiled
                    train.main(["train", resolve_config(argv[0]), *argv[1:]])
            except SystemExit as done:  # MaxText's own exit: a failure only with a nonzero code
                if done.code not in (None, 0):
                    record["exception"] = {"type": "SystemExit", "message": f"exited with {done.code}"}
            except BaseException as err:  # recorded for the runner, which classifies OOM vs error
                record["exception"] = jax_distributed.exception_record(err)
                traceback.print_exc()
            record.update(
                compiled_memory=captured["compiled_memory"],
                train_seconds=round(time.monotonic() - started, 3),
                nvml_peak_used_bytes=nvml.peak_bytes,
                runtime_memory=device_memory_stats(),
            )
            records.append(record)
            if record["exception"] is not None:
                break  # as a row's repeats stop at the first that fails

    # absl's app.run, as MaxText's own __main__ does: it parses flags and sets up logging. It always
    # exits; each repeat's own failure is in its record.
    with contextlib.suppress(SystemExit):
        app.run(train_each, argv=["train"])
    import jax

    devices = jax.devices()
    shared = dict(
        **environment(),  # what a reviewer needs to trust a GPU number: JAX's own report, the CUDA wheels
        versions=provenance.versions(),
        python=sys.version.split()[0],
        device_kind=devices[0].device_kind,
        device_count=len(devices),
        platform=devices[0].platform,
        process_count=jax.process_count(),
        host_peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    )
    if jax.process_index() == 0:  # one record per run, from rank 0, as on the CPU path
        for stats_path, record in zip(stats_paths, records, strict=False):
            write_json(stats_path, record | shared)
    failed = next((record["exception"] for record in records if record["exception"]), None)
    status = 1 if failed or len(records) < len(stats_paths) else 0
    jax_distributed.finish(rank, status, failed)
    return status


if __name__ == "__main__":
    if "--" not in sys.argv[2:]:
        sys.exit(
            "usage: python -m offload_repro.produce.measured.launch STATS_JSON [STATS_JSON ...] --"
            " <maxtext base.yml> key=value ..."
        )
    split = sys.argv.index("--", 2)
    sys.exit(main(sys.argv[1:split], sys.argv[split + 1 :]))
