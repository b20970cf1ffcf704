"""The claims' footnotes: a reason several claims are not comparable for is stated once, with the
command line that produces the evidence which would judge them."""

from __future__ import annotations

from typing import Any

from offload_repro.core.data import load_target
from offload_repro.present.target_command import snakemake_command


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
