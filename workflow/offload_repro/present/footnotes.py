"""The claims' footnotes: a reason several claims are not comparable for is stated once (the
verdicts list each such reason with how many claims it holds back), with the command line that
produces the evidence which would judge them."""

from __future__ import annotations

from typing import Any

from offload_repro.core.data import load_target
from offload_repro.present.rerun import snakemake_command


def footnotes(verdicts: dict[str, Any]) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """A reason shared by several claims is stated once: reason -> note number, in order of use."""
    notes = []
    for number, entry in enumerate(verdicts.get("not_comparable_reasons", []), 1):
        target = entry["would_judge"]
        command = snakemake_command(load_target(target)) if target else None
        notes.append({"number": number, "reason": entry["reason"], "command": command, "claims": entry["claims"]})
    return {note["reason"]: note["number"] for note in notes}, notes
