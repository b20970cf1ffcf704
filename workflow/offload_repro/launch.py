"""Run MaxText's own training entry point in this process and record what only it can see.

Used as `python -m offload_repro.launch STATS_JSON -- <maxtext args>`. It calls
`maxtext.trainers.pre_train.train.main` unchanged; the only addition is a wrapper around
MaxText's `print_compiled_memory_stats`, so the compiled train step's memory analysis is
kept in bytes (MaxText logs it rounded to 0.1 GB), plus the devices' runtime memory stats.
"""

from __future__ import annotations

import resource
import sys
import time
import traceback
from importlib import metadata
from typing import Any

from offload_repro.files import write_json

MEMORY_FIELDS = (
    "argument_size_in_bytes",
    "output_size_in_bytes",
    "alias_size_in_bytes",
    "temp_size_in_bytes",
    "generated_code_size_in_bytes",
    "host_argument_size_in_bytes",
    "host_output_size_in_bytes",
    "host_alias_size_in_bytes",
    "host_temp_size_in_bytes",
)


def memory_analysis_dict(stats: Any) -> dict[str, int]:
    return {name: int(getattr(stats, name)) for name in MEMORY_FIELDS if hasattr(stats, name)}


def device_memory_stats() -> dict[str, Any] | None:
    import jax

    stats = jax.local_devices()[0].memory_stats()
    if not stats:  # XLA:CPU reports none
        return None
    keep = ("peak_bytes_in_use", "bytes_in_use", "bytes_limit", "largest_alloc_size")
    return {key: int(stats[key]) for key in keep if key in stats}


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def main(stats_path: str, maxtext_argv: list[str]) -> int:
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
    try:
        # absl's app.run, as MaxText's own __main__ does: it parses flags and sets up logging.
        app.run(train.main, argv=["train", *maxtext_argv])
    except SystemExit as done:
        status = 0 if done.code in (None, 0) else 1
    except BaseException as err:  # recorded for the runner, which classifies OOM vs error
        record["exception"] = {"type": type(err).__name__, "message": str(err)[-4000:]}
        traceback.print_exc()
        status = 1
    import jax

    devices = jax.devices()
    record.update(
        versions={name: _version(name) for name in ("jax", "jaxlib", "maxtext", "flax")},
        python=sys.version.split()[0],
        train_seconds=round(time.monotonic() - started, 3),
        device_kind=devices[0].device_kind,
        device_count=len(devices),
        platform=devices[0].platform,
        runtime_memory=device_memory_stats(),
        host_peak_rss_bytes=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    )
    write_json(stats_path, record)
    return status


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[2] != "--":
        sys.exit("usage: python -m offload_repro.launch STATS_JSON -- <maxtext base.yml> key=value ...")
    sys.exit(main(sys.argv[1], sys.argv[3:]))
