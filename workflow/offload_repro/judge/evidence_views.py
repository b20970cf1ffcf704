"""The evidence table seen one evidence kind on one target at a time: each view holds the values
its rows (or placement policies) were observed with and their spreads of repeats, says in words what
produced them and names the hardware classes it can judge; a predicted view, each row's prediction
as the result file its observations name records it (its calibrations, settings and errors)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from offload_repro.core.data import Target
from offload_repro.core.results import read_result
from offload_repro.judge import spread
from offload_repro.judge.prediction_verdicts import Predicted, predictions


@dataclass
class EvidenceView:
    """One evidence kind on one target, as {row: {metric: value}}, {row: {metric: {low, high, n}}}
    for the values that are medians of more than one repeat, {policy: {metric: value}} for the
    placement policies' capacity frontiers and, for predicted evidence, {row: its prediction}."""

    evidence: str
    target: str | None
    source: str  # in words: what produced it
    judges: tuple[str, ...] = ()
    rows: dict[str, dict[str, Any]] = field(default_factory=dict)
    spreads: dict[str, dict[str, spread.Spread]] = field(default_factory=dict)
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    predicted: dict[str, Predicted] = field(default_factory=dict)

    def facts(self, check: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """The rows (or the policies) a check is about, those this evidence has."""
        return self.rows if "rows" in check else self.policies


def views(observations: list[dict[str, Any]], targets: dict[str, Target]) -> list[EvidenceView]:
    """Series points (`at`) are left out: no check judges a series. The sensitivity stage's evidence
    may mix rows predicted by an alternative with rows of the default prediction: each row's own
    prediction file is read, each file once."""
    found: dict[tuple[str, str | None], EvidenceView] = {}
    read: dict[str, dict[str, Predicted]] = {}
    for obs in observations:
        if (obs["row"] is None and obs.get("policy") is None) or obs["at"] is not None:
            continue  # a fact about the target as a whole, or a point of a series
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
        view = found[key]
        if obs.get("policy") is not None:  # a capacity frontier's: neither predicted nor repeated
            facts = view.policies.setdefault(obs["policy"], {"status": "ok", "message": None})
        else:
            facts = view.rows.setdefault(obs["row"], {"status": "ok", "message": None})
        if obs["metric"] == "status":
            facts["status"], facts["message"] = obs["value"], obs["message"]
            if obs["evidence"] == "predicted":
                if obs["source"] not in read:
                    read[obs["source"]] = predictions(read_result(obs["source"], "predicted"))
                if obs["row"] in read[obs["source"]]:
                    view.predicted[obs["row"]] = read[obs["source"]][obs["row"]]
        else:
            facts[obs["metric"]] = obs["value"]
            if (obs.get("n") or 0) > 1:  # .get: tables written before repeats have no spread fields
                spreads = view.spreads.setdefault(obs["row"], {})
                spreads[obs["metric"]] = {"low": obs["low"], "high": obs["high"], "n": obs["n"]}
    return list(found.values())
