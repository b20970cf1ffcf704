"""The report's Altair charts, each built from plain records (so each is testable alone)."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

EVIDENCE_COLOURS = alt.Scale(
    domain=["published", "measured", "compiled", "analytic"], range=["#4c4c4c", "#1f77b4", "#ff7f0e", "#2ca02c"]
)


def throughput(records: list[dict[str, Any]]) -> alt.TopLevelMixin:
    """records: row, label, table, source (published | measured), tflops_per_device."""
    frame = pd.DataFrame(records, columns=["row", "label", "table", "source", "tflops_per_device"])
    return (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("tflops_per_device:Q", title="TFLOPs/s/device"),
            y=alt.Y("label:N", title=None, sort=None),
            color=alt.Color("source:N", scale=EVIDENCE_COLOURS, title="evidence"),
            tooltip=["row", "source", alt.Tooltip("tflops_per_device:Q", format=",.4g")],
        )
        .properties(width=320, height=alt.Step(14))
        .facet(
            row=alt.Row("table:N", title=None),
            column=alt.Column("source:N", title=None),
            title="Throughput per row: published (GB200 NVL72, 128 GPUs) beside measured on this target",
        )
        .resolve_scale(x="independent", y="independent")
    )


def memory(records: list[dict[str, Any]], capacity_gib: float | None) -> alt.TopLevelMixin:
    """records: row, label, table, source, memory (device | host), gib."""
    frame = pd.DataFrame(records, columns=["row", "label", "table", "source", "memory", "gib"])
    frame["capacity_gib"] = capacity_gib
    bars = (
        alt.Chart()
        .mark_bar()
        .encode(
            x=alt.X("gib:Q", title="GiB per device"),
            y=alt.Y("label:N", title=None, sort=None),
            yOffset="source:N",
            color=alt.Color("source:N", scale=EVIDENCE_COLOURS, title="evidence"),
            tooltip=["row", "source", "memory", alt.Tooltip("gib:Q", format=",.3f")],
        )
    )
    layers = [bars]
    if capacity_gib:
        layers.append(
            alt.Chart()
            .transform_filter(alt.datum.memory == "device")
            .mark_rule(color="crimson", strokeDash=[4, 3])
            .encode(x="max(capacity_gib):Q")
        )
    title = "Device and host memory per row" + (
        f" (dashed: {capacity_gib:g} GiB device capacity)" if capacity_gib else ""
    )
    return (
        alt.layer(*layers, data=frame)
        .properties(width=300, height=alt.Step(10))
        .facet(row=alt.Row("table:N", title=None), column=alt.Column("memory:N", title=None), title=title)
        .resolve_scale(y="independent")
    )


def loss_curves(records: list[dict[str, Any]]) -> alt.TopLevelMixin:
    """records: table, label, step, loss."""
    frame = pd.DataFrame(records, columns=["table", "label", "step", "loss"])
    return (
        alt.Chart(frame)
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", title="step"),
            y=alt.Y("loss:Q", scale=alt.Scale(zero=False)),
            color=alt.Color("label:N", title="row"),
            strokeDash="label:N",
            tooltip=["label", "step", alt.Tooltip("loss:Q", format=".5f")],
        )
        .properties(width=420, height=220)
        .facet(row=alt.Row("table:N", title=None), title="Loss per step, measured, by row (placement and flags)")
        .resolve_scale(y="independent", color="independent", strokeDash="independent")
    )
