"""What a chip's page can and cannot say about the source's hardware, for the box near its top: the
two host links, the contrasts the chip cannot measure (rows that are one program here), the widths
and depths the rows were scaled to beside the source's, the capacity outcomes its scale was chosen
to reproduce, and where its offloading pairs sit against the source's on the regime axis (host-copy
time over compute). Every number comes from a target file, a model config or a result."""

from __future__ import annotations

import math
from typing import Any

from offload_repro.core.data import Row, Target, link_efficiency
from offload_repro.core.maxtext_args import same_program_rows
from offload_repro.core.maxtext_configs import model_config
from offload_repro.core.published import load_speed


def host_link(target: Target) -> dict[str, Any]:
    """A target's host link per direction: as its file states it, and at its central achieved share."""
    stated = target.host_link_gb_s_per_direction
    share = link_efficiency(target, "host_link", "central", load_speed()) if stated else None
    return {
        "name": target.spec["hardware"]["host_link"]["name"],
        "stated_gb_s": stated,
        "achieved_gb_s": stated * share if stated and share else None,
    }


def not_measurable(claims: list[dict[str, Any]], rows: list[Row], target: Target) -> list[dict[str, Any]]:
    """The speed claims that compare rows which are one program on the target (they differ only in
    flags its compiler does not read): not measurable there, never a measured 0%."""
    same = same_program_rows(rows, target)
    found = []
    for claim in claims:
        check = claim.get("check") or {}
        compared = check.get("rows") or []
        if check.get("metric") != "tflops_per_device" or len(compared) < 2:
            continue
        pairs = [(a, b) for i, a in enumerate(compared) for b in compared[i + 1 :] if b in same.get(a, [])]
        if pairs:
            found.append({"claim": claim["id"], "pairs": pairs})
    return found


def widths(rows: list[Row], target: Target) -> list[dict[str, Any]]:
    """Per model family, the width and depth its rows were scaled to beside the source model's own."""
    scaled = (target.spec.get("scale") or {}).get("families") or {}
    found = []
    for family, settings in scaled.items():
        model = next((row.model for row in rows if row.family == family), None)
        if model is None:
            continue
        source = model_config(model)
        found.append(
            {
                "family": family,
                "model": model,
                "width": settings.get("base_emb_dim"),
                "layers": settings.get("base_num_decoder_layers"),
                "source_width": source.get("base_emb_dim"),
                "source_layers": source.get("base_num_decoder_layers"),
            }
        )
    return found


def regimes(pairs: dict[str, Any] | None, target: Target) -> list[dict[str, Any]]:
    """Each offloading pair the chip ran as rows, its regime beside the source's for the same pair, and
    both measured or published ratios (the pair-error stage's chart records)."""
    if not pairs:
        return []
    records = pairs.get("chart") or []
    source = {r["pair"]: r for r in records if r["set"] == "source"}
    found = []
    for record in records:
        if record["set"] != "chip_rows" or record.get("target") != target.name:
            continue
        theirs = source.get(record["pair"])
        found.append(
            {
                "pair": record["pair"],
                "chip_regime": record["copy_to_compute"],
                "chip_pct": record["measured_pct"],
                "source_regime": theirs["copy_to_compute"] if theirs else None,
                "source_pct": theirs["measured_pct"] if theirs else None,
                "factor": record["copy_to_compute"] / theirs["copy_to_compute"]
                if theirs and theirs["copy_to_compute"]
                else math.nan,
            }
        )
    return found


def scope(
    target: Target,
    source: Target,
    rows: list[Row],
    claims: list[dict[str, Any]],
    pairs: dict[str, Any] | None,
    runs_commit: str | None,
    page_commit: str | None,
) -> dict[str, Any]:
    """What the box says (module doc)."""
    derivation = (target.spec.get("scale") or {}).get("derivation") or {}
    return {
        "source": source,
        "chip_link": host_link(target),
        "source_link": host_link(source),
        "not_measurable": not_measurable(claims, rows, target),
        "widths": widths(rows, target),
        "outcomes_in_view": derivation.get("outcomes_in_view") or [],
        "rule": derivation.get("rule"),
        "regimes": regimes(pairs, target),
        "runs_commit": runs_commit,
        "page_commit": page_commit,
    }
