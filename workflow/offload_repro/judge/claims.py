"""The claims as the check reads them: experiments/claims.yaml validated against its schema, each
id used once, every name a claim derives from known, every evidence class it is judged by real,
every metric one the evidence table names (judge/metric_names.py); and what a claim's check is about."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from offload_repro.core.data import DataError, validate
from offload_repro.core.evidence_bands import band
from offload_repro.core.evidence_classes import EVIDENCE
from offload_repro.core.files import read_yaml
from offload_repro.judge import metric_names


def load_claims(path: str | Path) -> list[dict[str, Any]]:
    data = read_yaml(path)
    validate(data, "claims", path)
    ids = [claim["id"] for claim in data["claims"]]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise DataError(f"{path}: claim ids used twice: {duplicates}")
    named = set(ids) | {row for claim in data["claims"] for row in claim["check"].get("rows", [])}
    for number, claim in enumerate(data["claims"], 1):
        where = f"{path}: claim {number} (id '{claim['id']}'), field"
        unknown = [name for name in claim.get("derives_from", []) if name not in named]
        if unknown:
            raise DataError(f"{where} 'derives_from': {unknown} name no claim and no row of any claim's check")
        if "finding" in claim and claim["finding"] not in ids:
            raise DataError(f"{where} 'finding': '{claim['finding']}' names no claim of {path}")
        metrics = {f"check.{key}": claim["check"].get(key) for key in ("metric", "expect_metric")}
        metrics |= {f"judged_by[{i}].metric": rule.get("metric") for i, rule in enumerate(claim["judged_by"])}
        for field, metric in metrics.items():
            if metric is not None and not metric_names.known(metric):
                raise DataError(
                    f"{where} '{field}': '{metric}' is no metric the evidence table holds"
                    " (offload_repro/judge/metric_names.py)"
                )
        for i, rule in enumerate(claim["judged_by"]):
            if rule["evidence"] not in EVIDENCE:
                raise DataError(f"{where} 'judged_by.evidence': '{rule['evidence']}' is not one of {sorted(EVIDENCE)}")
            if "band" in rule:  # the measured band of that evidence's figure, read once here
                rule["band"] = band(rule["band"], f"{where} 'judged_by[{i}].band'")
    return data["claims"]


def subjects(check: dict[str, Any]) -> list[str]:
    """What a check is about: its rows, or the placement policy whose capacity frontier it judges."""
    return check["rows"] if "rows" in check else check["policies"]
