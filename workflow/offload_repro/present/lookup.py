"""The evidence table as the pages look it up: its observations as a DataFrame, and an index of
their point values, spreads of repeats, the bands of predictions (of the source rows and of runs
measured elsewhere) and failures by row, evidence kind and metric."""

from __future__ import annotations

from typing import Any

import pandas as pd

from offload_repro.core.observation import Observation
from offload_repro.present.text import failure_note


def frame(evidence: dict[str, Any]) -> pd.DataFrame:
    """The evidence table's observations as a DataFrame (one column per Observation field)."""
    return pd.DataFrame(evidence["observations"], columns=list(Observation.__dataclass_fields__))


class Lookup:
    """Point values of the evidence table: value(row, evidence, metric) for one target per kind,
    all(...) for a metric observed more than once (XLA's memory warnings), and spread(...) for the
    values that are medians of more than one repeat; `failures`: each source file's `failure`."""

    def __init__(self, observations: pd.DataFrame, failures: dict[str, dict[str, Any] | None] | None = None):
        points = observations[observations["at"].isna() & observations["row"].notna()]
        statuses = points[points["metric"] == "status"]
        self.status_source = {(o.row, o.evidence): o.source for o in statuses.itertuples(index=False)}
        self.failures = failures or {}
        self.points: dict[tuple[str, str, str], list[tuple[Any, str | None]]] = {}
        for o in points.itertuples(index=False):
            message = o.message if isinstance(o.message, str) else None
            self.points.setdefault((o.row, o.evidence, o.metric), []).append((o.value, message))
        self.spreads = {
            (o.row, o.evidence, o.metric): {"low": o.low, "high": o.high, "n": int(o.n)}
            for o in points.itertuples(index=False)
            if pd.notna(o.n) and o.n > 1
        }
        self.bands = {
            (o.row, o.evidence, o.metric): {"low": o.low, "high": o.high}
            for o in points.itertuples(index=False)
            if o.evidence in ("predicted", "validation") and pd.notna(o.low)
        }

    def spread(self, row: str, evidence: str, metric: str) -> dict[str, Any] | None:
        return self.spreads.get((row, evidence, metric))

    def failure_note(self, row: str, evidence: str) -> str | None:
        """How the row's result of this evidence failed, where its file records a `failure`."""
        return failure_note(self.failures.get(self.status_source.get((row, evidence), "")))

    def band(self, row: str, evidence: str, metric: str) -> dict[str, Any] | None:
        """A prediction's range over the stated uncertainties."""
        return self.bands.get((row, evidence, metric))

    def value(self, row: str, evidence: str, metric: str) -> Any:
        return next(iter(self.all(row, evidence, metric)), (None, None))[0]

    def message(self, row: str, evidence: str, metric: str) -> str | None:
        return next(iter(self.all(row, evidence, metric)), (None, None))[1]

    def all(self, row: str, evidence: str, metric: str) -> list[tuple[Any, str | None]]:
        return self.points.get((row, evidence, metric), [])
