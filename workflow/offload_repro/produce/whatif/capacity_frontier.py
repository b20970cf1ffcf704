"""Capacity frontier (what-if): the largest micro batch each placement policy fits on a GPU target.

A policy (experiments/frontier.yaml) is a published row with its micro batch varied (and, for an
unpublished policy, its placement changed). Each micro batch is compiled for the target exactly as
the compile stage compiles a row, through the same cache of programs (`produce.compiled.program_cache`): the
point at the row's own micro batch is the row's program, compiled once for both.

Device memory grows almost linearly with the micro batch, so the search predicts the boundary
from what is compiled already (the rows at their own micro batches are in the cache, and the
range's end) and compiles next to the prediction, until the largest micro batch that fits and
the next, which does not, are both compiled. Like a bisection it assumes that what fits at b
also fits below b; unlike one, it needs one to three compiles where a bisection over 1-16 needs
six.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from offload_repro.core import memory
from offload_repro.core.data import DataError, Row, Target, validate
from offload_repro.core.files import REPO_ROOT, read_yaml
from offload_repro.core.results import write_result
from offload_repro.produce.compiled.compiled_row import compile_result, compiled_evidence
from offload_repro.produce.compiled.program_cache import cached_program

POLICIES_FILE = REPO_ROOT / "experiments" / "frontier.yaml"
READS = ("experiments/frontier.yaml",)


def load_policies() -> dict[str, Any]:
    data = read_yaml(POLICIES_FILE)
    validate(data, "frontier", POLICIES_FILE)
    return data


def base_row(policy: dict[str, Any], rows: dict[str, Row]) -> Row:
    if policy["row"] not in rows:
        raise DataError(f"{POLICIES_FILE}: policy '{policy['id']}', field 'row': no row '{policy['row']}'")
    return rows[policy["row"]]


def policy_row(policy: dict[str, Any], rows: dict[str, Row], micro_batch: int) -> Row:
    base = base_row(policy, rows)
    return dataclasses.replace(
        base,
        id=f"{policy['id']}-mb{micro_batch}",
        per_device_batch_size=micro_batch,
        global_batch_size=micro_batch * base.devices,
        placement={**base.placement, **policy.get("placement", {})},
    )


def cached_point(row: Row, target: Target, programs: Path) -> dict[str, Any] | None:
    """The point of a micro batch whose program is already in the cache, else None."""
    found = cached_program(row, target, programs)
    return as_point(row, compile_result(row, target, *found, True)) if found else None


def compile_point(row: Row, target: Target, programs: Path) -> dict[str, Any]:
    """One micro batch of a policy: its program (from the cache when any stage compiled it) as a point."""
    return as_point(row, compiled_evidence(row, target, programs / "work" / row.id, programs))


def as_point(row: Row, result: dict[str, Any]) -> dict[str, Any]:
    """A micro batch's compiled evidence, as a point of the frontier."""
    program = result["program"]
    point: dict[str, Any] = {"micro_batch": row.per_device_batch_size, "status": result["status"]}
    point.update(file=program["file"], cached=program["cached"], compiled_as=program["compiled_as"])
    if result["status"] != "ok":
        return point | {"message": result["message"]}
    return point | {
        "fits": result["fits"],
        "device_gib": memory.gib(result["device_bytes"]),
        "margin_gib": result["margin_gib"],
    }


def bracket(points: dict[int, dict[str, Any]]) -> tuple[int, int] | None:
    """(largest fitting micro batch below the smallest failing one, that failing one), or None
    while only fitting or only failing points are known."""
    failing = [b for b, p in points.items() if not p["fits"]]
    fitting = [b for b, p in points.items() if p["fits"] and failing and b < min(failing)]
    return (max(fitting), min(failing)) if fitting else None


def next_micro_batch(points: dict[int, dict[str, Any]], low: int, high: int) -> int | None:
    """The micro batch to compile next, or None once the answer is confirmed: the largest that
    fits and the one above it, which does not, are both compiled (or every point up to `high`
    fits, or none from `low` does).

    The margin (capacity minus device memory) is taken as linear in the micro batch and its zero
    is the predicted boundary, on the line through the two nearest points either side. The
    prediction is compiled; where it is a point already known, its neighbour towards the
    boundary is. With one side known only, the end of the range is compiled first: it either
    closes the search (everything fits, or nothing does) or brackets the boundary. (A first
    step predicted from one point's XLA temporaries was tried: they also hold the gradients, so
    it fell short and took more DeepSeek compiles, the costly ones, than this.)"""
    known = bracket(points)
    if known is not None:
        high_fit, low_fail = known
        if low_fail - high_fit == 1:
            return None
        fit, fail = points[high_fit], points[low_fail]
        per_micro_batch = (fit["margin_gib"] - fail["margin_gib"]) / (low_fail - high_fit)
        predicted = high_fit + math.floor(fit["margin_gib"] / per_micro_batch)
        return min(max(predicted, high_fit + 1), low_fail - 1)
    if all(p["fits"] for p in points.values()):
        return None if max(points) >= high else high  # the range's end brackets the boundary
    return None if min(points) <= low else low


def search(
    start: int,
    bounds: dict[str, int],
    measure: Callable[[int], dict[str, Any]],
    cached: Callable[[int], dict[str, Any] | None] = lambda micro_batch: None,
) -> tuple[int | None, list[dict[str, Any]], str | None]:
    """(largest fitting micro batch or None, every compiled point, first error). `start` is the
    policy's own micro batch; `measure(b)` compiles micro batch b (or reads it from the cache);
    `cached(b)` is the point when its program is already in the cache, else None: those points
    (the grid's rows at their own micro batches) are used before anything is compiled."""
    low, high = bounds["min"], bounds["max"]
    points: dict[int, dict[str, Any]] = {}

    def compile_at(micro_batch: int) -> None:
        point = points[micro_batch] = measure(micro_batch)
        if point["status"] != "ok":
            raise RuntimeError(f"micro batch {micro_batch}: {point['message']}")

    def largest() -> int | None:
        points.update({b: point for b in range(low, high + 1) if (point := cached(b)) is not None})
        start_at = min(max(start, low), high)
        if start_at not in points:
            compile_at(start_at)
        while (micro_batch := next_micro_batch(points, low, high)) is not None:
            compile_at(micro_batch)
        known = bracket(points)
        if known is not None:
            return known[0]
        return high if all(p["fits"] for p in points.values()) else None  # beyond or below the range

    try:
        found, error = largest(), None
    except RuntimeError as err:
        found, error = None, str(err)
    return found, [points[b] for b in sorted(points)], error


def write_frontier(policy_id: str, rows: list[Row], target: Target, out_json: Path, programs: Path) -> dict:
    data = load_policies()
    policy = next((p for p in data["policies"] if p["id"] == policy_id), None)
    if policy is None:
        raise DataError(f"{POLICIES_FILE}: no policy '{policy_id}'")
    by_id = {row.id: row for row in rows}
    largest, points, error = search(
        base_row(policy, by_id).per_device_batch_size,
        data["micro_batches"],
        lambda micro_batch: compile_point(policy_row(policy, by_id, micro_batch), target, programs),
        lambda micro_batch: cached_point(policy_row(policy, by_id, micro_batch), target, programs),
    )
    record = {
        "target": target.name,
        "policy": policy["id"],
        "row": policy["row"],
        "label": policy["label"],
        "published": policy["published"],
        "status": "error" if error else "ok",
        "message": error,
        "search": data["micro_batches"],
        "points": points,
        "largest_fitting_micro_batch": largest,
    }
    return write_result(out_json, "frontier", record)
