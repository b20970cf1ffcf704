"""The README's sample of what the main job prints last, generated from a main job's results."""

from __future__ import annotations

from pathlib import Path

from offload_repro.core.files import REPO_ROOT
from offload_repro.present.closing_lines import summary_lines

README = REPO_ROOT / "README.md"
SAMPLE = "main job's closing lines"  # the name its markers in the README give the block


def sample_block(results: Path = REPO_ROOT / "results", target: str = "cpu") -> str:
    """The lines the main job ends with (the Snakefile's onsuccess), as a fenced block."""
    verdicts, evidence = results / target / "verdicts.json", results / target / "evidence.json"
    lines = summary_lines(verdicts, Path("results/report/index.html"), evidence)
    return "\n".join(["```", *lines, "```"])
