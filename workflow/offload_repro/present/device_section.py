"""The page's section for a target whose rows ran on one accelerator: what the chip measured, row by
row, beside what XLA compiled for it there, in three comparisons, each a table and a chart.

(a) memory: the runtime's peak against XLA's peak of the same program (the measured basis of the
    static-memory tolerance); (b) step time: the median of the repeats with their spread, beside
    the step the model predicts from the program's kept HLO under each calibration, and the
    model's error with and without its host-copy and overlap terms; (c) capacity: the outcome each
    row had, against the outcome its compiled program gives. Every number is an observation of the
    evidence table or a figure of the device prediction's result; nothing here judges or computes.
"""

from __future__ import annotations

from typing import Any

import altair as alt
import pandas as pd

from offload_repro.core import gpu, memory
from offload_repro.core.data import Row, Target, load_target
from offload_repro.core.maxtext_args import same_program_rows
from offload_repro.core.published import load_speed
from offload_repro.judge import metric_names as names
from offload_repro.present.chart_parts import PALETTE, inline_spec, titled
from offload_repro.present.lookup import Lookup

# Why the page has no predicted step beside a measured one, where the target keeps no programs.
NO_PREDICTION = (
    "No step is predicted here: the programs the chip ran are not kept beside its runs"
    " (produce/compiled/tpu_programs.py keeps them)."
)
MODEL_NAMES = {
    "full": "host copies at the link's rate, overlapped as XLA scheduled them",
    "no_host_copies": "without the host-copy term (the copies cost nothing)",
    "serial_copies": "without the overlap term (each copy waited for where it starts)",
}
PROFILED = names.PROFILED_COPY_MEASURES


def source_names() -> dict[str, str]:
    """Each calibration carried to the chip, by its key in the device prediction, in short words: the
    source's hardware named by experiments/speed.yaml's calibration target."""
    source = load_target(load_speed()["calibration"]["target"])
    return {
        "runs_elsewhere": "runs measured elsewhere",
        "source": f"the source's rows on {source.spec['hardware'].get('accelerator', source.name)}",
    }


def sources() -> dict[str, str]:
    """Each calibration of the chip's predictions, in words."""
    named = source_names()
    return {
        "chip": "the chip's other programs, each in turn",
        "runs_elsewhere": f"{named['runs_elsewhere']}, as experiments/validation.yaml records it (share of BF16 peak)",
        "source": f"{named['source']} (share of BF16 peak)",
    }


def predictions(prediction: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Per row, the kept model's predicted step from each calibration: the chip's other programs of
    its model family (as the result summarises them), those carried from runs measured elsewhere and
    from the source's rows (one step and its error)."""
    if not prediction:
        return {}
    kept = prediction["models"][prediction["kept_model"]]["pairs"]
    found: dict[str, dict[str, Any]] = {}
    for name, program in prediction["programs"].items():
        by_source = {"chip": program["predicted"]} if program["predicted"] else {}
        for source in prediction["carried"]:  # each calibration carried from elsewhere
            if mine := next((p for p in kept[source] if p["program"] == name), None):
                by_source[source] = {"step_s": mine["predicted_step_s"], "error": mine["error"], "n": 1}
        for row in program["rows"]:
            found[row] = by_source | {"program": name}
    return found


def model_errors(prediction: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One line per model: its mean error under each calibration, and whether it is the kept one."""
    if not prediction:
        return []
    return [
        {
            "model": model,
            "words": MODEL_NAMES[model],
            "kept": model == prediction["kept_model"],
            "errors": found["errors"],
            "within_family": found["chip_within_family"],
            "unreachable": found["unreachable"],
        }
        for model, found in prediction["models"].items()
    ]


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
                "copy_in_flight_s": lookup.value(row.id, "measured", "copy_in_flight_s_per_step"),
                "copy_hidden_at_most": lookup.value(row.id, "measured", "copy_hidden_fraction_at_most"),
                "copies": {
                    side: {m: lookup.value(row.id, "measured", names.copy_side(side, m)) for m in PROFILED}
                    for side in names.COPY_SIDES
                },
            }
        )
    return found


def copy_lines(found: list[dict[str, Any]], prediction: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One line per program whose profile shows host copies (its rows named once): each direction's
    bytes, time in flight and time waited, beside the exposed copy time the kept model predicts."""
    programs = (prediction or {}).get("programs", {})
    lines_found, seen = [], set()
    for line in found:
        if line["copy_in_flight_s"] is None:
            continue
        program = (line.get("predicted") or {}).get("program", line["row"].id)
        if program in seen:
            continue
        seen.add(program)
        terms = (programs.get(program) or {}).get("predicted_terms") or {}
        predicted = terms.get("exposed_host_copy_s")
        waited = line["exposed_copy_s"]
        lines_found.append(
            {
                "rows": [line["row"].id, *line["same_program"]],
                "label": line["row"].label,
                # seconds to the 0.1 ms a profile's waits are worth reading at (a store that never held
                # the core up waited 1e-7 s)
                "copies": {
                    side: {m: round(v, 4) if v is not None and m.endswith("_s_per_step") else v for m, v in by.items()}
                    for side, by in line["copies"].items()
                },
                "in_flight_s": line["copy_in_flight_s"],
                "waited_s": waited,
                "hidden_at_most": line["copy_hidden_at_most"],
                "predicted_exposed_s": predicted,
                "predicted_over_waited": predicted / waited - 1 if predicted is not None and waited else None,
            }
        )
    return lines_found


def speed_on_chip(
    claims: list[dict[str, Any]], rows: list[Row], lookup: Lookup, target: Target
) -> list[dict[str, Any]]:
    """Each of the post's speed ratios as the chip measured it between the same rows, scaled: the
    first row's throughput over the second's, less one (from the measured observations), beside the
    published value. Not a verdict: the one-device class judges outcomes only."""
    same = same_program_rows(rows, target)
    found = []
    for claim in claims:
        check = claim.get("check") or {}
        if check.get("type") != "ratio" or check.get("metric") != names.TFLOPS:
            continue
        first, second = (lookup.value(row, "measured", names.TFLOPS) for row in check["rows"])
        if first is None or second is None:
            continue
        found.append(
            {
                "claim": claim["id"],
                "statement": claim["statement"],
                "rows": check["rows"],
                "published": claim["published"],
                "measured": first / second - 1,
                "one_program": check["rows"][1] in same[check["rows"][0]],
                # a row whose XLA:GPU flags are its only difference is another row's program here
                "same_as": [row for row in same[check["rows"][0]] if row != check["rows"][0]],
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
    kinds = ["measured", "compiled"]
    scale = alt.Scale(domain=kinds, range=[PALETTE["measured"], PALETTE["compiled"]])
    points = (
        alt.Chart(pd.DataFrame(records))
        .mark_point(filled=True, size=70)
        .encode(
            x=alt.X("gib:Q", title="GiB on the chip", scale=alt.Scale(zero=True)),
            y=alt.Y("label:N", title=None, sort=None, axis=alt.Axis(labelLimit=320)),
            # one legend: colour and shape over the same domain, under one title
            color=alt.Color("kind:N", scale=scale, title="evidence"),
            shape=alt.Shape("kind:N", scale=alt.Scale(domain=kinds, range=["circle", "square"]), title="evidence"),
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


def program_marks(found: list[dict[str, Any]]) -> dict[str, str]:
    """Row id -> a letter shared by the rows that are one program on the chip (none for a row alone)."""
    marks: dict[str, str] = {}
    for line in found:
        if line["same_program"] and line["row"].id not in marks:
            letter = chr(ord("A") + len(set(marks.values())))
            for row in (line["row"].id, *line["same_program"]):
                marks[row] = letter
    return marks


def step_chart(found: list[dict[str, Any]]) -> alt.TopLevelMixin | None:
    marks = program_marks(found)
    records = [
        {
            "label": line["row"].label + (f" [{marks[line['row'].id]}]" if line["row"].id in marks else ""),
            "step_s": line["step_s"],
            "low": (line["step_spread"] or {}).get("low", line["step_s"]),
            "high": (line["step_spread"] or {}).get("high", line["step_s"]),
            "repeats": (line["step_spread"] or {}).get("n", 1),
            "predicted_s": ((line.get("predicted") or {}).get("chip") or {}).get("step_s"),
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
        x=alt.X("step_s:Q", title="seconds per step", scale=alt.Scale(zero=True)),
        tooltip=["label", alt.Tooltip("step_s:Q", format=".4f"), "repeats"],
    )
    spread = base.mark_rule(color="black").encode(x="low:Q", x2="high:Q")
    layers = [bars, spread]
    words = "Each bar is the median step of its repeats; the black line spans them."
    if any(record["predicted_s"] is not None for record in records):
        layers.append(
            base.mark_point(shape="diamond", size=110, filled=True, color=PALETTE["predicted"], stroke="white").encode(
                x="predicted_s:Q", tooltip=["label", alt.Tooltip("predicted_s:Q", format=".4f", title="predicted s")]
            )
        )
        words += " The purple diamond is the step predicted from the chip's other programs (their median)."
    if marks:
        words += " Rows marked with one letter are one program here: they differ only in XLA:GPU flags."
    title = titled("Step time measured on the chip", words)
    return alt.layer(*layers).properties(width=420, height=alt.Step(18), title=title)


def section(
    rows: list[Row],
    lookup: Lookup,
    target: Target,
    prediction: dict[str, Any] | None = None,
    claims: list[dict[str, Any]] | None = None,
) -> dict[str, Any] | None:
    """The section, for a target of one accelerator whose rows ran (None otherwise); `prediction`:
    the details of its device prediction, where its programs are kept; `claims`: the claims file's claims,
    whose speed ratios the chip's runs are set beside."""
    if target.kind == "cpu" or "single-device" not in target.judges:
        return None
    found = lines(rows, lookup, target)
    if not any(line["status"] for line in found):
        return None
    predicted = predictions(prediction)
    for line in found:
        line["predicted"] = predicted.get(line["row"].id)
    capacity = memory.gib(gpu.capacity_bytes(target))
    return {
        "lines": found,
        "capacity_gib": capacity,
        "no_prediction": None if prediction else NO_PREDICTION,
        "prediction": prediction,
        "model_errors": model_errors(prediction),
        "copy_lines": copy_lines(found, prediction),
        "speed": speed_on_chip(claims or [], rows, lookup, target),
        "sources": sources(),
        "source_names": source_names(),
        "charts": [
            inline_spec(name, chart)
            for name, chart in (
                ("device-memory", memory_chart(found, capacity or 0.0)),
                ("device-step", step_chart(found)),
            )
            if chart is not None
        ],
    }
