"""The report's charts, assembled: which of them a target's page and its appendix show, each as a
Vega-Lite spec safe inside a <script> element; and the diagnostic charts (losses, the host link's
probe, copy overlap, capacity frontiers, runs measured elsewhere, the cost of offloading against the
regime). The charts the claims are weighed by are present/claim_charts.py's.

No chart sets numbers from different hardware on one axis: published GB200 values appear
beside measured or compiled ones only when those come from the source's hardware class;
otherwise a chart is titled with the one machine its numbers come from.
"""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from offload_repro.core.data import Row, Target
from offload_repro.judge import metric_names as names
from offload_repro.present.chart_parts import LABEL_LIMIT, by_table, inline_spec, labelled, titled
from offload_repro.present.claim_charts import (
    activations,
    memory,
    memory_tolerances,
    predicted_throughput,
    ratio_claims,
    step_terms,
    throughput,
    verdict_bands,
)


def loss_curves(observations: pd.DataFrame, labels: dict[str, Row]) -> alt.TopLevelMixin | None:
    chosen = observations[(observations["metric"] == "loss") & observations["at"].notna()]
    if chosen.empty:
        return None
    records = [{"row": o.row, "step": int(o.at), "loss": o.value} for o in chosen.itertuples()]
    lines = (
        alt.Chart(labelled(records, labels, ["step", "loss"]))
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", title="step"),
            y=alt.Y("loss:Q", scale=alt.Scale(zero=False)),
            color=alt.Color("label:N", title="row", legend=alt.Legend(labelLimit=LABEL_LIMIT)),
            strokeDash=alt.StrokeDash("label:N", legend=alt.Legend(labelLimit=LABEL_LIMIT)),
            tooltip=["label", "step", alt.Tooltip("loss:Q", format=".5f")],
        )
        .properties(width=420, height=220)
    )
    title = titled(
        "Loss per step, measured, by row",
        "Placement and flags must not change the numerics: rows of one model should train alike, so their"
        " lines lie on one another; a line hidden under another trained the same (each row's dash tells them apart).",
    )
    return by_table(lines, title, color="independent", strokeDash="independent")


def probe(observations: pd.DataFrame) -> alt.TopLevelMixin | None:
    chosen = observations[observations["metric"].isin(["d2h_gb_s", "h2d_gb_s"])]
    if chosen.empty:
        return None
    data = pd.DataFrame(
        [{"bytes": o.at, "direction": o.metric.removesuffix("_gb_s"), "gb_s": o.value} for o in chosen.itertuples()]
    )
    lines = (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("bytes:Q", scale=alt.Scale(type="log"), title="bytes per copy"),
            y=alt.Y("gb_s:Q", title="GB/s"),
            color=alt.Color("direction:N"),
            tooltip=["direction", alt.Tooltip("bytes:Q", format=","), alt.Tooltip("gb_s:Q", format=".3g")],
        )
    )
    limit = observations[observations["metric"] == "link_limit_gb_s"]["value"]
    layers = [lines]
    if len(limit):
        layers.append(
            alt.Chart(pd.DataFrame({"limit": [float(limit.iloc[0])]})).mark_rule(strokeDash=[4, 3]).encode(y="limit:Q")
        )
    return alt.layer(*layers).properties(
        width=420,
        height=220,
        title=titled(
            "Transfer probe: pinned host memory, per copy size",
            "How much of the host link's bandwidth (dashed: its limit) copies of the offloaded tensors' sizes reach.",
        ),
    )


def overlap(observations: pd.DataFrame, labels: dict[str, Row]) -> alt.TopLevelMixin | None:
    parts = {"compute_s_per_step": "compute", "exposed_copy_s_per_step": "exposed copy"}
    chosen = observations[observations["metric"].isin(parts)]
    if chosen.empty:
        return None
    records = [{"row": o.row, "part": parts[o.metric], "seconds": o.value} for o in chosen.itertuples()]
    return (
        alt.Chart(labelled(records, labels, ["part", "seconds"]))
        .mark_bar()
        .encode(
            x=alt.X("seconds:Q", title="seconds per step (profiler trace)", stack=True),
            y=alt.Y("label:N", title=None, axis=alt.Axis(labelLimit=LABEL_LIMIT)),
            color=alt.Color("part:N", title=None),
            tooltip=["row", "part", alt.Tooltip("seconds:Q", format=".4g")],
        )
        .properties(
            width=420,
            height=alt.Step(16),
            title=titled(
                "Compute and exposed host-copy time per step, offload rows",
                "From the profiler trace: how much of the copy time the schedule hides under compute.",
            ),
        )
    )


def frontier(observations: pd.DataFrame) -> alt.TopLevelMixin | None:
    """Compiled device memory per micro batch of each policy, one panel per GPU target (what-if)."""
    chosen = observations[(observations["metric"] == "frontier_device_gib") & observations["at"].notna()]
    if chosen.empty:
        return None
    data = chosen[["target", "policy", "at", "value"]].rename(columns={"at": "micro_batch", "value": "gib"})
    data = data.astype({"micro_batch": int})
    capacity = observations[(observations["metric"] == names.ALLOCATOR_LIMIT_GIB) & observations["at"].isna()]
    data = data.merge(
        capacity.groupby("target")["value"].first().rename("limit_gib").reset_index(), on="target", how="left"
    )
    points = (
        alt.Chart()
        .mark_line(point=True)
        .encode(
            x=alt.X("micro_batch:Q", scale=alt.Scale(type="log", base=2), title="micro batch (compiled points)"),
            y=alt.Y("gib:Q", title="device GiB per GPU"),
            color=alt.Color("policy:N"),
            tooltip=["target", "policy", "micro_batch", alt.Tooltip("gib:Q", format=".1f")],
        )
    )
    limit = alt.Chart().mark_rule(color="crimson", strokeDash=[4, 3]).encode(y="max(limit_gib):Q")
    return (
        alt.layer(points, limit, data=data)
        .properties(width=300, height=240)
        .facet(
            column=alt.Column("target:N", title=None),
            title=titled(
                "What-if: compiled device memory per micro batch",
                "The largest micro batch each placement fits on each GPU (dashed: its capacity); each GPU has its"
                " own axis.",
            ),
        )
        .resolve_scale(y="independent")
    )


def measured_against_predicted(lines: list[dict[str, Any]]) -> alt.TopLevelMixin | None:
    """Each run measured elsewhere: its predicted step (its group's named anchor calibrating (a))
    against its measured step, with the line y = x; beside it, the same error against the GPU count,
    where a few percent are visible."""
    predicted = [line for line in lines if line.get("predicted_step_s") is not None]
    if not predicted:
        return None
    steps = {"measured_step_s": "measured", "predicted_step_s": "predicted"}
    data = pd.DataFrame(predicted)[["run", *steps, "precision", "model", "gpus", "error"]].rename(columns=steps)
    top = max(max(data["measured"]), max(data["predicted"])) * 1.05
    diagonal = alt.Chart(pd.DataFrame({"x": [0.0, top], "y": [0.0, top]})).mark_line(color="#999", strokeDash=[4, 4])
    diagonal = diagonal.encode(x="x:Q", y="y:Q")
    runs = (
        alt.Chart(data)
        .mark_point(filled=True, size=70)
        .encode(
            color=alt.Color("precision:N", title="precision"),
            shape=alt.Shape("model:N", title="model"),
            tooltip=[
                "run",
                alt.Tooltip("measured:Q", format=".3f"),
                alt.Tooltip("predicted:Q", format=".3f"),
                alt.Tooltip("error:Q", format="+.1%"),
            ],
        )
    )
    points = runs.encode(
        x=alt.X("measured:Q", title="measured step, s", scale=alt.Scale(domain=[0, top])),
        y=alt.Y("predicted:Q", title="predicted step, s", scale=alt.Scale(domain=[0, top])),
    )
    zero = alt.Chart(pd.DataFrame({"y": [0.0]})).mark_rule(color="#999", strokeDash=[4, 4]).encode(y="y:Q")
    errors = runs.encode(
        x=alt.X("gpus:Q", title="GPUs", scale=alt.Scale(type="log", base=2)),
        y=alt.Y("error:Q", title="predicted / measured - 1", axis=alt.Axis(format="+%")),
    )
    title = titled(
        "The step-time model against published runs measured elsewhere",
        "Each run's step predicted from its program compiled here, the model calibrated on one run of its GPU,"
        " precision and model kind (the group's named anchor); on the dashed line the prediction is the"
        " measurement. Right: the same error against the GPU count.",
    )
    return alt.hconcat(
        alt.layer(diagonal, points).properties(width=320, height=320),
        alt.layer(zero, errors).properties(width=320, height=320),
    ).properties(title=title)


SETS = {"sweep": "chip sweep, measured", "chip_rows": "chip rows, measured", "source": "source on GB200, published"}


def offload_cost(pairs: dict[str, Any] | None) -> alt.TopLevelMixin | None:
    """Each pair's cost of offloading (an offloading row's throughput over one that offloads nothing,
    less one) against its regime (host-copy over compute time): the chip's pairs as measured, the model's
    prediction of them as a line per family, and the source's rows as published, each at its regime, so
    that a reader sees whether the source's rows lie inside the range the chip measured. Drawn from the
    result's `chart` records as they are."""
    records = (pairs or {}).get("chart") or []
    if not records:
        return None
    data = pd.DataFrame(records).assign(where=lambda d: d["set"].map(SETS))
    x = alt.X("copy_to_compute:Q", title="host-copy time / compute time", scale=alt.Scale(type="log"))
    tooltip = [
        "pair",
        "where",
        "calibrated_on",
        alt.Tooltip("copy_to_compute:Q", format=".3f"),
        alt.Tooltip("measured_pct:Q", format="+.1f", title="measured or published, %"),
        alt.Tooltip("predicted_pct:Q", format="+.1f", title="predicted, %"),
    ]
    base = alt.Chart(data).encode(x=x, color=alt.Color("family:N", title="model"), tooltip=tooltip)
    measured = base.mark_point(filled=True, size=80).encode(
        y=alt.Y("measured_pct:Q", title="throughput ratio - 1, %"), shape=alt.Shape("where:N", title="pair")
    )
    chip = data[data["set"] != "source"]
    predicted = (
        alt.Chart(chip)
        .mark_line(strokeDash=[5, 3], point=alt.OverlayMarkDef(filled=False, size=50))
        .encode(x=x, y="predicted_pct:Q", color="family:N", tooltip=tooltip)
    )
    source = base.transform_filter(alt.datum.set == "source").mark_point(filled=False, size=80, shape="diamond")
    source = source.encode(y="predicted_pct:Q")
    zero = alt.Chart(pd.DataFrame({"y": [0.0]})).mark_rule(color="#999").encode(y="y:Q")
    layers = [zero, measured, predicted, source]
    spans = [
        {"family": family, **span}
        for family, span in ((pairs or {}).get("regimes") or {}).get("chip_range", {}).items()
    ]
    if spans:  # the regimes the chip measured pairs at, per model: a bar along the foot, its ends ticked
        foot = alt.Chart(pd.DataFrame(spans)).encode(color="family:N", y=alt.value(290))
        layers.insert(0, foot.mark_rule(strokeWidth=6, opacity=0.4).encode(x="low:Q", x2="high:Q"))
        layers += [foot.mark_tick(thickness=3, size=14).encode(x=f"{end}:Q") for end in ("low", "high")]
    title = titled(
        "The cost of offloading against the regime: the chip's pairs and the source's rows",
        "Filled: measured on the chip, or published for the source's rows on GB200; dashed line and hollow"
        " circles: the step-time model's prediction of the chip's pairs; hollow diamonds: its prediction of"
        " the source's pairs. Along the foot: the regimes the chip measured each model's pairs at.",
    )
    return alt.layer(*layers).properties(width=460, height=300, title=title)


def chart_specs(
    rows: list[Row],
    observations: pd.DataFrame,
    target: Target,
    compiled_on: Target | None,
    verdicts: dict[str, Any],
) -> list:
    labels = {row.id: row for row in rows}
    same_hardware = "source-hardware" in target.judges
    built = [("throughput", throughput(rows, observations, labels, target.name, with_published=same_hardware))]
    if compiled_on is not None:
        bands = verdict_bands(verdicts)
        with_published = "source-hardware" in compiled_on.judges
        built += [
            ("predicted", predicted_throughput(rows, observations, labels, compiled_on.name, bands)),
            ("step-terms", step_terms(observations, labels, compiled_on.name)),
            (
                "memory",
                memory(
                    rows,
                    observations,
                    labels,
                    compiled_on.spec["title"],
                    with_published,
                    memory_tolerances(verdicts, rows),
                ),
            ),
            ("ratios", ratio_claims(verdicts)),
            ("activations", activations(observations, labels)),
        ]
    built += [
        ("losses", loss_curves(observations, labels)),
        ("probe", probe(observations)),
        ("overlap", overlap(observations, labels)),
    ]
    return [inline_spec(name, chart) for name, chart in built if chart is not None]


# What a reviewer weighs the claims by: the memory compiled against published, the speed ratios
# against published with their tolerances, and the throughput measured where this target is the
# source's hardware. The rest (the throughputs predicted per row, whose bands stand in the verdict
# table; CPU throughput of scaled-down rows, step terms, losses) are diagnostics, in the appendix.
MAIN_CHARTS = ("memory", "ratios")


def split(specs: list[dict[str, str]], target: Target) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """The charts of the target's page and those of its appendix, in their order."""
    main = set(MAIN_CHARTS) | ({"throughput"} if "source-hardware" in target.judges else set())
    return [s for s in specs if s["id"] in main], [s for s in specs if s["id"] not in main]


def whatif_charts(observations: pd.DataFrame) -> list[dict[str, Any]]:
    chart = frontier(observations)
    return [] if chart is None else [inline_spec("frontier", chart)]


def measured_chart(measured: dict[str, Any] | None) -> dict[str, str] | None:
    """The runs measured elsewhere, predicted against measured (present/measured_runs.py's section)."""
    chart = measured_against_predicted(measured["runs"]) if measured else None
    return inline_spec("measured-runs", chart) if chart is not None else None


def pair_charts(pairs: dict[str, Any] | None) -> list[dict[str, str]]:
    """The step-time model's error on ratios, against the regime (produce/predicted/pair_errors.py)."""
    chart = offload_cost(pairs)
    return [] if chart is None else [inline_spec("offload-cost", chart)]
