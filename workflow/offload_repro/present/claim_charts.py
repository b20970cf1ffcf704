"""The charts the claims are weighed by: memory compiled against the published and the limit, the
activations' bytes apart, throughput measured or predicted beside the published, each ratio claim as a
ratio beside the post's value and its tolerance, and what makes each predicted step."""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from offload_repro.core.data import Row
from offload_repro.core.evidence_bands import band, span
from offload_repro.core.evidence_classes import EVIDENCE
from offload_repro.judge import metric_names as names
from offload_repro.present.chart_parts import LABEL_LIMIT, by_table, colours, evidence_bars, labelled, observed, titled
from offload_repro.present.text import fmt, percent


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


def memory_tolerances(verdicts: dict[str, Any], rows: list[Row]) -> dict[tuple[str, str], tuple[float, float]]:
    """(row, 'device' or 'host') -> the range a memory value claim's one tolerance allows around its
    published value, as judged (the verdicts' claims)."""
    by_id = {row.id: row for row in rows}
    found = {}
    for claim in verdicts.get("claims", []):
        tolerance, published, subjects = claim.get("tolerance"), claim.get("published"), claim.get("subjects") or []
        if claim["check"] != "value" or claim.get("unit") != "GiB" or not tolerance or len(subjects) != 1:
            continue
        row = by_id.get(subjects[0])
        kind = next((k for k, key in MEMORY_KINDS if row and row.published.get(key) == published), None)
        if kind:
            allowed = tolerance["absolute"] if "absolute" in tolerance else tolerance["relative"] * abs(published)
            found[subjects[0], kind] = (published - allowed, published + allowed)
    return found


MEMORY_KINDS = (("device", names.DEVICE_GIB), ("host", names.HOST_GIB))
COMPILED_BAND = "compiled_memory"  # the band of compiled device memory (experiments/evidence-bands.yaml)


def memory(
    rows: list[Row],
    observations: pd.DataFrame,
    labels: dict[str, Row],
    machine: str,
    with_published: bool,
    tolerances: dict[tuple[str, str], tuple[float, float]] | None = None,
) -> alt.TopLevelMixin:
    """Each row's device and host memory as compiled, beside the published with each claim's tolerance
    (a grey span), the allocator's limit drawn and labelled, every bar labelled as the page writes it,
    and each compiled device figure's measured band (a whisker): what the verdicts hold to a tolerance."""
    compiled_band = band(COMPILED_BAND, "the memory chart")
    records = [
        {"row": o.row, "source": "compiled", "memory": kind, "gib": o.value}
        # where a run's device memory would lie, given the compiled figure: the evidence's measured band
        | (dict(zip(("band_low", "band_high"), span(compiled_band, o.value), strict=True)) if kind == "device" else {})
        for kind, metric in MEMORY_KINDS
        for o in observed(observations, "compiled", metric).itertuples()
    ]
    if with_published:
        for row in rows:
            for kind, key in MEMORY_KINDS:
                if row.published[key] is not None:
                    low, high = (tolerances or {}).get((row.id, kind), (None, None))
                    records.append(
                        {"row": row.id, "source": "published", "memory": kind, "gib": row.published[key]}
                        | {"tolerance_low": low, "tolerance_high": high}
                    )
    columns = ["source", "memory", "gib", "tolerance_low", "tolerance_high", "band_low", "band_high"]
    data = labelled(records, labels, columns)
    data["text"] = data["gib"].map(fmt)
    data["text_at"] = data["band_high"].fillna(data["gib"])  # a label clear of its bar's whisker
    capacity = observed(observations, "compiled", names.ALLOCATOR_LIMIT_GIB)["value"]
    bars = evidence_bars(alt.Chart(), data["source"], "gib", "GiB per device", ",.3f", extra_tooltip=["memory"])
    labels_layer = (
        alt.Chart()
        .mark_text(align="left", dx=4, fontSize=10, color="#333")
        .encode(y=alt.Y("label:N", sort=None), yOffset="source:N", x="text_at:Q", text="text:N")
    )
    spans = (
        alt.Chart()
        .transform_filter("isValid(datum.tolerance_low)")
        .mark_rule(color="#888", strokeWidth=7, opacity=0.35)
        .encode(y=alt.Y("label:N", sort=None), yOffset="source:N", x="tolerance_low:Q", x2="tolerance_high:Q")
    )
    band_rules = (
        alt.Chart()
        .transform_filter("isValid(datum.band_low)")
        .mark_errorbar(ticks=True, color="#222", thickness=1.5)
        .encode(
            y=alt.Y("label:N", sort=None),
            yOffset="source:N",
            x=alt.X("band_low:Q", title="GiB per device"),
            x2="band_high:Q",
            tooltip=["row", *(alt.Tooltip(f"{end}:Q", format=",.1f") for end in ("band_low", "band_high"))],
        )
    )
    layers = [spans, bars, band_rules, labels_layer]
    purpose = "Which rows fit the GPU"
    if with_published:
        purpose += (
            ", and how close the compiled programs come to the published memory: a grey span is the"
            " tolerance of the claim that states it"
        )
    purpose += (
        ". The black whisker on a compiled device bar: where a run's device memory would lie, by the"
        " measured band of compiled evidence (experiments/evidence-bands.yaml): the verdicts judge that"
        " band, not the bar"
    )
    purpose += ". The activations' own bytes are charted apart, in the appendix."
    if len(capacity):
        limit = data["limit_gib"] = float(capacity.iloc[0])
        data["limit_text"] = f"limit {fmt(limit)} GiB"
        rule = alt.Chart().transform_filter(alt.datum.memory == "device")
        layers += [
            rule.mark_rule(color="crimson", strokeDash=[4, 3]).encode(x="max(limit_gib):Q"),
            rule.mark_text(color="crimson", align="right", dx=-3, dy=-4, fontSize=10, baseline="bottom").encode(
                x="max(limit_gib):Q", y=alt.value(0), text="max(limit_text):N"
            ),
        ]
        purpose += f" Dashed: the {fmt(limit)} GiB JAX's allocator takes of each GPU, what a row must fit within."
    title = titled(
        f"Device and host memory per row, compiled for {machine}"
        + (", beside the published" if with_published else ""),
        purpose,
    )
    chart = alt.layer(*layers, data=data).properties(width=300, height=alt.Step(11))
    return by_table(chart, title, column=alt.Column("memory:N", title=None))


def activations(observations: pd.DataFrame, labels: dict[str, Row]) -> alt.TopLevelMixin | None:
    """Each row's activation bytes by MaxText's configs: what its placement keeps on the device and
    what it offloads, per step; apart from the total memory a program holds."""
    records = [
        {"row": o.row, "source": "analytic", "memory": kind, "gib": o.value}
        for kind, metric in (("kept on the device", names.DEVICE_SAVED_GIB), ("offloaded", names.OFFLOADED_GIB))
        for o in observed(observations, "analytic", metric).itertuples()
    ]
    if not records:
        return None
    data = labelled(records, labels, ["source", "memory", "gib"])
    data["text"] = data["gib"].map(fmt)
    bars = evidence_bars(alt.Chart(), data["source"], "gib", "GiB per device per step", ",.3f", ["memory"])
    text = bars.mark_text(align="left", dx=3, fontSize=10, color="#333").encode(text="text:N")
    title = titled(
        "The saved activations' bytes per row, by MaxText's configs (analytic)",
        "What each row's placement keeps on the device and what it offloads, counted from the tensors it"
        " saves: a part of the device memory above, never the whole of it.",
    )
    chart = alt.layer(bars, text, data=data).properties(width=300, height=alt.Step(11))
    return by_table(chart, title, column=alt.Column("memory:N", title=None))


def ratio_claims(verdicts: dict[str, Any]) -> alt.TopLevelMixin | None:
    """Each ratio claim as a ratio, in percent: the post's value with its one tolerance (a grey span),
    and beside it each evidence that judged it, with the band its verdict took (a prediction's error
    in pp); zero marked, so that a sign is read at a glance."""
    records = []
    for claim in verdicts.get("claims", []):
        published, tolerance = claim.get("published"), claim.get("tolerance")
        if claim["check"] != "ratio" or published is None or not tolerance:
            continue
        allowed = tolerance["absolute"] if "absolute" in tolerance else tolerance["relative"] * abs(published)
        records.append(
            {"claim": claim["id"], "source": "published", "pct": published * 100}
            | {"low": (published - allowed) * 100, "high": (published + allowed) * 100, "verdict": claim["verdict"]}
        )
        for judgement in claim["judgements"]:
            observed_value = judgement.get("observed")
            if not isinstance(observed_value, int | float) or isinstance(observed_value, bool):
                continue
            band = judgement.get("band") or {}
            low, high = (observed_value if band.get(end) is None else band[end] for end in ("low", "high"))
            records.append(
                {"claim": claim["id"], "source": judgement["evidence"], "pct": observed_value * 100}
                | {"low": low * 100, "high": high * 100, "verdict": judgement["verdict"]}
            )
    if not any(record["source"] != "published" for record in records):
        return None
    data = pd.DataFrame(records)
    data["text"] = (data["pct"] / 100).map(percent)
    base = alt.Chart(data).encode(
        y=alt.Y("claim:N", title=None, sort=None, axis=alt.Axis(labelLimit=LABEL_LIMIT)), yOffset="source:N"
    )
    colour = alt.Color("source:N", scale=colours(data["source"]), title="evidence")
    tooltip = ["claim", "source", "verdict", *(alt.Tooltip(f"{f}:Q", format="+.2f") for f in ("pct", "low", "high"))]
    spans = base.mark_rule(strokeWidth=6, opacity=0.35).encode(
        x=alt.X("low:Q", title="throughput ratio - 1, %"), x2="high:Q", color=colour
    )
    points = base.mark_point(filled=True, size=70).encode(x="pct:Q", color=colour, tooltip=tooltip)
    text = base.mark_text(align="left", dx=6, dy=-6, fontSize=10, color="#333").encode(x="pct:Q", text="text:N")
    zero = alt.Chart(pd.DataFrame({"x": [0.0]})).mark_rule(color="#999").encode(x="x:Q")
    title = titled(
        "The post's speed ratios as ratios: published with its tolerance, beside the evidence",
        "Grey span on the published point: the claim's one tolerance. On the evidence's point: the band its"
        " verdict took (a prediction's measured error on such ratios). A claim passes only where the"
        " whole band lies inside the tolerance.",
    )
    return alt.layer(zero, spans, points, text).properties(width=460, height=alt.Step(13), title=title)


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
    """Predicted TFLOPs/s/device beside every published one of the model. A row a value claim judges
    shows the prediction and the band its verdict took (`bands`: the stated uncertainties widened by
    the model's measured error); any other row its default calibration's range over the settings. The
    row a model is calibrated on is marked: its prediction is its published value by construction. A
    model that no rate calibrates shows its published values and says why nothing is predicted."""

    def at_machine(metric: str) -> dict[str, Any]:
        return {o.row: o.value for o in observed(observations, "predicted", metric).itertuples() if o.target == machine}

    calibrated_on, unpredicted = at_machine(names.CALIBRATED_ON), at_machine(names.UNPREDICTED_WHY)
    records = [
        {"row": o.row, "source": "predicted", "tflops": o.value, "low": o.low, "high": o.high}
        # a claim's verdict shows the row as other calibrations predict it; else its default
        # calibration's value, which for the calibration row is its own published value
        | {"role": CALIBRATION_ROLE if calibrated_on.get(o.row) == o.row and o.row not in bands else "prediction"}
        | (bands.get(o.row) or {})
        for o in observed(observations, "predicted", names.TFLOPS).itertuples()
        if o.target == machine
    ]
    tables = {labels[record["row"]].table for record in records} | {labels[row].table for row in unpredicted}
    records += [
        {"row": r.id, "source": "published", "tflops": r.published["tflops_per_device"], "low": None, "high": None}
        | {
            "role": "published",
            "note": f"not predicted: {unpredicted[r.id].split(':')[0]}" if r.id in unpredicted else None,
        }
        for r in rows
        if r.published["tflops_per_device"] is not None and r.table in tables
    ]
    if not any(record["source"] == "published" for record in records):
        return None
    data = labelled(records, labels, ["source", "tflops", "low", "high", "role", "note"])
    base = alt.Chart(data).encode(
        y=alt.Y("label:N", title=None, sort=None, axis=alt.Axis(labelLimit=LABEL_LIMIT)), yOffset="source:N"
    )
    # from zero: an axis that starts near the values would make a few percent look like a gulf
    points = base.mark_point(filled=True, size=60).encode(
        x=alt.X("tflops:Q", title="TFLOPs/s/device", scale=alt.Scale(zero=True)),
        color=alt.Color("source:N", scale=colours(data["source"]), title="evidence"),
        # the calibration row's diamond is labelled beside it: no second legend
        shape=alt.Shape("role:N", scale=alt.Scale(domain=ROLES, range=["circle", "diamond", "circle"]), legend=None),
        tooltip=[
            "row",
            "source",
            "role",
            *(alt.Tooltip(f"{field}:Q", format=",.0f") for field in ("tflops", "low", "high")),
        ],
    )
    band = (
        base.transform_filter(alt.datum.source == "predicted")
        .mark_rule(color=EVIDENCE["predicted"].colour)
        .encode(x="low:Q", x2="high:Q")
    )
    said = base.transform_filter("isValid(datum.note) || datum.role == '" + CALIBRATION_ROLE + "'").mark_text(
        align="left", dx=8, fontSize=10, color="#333"
    )
    notes = said.transform_calculate(text="isValid(datum.note) ? datum.note : datum.role").encode(
        x="tflops:Q", text="text:N"
    )
    title = titled(
        f"Predicted throughput per row on {machine}, beside the published",
        "A row whose throughput a claim states: the prediction and band its verdict took (the stated"
        " settings' range widened by the model's measured error; an open side is drawn only to the point). Any other"
        " row: its default calibration's range over the settings alone. A diamond: the row its model is"
        " calibrated on, its published value by construction, so no test of the model. A model no rate"
        " calibrates: its published values, and why.",
    )
    return by_table(alt.layer(band, points, notes).properties(width=420, height=alt.Step(14)), title, x="independent")


CALIBRATION_ROLE = "calibration row"
ROLES = ("prediction", CALIBRATION_ROLE, "published")


def why_not(reason: str | None) -> str | None:
    """The first clause of the result's reason a row is not predicted ('no rate of deepseek calibrates')."""
    return f"not predicted: {reason.split(':')[0]}" if reason else None


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
