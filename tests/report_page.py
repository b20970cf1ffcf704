"""Open a report in headless Chromium and read back the DOM after its scripts ran."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path

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
    for figure in re.finditer(r"<figure[^>]*>", dom):
        tag = figure.group(0)
        chart_id = re.search(r'id="chart-([\w-]+)"', tag)
        if chart_id:
            state = re.search(r'data-rendered="(\w+)"', tag)
            charts[chart_id.group(1)] = state.group(1) if state else "no"
    return charts


def vega_graphics(dom: str) -> int:
    """Vega's SVG renderer draws each view as an <svg class="marks">."""
    return len(re.findall(r'<svg[^>]*class="marks"', dom))


def visible_text(html: str) -> str:
    """What a reader sees of a page without its scripts: tags dropped, entities decoded."""
    import html as entities

    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    html = re.sub(r'\b(title|data-[\w-]+)="[^"]*"', " ", html)
    return entities.unescape(re.sub(r"<[^>]+>", " ", html))


def raw_placeholders(html: str) -> list[str]:
    """Placeholders a reader should never see: nan, None, or a JSON object, each with its context."""
    text = visible_text(html)
    found = re.finditer(r"\bnan\b|\bNaN\b|\bNone\b|\{\s*\"|\{\s*'", text)
    return [" ".join(text[max(0, m.start() - 60) : m.end() + 60].split()) for m in found]


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


def layout_widths(page: Path, width: int = 1280) -> dict[str, int]:
    """Pixel widths laid out at `width`: the screen's (less its scroll bar), each class of
    table's, and `unframed`, the right edge of the widest element outside a scrolling frame. A
    copy of the page beside it, with a probe script added, is opened."""
    import html
    import json

    probe = page.with_name(f".layout-{page.name}")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", _LAYOUT_PROBE + "</body>"), encoding="utf-8")
    try:
        dom = rendered_dom(probe, width=width)
    finally:
        probe.unlink()
    found = re.search(r'data-layout="([^"]*)"', dom)
    assert found, "the layout probe did not run"
    return json.loads(html.unescape(found.group(1)))
