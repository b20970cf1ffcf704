"""The charts the claims are weighed by: memory compiled against the published and the limit, the
activations' bytes apart, throughput measured or predicted beside the published, each ratio claim as a
ratio beside the post's value and its tolerance, and what makes each predicted step."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from offload_repro.core.data import Row
from offload_repro.core.evidence_classes import EVIDENCE
from offload_repro.judge import metric_names as names
from offload_repro.present.chart_parts import LABEL_LIMIT, by_table, colours, evidence_bars, labelled, observed, titled


def throughput(
    rows: list[Row], observations: pd.DataFrame, labels: dict[str, Row], machine: str, with_published: bool
) -> alt.TopLevelMixin | None:
    measured = observed(observations, "measured", "tflops_per_device")
    records = [{"row": o.row, "source": "measured", "tflops": o.value} for o in measured.itertuples()]
    if not records:
        return None
    if with_published:
        records += [
            {"row": r.id, "source": "published", "tflops": r.published["tflops_per_device"]}
            for r in rows
            if r.published["tflops_per_device"] is not None
        ]
        title = titled(
            "Throughput per row: published beside measured",
            "Both on the source's hardware: the throughput claims above are judged on these numbers.",
        )
    else:
        title = titled(
            f"Throughput per row, measured on {machine} only",  # the target's name
            "These are not comparable to the published GB200 numbers: a scaled-down model on other hardware"
            " (on a CPU an offload placement moves nothing). They show that every row trained and what it cost"
            " here; no claim is judged from them.",
        )
    data = labelled(records, labels, ["source", "tflops"])
    bars = evidence_bars(alt.Chart(data), data["source"], "tflops", "TFLOPs/s/device", ",.4g")
    return by_table(bars.properties(width=420, height=alt.Step(12)), title)


def memory(
    rows: list[Row], observations: pd.DataFrame, labels: dict[str, Row], machine: str, with_published: bool
) -> alt.TopLevelMixin:
    records = []
    for evidence, metric, kind in (
        ("compiled", names.DEVICE_GIB, "device"),
        ("compiled", names.HOST_GIB, "host"),
        ("analytic", names.DEVICE_SAVED_GIB, "device"),
        ("analytic", names.OFFLOADED_GIB, "host"),
    ):
        records += [
            {"row": o.row, "source": evidence, "memory": kind, "gib": o.value}
            for o in observed(observations, evidence, metric).itertuples()
        ]
    if with_published:
        for row in rows:
            for key, kind in ((names.DEVICE_GIB, "device"), (names.HOST_GIB, "host")):
                if row.published[key] is not None:
                    records.append({"row": row.id, "source": "published", "memory": kind, "gib": row.published[key]})
    data = labelled(records, labels, ["source", "memory", "gib"])
    capacity = observed(observations, "compiled", names.ALLOCATOR_LIMIT_GIB)["value"]
    layers = [evidence_bars(alt.Chart(), data["source"], "gib", "GiB per device", ",.3f", extra_tooltip=["memory"])]
    purpose = "Which rows fit the GPU"
    purpose += ", and how close the compiled programs come to the published memory" if with_published else ""
    purpose += "; analytic bars count the saved or offloaded activations only."
    if len(capacity):
        limit = data["limit_gib"] = float(capacity.iloc[0])
        layers.append(
            alt.Chart()
            .transform_filter(alt.datum.memory == "device")
            .mark_rule(color="crimson", strokeDash=[4, 3])
            .encode(x="max(limit_gib):Q")
        )
        purpose += f" Dashed: the {limit:.1f} GiB JAX's allocator takes of each GPU, what a row must fit within."
    title = titled(
        f"Device and host memory per row, compiled for {machine}"
        + (", beside the published" if with_published else ""),
        purpose,
    )
    chart = alt.layer(*layers, data=data).properties(width=300, height=alt.Step(9))
    return by_table(chart, title, column=alt.Column("memory:N", title=None))


def verdict_bands(verdicts: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per row, the prediction a value claim on its throughput was judged by, with the band its
    verdict took (none where the model's error is unmeasured for it): the one value and band of that
    claim on every page."""
    found = {}
    for claim in verdicts["claims"]:
        if claim["check"] != "value":
            continue
        for judgement in claim["judgements"]:
            band = judgement.get("band") or {}
            value = judgement.get("observed")
            if judgement["evidence"] == "predicted" and value is not None and judgement.get("metric") == names.TFLOPS:
                # an open side (no bound), or a band left unmeasured, is drawn only as far as the
                # prediction: the row's one value stands, never its calibration's own
                low, high = (value if end is None else end for end in (band.get("low"), band.get("high")))
                found[claim["subjects"][0]] = {"tflops": value, "low": low, "high": high}
    return found


def predicted_throughput(
    rows: list[Row], observations: pd.DataFrame, labels: dict[str, Row], machine: str, bands: dict[str, Any]
) -> alt.TopLevelMixin | None:
    """Predicted TFLOPs/s/device beside the published. A row a value claim judges shows the
    prediction and the band its verdict took (`bands`: the stated uncertainties widened by the
    model's measured error); any other row its default calibration's range over the settings."""
    chosen = observed(observations, "predicted", names.TFLOPS)
    records = [
        {"row": o.row, "source": "predicted", "tflops": o.value, "low": o.low, "high": o.high}
        | (bands.get(o.row) or {})
        for o in chosen.itertuples()
        if o.target == machine
    ]
    if not records:
        return None
    records += [
        {"row": r.id, "source": "published", "tflops": r.published["tflops_per_device"], "low": None, "high": None}
        for r in rows
        if r.published["tflops_per_device"] is not None and any(rec["row"] == r.id for rec in records)
    ]
    data = labelled(records, labels, ["source", "tflops", "low", "high"])
    # a model whose only values are one calibration row's prediction of itself (its published value,
    # by construction) has nothing to compare, and an axis with no span to draw
    spans = data.groupby("table")[["tflops", "low", "high"]].agg(lambda v: v.max() - v.min()).max(axis=1)
    data = data[data["table"].map(spans) > 1e-6 * data["tflops"].abs().max()]
    if data.empty:
        return None
    base = alt.Chart(data).encode(
        y=alt.Y("label:N", title=None, sort=None, axis=alt.Axis(labelLimit=LABEL_LIMIT)), yOffset="source:N"
    )
    # from zero: an axis that starts near the values would make a few percent look like a gulf
    points = base.mark_point(filled=True, size=60).encode(
        x=alt.X("tflops:Q", title="TFLOPs/s/device", scale=alt.Scale(zero=True)),
        color=alt.Color("source:N", scale=colours(data["source"]), title="evidence"),
        tooltip=["row", "source", *(alt.Tooltip(f"{field}:Q", format=",.0f") for field in ("tflops", "low", "high"))],
    )
    band = (
        base.transform_filter(alt.datum.source == "predicted")
        .mark_rule(color=EVIDENCE["predicted"].colour)
        .encode(x="low:Q", x2="high:Q")
    )
    title = titled(
        f"Predicted throughput per row on {machine}, beside the published",
        "A row whose throughput a claim states: the prediction and band its verdict took (the stated"
        " settings' range widened by the model's measured error; an open side is drawn only to the point). Any other"
        " row: its default calibration's range over the settings alone.",
    )
    return by_table(alt.layer(band, points).properties(width=420, height=alt.Step(14)), title, x="independent")


def step_terms(observations: pd.DataFrame, labels: dict[str, Row], machine: str) -> alt.TopLevelMixin | None:
    """Each row's predicted step as the terms that sum to it, stacked in the step-time model's order."""
    records = [
        {"row": o.row, "term": name, "order": index, "seconds": o.value}
        for index, (metric, name) in enumerate(names.STEP_TERMS.items())
        for o in observed(observations, "predicted", metric).itertuples()
        if o.target == machine
    ]
    if not records:
        return None
    data = labelled(records, labels, ["term", "order", "seconds"])
    title = titled(
        f"What makes each predicted step on {machine}",
        "Compute, then what each channel adds that the schedule cannot hide: the memory-bound work,"
        " the host copies, the collectives on NVLink and the traffic between NVLink domains; at the"
        " default calibration and the central setting.",
    )
    bars = (
        alt.Chart(data)
        .mark_bar()
        .encode(
            y=alt.Y("label:N", title=None, sort=None),
            x=alt.X("sum(seconds):Q", title="seconds per step"),
            color=alt.Color(
                "term:N",
                sort=list(names.STEP_TERMS.values()),
                title="term",
                legend=alt.Legend(labelLimit=LABEL_LIMIT),
            ),
            order=alt.Order("order:Q"),
            tooltip=["row", "term", alt.Tooltip("seconds:Q", format=".2f")],
        )
    )
    return by_table(bars.properties(width=420, height=alt.Step(14)), title)
