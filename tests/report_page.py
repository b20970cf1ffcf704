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


def rendered_dom(page: Path, timeout: float = 120) -> str:
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            ["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}", page.resolve().as_uri()],
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
