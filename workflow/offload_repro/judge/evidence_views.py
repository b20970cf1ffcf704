"""The evidence table seen one evidence kind on one target at a time: each view holds the values
its rows (or placement policies) were observed with, their spreads of repeats and series, says in
words what produced them and names the hardware classes it can judge."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from offload_repro.core.data import Target
from offload_repro.judge import spread


@dataclass
class EvidenceView:
    """One evidence kind on one target, as {row: {metric: value}} (series points apart, in `series`),
    {row: {metric: {low, high, n}}} for the values that are medians of more than one repeat, and
    {policy: {metric: value}} for the placement policies' capacity frontiers."""

    evidence: str
    target: str | None
    source: str  # in words: what produced it
    judges: tuple[str, ...] = ()
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    spreads: dict[str, dict[str, spread.Spread]] = field(default_factory=dict)
    # series points in order: {row: {metric: [value, ...]}} (a predicted value at each setting of
    # its stated uncertainties, central first; a run's loss at each step)
    series: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    # predictions under each calibration of the row's model: {row: {metric: {calibrated_on: value}}}
    # and their series points, {row: {metric: {calibrated_on: [value, ...]}}}
    calibrated: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    calibrated_series: dict[str, dict[str, dict[str, list[Any]]]] = field(default_factory=dict)

    def facts(self, check: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """The rows (or the policies) a check is about, those this evidence has."""
        return self.rows if "rows" in check else self.policies


def views(observations: list[dict[str, Any]], targets: dict[str, Target]) -> list[EvidenceView]:
    found: dict[tuple[str, str | None], EvidenceView] = {}
    for obs in observations:
        if obs["row"] is None and obs.get("policy") is None:
            continue  # a fact about the target as a whole
        key = (obs["evidence"], obs["target"])
        if key not in found:
            target = targets.get(obs["target"]) if obs["target"] else None
            if obs["evidence"] == "analytic":
                source = "bytes computed from MaxText's model configs"
            elif obs["evidence"] == "compiled" and target:
                source = f"XLA memory analysis of the train step compiled for {target.spec['title']}"
            elif obs["evidence"] == "predicted" and target:
                source = f"step-time model over the program compiled for {target.spec['title']}"
            else:
                source = target.spec["title"] if target else str(obs["target"])
            found[key] = EvidenceView(obs["evidence"], obs["target"], source, tuple(target.judges) if target else ())
        if obs.get("policy") is not None:
            if obs["at"] is None:
                facts = found[key].policies.setdefault(obs["policy"], {"status": "ok", "message": None})
                facts[obs["metric"]] = obs["value"]
                if obs["metric"] == "status":
                    facts["status"], facts["message"] = obs["value"], obs["message"]
            continue
        if obs.get("calibrated_on") is not None:  # .get: tables written before calibrations were a field
            by_row = found[key].calibrated_series if obs["at"] is not None else found[key].calibrated
            by_metric = by_row.setdefault(obs["row"], {}).setdefault(obs["metric"], {})
            if obs["at"] is not None:
                by_metric.setdefault(obs["calibrated_on"], []).append(obs["value"])
            else:
                by_metric[obs["calibrated_on"]] = obs["value"]
            continue
        if obs["at"] is not None:
            found[key].series.setdefault(obs["row"], {}).setdefault(obs["metric"], []).append(obs["value"])
            continue
        row = found[key].rows.setdefault(obs["row"], {"status": "ok", "message": None})
        if obs["metric"] == "status":
            row["status"], row["message"] = obs["value"], obs["message"]
        else:
            row[obs["metric"]] = obs["value"]
            if (obs.get("n") or 0) > 1:  # .get: tables written before repeats have no spread fields
                spreads = found[key].spreads.setdefault(obs["row"], {})
                spreads[obs["metric"]] = {"low": obs["low"], "high": obs["high"], "n": obs["n"]}
    return list(found.values())
