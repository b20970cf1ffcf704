"""Build a target's report page as the main job does, and open it in headless Chromium to read back
the DOM after its scripts ran."""

from __future__ import annotations

import html as entities
import json
import re
import subprocess
import tempfile
from pathlib import Path

from conftest import REPO
from offload_repro.cli import main


def build_report(
    work: Path,
    tables: list[str],
    inputs: list | None,
    target: str = "cpu",
    compile_target: str = "gb200-nvl72",
    check: tuple[str, ...] = (),
    report: tuple[str, ...] = (),
) -> tuple[Path, Path, Path]:
    """evidence -> check -> report in `work`, the commands the main job runs: the evidence table of
    the result files `inputs` (None: `work`'s evidence.json is written already), the verdicts on the
    claims and the target's page, each command with its `check` and `report` arguments added."""
    evidence, verdicts, page = work / "evidence.json", work / "verdicts.json", work / f"{target}.html"
    if inputs is not None:
        assert main(["evidence", "--target", target, "--out", str(evidence), *map(str, inputs)]) == 0
    claims = str(REPO / "experiments" / "claims.yaml")
    checked = ["check", "--evidence", str(evidence), "--claims", claims, "--out", str(verdicts)]
    assert main([*checked, "--compile-target", compile_target, *check]) == 0
    reported = ["report", "--tables", *tables, "--evidence", str(evidence), "--verdicts", str(verdicts)]
    assert main([*reported, "--out", str(page), *report]) == 0
    return evidence, verdicts, page


def rendered_page(work: Path, tables: list[str], target: str, inputs: list, compile_target: str = "gb200-nvl72") -> str:
    """The target's page and its appendix, built from result files by build_report."""
    return with_appendix(build_report(work, tables, inputs, target, compile_target)[2])


CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--virtual-time-budget=20000",
    "--dump-dom",
]


def rendered_dom(page: Path, timeout: float = 120, width: int | None = None) -> str:
    size = [f"--window-size={width},1000"] if width else []
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            ["chromium", *CHROMIUM_FLAGS, *size, f"--user-data-dir={profile}", page.resolve().as_uri()],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def rendered_charts(dom: str) -> dict[str, str]:
    """{chart id: data-rendered state} for each chart figure after vega-embed ran."""
    charts = {}
    for tag in re.findall(r"<figure[^>]*>", dom):
        if chart_id := re.search(r'id="chart-([\w-]+)"', tag):
            state = re.search(r'data-rendered="(\w+)"', tag)
            charts[chart_id.group(1)] = state.group(1) if state else "no"
    return charts


def vega_graphics(dom: str) -> int:
    """Vega's SVG renderer draws each view as an <svg class="marks">."""
    return len(re.findall(r'<svg[^>]*class="marks"', dom))


def unlinked(html: str) -> str:
    """`html` with each glossary link replaced by its word (a linked word reads the same)."""
    return re.sub(r'<a class="term"[^>]*>([^<]*)</a>', r"\1", html)


def visible_text(html: str) -> str:
    """What a reader sees of a page without its scripts: tags dropped, entities decoded."""
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    html = re.sub(r'\b(title|data-[\w-]+)="[^"]*"', " ", html)
    return entities.unescape(re.sub(r"<[^>]+>", " ", html))


def raw_placeholders(html: str) -> list[str]:
    """Placeholders a reader should never see: nan, None, or a JSON object, each with its context."""
    text = visible_text(html)
    found = re.finditer(r"\bnan\b|\bNaN\b|\bNone\b|\{\s*\"|\{\s*'", text)
    return [" ".join(text[max(0, m.start() - 60) : m.end() + 60].split()) for m in found]


def _once_charts_drawn(probe: str) -> str:
    """The end of a probe's script: `probe` called once every chart has drawn (or failed), or after 15 s."""
    return (
        "let waits = 0;\n"
        "const wait = setInterval(() => {\n"
        "  waits += 1;\n"
        '  if (waits > 60 || !document.querySelector("figure.chart:not([data-rendered])")) {\n'
        "    clearInterval(wait);\n"
        f"    setTimeout({probe}, 300);\n"
        "  }\n"
        "}, 250);</script>"
    )


# Written into the page's <body> once it has laid out: the screen's width, each class of table's,
# and the widest of what sits outside a scrolling frame (`.wide`) in the page's own flow.
_LAYOUT_PROBE = """<script>window.addEventListener("load", () => setTimeout(() => {
  const widths = {screen: document.documentElement.clientWidth, unframed: 0};
  for (const table of document.querySelectorAll("table[class]")) {
    widths[table.className] = Math.max(widths[table.className] || 0, Math.round(table.getBoundingClientRect().width));
  }
  for (const element of document.body.querySelectorAll("*")) {
    if (!element.closest(".wide, script")) {
      widths.unframed = Math.max(widths.unframed, Math.round(element.getBoundingClientRect().right));
    }
  }
  document.body.setAttribute("data-layout", JSON.stringify(widths));
}, 1000));</script>"""


def _probed(page: Path, name: str, script: str, width: int) -> dict:
    """What `script` writes into the body's data-`name` attribute, read from a copy of the page
    beside it with the script added before its closing body tag (the inlined Vega bundle holds the
    same text in a string, so only the last one is the page's), laid out at `width` pixels."""
    head, tail = page.read_text(encoding="utf-8").rsplit("</body>", 1)
    probe = page.with_name(f".{name}-{page.name}")
    probe.write_text(head + script + "</body>" + tail, encoding="utf-8")
    try:
        dom = rendered_dom(probe, width=width)
    finally:
        probe.unlink()
    found = re.search(rf'data-{name}="([^"]*)"', dom)
    assert found, f"the {name} probe did not run"
    return json.loads(entities.unescape(found.group(1)))


def layout_widths(page: Path, width: int = 1280) -> dict[str, int]:
    """Pixel widths laid out at `width`: the screen's (less its scroll bar), each class of
    table's, and `unframed`, the right edge of the widest element outside a scrolling frame."""
    return _probed(page, "layout", _LAYOUT_PROBE, width)


# Written into the page's <body> once its charts have drawn: what a reader meets, measured.
_READING_PROBE = """<script>
const readingProbe = () => {
  const words = (text) => (text.match(/\\S+/g) || []).length;
  const top = (selector) => {
    const element = document.querySelector(selector);
    return element ? Math.round(element.getBoundingClientRect().top + window.scrollY) : null;
  };
  const paragraphs = [...document.querySelectorAll("p, li, dd")].map((p) => words(p.innerText));
  // every claim line whose value cell sits under a column headed "observed" while the line's
  // deciding evidence is a prediction
  const predictedUnderObserved = [];
  for (const table of document.querySelectorAll("table")) {
    const heads = [...table.querySelectorAll("thead th")].map((th) => th.innerText.trim().toLowerCase());
    const observed = heads.indexOf("observed");
    if (observed < 0) continue;
    for (const row of table.querySelectorAll("tbody tr")) {
      const cells = row.querySelectorAll(":scope > td");
      const cell = cells[observed];
      if (cell && row.querySelector(":scope > td .ev-predicted") && !/^[\\u2014-]?$/.test(cell.innerText.trim())) {
        predictedUnderObserved.push(row.id || row.innerText.slice(0, 60));
      }
    }
  }
  // tick labels of one axis that overlap one another
  const overlaps = [];
  for (const axis of document.querySelectorAll("figure.chart g.role-axis-label")) {
    const boxes = [...axis.querySelectorAll("text")].filter((t) => t.textContent.trim())
      .map((t) => [t.textContent, t.getBoundingClientRect()]);
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const [a, p] = boxes[i], [b, q] = boxes[j];
      const apart = p.right - 1 <= q.left || q.right - 1 <= p.left || p.bottom - 1 <= q.top || q.bottom - 1 <= p.top;
      if (p.width && q.width && !apart) {
        overlaps.push(`${axis.closest("figure").id}: "${a}" and "${b}"`);
      }
    }
  }
  document.body.setAttribute("data-reading", JSON.stringify({
    height: document.documentElement.scrollHeight,
    words: words(document.body.innerText),
    longest_paragraph: Math.max(0, ...paragraphs),
    summary_top: top("#first-screen"),
    verdicts_top: top("table.claims"),
    predicted_under_observed: predictedUnderObserved,
    overlapping_ticks: overlaps,
    charts: document.querySelectorAll("figure.chart").length,
    charts_drawn: document.querySelectorAll('figure.chart[data-rendered="true"]').length,
  }));
};
""" + _once_charts_drawn("readingProbe")


def reading_metrics(page: Path, width: int = 1400) -> dict:
    """What a reader meets at `width` pixels: the page's height, its words, its longest paragraph's
    words, where the summary and the verdict table start, claim values that sit under an "observed"
    column while a prediction decided them, and tick labels of one axis that overlap."""
    return _probed(page, "reading", _READING_PROBE, width)


_LABELS_PROBE = """<script>
const labelsProbe = () => {
  // found in every chart: labels that overlap, that reach past the chart, cut short by a limit,
  // and quantity axes without a title
  const found = {overlaps: [], clipped: [], untitled_axes: [], truncated: [], tables_scrolling: []};
  for (const frame of document.querySelectorAll(".wide")) {
    if (frame.scrollWidth > frame.clientWidth + 1) {
      const table = frame.querySelector("table")?.className;
      found.tables_scrolling.push(`${table}: ${frame.scrollWidth} px in ${frame.clientWidth}`);
    }
  }
  for (const figure of document.querySelectorAll("figure.chart")) {
    const svg = figure.querySelector("svg");
    if (!svg) continue;
    const frame = svg.getBoundingClientRect();
    const shown = (t) => getComputedStyle(t).opacity !== "0" && !t.closest('[opacity="0"]');
    const texts = [...svg.querySelectorAll("text")].filter((t) => t.textContent.trim() && shown(t))
      .map((t) => [t.textContent.trim(), t.getBoundingClientRect()]).filter(([, b]) => b.width && b.height);
    for (const [text, b] of texts) {
      const outside = b.left < frame.left - 1 || b.right > frame.right + 1;
      if (outside || b.top < frame.top - 1 || b.bottom > frame.bottom + 1) {
        found.clipped.push(`${figure.id}: "${text}"`);
      }
    }
    for (const [text] of texts) if (text.endsWith("\u2026")) found.truncated.push(`${figure.id}: "${text}"`);
    for (const axis of svg.querySelectorAll("g.role-axis")) {
      const labels = axis.querySelectorAll(".role-axis-label text");
      const title = [...axis.querySelectorAll(".role-axis-title text")].some((t) => t.textContent.trim());
      // a quantity's axis is titled (an axis of row labels names its rows itself)
      const numeric = labels.length && !isNaN(parseFloat(labels[0].textContent.replace(/,/g, "")));
      if (numeric && !title) found.untitled_axes.push(`${figure.id}: an axis labelled "${labels[0].textContent}"`);
    }
    for (let i = 0; i < texts.length; i++) for (let j = i + 1; j < texts.length; j++) {
      const [a, p] = texts[i], [c, q] = texts[j];
      const apart = p.right - 1 <= q.left || q.right - 1 <= p.left || p.bottom - 1 <= q.top || q.bottom - 1 <= p.top;
      if (!apart) found.overlaps.push(`${figure.id}: "${a}" and "${c}"`);
    }
  }
  document.body.setAttribute("data-labels", JSON.stringify(found));
};
""" + _once_charts_drawn("labelsProbe")


def label_problems(page: Path, width: int = 1400) -> dict[str, list[str]]:
    """What a reader of the page's charts and tables at `width` pixels would trip on: labels of one
    chart that overlap (labels a chart hides to avoid that are not counted), that reach past the
    chart or are cut short with an ellipsis, quantity axes without a title, and tables that scroll
    sideways in their frame."""
    return _probed(page, "labels", _LABELS_PROBE, width)


def with_appendix(page: Path) -> str:
    """A target's page followed by its appendix (cpu.html, cpu-appendix.html): the diagnostics a
    test looks for live in the appendix, the verdicts on the page."""
    appendix = page.with_name(f"{page.stem}-appendix{page.suffix}")
    return page.read_text(encoding="utf-8") + appendix.read_text(encoding="utf-8")
