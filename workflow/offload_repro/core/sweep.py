"""A placement-pair sweep as data (experiments/sweeps/<target>.yaml): points, each a published row at
the target's scale with MaxText overrides on top, grouped by regime. The points of a regime differ
only in placement, so every two of them are a placement pair, measured on the target in one process
per model family (produce/measured/sweep_runner.py).

Refused, naming the file, the entry and the field: what the schema refuses (a misspelt key, an
override that is no whole number), a row no table has, an override the target's scale rule does not
set for the row's family, an id used twice, a regime whose points are one placement twice, of two
families, or differ in more than placement once the target's scale and the overrides are applied.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

from offload_repro.core import maxtext_args
from offload_repro.core.data import DataError, Row, Target, did_you_mean, validate
from offload_repro.core.files import REPO_ROOT, read_yaml

SWEEP_DIR = REPO_ROOT / "experiments" / "sweeps"
# Overrides any family takes; the others are the widths and depths the target's scale rule sets for it.
ANY_FAMILY = ("max_target_length", "per_device_batch_size")


@dataclass(frozen=True)
class Point:
    """One training of the sweep: a row's placement and flags, at the target's scale with `overrides`."""

    id: str
    regime: str
    row: Row
    overrides: dict[str, int]

    @property
    def family(self) -> str:
        return self.row.family


@dataclass(frozen=True)
class Sweep:
    source: str
    target: str
    steps: int
    warmup_steps: int
    repeats: int
    points: tuple[Point, ...]

    def regimes(self) -> dict[str, list[Point]]:
        """The points of each regime, in the file's order."""
        found: dict[str, list[Point]] = {}
        for point in self.points:
            found.setdefault(point.regime, []).append(point)
        return found

    def pairs(self) -> Iterator[tuple[Point, Point]]:
        """Every two points of one regime: the placement pairs the sweep measures."""
        for points in self.regimes().values():
            yield from combinations(points, 2)

    def family(self, family: str) -> list[Point]:
        return [point for point in self.points if point.family == family]


def settings(point: Point, target: Target, steps: int) -> dict[str, Any]:
    """The point's MaxText overrides on the target: its row at the target's scale, the regime's
    overrides over that, and the sweep's steps."""
    return maxtext_args.target_overrides(point.row, target) | point.overrides | {"steps": steps}


def process_environment(points: list[Point], target: Target) -> dict[str, str]:
    """The environment of one process that trains `points` one after another: XLA reads its flags
    once, at the start, so the points' flags as the target reads them must be one set (on a TPU,
    XLA:GPU's flags, which it ignores, may differ)."""
    by_flags: dict[tuple[str, ...], list[str]] = {}
    environments = {}
    for point in points:
        env = maxtext_args.environment(point.row, target)
        env["XLA_FLAGS"] = " ".join(maxtext_args.read_flags(env["XLA_FLAGS"], target))
        key = (env["XLA_FLAGS"], env[maxtext_args.RAGGED_DOT_VARIABLE])
        by_flags.setdefault(key, []).append(point.id)
        environments[key] = {name: env[name] for name in ("XLA_FLAGS", maxtext_args.RAGGED_DOT_VARIABLE)}
        environments[key] |= {name: str(value) for name, value in target.run_environment.items()}
    if len(by_flags) > 1:
        groups = "; ".join(
            f"{', '.join(ids)}: XLA_FLAGS '{flags}', ragged dot {dot}" for (flags, dot), ids in by_flags.items()
        )
        raise DataError(f"points that cannot train in one process on '{target.name}' (their flags differ): {groups}")
    return next(iter(environments.values()))


def _point(entry: dict[str, Any], regime: dict[str, Any], where: str, rows: dict[str, Row], target: Target) -> Point:
    """One point of the regime `where` names; its row must exist and take each of the regime's overrides."""
    row = rows.get(entry["row"])
    if row is None:
        known = did_you_mean(entry["row"], rows)
        raise DataError(f"{where}, point '{entry['id']}', field 'row': no row '{entry['row']}' in the tables{known}")
    takes = {*target.scale.get("families", {}).get(row.family, {}), *ANY_FAMILY}
    for key in regime["overrides"]:
        if key not in takes:
            raise DataError(
                f"{where}, field 'overrides.{key}': the scale rule of '{target.name}' sets no '{key}' for"
                f" {row.family} (point '{entry['id']}', row '{row.id}'); it takes {', '.join(sorted(takes))}"
            )
    return Point(entry["id"], regime["regime"], row, dict(regime["overrides"]))


def _check_regime(points: list[Point], where: str, target: Target, steps: int) -> None:
    """A regime's points: one family, each placement once, and one program but for their placement."""
    families = {point.family for point in points}
    if len(families) > 1:
        raise DataError(f"{where}, field 'points': rows of families {sorted(families)}; a regime is one model")
    placements: dict[tuple[tuple[str, str], ...], str] = {}
    for point in points:
        key = tuple(sorted(point.row.placement.items()))
        if key in placements:
            raise DataError(
                f"{where}, point '{point.id}', field 'row': the placement of '{placements[key]}' again; a pair"
                " is two placements"
            )
        placements[key] = point.id
    first = points[0]
    tensors = set(first.row.placement)
    common = {k: v for k, v in settings(first, target, steps).items() if k not in tensors}
    for point in points[1:]:
        mine = {k: v for k, v in settings(point, target, steps).items() if k not in tensors}
        differ = sorted(k for k in {*common, *mine} if common.get(k) != mine.get(k))
        if differ:
            shown = ", ".join(f"{k} {common.get(k)!r} vs {mine.get(k)!r}" for k in differ)
            raise DataError(
                f"{where}, point '{point.id}', field 'row': differs from '{first.id}' in more than placement"
                f" ({shown}); set them in the regime's overrides"
            )


def load_sweep(path: str | Path, rows: list[Row], target: Target) -> Sweep:
    """The sweep file at `path`, checked against the rows and the target it names."""
    data = validate(read_yaml(path), "sweep", path)
    if data["target"] != target.name:
        raise DataError(f"{path}: field 'target': '{data['target']}', not the target '{target.name}' given")
    if data["warmup_steps"] >= data["steps"]:
        raise DataError(
            f"{path}: field 'warmup_steps': {data['warmup_steps']} leaves none of {data['steps']} steps timed"
        )
    by_id = {row.id: row for row in rows}
    points: list[Point] = []
    seen: dict[str, str] = {}
    for number, regime in enumerate(data["regimes"], 1):
        where = f"{path}: regime {number} ('{regime['regime']}')"
        if regime["regime"] in seen:
            raise DataError(f"{where}, field 'regime': '{regime['regime']}' already used by {seen[regime['regime']]}")
        seen[regime["regime"]] = f"regime {number}"
        mine = []
        for entry in regime["points"]:
            if entry["id"] in seen:
                raise DataError(f"{where}, field 'points': id '{entry['id']}' already used by {seen[entry['id']]}")
            seen[entry["id"]] = f"regime {number} ('{regime['regime']}')"
            mine.append(_point(entry, regime, where, by_id, target))
        _check_regime(mine, where, target, data["steps"])
        points += mine
    return Sweep(str(path), target.name, data["steps"], data["warmup_steps"], data["repeats"], tuple(points))


def sweep_file(target: str) -> Path:
    return SWEEP_DIR / f"{target}.yaml"
