"""One fact that some evidence gives about a row (or a placement policy) on a target: the unit of
the evidence table."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

Value = float | int | str | bool | list[str] | None  # a list: the rows and claims a number derives from


@dataclass(frozen=True)
class Observation:
    row: str | None  # None: a fact about the target as a whole (the transfer probe)
    target: str | None  # None: evidence that holds on any hardware (analytic)
    evidence: str  # measured | compiled | analytic
    metric: str
    value: Value
    unit: str | None
    status: str  # ok | oom | error: the status of the result it came from
    source: str  # the result file it came from
    at: float | None = None  # the point of a series: step of a loss curve, bytes of a transfer
    message: str | None = None
    # The spread of a value that is the median of repeated runs: its lowest and highest repeat
    # and how many repeats reported it (None: one measurement, or evidence that does not repeat).
    low: float | None = None
    high: float | None = None
    n: int | None = None
    # A fact about a placement policy of experiments/frontier.yaml (its capacity frontier), not a row.
    policy: str | None = None

    def record(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Observer:
    """Builds the observations of one result file; `add` skips metrics the evidence did not observe."""

    result: dict[str, Any]
    source: str
    evidence: str
    row: str | None
    target: str | None
    policy: str | None = None
    observations: list[Observation] = field(default_factory=list)

    @property
    def status(self) -> str:
        return self.result.get("status", "ok")

    def add(
        self,
        metric: str,
        value: Value,
        unit: str | None = None,
        spread: dict[str, Any] | None = None,
        **extra: Any,
    ) -> None:
        """`spread`: the metric's entry in a run's `spread` ({median, low, high, relative, n}), if any."""
        if spread is not None:
            extra |= {"low": spread["low"], "high": spread["high"], "n": spread["n"]}
        if value is not None:
            self.observations.append(self._observation(metric, value, unit, **extra))

    def status_line(self) -> None:
        """Every result says how it ended, with its message: an error or OOM is evidence too."""
        self.observations.append(self._observation("status", self.status, None, message=self.result.get("message")))

    def _observation(self, metric: str, value: Value, unit: str | None, **extra: Any) -> Observation:
        fields = (self.row, self.target, self.evidence, metric, value, unit, self.status, self.source)
        return Observation(*fields, policy=self.policy, **extra)
