"""What every chart of the report shares: the evidence colours, titles that say what a chart is for,
the observations a chart reads, rows labelled by their table, bars per evidence, one panel per table,
and a chart as a spec safe inside a <script> element."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable
from typing import Any

import altair as alt
import pandas as pd

from offload_repro.core.data import Row
from offload_repro.core.evidence_classes import EVIDENCE, PUBLISHED_COLOUR

PALETTE = {"published": PUBLISHED_COLOUR} | {name: e.colour for name, e in EVIDENCE.items()}
# Long row labels ('Offload, no LHS, no pipelining (mb 8)') read whole beside their bars.
LABEL_LIMIT = 320


def colours(sources: Iterable[str]) -> alt.Scale:
    """Each evidence's colour, for the sources a chart draws only: its legend lists nothing it does not draw."""
    drawn = set(sources)
    domain = [name for name in PALETTE if name in drawn]
    return alt.Scale(domain=domain, range=[PALETTE[name] for name in domain])


def titled(text: str, purpose: str) -> alt.TitleParams:
    """A chart's title and, below it, what the chart is for, wrapped so that no line is cut off."""
    return alt.TitleParams(text=text, subtitle=textwrap.wrap(purpose, 72), anchor="start", subtitleColor="#444")


def observed(observations: pd.DataFrame, evidence: str, metric: str) -> pd.DataFrame:
    chosen = observations[
        (observations["evidence"] == evidence) & (observations["metric"] == metric) & observations["at"].isna()
    ]
    return chosen[chosen["row"].notna()]


def labelled(records: list[dict[str, Any]], labels: dict[str, Row], columns: list[str]) -> pd.DataFrame:
    for record in records:
        record.update(label=labels[record["row"]].label, table=labels[record["row"]].table)
    return pd.DataFrame(records, columns=["row", "label", "table", *columns])


def evidence_bars(
    chart: alt.Chart, sources: Iterable[str], field: str, title: str, number_format: str, extra_tooltip=()
) -> alt.Chart:
    """One bar per row and evidence source, coloured by the source."""
    return chart.mark_bar().encode(
        # few ticks, and the greedy rule drops a label that would still touch its neighbour: panels are narrow
        x=alt.X(f"{field}:Q", title=title, axis=alt.Axis(labelOverlap="greedy", tickCount=5)),
        y=alt.Y("label:N", title=None, sort=None, axis=alt.Axis(labelLimit=LABEL_LIMIT)),
        yOffset="source:N",
        color=alt.Color("source:N", scale=colours(sources), title="evidence"),
        tooltip=["row", "source", *extra_tooltip, alt.Tooltip(f"{field}:Q", format=number_format)],
    )


def by_table(chart: alt.Chart, title: alt.TitleParams, column=alt.Undefined, **independent: str) -> alt.TopLevelMixin:
    """One panel per table of rows (one model each), each with its own row axis."""
    # each panel's table named above it, level: a rotated name beside a short panel overlaps the next one's
    header = alt.Header(labelAngle=0, labelOrient="top", labelAnchor="start", labelFontWeight="bold")
    facets = chart.facet(row=alt.Row("table:N", title=None, header=header), column=column, title=title)
    return facets.resolve_scale(y="independent", **independent)


def inline_spec(name: str, chart: alt.TopLevelMixin) -> dict[str, str]:
    """A chart's Vega-Lite spec, safe inside a <script> element."""
    return {"id": name, "spec": json.dumps(chart.to_dict()).replace("</", "<\\/")}
