"""The page's charts assembled: which of present/charts.py's charts a target's page shows, each as
a Vega-Lite spec that is safe inside a <script> element."""

from __future__ import annotations

import json
from typing import Any

import altair as alt
import pandas as pd

from offload_repro.core.data import Row, Target
from offload_repro.present import charts


def inline_spec(name: str, chart: alt.TopLevelMixin) -> dict[str, str]:
    """A chart's Vega-Lite spec, safe inside a <script> element."""
    return {"id": name, "spec": json.dumps(chart.to_dict()).replace("</", "<\\/")}


def chart_specs(
    rows: list[Row],
    observations: pd.DataFrame,
    target: Target,
    compiled_on: Target | None,
    verdicts: dict[str, Any],
) -> list:
    labels = {row.id: row for row in rows}
    same_hardware = "source-hardware" in target.judges
    built = [("throughput", charts.throughput(rows, observations, labels, target.name, with_published=same_hardware))]
    if compiled_on is not None:
        bands = charts.verdict_bands(verdicts)
        with_published = "source-hardware" in compiled_on.judges
        built += [
            ("predicted", charts.predicted_throughput(rows, observations, labels, compiled_on.name, bands)),
            ("step-terms", charts.step_terms(observations, labels, compiled_on.name)),
            ("memory", charts.memory(rows, observations, labels, compiled_on.spec["title"], with_published)),
        ]
    built += [
        ("losses", charts.loss_curves(observations, labels)),
        ("probe", charts.probe(observations)),
        ("overlap", charts.overlap(observations, labels)),
    ]
    return [inline_spec(name, chart) for name, chart in built if chart is not None]


# What a reviewer weighs the claims by: the memory compiled against published, the throughput
# predicted against published, and the throughput measured where this target is the source's
# hardware. The rest (CPU throughput of scaled-down rows, step terms, losses) are diagnostics.
MAIN_CHARTS = ("memory", "predicted")


def split(specs: list[dict[str, str]], target: Target) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """The charts of the target's page and those of its appendix, in their order."""
    main = set(MAIN_CHARTS) | ({"throughput"} if "source-hardware" in target.judges else set())
    return [s for s in specs if s["id"] in main], [s for s in specs if s["id"] not in main]


def whatif_charts(observations: pd.DataFrame) -> list[dict[str, Any]]:
    chart = charts.frontier(observations)
    return [] if chart is None else [inline_spec("frontier", chart)]


def measured_chart(measured: dict[str, Any] | None) -> dict[str, str] | None:
    """The runs measured elsewhere, predicted against measured (present/measured_runs.py's section)."""
    chart = charts.measured_against_predicted(measured["runs"]) if measured else None
    return inline_spec("measured-runs", chart) if chart is not None else None
