"""Capacity frontier (what-if): the largest micro batch each placement policy fits on a GPU target.

A policy (experiments/frontier.yaml) is a published row with its micro batch varied (and, for an
unpublished policy, its placement changed). Each micro batch is compiled for the target exactly as
the compile stage compiles a row, and bisection over the declared range finds the largest that
fits, assuming that what fits at b also fits below b. Every compiled point is cached under a key
of everything that decides it (MaxText arguments, XLA flags, GPU description, compile code,
versions), so a rerun or a new target compiles only what is missing.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from offload_repro.core import memory
from offload_repro.core.data import DataError, Row, Target, validate
from offload_repro.core.files import REPO_ROOT, read_yaml
from offload_repro.core.gpu import description
from offload_repro.core.observation import Observation, Observer
from offload_repro.core.results import ResultError, read_result, write_result
from offload_repro.produce import maxtext_args
from offload_repro.produce.compile import COMPILE_ONLY_FLAGS, compile_overrides, compile_row

POLICIES_FILE = REPO_ROOT / "experiments" / "frontier.yaml"
CODE = ("produce/compile.py", "produce/aot.py", "produce/hlo.py", "core/memory.py", "produce/maxtext_args.py")


def load_policies(path: Path = POLICIES_FILE) -> dict[str, Any]:
    data = read_yaml(path)
    validate(data, "frontier", path)
    return data


def policy_row(policy: dict[str, Any], rows: dict[str, Row], micro_batch: int) -> Row:
    if policy["row"] not in rows:
        raise DataError(f"{POLICIES_FILE}: policy '{policy['id']}', field 'row': no row '{policy['row']}'")
    base = rows[policy["row"]]
    return dataclasses.replace(
        base,
        id=f"{policy['id']}-mb{micro_batch}",
        per_device_batch_size=micro_batch,
        global_batch_size=micro_batch * base.devices,
        placement={**base.placement, **policy.get("placement", {})},
    )


@cache
def compile_code() -> dict[str, str]:
    return {name: (REPO_ROOT / "workflow/offload_repro" / name).read_text() for name in CODE}


def point_key(row: Row, target: Target) -> str:
    """Everything that decides a compiled point; a point is reused only under the same key."""
    decided = {
        "arguments": maxtext_args.as_arguments(compile_overrides(row, target)),
        "xla_flags": maxtext_args.xla_flags(row, list(COMPILE_ONLY_FLAGS)),
        "description": description(target),
        "code": compile_code(),
        "versions": [metadata.version(name) for name in ("jax", "jaxlib", "jax-cuda12-plugin", "maxtext")],
    }
    return hashlib.sha256(json.dumps(decided, sort_keys=True).encode()).hexdigest()[:16]


def compile_point(row: Row, target: Target, points_dir: Path) -> tuple[dict[str, Any], Path, bool]:
    path = points_dir / f"{row.id}-{point_key(row, target)}.json"
    if path.exists():
        try:
            return read_result(path, "compile"), path, True
        except ResultError:
            path.unlink()  # a damaged cache entry is compiled again
    return compile_row(row, target, path, points_dir / "work" / row.id), path, False


def search(policy: dict[str, Any], rows: dict[str, Row], target: Target, bounds: dict[str, int], points_dir: Path):
    """Bisection: (largest fitting micro batch or None, every compiled point, first error)."""
    points: dict[int, dict[str, Any]] = {}

    def fits(micro_batch: int) -> bool:
        result, path, cached = compile_point(policy_row(policy, rows, micro_batch), target, points_dir)
        point: dict[str, Any] = {"micro_batch": micro_batch, "status": result["status"], "file": str(path)}
        point["cached"] = cached
        if result["status"] != "ok":
            points[micro_batch] = point
            raise RuntimeError(f"micro batch {micro_batch}: {result['message']}")
        point.update(
            fits=result["fits"], device_gib=memory.gib(result["device_bytes"]), margin_gib=result["margin_gib"]
        )
        points[micro_batch] = point
        return result["fits"]

    low, high = bounds["min"], bounds["max"]
    try:
        if not fits(low):
            largest = None
        elif fits(high):
            largest = high  # the frontier lies at or beyond the searched range
        else:
            while high - low > 1:  # low fits, high does not
                middle = (low + high) // 2
                low, high = (middle, high) if fits(middle) else (low, middle)
            largest = low
        error = None
    except RuntimeError as err:
        largest, error = None, str(err)
    return largest, [points[b] for b in sorted(points)], error


def write_frontier(policy_id: str, rows: list[Row], target: Target, out_json: Path, points_dir: Path) -> dict:
    data = load_policies()
    policy = next((p for p in data["policies"] if p["id"] == policy_id), None)
    if policy is None:
        raise DataError(f"{POLICIES_FILE}: no policy '{policy_id}'")
    largest, points, error = search(policy, {row.id: row for row in rows}, target, data["micro_batches"], points_dir)
    return write_result(
        out_json,
        "frontier",
        {
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
        },
    )


def observe(result: dict[str, Any], source: str) -> list[Observation]:
    """Row `frontier:<policy>`: its largest fitting micro batch, and every compiled point (`at` = micro batch)."""
    seen = Observer(result, source, "compiled", f"frontier:{result['policy']}", result["target"])
    seen.status_line()
    largest = result["largest_fitting_micro_batch"]
    if result["status"] == "ok":
        message = None if largest else "not even the smallest micro batch fits"
        if largest == result["search"]["max"]:
            message = "fits the largest micro batch searched: the frontier lies at or beyond it"
        seen.add("largest_fitting_micro_batch", largest or 0, "micro batch", message=message)
    seen.add("policy_published", result["published"])
    for point in result["points"]:
        if point["status"] == "ok":
            seen.add("frontier_device_gib", point["device_gib"], "GiB", at=point["micro_batch"])
            seen.add("frontier_fits", point["fits"], at=point["micro_batch"])
    return seen.observations
