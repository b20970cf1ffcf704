"""The page's section for a target whose rows ran on one accelerator: what the chip measured, row by
row, beside what XLA compiled for it there, in three comparisons, each a table and a chart.

(a) memory: the runtime's peak against XLA's peak of the same program (the measured basis of the
    static-memory tolerance); (b) step time: the median of the repeats with their spread, and why
    no prediction stands beside it; (c) capacity: the outcome each row had, against the outcome its
    compiled program gives. Every number is an observation of the evidence table; nothing here
    judges or computes.
"""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from offload_repro.core import gpu, memory
from offload_repro.core.data import Row, Target
from offload_repro.core.maxtext_args import same_program_rows
from offload_repro.judge import metric_names as names
from offload_repro.present.charts import PALETTE, inline_spec, titled
from offload_repro.present.lookup import Lookup

# Why the page has no predicted step beside a measured one on such a target.
NO_PREDICTION = (
    "No step is predicted here: the step-time model replays a program XLA:GPU scheduled (its copy"
    " streams, NCCL collectives and latency-hiding schedule), and it has not been written for XLA:TPU's."
)


def lines(rows: list[Row], lookup: Lookup, target: Target) -> list[dict[str, Any]]:
    """One line per row: how it ended, its memory measured and compiled, its step."""
    same = same_program_rows(rows, target)
    found = []
    for row in rows:
        status = lookup.value(row.id, "measured", names.STATUS)
        compiled = lookup.value(row.id, "compiled", names.PROGRAM_DEVICE_GIB)
        refused = lookup.value(row.id, "compiled", names.REFUSED_NEEDING_GIB)
        found.append(
            {
                "row": row,
                "status": status,
                "message": lookup.message(row.id, "measured", names.STATUS),
                "same_program": [other for other in same[row.id] if other != row.id],
                "published_outcome": row.published["outcome"],
                "outcome": lookup.value(row.id, "measured", names.OUTCOME),
                # a program XLA:TPU refused has no peak; the need it named decides its outcome
                "compiled_outcome": None if status is None else "oom" if refused is not None else "fits",
                # a run that never trained held its weights only: its peak says nothing of the program
                "measured_gib": lookup.value(row.id, "measured", names.DEVICE_GIB) if status == "ok" else None,
                "compiled_gib": compiled,
                "refused_needing_gib": refused,
                "over_compiled": lookup.value(row.id, "measured", names.RUNTIME_OVER_PROGRAM),
                "host_gib": lookup.value(row.id, "compiled", names.PROGRAM_HOST_GIB),
                "step_s": lookup.value(row.id, "measured", names.STEP_TIME_S),
                "step_spread": lookup.spread(row.id, "measured", names.STEP_TIME_S),
                "tflops": lookup.value(row.id, "measured", names.TFLOPS),
                "exposed_copy_s": lookup.value(row.id, "measured", "exposed_copy_s_per_step"),
            }
        )
    return found


def memory_chart(found: list[dict[str, Any]], capacity_gib: float) -> alt.TopLevelMixin | None:
    records = [
        {"row": line["row"].id, "label": line["row"].label, "kind": kind, "gib": line[field]}
        for line in found
        for kind, field in (
            ("measured", "measured_gib"),
            ("compiled", "compiled_gib"),
            ("compiled", "refused_needing_gib"),
        )
        if line[field] is not None
    ]
    if not records:
        return None
    scale = alt.Scale(domain=["measured", "compiled"], range=[PALETTE["measured"], PALETTE["compiled"]])
    points = (
        alt.Chart(pd.DataFrame(records))
        .mark_point(filled=True, size=70)
        .encode(
            x=alt.X("gib:Q", title="GiB on the chip", scale=alt.Scale(zero=True)),
            y=alt.Y("label:N", title=None, sort=None, axis=alt.Axis(labelLimit=320)),
            color=alt.Color("kind:N", scale=scale, title="evidence"),
            shape=alt.Shape("kind:N", title="evidence"),
            tooltip=["row", "kind", alt.Tooltip("gib:Q", format=",.2f")],
        )
    )
    limit = (
        alt.Chart(pd.DataFrame({"gib": [capacity_gib]})).mark_rule(color="crimson", strokeDash=[4, 3]).encode(x="gib:Q")
    )
    title = titled(
        "Memory on the chip: the runtime's peak against XLA's peak of the same program",
        f"The dashed line is the chip's {capacity_gib:.2f} GiB. A row XLA:TPU refused shows the need it named.",
    )
    return alt.layer(points, limit).properties(width=420, height=alt.Step(18), title=title)


def step_chart(found: list[dict[str, Any]]) -> alt.TopLevelMixin | None:
    records = [
        {
            "label": line["row"].label,
            "step_s": line["step_s"],
            "low": (line["step_spread"] or {}).get("low", line["step_s"]),
            "high": (line["step_spread"] or {}).get("high", line["step_s"]),
            "repeats": (line["step_spread"] or {}).get("n", 1),
        }
        for line in found
        if line["step_s"] is not None
    ]
    if not records:
        return None
    base = alt.Chart(pd.DataFrame(records)).encode(
        y=alt.Y("label:N", title=None, sort=None, axis=alt.Axis(labelLimit=320))
    )
    bars = base.mark_bar(color=PALETTE["measured"]).encode(
        x=alt.X("step_s:Q", title="seconds per step (median of the repeats)"),
        tooltip=["label", alt.Tooltip("step_s:Q", format=".4f"), "repeats"],
    )
    spread = base.mark_rule(color="black").encode(x="low:Q", x2="high:Q")
    title = titled(
        "Step time measured on the chip", "Each bar is the median step of its repeats; the black line spans them."
    )
    return alt.layer(bars, spread).properties(width=420, height=alt.Step(18), title=title)


def section(rows: list[Row], lookup: Lookup, target: Target) -> dict[str, Any] | None:
    """The section, for a target of one accelerator whose rows ran (None otherwise)."""
    if target.kind == "cpu" or "single-device" not in target.judges:
        return None
    found = lines(rows, lookup, target)
    if not any(line["status"] for line in found):
        return None
    capacity = memory.gib(gpu.capacity_bytes(target))
    return {
        "lines": found,
        "capacity_gib": capacity,
        "no_prediction": NO_PREDICTION,
        "charts": [
            inline_spec(name, chart)
            for name, chart in (
                ("device-memory", memory_chart(found, capacity or 0.0)),
                ("device-step", step_chart(found)),
            )
            if chart is not None
        ],
    }
