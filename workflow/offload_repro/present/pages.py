"""Static HTML pages rendered: one per target and an entry page.

The pages only draw. Every number comes from the evidence table (results/<target>/evidence.json),
every verdict from verdicts.json, every label from the row and claim data, each under the name
judge/metric_names.py gives it; nothing here judges or computes (ratios, errors, bands and counts
arrive as observations or in the verdicts). Each section of a target's page is built by its own
module of present/; this one hands them to Jinja (autoescaping on), with the filters of
present/text.py, and inlines the Vega bundle from vl-convert so each page opens offline.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import altair as alt
import jinja2
import vl_convert

from offload_repro.core import optional_stages, provenance
from offload_repro.core.assumptions import sentence
from offload_repro.core.data import Row, hardware_classes, load_target
from offload_repro.core.evidence_classes import EVIDENCE, PUBLISHED_COLOUR
from offload_repro.core.files import REPO_ROOT, write_atomically
from offload_repro.core.results import read_result
from offload_repro.judge.claims import load_claims
from offload_repro.judge.evidence_table import detail, first_source
from offload_repro.judge.spread import tolerance_text
from offload_repro.present import (
    charts,
    chip_scope,
    device_section,
    glossary,
    measured_runs,
    mechanism,
    pair_errors_section,
    text,
)
from offload_repro.present.assumptions_section import assumptions_section
from offload_repro.present.first_screen import first_screen
from offload_repro.present.footnotes import footnotes
from offload_repro.present.lookup import Lookup, frame
from offload_repro.present.outcome_settings_section import outcome_settings_section
from offload_repro.present.rerun import rerun, snakemake_command
from offload_repro.present.row_tables import tables
from offload_repro.present.speed_section import speed
from offload_repro.present.whatif_section import predicted_gains, whatif

TEMPLATE_DIR = REPO_ROOT / "report"
READS = ("report/*.j2", "report/style.css")


@cache
def vega_bundle() -> str:
    """Vega, Vega-Lite (the version Altair writes) and vega-embed as one inline script."""
    version = alt.SCHEMA_VERSION.lstrip("v").rsplit(".", 1)[0]
    return vl_convert.javascript_bundle(vl_version=version)


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR), autoescape=True, undefined=jinja2.StrictUndefined
    )
    env.globals["stage_command"] = optional_stages.command  # one spelling of each optional stage's command
    env.filters.update(
        fmt=text.fmt,
        percent=text.percent,
        signed=text.signed,
        points=text.points,
        claim_value=text.claim_value,
        claim_tolerance=text.claim_tolerance,
        share=text.share,
        settings=text.settings_text,
        tolerance=tolerance_text,
        spread=text.spread_text,
        hardware=text.hardware_text,
        commit=text.commit_text,
        glossed=glossary.glossed,
    )
    env.globals.update(
        evidence_classes=EVIDENCE,
        published_colour=PUBLISHED_COLOUR,
        style=(TEMPLATE_DIR / "style.css").read_text(),
        glossary=glossary.load_glossary(),
    )
    return env


def appendix_path(page: Path) -> Path:
    """A target's appendix beside its page: results/report/cpu.html -> cpu-appendix.html."""
    return page.with_name(f"{page.stem}-appendix{page.suffix}")


def render_target(
    rows: list[Row],
    evidence_path: Path,
    verdicts_path: Path,
    out_path: Path,
    assumptions_path: Path | None = None,
    pairs_path: Path | None = None,
) -> str:
    """The target's page at `out_path` (what a reviewer reads first: the verdicts and the tables) and
    its appendix beside it (the diagnostics they rest on); returns the page."""
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
    numbers, notes = footnotes(verdicts)
    measured = measured_runs.section(observations, detail(evidence, "validation"))
    prediction = detail(evidence, "predicted", verdicts["compile_target"])
    budget = first_source(sources, "budget") or {}
    compile_source = first_source(sources, "compile") or {}
    run_provenance = next((s["provenance"] for s in sources if s["kind"] == "run" and s["provenance"]), None)
    compile_provenance = next((s["provenance"] for s in sources if s["kind"] == "compile" and s["provenance"]), None)
    pair_result = read_result(pairs_path, "pair-errors") if pairs_path else None
    specs = charts.chart_specs(rows, observations[own], target, compiled_on, verdicts)
    main_charts, appendix_charts = charts.split(specs, target)
    context = dict(
        target=target,
        compiled_on=compiled_on,
        verdicts=verdicts,
        first_screen=first_screen(verdicts, target, compiled_on),
        # the settings the source's outcomes chose: on the page that shows the compile target's programs
        outcome_settings=outcome_settings_section(verdicts, rows, prediction) if compiled_on else None,
        mechanism=mechanism.lines(rows, lookup) if compiled_on else [],
        rerun=rerun(target, rows, out_path.name, run_provenance, compile_provenance),
        main_page=out_path.name,
        appendix_page=appendix_path(out_path).name,
        notes=notes,
        note_numbers=numbers,
        tables=tables(rows, lookup),
        chip_scope=chip_scope.scope(
            target,
            load_target(hardware_classes()["source-hardware"][0]),
            rows,
            load_claims(REPO_ROOT / verdicts["built_from"]["claims"]),
            pair_result,
            (run_provenance or {}).get("project_commit"),
            verdicts["built_from"]["project_commit"],
        )
        if target.kind == "tpu"
        else None,
        device=device_section.section(
            rows,
            lookup,
            target,
            detail(evidence, "device-prediction", target.name),
            load_claims(REPO_ROOT / verdicts["built_from"]["claims"]),
        ),
        main_charts=main_charts,
        appendix_charts=appendix_charts
        + charts.whatif_charts(observations)
        + (charts.pair_charts(pair_result) if compiled_on else []),
        pair_errors=pair_errors_section.section(pair_result) if compiled_on else None,
        whatif=whatif(rows, observations),
        speed=speed(rows, lookup, observations[own], verdicts, prediction, target.name == verdicts["compile_target"]),
        measured_runs=measured,
        measured_chart=charts.measured_chart(measured),
        assumptions=assumptions_section(
            read_result(assumptions_path, "assumptions") if assumptions_path else None, verdicts
        ),
        sentence=sentence,
        gains=predicted_gains(observations),
        budget_assumptions=budget.get("assumptions", []),
        budget_message=budget.get("message"),
        sources=sources,
        run_provenance=run_provenance,
        compile_provenance=compile_provenance,
        compile_assumptions=[sentence(a) for a in compile_source.get("assumptions", [])],
        vega_bundle=vega_bundle().replace("</script", "<\\/script"),
    )
    env = environment()
    html = env.get_template("target.html.j2").render(context)
    write_atomically(out_path, html)
    write_atomically(appendix_path(out_path), env.get_template("appendix.html.j2").render(context))
    return html


def render_index(pages: list[Path], verdict_paths: list[Path], out: Path) -> None:
    """The entry page: every target with results, its counts and how fresh its page is."""
    current = provenance.project_commit()
    targets = []
    for page, verdict_path in zip(pages, verdict_paths, strict=True):
        verdicts = read_result(verdict_path, "verdicts")
        target = load_target(verdicts["target"])
        built = verdicts["built_from"]
        targets.append(
            {
                "target": target,
                "page": page.name,
                "counts": verdicts["finding_counts"],
                "findings": len(verdicts["findings"]),
                "claims": sum(verdicts["counts"].values()),
                "built_at": built["built_at"],
                "commit": built["project_commit"],
                "stale": built["project_commit"] != current,
                "command": snakemake_command(target),
            }
        )
    write_atomically(out, environment().get_template("index.html.j2").render(targets=targets, current_commit=current))
