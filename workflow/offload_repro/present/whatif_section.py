"""The page's what-if section: rows x GPU targets from every target's compiled evidence, each
placement policy's capacity frontier, the transfer budget, the recompute XLA counts, and each
offload row's predicted gain."""

from __future__ import annotations

from typing import Any

import pandas as pd

from offload_repro.core.data import Row, load_target
from offload_repro.judge import metric_names as names


def whatif(rows: list[Row], observations: pd.DataFrame) -> dict[str, Any] | None:
    """Rows x GPU targets from the compiled evidence of every target, and each policy's frontier."""
    compiled = observations[(observations["evidence"] == "compiled") & observations["at"].isna()]
    of_policies = compiled[compiled["policy"].notna()]
    compiled = compiled[compiled["policy"].isna()]
    targets = sorted(set(compiled["target"].dropna()))
    if len(targets) < 2 and of_policies.empty:
        return None
    cells = {(o.row, o.target, o.metric): o.value for o in compiled.itertuples()}
    policy_cells = {(o.policy, o.target, o.metric): o.value for o in of_policies.itertuples()}
    notes = {(o.policy, o.target, o.metric): o.message for o in of_policies.itertuples() if isinstance(o.message, str)}
    grid = [
        {
            "row": row,
            "cells": [
                {
                    metric: cells.get((row.id, name, metric))
                    for metric in (names.OUTCOME, names.DEVICE_GIB, names.MARGIN_GIB, names.HOST_GIB, names.HOST_FITS)
                }
                for name in targets
            ],
        }
        for row in rows
    ]
    policies = sorted(set(of_policies["policy"]))
    frontier_targets = sorted(set(of_policies["target"].dropna()))
    frontier = [
        {
            "policy": policy,
            "published": policy_cells.get((policy, frontier_targets[0], "policy_published"))
            if frontier_targets
            else None,
            "cells": [
                {
                    "largest": policy_cells.get((policy, name, "largest_fitting_micro_batch")),
                    "status": policy_cells.get((policy, name, "status")),
                    "message": notes.get((policy, name, "largest_fitting_micro_batch")),
                }
                for name in frontier_targets
            ],
        }
        for policy in policies
    ]
    transfers = [
        {
            "row": row,
            "cells": [
                {
                    "copy_s": cells.get((row.id, name, "whatif_copy_s_per_step")),
                    "step_s": cells.get((row.id, name, "whatif_step_s")),
                    "share": cells.get((row.id, name, "whatif_copy_share")),
                    "link_gb_s": cells.get((row.id, name, "whatif_link_gb_s")),
                }
                for name in targets
            ],
        }
        for row in rows
        if any((row.id, name, "whatif_copy_s_per_step") in cells for name in targets)
    ]
    recompute = [
        {"row": row, "cells": [cells.get((row.id, name, "xla_tflops_per_step")) for name in targets]}
        for row in rows
        if any((row.id, name, "xla_tflops_per_step") in cells for name in targets)
    ]
    return {
        "targets": [load_target(name) for name in targets],
        "grid": grid,
        "transfers": transfers,
        "recompute": recompute,
        "frontier_targets": [load_target(name) for name in frontier_targets],
        "frontier": frontier,
    }


def predicted_gains(observations: pd.DataFrame) -> list[dict[str, Any]]:
    """The predicted gain of each offload row over the row it replaces, per GPU target."""
    chosen = observations[(observations["metric"] == "offload_gain") & observations["at"].isna()]
    return [
        {"row": o.row, "target": o.target, "gain": o.value, "low": o.low, "high": o.high, "by": o.message}
        for o in chosen.sort_values(["row", "target"]).itertuples()
    ]
