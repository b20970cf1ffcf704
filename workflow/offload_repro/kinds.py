"""The registry of result kinds: the one place an evidence kind is declared.

A new kind is one producer module (which writes `results/.../*.json` through
`core.results.write_result` and has an `observe(result, source)` function), one entry here, a
JSON Schema in workflow/schemas/results/, and its Snakemake rule, which adds its files to
`EVIDENCE_FILES` (workflow/rules/common.smk). Checking, the evidence table and the report
need no change: they dispatch on each file's own `kind`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from offload_repro.core.observation import Observation


@dataclass(frozen=True)
class ResultKind:
    name: str  # the result file's `kind`
    evidence: str  # the class of evidence it gives
    observer: str  # "module:function" that turns one result into observations

    def observe(self, result: dict[str, Any], source: str) -> list[Observation]:
        module, function = self.observer.split(":")
        observe: Callable[[dict[str, Any], str], list[Observation]] = getattr(importlib.import_module(module), function)
        return observe(result, source)


RESULT_KINDS = {
    k.name: k
    for k in (
        ResultKind("run", "measured", "offload_repro.produce.runner:observe"),
        ResultKind("compile", "compiled", "offload_repro.produce.compile:observe"),
        ResultKind("analytic", "analytic", "offload_repro.produce.analytic:observe"),
        ResultKind("probe", "measured", "offload_repro.produce.probe:observe"),
        ResultKind("frontier", "compiled", "offload_repro.produce.frontier:observe"),
        ResultKind("budget", "compiled", "offload_repro.produce.budget:observe"),
        ResultKind("predicted", "predicted", "offload_repro.produce.predict:observe"),
    )
}
