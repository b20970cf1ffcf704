"""Static HTML pages: one per target, an entry page and a side-by-side comparison.

The pages only draw. Every number comes from the evidence table (results/<target>/evidence.json),
every verdict from verdicts.json, every label from the row and claim data; nothing here judges,
and no memory or byte arithmetic is done here. Jinja (autoescaping on) renders the pages, Altair
builds the chart specs, and the Vega bundle from vl-convert is inlined so each page opens offline.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import altair as alt
import jinja2
import pandas as pd
import vl_convert

from offload_repro.core import provenance
from offload_repro.core.assumptions import sentence
from offload_repro.core.data import Row, Target, load_target
from offload_repro.core.evidence_classes import EVIDENCE, PUBLISHED_COLOUR
from offload_repro.core.files import REPO_ROOT, write_atomically
from offload_repro.core.observation import Observation
from offload_repro.core.results import read_result
from offload_repro.judge.spread import range_text, tolerance_text
from offload_repro.present import charts, measured_runs
from offload_repro.present.target_command import snakemake_command

TEMPLATE_DIR = REPO_ROOT / "report"
READS = ("report/*.j2", "report/style.css")
LHS = "--xla_gpu_enable_latency_hiding_scheduler"
PIPELINED = "--xla_gpu_enable_pipelined_host_offloading"


@cache
def vega_bundle() -> str:
    """Vega, Vega-Lite (the version Altair writes) and vega-embed as one inline script."""
    version = alt.SCHEMA_VERSION.lstrip("v").rsplit(".", 1)[0]
    return vl_convert.javascript_bundle(vl_version=version)


def frame(evidence: dict[str, Any]) -> pd.DataFrame:
    """The evidence table's observations as a DataFrame (one column per Observation field)."""
    return pd.DataFrame(evidence["observations"], columns=list(Observation.__dataclass_fields__))


def fmt(value: Any) -> str:
    """Numbers as a reader wants them: '—' for none, 4 significant digits, thousands separated."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return "—"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int) or (float(value).is_integer() and abs(value) >= 1):
        return f"{value:,.0f}"
    if abs(value) >= 1000:
        return f"{value:,.1f}"
    return f"{value:.4g}"


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:+.1f}%"


def settings_text(settings: dict[str, Any]) -> str:
    """An assumption's settings in words: 'max_target_length 4096; MaxText capacity_factor 1.25'."""

    def value_text(value: Any) -> str:
        if isinstance(value, dict):
            return ", ".join(f"{key} {value_text(item)}" for key, item in value.items())
        if isinstance(value, list):
            return " ".join(str(item) for item in value)
        if value == "":
            return "none"
        return str(value).lower() if isinstance(value, bool) else str(value)

    parts = [f"{key} {value_text(value)}" for key, value in settings.get("row", {}).items()]
    parts += [f"MaxText {key} {value_text(value)}" for key, value in settings.get("maxtext", {}).items()]
    return "; ".join(parts)


def share(value: float | None) -> str:
    """A part of a whole, unsigned: 17.9%."""
    return "—" if value is None else f"{value * 100:.1f}%"


def spread_text(spread: dict[str, Any] | None) -> str:
    """' (2,700 to 2,760, 3 repeats)' (with an en dash) after a median of repeats; nothing for one run."""
    if not spread or not spread.get("n") or spread["n"] <= 1:
        return ""
    return f" ({range_text(spread, fmt)}, {spread['n']} repeats)"


def commit_text(commit: str | None) -> str:
    """A project commit as a page shows it: a copy of the workflow with no .git has none."""
    return commit or "unknown (not a git checkout)"


def hardware_text(hardware: dict[str, Any]) -> str:
    """A target's hardware as a sentence: '128 x NVIDIA GB200 (4 per node); host link NVLink-C2C, 900 GB/s
    bidirectional; 240 GB host memory per GPU; peak dense bfloat16 2,500 TFLOPs/s per GPU'."""
    devices = hardware["devices"]
    accelerator = hardware.get("accelerator")
    parts = [f"{devices} x {accelerator}" if accelerator else f"{devices} CPU device{'s' if devices != 1 else ''}"]
    if hardware.get("gpus_per_node"):
        parts[0] += f" ({hardware['gpus_per_node']} per node)"
    link = hardware.get("host_link")
    if link:
        parts.append(f"host link {link['name']}, {fmt(link['bandwidth_gb_s'])} GB/s {link['direction']}")
    if hardware.get("host_memory_gb_per_gpu"):
        parts.append(f"{fmt(hardware['host_memory_gb_per_gpu'])} GB host memory per GPU")
    if hardware.get("host_memory_gb_s_per_gpu"):
        shared = hardware["host_memory"]["bandwidth_gb_s_per_cpu"]
        per_gpu = hardware["host_memory_gb_s_per_gpu"]
        parts.append(f"host memory {fmt(shared)} GB/s per CPU, {fmt(per_gpu)} GB/s per GPU when all copy at once")
    for dtype, tflops in (hardware.get("peak_dense_tflops") or {}).items():
        parts.append(f"peak dense {dtype} {fmt(tflops)} TFLOPs/s per GPU")
    return "; ".join(parts)


def flag_summary(row: Row) -> str:
    flags = dict(flag.split("=", 1) for flag in row.xla_flags)
    lhs = {"true": "LHS on", "false": "LHS off"}.get(flags.get(LHS, ""), "LHS default")
    return lhs + (", pipelined offload" if flags.get(PIPELINED) == "true" else "")


def placement_summary(row: Row) -> str:
    parts = [f"{where}: {', '.join(row.tensors(where))}" for where in ("offload", "device") if row.tensors(where)]
    return "; ".join(parts) or "remat: " + ", ".join(row.placement)


def failure_note(failure: dict[str, Any] | None) -> str | None:
    """Where a failure's cause was found and how the process ended: 'fatal log line
    (parse_flags_from_env.cc:234), exit status 1; log results/cpu/work/llama-baseline/train.log'."""
    if not failure:
        return None
    ended = failure["signal"] or (
        f"exit status {failure['exit_status']}" if failure["exit_status"] is not None else None
    )
    where = failure["found_in"] if failure["found_in"] not in ("signal", "exit status") else None  # said by `ended`
    note = ", ".join(part for part in (where, ended) if part)
    return note + (f"; log {failure['log']}" if failure["log"] else "")


class Lookup:
    """Point values of the evidence table: value(row, evidence, metric) for one target per kind,
    all(...) for a metric observed more than once (XLA's memory warnings), and spread(...) for the
    values that are medians of more than one repeat; `failures`: each source file's `failure`."""

    def __init__(self, observations: pd.DataFrame, failures: dict[str, dict[str, Any] | None] | None = None):
        points = observations[observations["at"].isna() & observations["row"].notna()]
        statuses = points[points["metric"] == "status"]
        self.status_source = {(o.row, o.evidence): o.source for o in statuses.itertuples(index=False)}
        self.failures = failures or {}
        self.points: dict[tuple[str, str, str], list[tuple[Any, str | None]]] = {}
        for o in points.itertuples(index=False):
            message = o.message if isinstance(o.message, str) else None
            self.points.setdefault((o.row, o.evidence, o.metric), []).append((o.value, message))
        self.spreads = {
            (o.row, o.evidence, o.metric): {"low": o.low, "high": o.high, "n": int(o.n)}
            for o in points.itertuples(index=False)
            if pd.notna(o.n) and o.n > 1
        }

        self.bands = {
            (o.row, o.evidence, o.metric): {"low": o.low, "high": o.high}
            for o in points.itertuples(index=False)
            if o.evidence == "predicted" and pd.notna(o.low)
        }

    def spread(self, row: str, evidence: str, metric: str) -> dict[str, Any] | None:
        return self.spreads.get((row, evidence, metric))

    def failure_note(self, row: str, evidence: str) -> str | None:
        """How the row's result of this evidence failed, where its file records a `failure`."""
        return failure_note(self.failures.get(self.status_source.get((row, evidence), "")))

    def band(self, row: str, evidence: str, metric: str) -> dict[str, Any] | None:
        """A prediction's range over the stated uncertainties."""
        return self.bands.get((row, evidence, metric))

    def value(self, row: str, evidence: str, metric: str) -> Any:
        return next(iter(self.all(row, evidence, metric)), (None, None))[0]

    def message(self, row: str, evidence: str, metric: str) -> str | None:
        return next(iter(self.all(row, evidence, metric)), (None, None))[1]

    def all(self, row: str, evidence: str, metric: str) -> list[tuple[Any, str | None]]:
        return self.points.get((row, evidence, metric), [])


def footnotes(claims: list[dict[str, Any]]) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """A reason shared by several claims is stated once: reason -> note number, in order of use."""
    numbers: dict[str, int] = {}
    notes: list[dict[str, Any]] = []
    for claim in claims:
        for judgement in claim["judgements"]:
            reason = judgement.get("reason")
            if reason and judgement["verdict"] == "not-comparable" and reason not in numbers:
                numbers[reason] = len(notes) + 1
                target = judgement.get("would_judge")
                command = snakemake_command(load_target(target)) if target else None
                notes.append({"number": numbers[reason], "reason": reason, "command": command})
    for note in notes:
        note["claims"] = sum(1 for c in claims if any(j.get("reason") == note["reason"] for j in c["judgements"]))
    return numbers, notes


def row_lines(rows: list[Row], lookup: Lookup) -> list[dict[str, Any]]:
    lines = []
    for row in rows:

        def get(evidence: str, metric: str, row_id: str = row.id) -> Any:
            return lookup.value(row_id, evidence, metric)

        lines.append(
            {
                "row": row,
                "flags": flag_summary(row),
                "placement": placement_summary(row),
                "measured": {
                    "status": get("measured", "status"),
                    "message": lookup.message(row.id, "measured", "status"),
                    "failure": lookup.failure_note(row.id, "measured"),
                    "tflops": get("measured", "tflops_per_device"),
                    "tflops_spread": lookup.spread(row.id, "measured", "tflops_per_device"),
                    "step_s": get("measured", "step_time_s"),
                    "step_spread": lookup.spread(row.id, "measured", "step_time_s"),
                    "final_loss": get("measured", "final_loss"),
                },
                "compiled": {
                    "status": get("compiled", "status"),
                    "message": lookup.message(row.id, "compiled", "status"),
                    "failure": lookup.failure_note(row.id, "compiled"),
                    "device_gib": get("compiled", "gpu_memory_gib"),
                    "host_gib": get("compiled", "host_memory_gib"),
                    "outcome": get("compiled", "outcome"),
                    "margin_gib": get("compiled", "margin_gib"),
                    "host_buffers": get("compiled", "host_buffers"),
                    "expected_host_buffers": get("compiled", "expected_host_buffers"),
                    "host_buffer_gib": get("compiled", "host_buffer_gib"),
                    "expected_host_buffer_gib": get("compiled", "expected_host_buffer_gib"),
                    "async_pairs": get("compiled", "async_pairs"),
                    "digest": get("compiled", "program_digest"),
                    "warnings": lookup.all(row.id, "compiled", "xla_memory_warning"),
                },
                "analytic": {
                    "device_gib": get("analytic", "device_saved_gib"),
                    "offload_gib": get("analytic", "host_memory_gib"),
                },
            }
        )
    return lines


def tables(rows: list[Row], lookup: Lookup) -> list[dict[str, Any]]:
    grouped: dict[str, dict[str, Any]] = {}
    for row, line in zip(rows, row_lines(rows, lookup), strict=True):
        table = grouped.setdefault(row.table, {"name": row.table, "lines": [], "assumptions": []})
        table["lines"].append(line)
        table["assumptions"] += [sentence(a) for a in row.assumptions if sentence(a) not in table["assumptions"]]
    return list(grouped.values())


def inline_spec(name: str, chart: alt.TopLevelMixin) -> dict[str, str]:
    """A chart's Vega-Lite spec, safe inside a <script> element."""
    return {"id": name, "spec": json.dumps(chart.to_dict()).replace("</", "<\\/")}


def chart_specs(
    rows: list[Row],
    observations: pd.DataFrame,
    target: Target,
    compiled_on: Target | None,
    errors: dict[str, float] | None = None,
) -> list:
    """`errors`: the step-time model's largest leave-one-out error per model family."""
    labels = {row.id: row for row in rows}
    built = []
    same_hardware = "source-hardware" in target.judges
    throughput = charts.throughput(rows, observations, labels, target.name, with_published=same_hardware)
    if throughput is not None:
        built.append(("throughput", throughput))
    if compiled_on is not None:
        predicted = charts.predicted_throughput(rows, observations, labels, compiled_on.name, errors or {})
        if predicted is not None:
            built.append(("predicted", predicted))
        terms = charts.step_terms(observations, labels, compiled_on.name)
        if terms is not None:
            built.append(("step-terms", terms))
        with_published = "source-hardware" in compiled_on.judges
        built.append(("memory", charts.memory(rows, observations, labels, compiled_on.spec["title"], with_published)))
    for name, chart in (
        ("losses", charts.loss_curves(observations, labels)),
        ("probe", charts.probe(observations)),
        ("overlap", charts.overlap(observations, labels)),
    ):
        if chart is not None:
            built.append((name, chart))
    return [inline_spec(name, chart) for name, chart in built]


def whatif(rows: list[Row], observations: pd.DataFrame) -> dict[str, Any] | None:
    """Rows x GPU targets from the compiled evidence of every target, and each policy's frontier."""
    compiled = observations[(observations["evidence"] == "compiled") & observations["at"].isna()]
    of_policies = compiled[compiled["policy"].notna()]
    compiled = compiled[compiled["policy"].isna()]
    targets = sorted(set(compiled["target"].dropna()))
    if len(targets) < 2 and of_policies.empty:
        return None
    cells = {(o.row, o.target, o.metric): o.value for o in compiled.itertuples()}
    policy_cells = {(o.policy, o.target, o.metric): o.value for o in of_policies.itertuples()}
    notes = {(o.policy, o.target, o.metric): o.message for o in of_policies.itertuples() if isinstance(o.message, str)}
    grid = [
        {
            "row": row,
            "cells": [
                {
                    metric: cells.get((row.id, name, metric))
                    for metric in ("outcome", "gpu_memory_gib", "margin_gib", "host_memory_gib", "host_fits")
                }
                for name in targets
            ],
        }
        for row in rows
    ]
    policies = sorted(set(of_policies["policy"]))
    frontier_targets = sorted(set(of_policies["target"].dropna()))
    frontier = [
        {
            "policy": policy,
            "published": policy_cells.get((policy, frontier_targets[0], "policy_published"))
            if frontier_targets
            else None,
            "cells": [
                {
                    "largest": policy_cells.get((policy, name, "largest_fitting_micro_batch")),
                    "status": policy_cells.get((policy, name, "status")),
                    "message": notes.get((policy, name, "largest_fitting_micro_batch")),
                }
                for name in frontier_targets
            ],
        }
        for policy in policies
    ]
    transfers = [
        {
            "row": row,
            "cells": [
                {
                    "copy_s": cells.get((row.id, name, "whatif_copy_s_per_step")),
                    "step_s": cells.get((row.id, name, "whatif_step_s")),
                    "share": cells.get((row.id, name, "whatif_copy_share")),
                    "link_gb_s": cells.get((row.id, name, "whatif_link_gb_s")),
                }
                for name in targets
            ],
        }
        for row in rows
        if any((row.id, name, "whatif_copy_s_per_step") in cells for name in targets)
    ]
    recompute = [
        {"row": row, "cells": [cells.get((row.id, name, "xla_tflops_per_step")) for name in targets]}
        for row in rows
        if any((row.id, name, "xla_tflops_per_step") in cells for name in targets)
    ]
    return {
        "targets": [load_target(name) for name in targets],
        "grid": grid,
        "transfers": transfers,
        "recompute": recompute,
        "frontier_targets": [load_target(name) for name in frontier_targets],
        "frontier": frontier,
    }


COLLECTIVE_KINDS = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all", "collective-permute")
CLONE_KINDS = ("gemm", "collective", "other")  # produce/predicted/xla_clones.KINDS, as the observers name them
CLONE_MEASURES = ("instructions", "tflops_per_step", "hbm_gb_per_step", "collective_gb_per_step")
SPEED_COLUMNS = (
    "model_tflops_per_step",
    "counted_tflops_per_step",
    "rematted_tflops_per_step",
    "unspent_tflops_per_step",
    "recompute_share",
    "host_copy_gib_per_step",
    "hbm_gb_per_step",
    "step_s",
    "compute_s",
    "memory_bound_s",
    "exposed_host_copy_s",
    "exposed_collective_s",
    "exposed_network_s",
    "tflops_per_device",
    "calibrated_on",
    "published_tflops",
    "implied_host_gb_s_per_direction",
    "network_ring_gb_per_nic",
    "network_floor_gb_per_nic",
    "network_ring_s_per_step",
    "network_floor_s_per_step",
    *(f"{kind}_gb_per_step" for kind in COLLECTIVE_KINDS),
    *(f"clone_{kind}_{what}" for kind in CLONE_KINDS for what in CLONE_MEASURES),
    "remat_pass",
    "remat_limit_met",
    "remat_limit_gib",
    "remat_reached_gib",
)


# MaxText's model FLOPs per component (the compile's split), the weight FLOPs they make, and the
# counted FLOPs without JAX's recompute or MoE dispatch label against them, in page order.
MODEL_COMPONENTS = ("ffn", "qkv", "output_projection", "embedding")
FLOP_COLUMNS = (
    *(f"model_{name}_tflops_per_step" for name in MODEL_COMPONENTS),
    "model_weights_tflops_per_step",
    "unlabelled_gemm_tflops_per_step",
    "gemm_beyond_model_tflops_per_step",
    "model_attention_tflops_per_step",
    "unlabelled_attention_tflops_per_step",
    "attention_beyond_model_tflops_per_step",
    "model_tflops_per_step",
)
COPY_SIDES = {"to_host": "to the host", "from_host": "from the host"}
COPY_COLUMNS = (
    "copies",
    "copies_per_step",
    "copies_asynchronous",
    "copies_synchronous",
    "copies_spanning_nothing",
    "copy_span_low_tflop",
    "copy_span_high_tflop",
)


def flop_components(rows: list[Row], lookup: Lookup) -> list[dict[str, Any]]:
    """Each predicted row whose compile split MaxText's model FLOPs: the components beside the counted."""
    lines = []
    for row in rows:
        values = {metric: lookup.value(row.id, "predicted", metric) for metric in FLOP_COLUMNS}
        if values["model_weights_tflops_per_step"] is not None:
            lines.append({"row": row, **values})
    return lines


def host_copies(rows: list[Row], lookup: Lookup) -> list[dict[str, Any]]:
    """Each predicted row with host copies: per direction, how many, how many asynchronous, and
    the compute their start / done pairs span."""
    found = []
    for row in rows:
        sides = [
            {"direction": label, **{c: lookup.value(row.id, "predicted", f"{side}_{c}") for c in COPY_COLUMNS}}
            for side, label in COPY_SIDES.items()
            if lookup.value(row.id, "predicted", f"{side}_copies") is not None
        ]
        if sides:
            found.append({"row": row, "sides": sides})
    return found


def speed(
    rows: list[Row],
    lookup: Lookup,
    verdicts: dict[str, Any],
    sources: list[dict[str, Any]],
    target: str | None,
    measured_here: bool = False,
):
    """What the compiled programs say about speed: each row's FLOPs, bytes, collectives and predicted
    step, the model's measured error (and that of simpler models), the speed claims' predicted
    judgements with their explanations, and the model's calibration. `measured_here`: the page's
    runs are on the hardware the rows were predicted for, so each prediction stands beside its run."""
    source = next((s for s in sources if s["kind"] == "predicted" and s["target"] == target), None)
    if source is None:
        return None
    lines = []
    for row in rows:
        values = {metric: lookup.value(row.id, "predicted", metric) for metric in SPEED_COLUMNS}
        status = lookup.value(row.id, "predicted", "status")
        if status is None:
            continue
        published = values["published_tflops"]
        predicted = values["tflops_per_device"]
        measured = lookup.value(row.id, "measured", "tflops_per_device") if measured_here else None
        lines.append(
            {
                "row": row,
                "status": status,
                "message": lookup.message(row.id, "predicted", "status"),
                "band": lookup.band(row.id, "predicted", "tflops_per_device"),
                "published": published,
                # a throughput a published speedup implies (its sources name more than its row)
                "implied": len(str(lookup.value(row.id, "predicted", "published_sources") or "").split()) > 1,
                "ratio": predicted / published if predicted and published else None,
                "measured": measured,
                "measured_error": predicted / measured - 1 if predicted and measured else None,
                "collectives": {kind: values[f"{kind}_gb_per_step"] for kind in COLLECTIVE_KINDS},
                **values,
            }
        )
    judged = []
    for claim in verdicts["claims"]:
        for judgement in claim["judgements"]:
            if judgement["evidence"] == "predicted":
                judged.append({"claim": claim, "judgement": judgement})
    on_hardware = [abs(line["measured_error"]) for line in lines if line.get("measured_error") is not None]
    return {
        "lines": lines,
        "measured_here": measured_here,
        "error_on_hardware": {
            "rows": len(on_hardware),
            "mean_abs": sum(on_hardware) / len(on_hardware),
            "largest_abs": max(on_hardware),
        }
        if on_hardware
        else None,
        "network": network_summary(lines),
        "components": flop_components(rows, lookup),
        "copies": host_copies(rows, lookup),
        "claims": judged,
        "calibration": source.get("calibration") or {},
        "uncalibrated": source.get("uncalibrated") or {},
        "error": source.get("model_error"),
        "ablation": source.get("ablation") or [],
        "by_precision": source.get("by_precision") or [],
        "ruled_out_precisions": source.get("ruled_out_precisions") or [],
        "cross_checks": source.get("cross_checks") or [],
        "assumptions": source["assumptions"],
        "file": source["file"],
    }


def network_summary(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows whose collectives cross between NVLink domains: the bytes per NIC at each end of the
    band, their time at the network's rate, what the step time charges for them, and the step."""
    return [line for line in lines if line["status"] == "ok" and line["network_ring_gb_per_nic"]]


def predicted_gains(observations: pd.DataFrame) -> list[dict[str, Any]]:
    """The predicted gain of each offload row over the row it replaces, per GPU target."""
    chosen = observations[(observations["metric"] == "offload_gain") & observations["at"].isna()]
    return [
        {"row": o.row, "target": o.target, "gain": o.value, "low": o.low, "high": o.high, "by": o.message}
        for o in chosen.sort_values(["row", "target"]).itertuples()
    ]


def whatif_charts(observations: pd.DataFrame) -> list[dict[str, Any]]:
    chart = charts.frontier(observations)
    return [] if chart is None else [inline_spec("frontier", chart)]


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR), autoescape=True, undefined=jinja2.StrictUndefined
    )
    env.filters.update(
        fmt=fmt,
        percent=percent,
        share=share,
        settings=settings_text,
        tolerance=tolerance_text,
        spread=spread_text,
        hardware=hardware_text,
        commit=commit_text,
    )
    env.globals.update(
        evidence_classes=EVIDENCE,
        published_colour=PUBLISHED_COLOUR,
        style=(TEMPLATE_DIR / "style.css").read_text(),
    )
    return env


def assumptions_section(sensitivity: dict[str, Any] | None, verdicts: dict[str, Any]) -> dict[str, Any] | None:
    """Every assumption with its alternatives' compiled memory, the claims each changes, the best fit."""
    if sensitivity is None:
        return None
    changes: dict[str, list[dict[str, Any]]] = {}
    for claim in verdicts["claims"]:
        found = claim.get("robustness")
        for record in (found or {}).get("under", []):
            if record["verdict"] not in (found["default"], "undetermined", "untested"):
                changes.setdefault(f"{record['assumption']}.{record['alternative']}", []).append(
                    {"claim": claim["id"], "verdict": record["verdict"], "default": found["default"]}
                )
    entries = []
    for entry in sensitivity["assumptions"]:
        rows = entry["affects"]
        entries.append(
            {
                **entry,
                "rows": rows,
                "alternatives": [
                    {**alt, "changes": changes.get(f"{entry['id']}.{alt['id']}", [])} for alt in entry["alternatives"]
                ],
            }
        )
    robust = [c for c in verdicts["claims"] if c.get("robustness") and c["robustness"]["robust"]]
    dependent = [c for c in verdicts["claims"] if c.get("robustness") and not c["robustness"]["robust"]]
    return {"entries": entries, "fit": sensitivity["fit"], "robust": robust, "dependent": dependent}


def render_target(
    rows: list[Row], evidence_path: Path, verdicts_path: Path, out_path: Path, assumptions_path: Path | None = None
) -> str:
    evidence = read_result(evidence_path, "evidence")
    verdicts = read_result(verdicts_path, "verdicts")
    observations = frame(evidence)
    target = load_target(evidence["target"])
    compiled_on = load_target(verdicts["compile_target"]) if verdicts["compile_target"] else None
    # The row tables show this target's runs and its compile target's programs; the what-if
    # section shows every other GPU target.
    own = observations["target"].isna() | observations["target"].isin([target.name, verdicts["compile_target"]])
    sources = evidence["sources"]
    lookup = Lookup(observations[own], {source["file"]: source.get("failure") for source in sources})
    numbers, notes = footnotes(verdicts["claims"])
    prediction = next(
        (s for s in sources if s["kind"] == "predicted" and s["target"] == verdicts["compile_target"]), None
    )
    measured = measured_runs.section(observations, sources)
    chart = charts.measured_against_predicted(measured["runs"]) if measured else None
    measured_chart = inline_spec("measured-runs", chart) if chart is not None else None
    families = ((prediction or {}).get("model_error") or {}).get("families") or {}
    errors = {family: f["largest_abs"] for family, f in families.items() if f["largest_abs"] is not None}
    html = (
        environment()
        .get_template("target.html.j2")
        .render(
            target=target,
            compiled_on=compiled_on,
            verdicts=verdicts,
            notes=notes,
            note_numbers=numbers,
            tables=tables(rows, lookup),
            charts=chart_specs(rows, observations[own], target, compiled_on, errors) + whatif_charts(observations),
            whatif=whatif(rows, observations),
            speed=speed(
                rows, lookup, verdicts, sources, verdicts["compile_target"], target.name == verdicts["compile_target"]
            ),
            measured_runs=measured,
            measured_chart=measured_chart,
            assumptions=assumptions_section(
                read_result(assumptions_path, "assumptions") if assumptions_path else None, verdicts
            ),
            sentence=sentence,
            gains=predicted_gains(observations),
            budget_assumptions=next((s["assumptions"] for s in sources if s["kind"] == "budget"), []),
            budget_message=next((s["message"] for s in sources if s["kind"] == "budget"), None),
            probe=observations[observations["metric"].isin(["d2h_gb_s", "h2d_gb_s"])].to_dict("records"),
            sources=sources,
            run_provenance=next((s["provenance"] for s in sources if s["kind"] == "run" and s["provenance"]), None),
            compile_provenance=next(
                (s["provenance"] for s in sources if s["kind"] == "compile" and s["provenance"]), None
            ),
            compile_assumptions=[
                sentence(a) for a in next((s["assumptions"] for s in sources if s["kind"] == "compile"), [])
            ],
            vega_bundle=vega_bundle().replace("</script", "<\\/script"),
        )
    )
    write_atomically(out_path, html)
    return html


def render_index(
    rows: list[Row], pages: list[Path], verdict_paths: list[Path], evidence_paths: list[Path], out: Path, compare: Path
) -> None:
    """The entry page (every target with results, how fresh each is) and the comparison page."""
    current = provenance.project_commit()
    targets, columns = [], []
    for page, verdict_path, evidence_path in zip(pages, verdict_paths, evidence_paths, strict=True):
        verdicts = read_result(verdict_path, "verdicts")
        evidence = read_result(evidence_path, "evidence")
        target = load_target(verdicts["target"])
        built = verdicts["built_from"]
        targets.append(
            {
                "target": target,
                "page": page.name,
                "counts": verdicts["counts"],
                "built_at": built["built_at"],
                "commit": built["project_commit"],
                "stale": built["project_commit"] != current,
                "command": snakemake_command(target),
            }
        )
        observations = frame(evidence)
        own = observations["target"].isna() | observations["target"].isin([target.name, verdicts["compile_target"]])
        columns.append(
            {"target": target, "compiled_on": verdicts["compile_target"], "lookup": Lookup(observations[own])}
        )
    env = environment()
    write_atomically(out, env.get_template("index.html.j2").render(targets=targets, current_commit=current))
    write_atomically(
        compare,
        env.get_template("compare.html.j2").render(
            rows=rows,
            columns=columns,
            current_commit=current,
            flag_summary=flag_summary,
            implied=implied_throughputs(rows, columns),
        ),
    )


def implied_throughputs(rows: list[Row], columns: list[dict[str, Any]]) -> dict[str, float]:
    """The throughputs a published speedup implies for rows the source gives none (DeepSeek's remat
    and plain offload), as the predictions of any target recorded them beside their sources."""
    found: dict[str, float] = {}
    for row in rows:
        for column in columns:
            lookup = column["lookup"]
            value = lookup.value(row.id, "predicted", "published_tflops")
            sources = str(lookup.value(row.id, "predicted", "published_sources") or "").split()
            if value is not None and len(sources) > 1:
                found[row.id] = value
                break
    return found
