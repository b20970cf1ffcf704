"""The HTML report: self-contained, escaped, every claim and verdict on it, charts that render."""

from __future__ import annotations

import re

import pytest

from conftest import require
from offload_repro.core.data import hardware_classes, load_rows, load_target
from offload_repro.core.files import REPO_ROOT
from offload_repro.judge.check import check_claims, load_claims
from offload_repro.judge.evidence import analytic
from offload_repro.present.report import fmt, render
from report_page import rendered_charts, rendered_dom, vega_graphics


def synthetic_run(row, status="ok"):
    return {
        "row": row.id,
        "status": status,
        "message": None if status == "ok" else "<b>boom</b>",
        "tflops_per_device": 0.01,
        "step_time_s": 0.02,
        "losses": [6.0, 5.9, 5.8],
        "provenance": {
            "versions": {"jax": "0.12.0.1", "maxtext": "0.2.5"},
            "python": "3.12.1",
            "device_kind": "cpu",
            "platform": "cpu",
            "host": "h",
            "project_commit": "abc",
        },
    }


@pytest.fixture(scope="module")
def page(tmp_path_factory, tables):
    rows = load_rows(tables)
    claims = load_claims(REPO_ROOT / "experiments" / "claims.yaml")
    verdicts = check_claims(claims, {"analytic": analytic(rows)}, hardware_classes())
    runs = {row.id: synthetic_run(row) for row in rows}
    runs["llama-baseline"] = synthetic_run(rows[0], status="error")
    out = tmp_path_factory.mktemp("report") / "index.html"
    html = render(rows, load_target("cpu"), load_target("gb200-nvl72"), runs, {}, verdicts, out)
    return out, html, verdicts


def test_every_claim_and_its_verdict_is_on_the_page(page):
    _, html, verdicts = page
    for claim in verdicts["claims"]:
        assert f'id="claim-{claim["id"]}" data-verdict="{claim["verdict"]}"' in html


def test_page_is_one_offline_file_under_2_mb(page):
    path, html, _ = page
    assert path.stat().st_size < 2 * 1024**2
    assert not re.search(r"<script[^>]+src=", html)
    assert not re.search(r"<link[^>]+href=\"https?:", html)
    assert html.count("vegaEmbed") >= 1


def test_text_from_results_is_escaped(page):
    _, html, _ = page
    assert "<b>boom</b>" not in html and "&lt;b&gt;boom&lt;/b&gt;" in html


def test_number_formatting():
    assert fmt(None) == "—" and fmt(2669) == "2,669" and fmt(908.2) == "908.2"
    assert fmt(70.875) == "70.88" and fmt(0.0123456) == "0.01235" and fmt("fits") == "fits"


@pytest.mark.browser
def test_charts_render_in_headless_chromium(page):
    require("chromium")
    path, _, verdicts = page
    dom = rendered_dom(path)
    assert rendered_charts(dom) == {"throughput": "true", "memory": "true", "losses": "true"}
    assert vega_graphics(dom) >= 3
    for claim in verdicts["claims"]:
        assert f'data-verdict="{claim["verdict"]}"' in dom
