"""The classes of evidence a result can give, with what each means and its colour on the pages.

Apart from the registry of result kinds (judge/result_kinds.py), which names each kind's observer,
so that drawing needs neither the observers nor any producer.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EvidenceClass:
    name: str
    meaning: str
    colour: str


EVIDENCE = {
    e.name: e
    for e in (
        EvidenceClass("measured", "a real MaxText training run (or a probe) on the target", "#1f77b4"),
        EvidenceClass(
            "compiled",
            "XLA's memory analysis of the real train step compiled ahead of time for the target's accelerator"
            " (static, no run), widened by its measured gaps to a run",
            "#ff7f0e",
        ),
        EvidenceClass("analytic", "sizes computed from MaxText's model configs", "#2ca02c"),
        EvidenceClass(
            "predicted",
            "a step time from a stated model over the compiled program (FLOPs with recompute, HBM bytes, host"
            " copies, collectives, its schedule), calibrated on a published row of its model, its band widened once by"
            " the model's measured error on pairs of the claim's kind; never overrides measured",
            "#9467bd",
        ),
        EvidenceClass(
            "validation",
            "the step-time model against published runs measured elsewhere (experiments/measured-elsewhere/), each"
            " predicted from its program compiled here as it ran; judges no claim, but its error widens predicted"
            " bands",
            "#8c564b",
        ),
    )
}
PUBLISHED_COLOUR = "#4c4c4c"
