"""Static HTML report: verdicts, tables as published beside what was observed, charts, provenance.

One self-contained file: Jinja (autoescaping on) renders the page, Altair builds the chart
specs, and the Vega JavaScript bundle from vl-convert is inlined once so it opens offline.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import altair as alt
import jinja2
import vl_convert

from offload_repro.core.data import Row, Target
from offload_repro.core.files import REPO_ROOT, write_atomically
from offload_repro.present import charts
from offload_repro.present.collect import device_bytes
from offload_repro.produce.analytic import GIB, row_accounting

TEMPLATE_DIR = REPO_ROOT / "report"
LHS = "--xla_gpu_enable_latency_hiding_scheduler"
PIPELINED = "--xla_gpu_enable_pipelined_host_offloading"


@cache
def vega_bundle() -> str:
    """Vega, Vega-Lite (the version Altair writes) and vega-embed as one inline script."""
    version = alt.SCHEMA_VERSION.lstrip("v").rsplit(".", 1)[0]
    return vl_convert.javascript_bundle(vl_version=version)


def fmt(value: Any) -> str:
    """Numbers as a reader wants them: '—' for none, 4 significant digits, thousands separated."""
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, int) or (float(value).is_integer() and abs(value) >= 1):
        return f"{value:,.0f}"
    if abs(value) >= 1000:
        return f"{value:,.1f}"
    return f"{value:.4g}"


def flag_summary(row: Row) -> str:
    flags = dict(flag.split("=", 1) for flag in row.xla_flags)
    lhs = {"true": "LHS on", "false": "LHS off"}.get(flags.get(LHS, ""), "LHS default")
    return lhs + (", pipelined offload" if flags.get(PIPELINED) == "true" else "")


def placement_summary(row: Row) -> str:
    parts = [f"{where}: {', '.join(row.tensors(where))}" for where in ("offload", "device") if row.tensors(where)]
    return "; ".join(parts) or "remat: " + ", ".join(row.placement)


def row_line(row: Row, run: dict[str, Any] | None, compiled: dict[str, Any] | None) -> dict[str, Any]:
    accounting = row_accounting(row)
    line: dict[str, Any] = {
        "row": row,
        "flags": flag_summary(row),
        "placement": placement_summary(row),
        "analytic_offload_gib": accounting["offloaded_bytes_per_step"] / GIB,
        "analytic_device_gib": accounting["device_saved_bytes_per_step"] / GIB,
        "run": run,
        "compiled": compiled,
    }
    if run and run.get("losses"):
        line["final_loss"] = run["losses"][-1]
    if compiled and compiled.get("status") == "ok":
        line["compiled_device_gib"] = device_bytes(compiled["memory"]) / GIB
        line["compiled_host_gib"] = compiled["host_bytes"] / GIB
    return line


def mechanism_lines(rows: list[Row], compiled: dict[str, Any]) -> list[dict[str, Any]]:
    """Did each row's placement and flags change the compiled program as the row says?"""
    lines = []
    for row in rows:
        result = compiled.get(row.id)
        if not result or result.get("status") != "ok":
            continue
        check = result["mechanism"]
        problems = []
        if not check["offload_took_effect"]:
            problems.append("placement had no effect on host buffers")
        if not check["host_bytes_match_analytic"]:
            problems.append("host buffer bytes differ from the analytic offload")
        siblings = [
            other.id
            for other in rows
            if other.id != row.id
            and other.table == row.table
            and other.placement == row.placement
            and other.per_device_batch_size == row.per_device_batch_size
            and other.xla_flags != row.xla_flags
            and compiled.get(other.id, {}).get("hlo_sha256") == result["hlo_sha256"]
        ]
        if siblings:
            problems.append(f"flags had no effect: same program as {', '.join(siblings)}")
        lines.append(
            {
                "row": row,
                "check": check,
                "async_pairs": result["hlo"]["async_pairs_total"],
                "digest": result["hlo_sha256"][:12],
                "warnings": result.get("xla_memory_warnings", []),
                "problems": problems,
            }
        )
    return lines


def chart_specs(
    rows: list[Row], runs: dict[str, Any], compiled: dict[str, Any], capacity_gib: float | None
) -> list[dict[str, Any]]:
    throughput, memory, losses = [], [], []
    for row in rows:
        base = {"row": row.id, "label": row.label, "table": row.table}
        if row.published["tflops_per_device"] is not None:
            throughput.append(base | {"source": "published", "tflops_per_device": row.published["tflops_per_device"]})
        run = runs.get(row.id)
        if run and run.get("tflops_per_device") is not None:
            throughput.append(base | {"source": "measured", "tflops_per_device": run["tflops_per_device"]})
        for key, kind in (("gpu_memory_gib", "device"), ("host_memory_gib", "host")):
            if row.published[key] is not None:
                memory.append(base | {"source": "published", "memory": kind, "gib": row.published[key]})
        result = compiled.get(row.id)
        if result and result.get("status") == "ok":
            memory.append(
                base | {"source": "compiled", "memory": "device", "gib": device_bytes(result["memory"]) / GIB}
            )
            memory.append(base | {"source": "compiled", "memory": "host", "gib": result["host_bytes"] / GIB})
        accounting = row_accounting(row)
        memory.append(
            base | {"source": "analytic", "memory": "host", "gib": accounting["offloaded_bytes_per_step"] / GIB}
        )
        memory.append(
            base | {"source": "analytic", "memory": "device", "gib": accounting["device_saved_bytes_per_step"] / GIB}
        )
        for step, loss in enumerate((run or {}).get("losses") or []):
            losses.append({"table": row.table, "label": row.label, "step": step, "loss": loss})
    built = [
        ("throughput", charts.throughput(throughput)),
        ("memory", charts.memory(memory, capacity_gib)),
        ("losses", charts.loss_curves(losses)),
    ]
    return [{"id": name, "spec": json.dumps(chart.to_dict()).replace("</", "<\\/")} for name, chart in built]


def provenance(runs: dict[str, Any], target: Target, compiled: dict[str, Any]) -> dict[str, Any]:
    first = next((run for run in runs.values() if run.get("provenance", {}).get("versions")), None)
    first_compiled = next(iter(compiled.values()), None)
    return {
        "target": target.spec,
        "run": first["provenance"] if first else None,
        "compiled": first_compiled.get("provenance") if first_compiled else None,
    }


def render(
    rows: list[Row],
    target: Target,
    compile_target: Target | None,
    runs: dict[str, Any],
    compiled: dict[str, Any],
    verdicts: dict[str, Any],
    out_path: str | Path,
    probe: dict[str, Any] | None = None,
) -> str:
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR), autoescape=True, undefined=jinja2.StrictUndefined
    )
    environment.filters["fmt"] = fmt
    tables: dict[str, dict[str, Any]] = {}
    for row in rows:
        table = tables.setdefault(row.table, {"name": row.table, "lines": [], "assumptions": []})
        table["lines"].append(row_line(row, runs.get(row.id), compiled.get(row.id)))
        for assumption in row.assumptions:
            if assumption not in table["assumptions"]:
                table["assumptions"].append(assumption)
    capacity = compile_target.spec["hardware"]["device_memory_gib"] if compile_target else None
    html = environment.get_template("index.html.j2").render(
        target=target,
        compile_target=compile_target,
        verdicts=verdicts,
        tables=list(tables.values()),
        charts=chart_specs(rows, runs, compiled, capacity),
        mechanisms=mechanism_lines(rows, compiled),
        probe=probe,
        overlaps=[(row, runs[row.id]["overlap"]) for row in rows if (runs.get(row.id) or {}).get("overlap")],
        provenance=provenance(runs, target, compiled),
        style=(TEMPLATE_DIR / "style.css").read_text(),
        vega_bundle=vega_bundle().replace("</script", "<\\/script"),
    )
    write_atomically(out_path, html)
    return html
