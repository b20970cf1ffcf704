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
    # why a row has no compiled outcome on a target: its compile's status and the tool's message
    reasons = {
        (o.row, o.target): f"{o.value}: {o.message}" if isinstance(o.message, str) else str(o.value)
        for o in compiled.itertuples()
        if o.metric == names.STATUS and o.value != "ok"
    }
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
                | {"reason": reasons.get((row.id, name), "no compiled result for this target")}
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
        "predicted": predicted_grid(rows, observations),
        "transfers": transfers,
        "recompute": recompute,
        "frontier_targets": [load_target(name) for name in frontier_targets],
        "frontier": frontier,
    }


def present(value: Any) -> Any:
    """A value of the evidence table, None where it has none (a missing number reads as NaN there)."""
    return None if pd.isna(value) else value


def predicted_grid(rows: list[Row], observations: pd.DataFrame) -> dict[str, Any] | None:
    """Rows x GPU targets: each row's predicted throughput and step at its default calibration, the
    model's band, and on hardware calibrated elsewhere the band of the error a calibration carried
    across hardware has; or why the row is not predicted there."""
    chosen = observations[
        (observations["evidence"] == "predicted") & observations["at"].isna() & observations["row"].notna()
    ]
    targets = sorted(set(chosen["target"].dropna()))
    if not targets:
        return None
    found = {(o.row, o.target, o.metric): o for o in chosen.itertuples()}

    def cell(row_id: str, target: str) -> dict[str, Any]:
        status = found.get((row_id, target, names.STATUS))
        tflops, step = found.get((row_id, target, names.TFLOPS)), found.get((row_id, target, names.STEP_S))
        across = found.get((row_id, target, names.TFLOPS_ACROSS_HARDWARE))
        across_step = found.get((row_id, target, names.STEP_S_ACROSS_HARDWARE))
        if status is None:
            return {"reason": "no prediction for this target"}
        if status.value != "ok" or tflops is None:
            return {"reason": f"{status.value}: {status.message}" if isinstance(status.message, str) else status.value}
        return {
            "tflops": tflops.value,
            "low": tflops.low,
            "high": tflops.high,
            "step_s": step.value if step else None,
            # an unmeasured carry has an observation, with why, and no band
            "across_low": present(across.low) if across else None,
            "across_high": present(across.high) if across else None,
            "step_low": present(across_step.low) if across_step else None,
            "step_high": present(across_step.high) if across_step else None,
        }

    errors = sorted({o.message for o in chosen.itertuples() if o.metric == names.TFLOPS_ACROSS_HARDWARE})
    return {
        "targets": [load_target(name) for name in targets],
        "lines": [{"row": row, "cells": [cell(row.id, name) for name in targets]} for row in rows],
        "across_hardware": errors,
    }


def predicted_gains(observations: pd.DataFrame) -> list[dict[str, Any]]:
    """The predicted gain of each offload row over the row it replaces, per GPU target."""
    chosen = observations[(observations["metric"] == "offload_gain") & observations["at"].isna()]
    return [
        {"row": o.row, "target": o.target, "gain": o.value, "low": o.low, "high": o.high, "by": o.message}
        for o in chosen.sort_values(["row", "target"]).itertuples()
    ]
