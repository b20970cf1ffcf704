"""Repeated training runs of one row -> one run's numbers: the medians, each repeat, and their spread.

A full-scale target runs each row several times (`repeats:` in its target file) because one run's
throughput moves with the cluster's state; the row's number is the median of the repeats, and the
spread (low, high, (high - low) / median) says how far a single run could have landed from it.
A spread is {low, high} wherever it is written: here, in the evidence table and on the page.
"""

from __future__ import annotations

from statistics import median
from typing import Any

METRICS = ("step_time_s", "tflops_per_device", "tokens_per_s_per_device")
# per repeat also: its wall time, and JAX's live arrays and the device memory in use as it started (a
# later repeat trains in the same process as the first: what the earlier ones left behind)
PER_REPEAT = (*METRICS, "wall_time_s", "live_arrays_at_start", "bytes_in_use_at_start")


def spread(values: list[float]) -> dict[str, Any]:
    """Median, lowest and highest repeat, and the width relative to the median of one metric."""
    middle, low, high = median(values), min(values), max(values)
    return {
        "median": middle,
        "low": low,
        "high": high,
        # A zero median (a run that did nothing) has no meaningful relative width.
        "relative": (high - low) / middle if middle else None,
        "n": len(values),
    }


def aggregate(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Each repeat's summary -> {"repeats": [...], <metric>: median, "spread": {<metric>: ...}}.

    A metric is aggregated over the repeats that report it (a failed repeat reports none); one no
    repeat reports is left out, as `metrics.summarize` leaves out what it could not time.
    """
    repeats = [
        {"repeat": number, **{key: run[key] for key in PER_REPEAT if key in run}} for number, run in enumerate(runs, 1)
    ]
    aggregated: dict[str, Any] = {"repeats": repeats}
    spreads: dict[str, dict[str, Any]] = {}
    for metric in METRICS:
        values = [repeat[metric] for repeat in repeats if repeat.get(metric) is not None]
        if values:
            spreads[metric] = spread(values)
            aggregated[metric] = spreads[metric]["median"]
    aggregated["spread"] = spreads
    return aggregated
