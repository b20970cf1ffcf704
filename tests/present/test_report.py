"""The report pages, rendered from real result fixtures through the evidence table and the check:
every verdict on one line, shared reasons once, the row table, charts that render offline."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from conftest import CLAIMS, RESULTS, require
from offload_repro.cli import main
from offload_repro.core import provenance
from offload_repro.core.data import load_rows, load_target
from offload_repro.core.evidence_bands import band, span
from offload_repro.core.observation import Observation, Observer
from offload_repro.core.results import read_result, write_result
from offload_repro.judge import metric_names as names
from offload_repro.present import claim_charts, mechanism
from offload_repro.present.pages import render_index
from offload_repro.present.rerun import snakemake_command
from offload_repro.present.text import claim_tolerance, claim_value, fmt, percent, points, settings_text, spread_text
from offload_repro.produce.measured import trace
from report_page import (
    build_report,
    raw_placeholders,
    rendered_charts,
    rendered_dom,
    vega_graphics,
    visible_text,
    with_appendix,
)


def fixture_copy(name: str, work: Path, **changes) -> Path:
    """The real result fixture `name` with `changes`, in `work`."""
    path = work / Path(name).name
    path.write_text(json.dumps(json.loads((RESULTS / name).read_text()) | changes))
    return path


def with_overlap(work: Path) -> Path:
    """The real run fixture with an overlap summary of a known trace (as a one-GPU run records it)."""
    meta = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "/device:GPU:0"}}]
    events = [("gemm_fusion", 0, 100), ("MemcpyDtoH", 50, 100)]
    overlap = trace.summarize(
        meta + [{"ph": "X", "pid": 1, "tid": 1, "name": n, "ts": ts, "dur": d} for n, ts, d in events], steps=1
    )
    # text from results must be escaped
    return fixture_copy("cpu/runs/llama-qkv-offload-lhs.json", work, overlap=overlap, message="<b>boom</b>")


def build_page(work: Path, tables: list[str], extra: tuple[Path, ...] = ()) -> tuple[Path, str, dict]:
    """evidence -> check -> report of the real fixtures (and `extra` results), as the workflow runs
    them, in `work`."""
    results = [
        with_overlap(work),
        RESULTS / "cpu/runs/deepseek-device-mb8.json",
        *sorted((RESULTS / "compiled/gb200-nvl72").glob("*.json")),
        RESULTS / "analytic.json",
        fixture_copy("h200-1/probe.json", work, target="cpu"),  # a probe belongs to the target it ran on
        *extra,
    ]
    _, verdicts, page = build_report(work, tables, results)
    return page, page.read_text(), read_result(verdicts, "verdicts")


@pytest.fixture(scope="module")
def built(tmp_path_factory, tables):
    return build_page(tmp_path_factory.mktemp("report"), tables)


def line(html: str, line_id: str) -> str:
    """The table line `<tr id="line_id" ...>`, without its tags."""
    return re.search(rf'<tr id="{line_id}"[^>]*>(.*?)</tr>', html, re.S).group(1)


def cells(html: str) -> list[str]:
    return re.findall(r"<td[^>]*>(.*?)</td>", html, re.S)


def chart_spec(html: str, chart: str) -> dict:
    return json.loads(re.search(rf'id="spec-{chart}">(.*?)</script>', html, re.S).group(1).replace("<\\/", "</"))


def render_index_of(page: Path, out: Path, verdicts: list[Path] | None = None) -> None:
    """The entry page (out/index.html) of the target built in page's folder, or of one page per
    verdicts file."""
    verdicts = verdicts or [page.parent / "verdicts.json"]
    render_index([page] * len(verdicts), verdicts, out / "index.html")


def test_every_claim_is_one_line_read_whole_with_its_verdict_and_strongest_evidence(built):
    """Its statement whole, and a prediction's value never under "observed", any other never under "predicted"."""
    _, html, verdicts = built
    header = re.search(r'<table class="claims">\s*<thead>(.*?)</thead>', html, re.S).group(1)
    heads = [re.sub(r"<[^>]+>", "", h).strip() for h in re.findall(r"<th>(.*?)</th>", header, re.S)]
    observed, predicted = heads.index("observed"), heads.index("predicted")
    for claim in verdicts["claims"]:
        found = re.search(rf'<tr id="claim-{claim["id"]}" data-verdict="{claim["verdict"]}">(.*?)</tr>', html, re.S)
        assert found, claim["id"]
        assert f'class="ev ev-{claim["summary"]["evidence"]}"' in found.group(1)
        assert f"<summary>{claim['statement']}</summary>".replace("'", "&#39;") in found.group(1)  # whole, not cut
        values = re.findall(r"\n        <td[^>]*>(.*?)</td>", found.group(1), re.S)
        empty = observed if claim["summary"]["evidence"] == "predicted" else predicted
        assert values[empty].strip() == "—"
    host = line(html, "claim-llama-qkv-host-gib")
    # observed and deviation on the line itself, the deviation in one unit: percent of the published
    # for a value (its GiB in the title), percentage points for a ratio
    assert "70.88" in host and '<span title="-0.025 GiB">-0.0%</span>' in host


def test_a_reason_shared_by_many_claims_is_stated_once(built):
    _, html, verdicts = built
    reasons = [j["reason"] for c in verdicts["claims"] for j in c["judgements"] if j["verdict"] == "not-comparable"]
    shared = max(set(reasons), key=reasons.count)
    assert reasons.count(shared) > 3
    assert html.count(shared.replace("'", "&#39;")) == 1
    # the note says how to produce the evidence that would judge them: the page attaches the command
    command = snakemake_command(load_target("gb200-nvl72"))
    assert f"to judge: <code>{command}</code>" in html


def test_row_table_sets_published_measured_compiled_and_analytic_side_by_side(built):
    _, html, _ = built
    qkv = cells(line(html, "row-llama-qkv-offload-lhs"))
    assert qkv[1].strip() == "2,746"  # published TFLOPs/s/device
    assert "s-ok" in qkv[5] and "&lt;b&gt;boom&lt;/b&gt;" in qkv[5]  # escaped message
    assert [c.strip() for c in qkv[9:12]] == ["139.2", "70.88", "fits (45.11)"]
    assert qkv[-1].strip() == "70.88"  # analytic offloaded GiB
    assert "out of memory (-110.8)" in line(html, "row-deepseek-device-mb8")
    assert "not run" in line(html, "row-llama-baseline") and "not compiled" in line(html, "row-llama-baseline")


def test_every_xla_warning_of_a_row_is_shown_with_its_meaning(built):
    """The Llama QKV offload fixture (a real compile) has two warnings: one per computation."""
    html = with_appendix(built[0])
    plain = line(html, "compiled-deepseek-offload-plain")
    assert "counts the 144.88 GiB about to be offloaded as device memory" in plain
    assert "Can&#39;t reduce memory use below" in plain
    qkv = line(html, "compiled-llama-qkv-offload-lhs")
    assert qkv.count("<details>") == 2
    assert "only reduced to 126.00GiB" in qkv and "only reduced to 209.97GiB" in qkv
    assert "counts the 70.88 GiB about to be offloaded as device memory" in qkv


def test_no_page_shows_a_raw_placeholder(built, tmp_path):
    assert raw_placeholders(with_appendix(built[0])) == []
    render_index_of(built[0], tmp_path)
    assert raw_placeholders((tmp_path / "index.html").read_text()) == []
    assert raw_placeholders("<td>nan</td><p>{&quot;a&quot;: 1}</p>") == ['nan {"a": 1}', 'nan {"a": 1}']


def test_pages_built_outside_a_git_checkout_say_so(tmp_path, tables, monkeypatch):
    """A copy of the workflow with no .git (an unpacked archive, a benchmark's copy) has no commit."""
    monkeypatch.setattr(provenance, "project_commit", lambda: None)
    page, html, _ = build_page(tmp_path, tables)
    render_index_of(page, tmp_path)
    for text in (html, (tmp_path / "index.html").read_text()):
        assert raw_placeholders(text) == []
        assert "not a git checkout" in text


def test_the_page_says_what_it_was_built_from_and_is_offline(built):
    page, html, verdicts = built
    assert verdicts["built_from"]["built_at"] in html and "evidence.json" in html
    appendix = page.with_name(f"{page.stem}-appendix.html")
    assert page.stat().st_size < 2 * 1024**2 and appendix.stat().st_size < 2 * 1024**2
    html = with_appendix(page)
    assert not re.search(r"<script[^>]+src=", html) and not re.search(r"<link[^>]+href=\"https?:", html)
    assert "<b>boom</b>" not in html


def test_cpu_throughput_is_never_drawn_on_the_published_gb200_axis(built):
    html = with_appendix(built[0])  # on the CPU's page, a diagnostic: in the appendix
    spec = chart_spec(html, "throughput")
    assert "not comparable to the published GB200 numbers" in json.dumps(spec["title"])
    values = next(iter(spec["datasets"].values()))
    assert {record["source"] for record in values} == {"measured"}


def test_entry_page_marks_stale_targets(built, tmp_path):
    page, _, verdicts = built
    old = dict(verdicts, built_from=dict(verdicts["built_from"], project_commit="0123abc"))
    old_path = tmp_path / "old-verdicts.json"
    old_path.write_text(json.dumps(old))
    render_index_of(page, tmp_path, [page.parent / "verdicts.json", old_path])
    index = (tmp_path / "index.html").read_text()
    assert index.count('href="cpu.html"') == 2
    assert 'data-stale="false"' in index and 'data-stale="true"' in index and "0123abc" in index


def repeated_evidence(path: Path) -> None:
    """A GB200 evidence table whose Llama throughputs are medians of repeats, as the runner observes them."""
    spreads = {  # row -> (median, min, max, repeats) of TFLOPs/s/device
        "llama-baseline": (2669.0, 2669.0, 2669.0, 1),
        "llama-qkv-offload-lhs": (2746.0, 2700.0, 2760.0, 3),
        "llama-qkv-offload-nolhs": (2569.0, 2440.0, 2710.0, 3),  # wider than the ±5% tolerance
        "llama-qkv-offload-lhs-pipelined": (2718.0, 2701.0, 2731.0, 3),
    }
    observations = []
    for row, (value, low, high, n) in spreads.items():
        seen = Observer({"status": "ok", "message": None}, f"runs/{row}.json", "measured", row, "gb200-nvl72")
        seen.status_line()
        spread = {"median": value, "low": low, "high": high, "relative": (high - low) / value, "n": n}
        seen.add("tflops_per_device", value, "TFLOPs/s/device", spread=spread)
        observations += [o.record() for o in seen.observations]
    source = {"kind": "run", "evidence": "measured", "status": "ok", "message": None, "provenance": None}
    sources = [source | {"file": f"runs/{row}.json", "assumptions": []} for row in spreads]
    write_result(
        path, "evidence", {"target": "gb200-nvl72", "observations": observations, "sources": sources, "details": []}
    )


def test_observed_values_show_the_spread_of_their_repeats(tmp_path, tables):
    repeated_evidence(tmp_path / "evidence.json")
    html = build_report(tmp_path, tables, None)[2].read_text()
    lhs, nolhs = line(html, "claim-llama-qkv-lhs-throughput"), line(html, "claim-llama-qkv-nolhs-throughput")
    assert '2,746<span class="spread"> (2,700\u20132,760, 3 repeats)</span>' in lhs
    assert "wider than the tolerance" not in lhs
    assert "spread of 3 repeats 2,440\u20132,710 (10.5%) is wider than the tolerance (±5%)" in nolhs
    baseline = line(html, "claim-llama-baseline-throughput")
    assert "repeats" not in baseline.split("</details>")[1]  # one run: no spread
    measured = {
        row: re.sub(r"<[^>]+>", "", cells(line(html, f"row-{row}"))[6])
        for row in ("llama-qkv-offload-lhs", "llama-baseline")
    }
    assert "2,746 (2,700\u20132,760, 3 repeats)" in measured["llama-qkv-offload-lhs"]
    assert measured["llama-baseline"].strip() == "2,669"
    assert raw_placeholders(html) == []


def test_values_read_as_words():
    """Numbers, spreads of repeats, a claim's value and tolerance, an assumption's settings (the
    scheduler's cost model too), as the pages write them."""
    assert fmt(None) == "—" and fmt(2669) == "2,669" and fmt(908.2) == "908.2"
    assert fmt(70.875) == "70.88" and fmt(0.0123456) == "0.01235" and fmt("fits") == "fits"
    assert spread_text({"low": 2700.0, "high": 2760.0, "n": 3}) == " (2,700\u20132,760, 3 repeats)"
    assert spread_text({"low": 2746.0, "high": 2746.0, "n": 1}) == spread_text(None) == ""
    assert claim_value(0.029, "fraction") == "+2.9%" and claim_value(2669, "TFLOPs/s/device") == "2,669"
    assert claim_tolerance({"absolute": 0.01}, "fraction") == "±1 pp" and points(-0.0393) == "-3.9 pp"
    assert settings_text({"row": {"max_target_length": 2048}, "maxtext": {"capacity_factor": 1.25}}) == (
        "max_target_length 2048; MaxText capacity_factor 1.25"
    )
    assert settings_text({"latency_profile": "step-model"}) == "latency profile step-model"
    assert settings_text({"latency_profile": "none"}) == "latency profile none"


@pytest.mark.browser
def test_charts_render_in_headless_chromium(built):
    require("chromium")
    page, _, verdicts = built
    dom = rendered_dom(page)
    appendix = rendered_dom(page.with_name(f"{page.stem}-appendix.html"))
    assert rendered_charts(dom) == {"memory": "true"}
    drawn = ("throughput", "activations", "losses", "probe", "overlap")
    assert rendered_charts(appendix) == dict.fromkeys(drawn, "true")
    assert vega_graphics(dom) + vega_graphics(appendix) >= 5
    for claim in verdicts["claims"]:
        assert f'data-verdict="{claim["verdict"]}"' in dom


def test_the_new_hardware_section_from_real_whatif_results(tmp_path, tables):
    """Rows x targets, the frontier (with its contrast claims judged) and the transfer budget."""
    results = [
        *sorted((RESULTS / "compiled").glob("*/*.json")),
        *sorted((RESULTS / "whatif").glob("*/frontier-*.json")),
        RESULTS / "whatif/budget.json",
        RESULTS / "analytic.json",
    ]
    _, verdicts, page = build_report(tmp_path, tables, results)
    html = with_appendix(page)
    by_id = {c["id"]: c for c in read_result(verdicts, "verdicts")["claims"]}
    assert by_id["deepseek-device-save-frontier-below-8"]["verdict"] == "pass"
    assert by_id["deepseek-offload-frontier-reaches-8"]["verdict"] == "pass"
    assert line(html, "whatif-deepseek-device-mb8").count("OOM") == 2  # out of memory on GB200 and on Vera Rubin
    assert "not compiled" in line(html, "whatif-llama-baseline")
    assert re.search(r"<strong>[2-7]</strong>", line(html, "frontier-deepseek-device"))
    assert 'id="budget-deepseek-offload-optimized"' in html and "What the transfer budget assumes" in html
    assert 'id="chart-frontier"' in html
    assert raw_placeholders(html) == []


def test_check_can_gate_ci_on_the_verdicts(built, tmp_path, capsys):
    page, _, verdicts = built
    evidence = page.parent / "evidence.json"
    common = ["check", "--evidence", str(evidence), "--claims", str(CLAIMS), "--out", str(tmp_path / "v.json")]
    common += ["--compile-target", "gb200-nvl72"]
    # the fixtures' plain offload row compiles 9% above its published memory: one fail, no error
    assert verdicts["counts"]["error"] == 0 and verdicts["counts"]["fail"] == 1
    assert main([*common, "--fail-on", "error,inconclusive"]) == 0
    assert main([*common, "--fail-on", "fail"]) == 3
    assert main([*common, "--fail-on", "not-comparable"]) == 3
    assert "failing on" in capsys.readouterr().err


def test_the_page_opens_with_a_summary_of_the_verdicts_and_links_its_appendix(built):
    page, html, verdicts = built
    claimed = [c for c in verdicts["claims"] if c["kind"] != "check"]
    summary = html[html.index('<section id="first-screen">') : html.index('<table class="claims">')]
    text = " ".join(visible_text(summary).split())
    # findings are counted: the 576 MiB per layer, its query, key and value and its 126-layer total are one
    findings = verdicts["findings"]
    assert len(findings) == len(claimed) - 4 and sum(len(f["claims"]) for f in findings) == len(claimed)
    qkv = next(f for f in findings if f["id"] == "llama-qkv-mib-per-layer")
    assert len(qkv["claims"]) == 5
    held = sum(1 for f in findings if f["counted_as"] == "pass")
    assert f"Held: {held} of the post's {len(findings)} findings (" in text
    assert verdicts["finding_counts"]["pass"] == held
    assert f'href="{page.stem}-appendix.html"' in html[: html.index('<section id="first-screen">')]
    assert 'id="rerun"' in summary and "--forcerun report" in summary


def test_a_chart_legend_lists_only_the_evidence_it_draws(built):
    html = with_appendix(built[0])
    spec = chart_spec(html, "memory")
    drawn = {record["source"] for values in spec["datasets"].values() for record in values if "source" in record}
    domains = re.findall(r'"domain": \[([^\]]*)\]', json.dumps(spec))
    assert domains and all(set(json.loads(f"[{domain}]")) <= drawn for domain in domains)


@pytest.fixture(scope="module")
def predicted_page(tmp_path_factory, tables):
    return build_page(tmp_path_factory.mktemp("predicted"), tables, (RESULTS / "predicted/gb200-nvl72.json",))


def test_the_memory_chart_draws_each_tolerance_and_every_value_and_the_activations_apart(built):
    """(The allocator's limit and its label: on the main job's page, tests/workflow.)"""
    page, html, _ = built
    spec = chart_spec(html, "memory")
    records = [record for values in spec["datasets"].values() for record in values]
    # every bar's value as the page writes it
    assert records and all(r["text"] == fmt(r["gib"]) for r in records)
    # a published figure carries the tolerance of the claim that states it: 145.6 GiB at ±5%
    plain = next(r for r in records if r["row"] == "deepseek-offload-plain" and r["source"] == "published")
    assert (plain["tolerance_low"], plain["tolerance_high"]) == pytest.approx((145.6 * 0.95, 145.6 * 1.05))
    # each compiled device figure carries the band the verdicts hold to a tolerance, from the measured gaps
    compiled_band = band("compiled_memory", "test")
    for record in (r for r in records if r["source"] == "compiled"):
        if record["memory"] == "device":
            assert (record["band_low"], record["band_high"]) == pytest.approx(span(compiled_band, record["gib"]))
            assert record["text_at"] == record["band_high"]  # its label clear of the whisker
        else:
            assert record["band_low"] is None and record["text_at"] == record["gib"]
    # the activations' bytes are not on the total memory's axis: a chart of their own, in the appendix
    assert {r["source"] for r in records} <= {"compiled", "published"}
    activations = chart_spec(with_appendix(page), "activations")
    assert {r["source"] for values in activations["datasets"].values() for r in values} == {"analytic"}


def test_the_predicted_chart_marks_the_calibration_row_and_shows_every_published_throughput(predicted_page, tables):
    """The row a model is calibrated on is marked where its own calibration is what the chart shows
    (its published value by construction, no test of the model), never where a claim's verdict shows
    it predicted from other calibrations; every published throughput of a model drawn is shown
    (DeepSeek's 908.2); a model no rate calibrates shows its published values and the reason."""
    page, _, _ = predicted_page
    records = [r for values in chart_spec(with_appendix(page), "predicted")["datasets"].values() for r in values]
    role = {r["row"]: r["role"] for r in records if r["source"] == "predicted"}
    # this prediction calibrates DeepSeek on its plain offload row (541.6), which no claim judges
    assert role.pop("deepseek-offload-plain") == "calibration row" and set(role.values()) == {"prediction"}
    assert any(r["row"] == "deepseek-offload-optimized" and r["tflops"] == 908.2 for r in records)
    # no rate of a model calibrates: its published values, each with the result's reason
    rows = load_rows(tables)
    why = "no rate of deepseek calibrates: deepseek-remat: its transfers alone take longer"
    observations = pd.DataFrame(
        [Observation(r.id, "gb200-nvl72", "predicted", names.UNPREDICTED_WHY, why, None, "ok", "p.json") for r in rows]
    ).astype({"at": float})
    chart = claim_charts.predicted_throughput(rows, observations, {r.id: r for r in rows}, "gb200-nvl72", {})
    drawn = [r for values in chart.to_dict()["datasets"].values() for r in values]
    assert {r["source"] for r in drawn} == {"published"}
    optimized = next(r for r in drawn if r["row"] == "deepseek-offload-optimized")
    assert optimized["tflops"] == 908.2 and optimized["note"] == "not predicted: no rate of deepseek calibrates"


def test_each_ratio_claim_is_drawn_as_a_ratio_beside_the_posts_value_and_tolerance(predicted_page):
    _, html, verdicts = predicted_page
    datasets = chart_spec(html, "ratios")["datasets"].values()
    records = [record for values in datasets for record in values if "claim" in record]
    ratio_claims = [c for c in verdicts["claims"] if c["check"] == "ratio"]
    published = {r["claim"]: r for r in records if r["source"] == "published"}
    assert set(published) == {c["id"] for c in ratio_claims}
    lhs = published["llama-qkv-lhs-vs-baseline"]
    # +2.9% with its one tolerance of 1 pp, in percent
    assert lhs["pct"] == pytest.approx(2.9) and (lhs["low"], lhs["high"]) == pytest.approx((1.9, 3.9))
    predicted = next(r for r in records if r["claim"] == "llama-qkv-lhs-vs-baseline" and r["source"] == "predicted")
    assert predicted["low"] <= predicted["pct"] <= predicted["high"]
    assert predicted["text"] == percent(predicted["pct"] / 100)


def test_a_model_with_no_leave_one_out_pair_says_which_of_its_rows_fit_and_which_ran_out_of_memory(tmp_path, tables):
    """DeepSeek's dropless programs leave one row that fits: its leave-one-out error has no pair, and
    the appendix says why instead of a bare dash."""
    real = json.loads((RESULTS / "predicted/gb200-nvl72.json").read_text())
    error = real["model_error"]
    error["families"]["deepseek"] |= {"pairs": [], "mean_abs": None, "largest_abs": None}
    rows = real["rows"]
    (index,) = [i for i, r in enumerate(rows) if r["row"] == "deepseek-offload-optimized"]
    oom = {"status": "oom", "message": "out of memory as compiled (5.1 GiB over)", "failure": None}
    rows[index] = {"row": rows[index]["row"], "family": "deepseek", **oom}
    prediction = fixture_copy("predicted/gb200-nvl72.json", tmp_path, model_error=error, rows=rows)
    page, _, _ = build_page(tmp_path, tables, (prediction,))
    said = re.search(r'<p id="unmeasured-deepseek">(.*?)</p>', with_appendix(page), re.S).group(1)
    assert "Fit: deepseek-offload-plain;" in said and "out of memory as compiled: deepseek-offload-optimized." in said
    assert '<p id="unmeasured-llama">' not in with_appendix(page)


def test_a_finding_holds_only_where_every_one_of_its_claims_does():
    from offload_repro.judge.verdicts import findings

    def claim(claim_id: str, verdict: str, finding: str | None = None) -> dict:
        return {"id": claim_id, "kind": "accounting", "verdict": verdict, "finding": finding or claim_id}

    grouped = findings([claim("a", "pass"), claim("b", "fail", "a"), claim("c", "pass"), claim("d", "pass", "c")])
    assert [(f["id"], f["claims"], f["counted_as"]) for f in grouped] == [
        ("a", ["a", "b"], "fail"),
        ("c", ["c", "d"], "pass"),
    ]


def test_the_first_screen_says_in_plain_words_why_no_speed_claim_is_decided(tmp_path, tables):
    page, html, verdicts = build_page(tmp_path, tables, (RESULTS / "predicted/gb200-nvl72.json",))
    summary = " ".join(
        visible_text(html[html.index('<section id="first-screen">') : html.index('<table class="claims">')]).split()
    )
    predicted = [c for c in verdicts["claims"] if c["kind"] != "check" and c["summary"]["evidence"] == "predicted"]
    assert predicted and not any(c["verdict"] in ("pass", "fail") for c in predicted)
    error = max(c["summary"]["band"]["error"] for c in predicted if c["summary"].get("band"))
    # a band as wide as the model's measured error never fits inside a 10% tolerance
    assert error > 0.1
    assert f"Speed: not decided here. {len(predicted)} speed claims rest on the step-time model alone" in summary
    # each band's error with its unit and where it was measured, beside the tolerances it must fit in
    assert f"take its throughput error across scales on real GPUs (±{error * 100:.1f}%)" in summary
    words = " ".join(re.sub(r"<[^>]+>", "", html[html.index('<section id="first-screen">') :]).split())
    assert "against the post's tolerances (±1 pp; ±5%)" in words
    assert "Predicted against the post" not in summary
    # a prediction is never called observed, in the table or in a claim's judgements
    items = [item.split("</li>")[0] for item in html.split("<li>") if item.lstrip().startswith('<span class="ev')]
    judged = [re.search(r"</span>\s*(\w+) <strong>", item) for item in items if 'ev-predicted">predicted' in item]
    words = {found.group(1) for found in judged if found}
    assert words == {"predicted"}
    # one value per row: the chart draws each row at the prediction its claim was judged by, the
    # calibration row too (judged from another row), never its calibration's own published value
    appendix = with_appendix(page)  # the throughputs predicted per row: a diagnostic, in the appendix
    drawn = {
        record["row"]: record["tflops"]
        for records in chart_spec(appendix, "predicted")["datasets"].values()
        for record in records
        if record["source"] == "predicted"
    }
    judged_at = {c["subjects"][0]: c["summary"]["observed"] for c in predicted if c["check"] == "value"}
    assert judged_at and all(drawn[row] == pytest.approx(value) for row, value in judged_at.items())
    # the predicted throughputs are drawn from zero: an axis from near the values would make a few
    # percent look like a gulf
    spec = json.dumps(chart_spec(appendix, "predicted"))
    assert '"zero": true' in spec and '"zero": false' not in spec


def test_the_first_screen_states_what_offloading_takes_off_the_device(built, rows):
    """The mechanism, from the compiled GB200 programs of the fixtures: device-save at micro batch 8
    (295.1 GiB a device) against offloading the same six tensors (158.7 GiB, 144.9 on the host)."""
    _, html, _ = built
    summary = html[html.index('<section id="first-screen">') : html.index('<table class="claims">')]
    line = " ".join(visible_text(summary[summary.index('id="mechanism"') :].split("</li>")[0]).split())
    line = line.replace(" ,", ",").replace(" .", ".").replace(" )", ")")
    assert "offloading the 6 tensors deepseek-device-mb8 saves on the device (295.1 GiB per device)" in line
    assert "takes 136.5 GiB off it in deepseek-offload-plain (158.7 GiB, 144.9 on the host)." in line
    assert "The post: 145.6 GiB on the device in deepseek-offload-plain, where device-save ran out of memory." in line
    # the Llama rows offload what their baseline recomputes: no device-save row to set them beside
    every = list(rows.values())
    assert mechanism.saved_on_device(rows["llama-qkv-offload-lhs"], every) is None
    assert mechanism.saved_on_device(rows["deepseek-offload-optimized"], every).id == "deepseek-device-mb8"
    assert mechanism.saved_on_device(rows["deepseek-device-mb2"], every) is None  # it offloads nothing


def test_the_appendix_links_its_first_uses_of_the_words_to_the_target_pages_glossary(built):
    page, html, _ = built
    appendix = page.with_name(f"{page.stem}-appendix.html").read_text()
    linked = re.findall(r'<a class="term" href="([^"#]*)#term-([a-z-]+)"', appendix)
    assert linked and {where for where, _ in linked} == {page.name}
    assert all(f'id="term-{term}"' in html for _, term in linked)
