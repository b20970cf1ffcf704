"""Published training runs measured elsewhere (experiments/measured-elsewhere/*.yaml), loaded and
validated, and each made into what a compile here takes: a row of the run's model at its settings,
and its target at its node count (experiments/validation.yaml says what a compile here changes).

A file is one source; a user adds published runs by writing one. Nothing here is specific to a
source: every setting a run needs is in its file.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from offload_repro.core.data import DataError, Row, Target, load_target, validate
from offload_repro.core.files import REPO_ROOT, read_yaml
from offload_repro.core.gpu import FRACTION_VARIABLE, JAX_DEFAULT_FRACTION
from offload_repro.core.maxtext_configs import base_config

MEASURED_DIR = REPO_ROOT / "experiments" / "measured-elsewhere"
VALIDATION_FILE = "experiments/validation.yaml"
READS = ("experiments/measured-elsewhere/*.yaml", "experiments/validation.yaml")


@dataclass(frozen=True)
class MeasuredRun:
    """One published run: its settings as it ran (the file's defaults under its own) and its step."""

    id: str
    source: str  # the file's stem
    source_file: str
    target: str  # experiments/targets/<target>.yaml
    family: str
    model: str
    precision: str
    gpus: int
    nodes: int
    maxtext: dict[str, Any]
    xla_flags: list[str]
    environment: dict[str, str]
    not_compiled: list[dict[str, str]]
    step_seconds: float
    citation: dict[str, str]
    container: str
    settings_citations: list[dict[str, str]] = field(default_factory=list)


@cache
def maxtext_keys() -> frozenset[str]:
    """Every setting MaxText knows: the keys of its own defaults file."""
    return frozenset(read_yaml(base_config()))


def _where(index: int, run: dict[str, Any]) -> str:
    return f"run {index + 1} (id '{run.get('id')}')"


def _check_maxtext(path: Path, where: str, settings: dict[str, Any]) -> None:
    known = maxtext_keys()
    for key in settings:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise DataError(
                f"{path}: {where}, field 'maxtext.{key}': not a MaxText setting (not in its base.yml){hint}"
            )


def _devices(settings: dict[str, Any]) -> int | None:
    """The devices the run's mesh spans (ICI x DCN axes), None where an axis is left to MaxText (-1)."""
    sizes = [int(value) for key, value in settings.items() if key.endswith("_parallelism")]
    return None if any(size < 1 for size in sizes) else math.prod(sizes)


def load_file(path: str | Path) -> list[MeasuredRun]:
    path = Path(path)
    try:
        data = read_yaml(path)
    except Exception as err:  # a YAML syntax error names the line itself
        raise DataError(f"{path}: not valid YAML: {err}") from err
    validate(data, "measured_elsewhere", path)
    if data["source"] != path.stem:
        raise DataError(f"{path}: field 'source': '{data['source']}' differs from the file name '{path.stem}'")
    load_target(data["target"])  # names the file when the target does not exist
    defaults = data["defaults"]
    _check_maxtext(path, "defaults", defaults["maxtext"])
    runs = []
    for index, entry in enumerate(data["runs"]):
        where = _where(index, entry)
        _check_maxtext(path, where, entry.get("maxtext", {}))
        settings = {**defaults["maxtext"], **entry.get("maxtext", {})}
        if entry["gpus"] != entry["nodes"] * data["gpus_per_node"]:
            raise DataError(
                f"{path}: {where}, field 'gpus': {entry['gpus']} is not nodes x gpus_per_node"
                f" ({entry['nodes']} x {data['gpus_per_node']})"
            )
        if (devices := _devices(settings)) is not None and devices != entry["gpus"]:
            raise DataError(
                f"{path}: {where}, field 'maxtext': its parallelism spans {devices} devices, not {entry['gpus']}"
            )
        runs.append(
            MeasuredRun(
                id=entry["id"],
                source=data["source"],
                source_file=str(path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path),
                target=data["target"],
                family=defaults["family"],
                model=defaults["model"],
                precision=entry["precision"],
                gpus=entry["gpus"],
                nodes=entry["nodes"],
                maxtext=settings,
                xla_flags=[*defaults["xla_flags"], *entry.get("xla_flags", [])],
                environment={**defaults.get("environment", {}), **entry.get("environment", {})},
                not_compiled=defaults.get("not_compiled", []),
                step_seconds=entry["step_seconds"],
                citation=entry["citation"],
                container=data["container"],
                settings_citations=defaults["citations"],
            )
        )
    return runs


def measured_files(directory: Path | None = None) -> list[Path]:
    """Every file of runs measured elsewhere (experiments/measured-elsewhere/ by default): a new one
    enters by itself."""
    return sorted((directory or MEASURED_DIR).glob("*.yaml"))


def load_measured(paths: list[Path] | None = None) -> list[MeasuredRun]:
    """Every run of the files (by default every file of experiments/measured-elsewhere/); a run id
    is used once."""
    runs: list[MeasuredRun] = []
    seen: dict[str, str] = {}
    for path in measured_files() if paths is None else paths:
        for run in load_file(path):
            if run.id in seen:
                raise DataError(f"{run.source_file}: run id '{run.id}': field 'id': already used in {seen[run.id]}")
            seen[run.id] = run.source_file
            runs.append(run)
    return runs


def load_validation(path: str | Path = VALIDATION_FILE) -> dict[str, Any]:
    data = read_yaml(REPO_ROOT / path)
    validate(data, "validation", path)
    return data


def target_for(run: MeasuredRun) -> Target:
    """The run's target at the run's node count."""
    return load_target(run.target, nodes=run.nodes)


def flag_name(flag: str) -> str:
    return flag.split("=", 1)[0]


@dataclass(frozen=True)
class CompiledAs:
    """A run as compiled here: the row, and every way it differs from what ran, each with why."""

    row: Row
    substitutions: list[dict[str, Any]]  # MaxText settings replaced: setting, value, becomes, reason
    not_compiled_flags: list[str]  # the run's flags a compile ahead of time does not take (the file says why)
    added_flags: list[dict[str, str]]  # compile-only flags: flag, reason


def compiled_as(run: MeasuredRun, target: Target, validation: dict[str, Any], unknown_flags: list[str]) -> CompiledAs:
    """The run's row for a compile here: its settings with this build's substitutions and the target's
    compile settings, its DCN axes folded into ICI (a compile-only topology is one slice), its XLA
    flags less those it cannot take (`unknown_flags`: those this XLA no longer knows, dropped by the
    caller and recorded) plus the compile-only ones."""
    settings = dict(run.maxtext)
    substitutions = []
    for rule in validation["compile"]["substitutions"]:
        if settings.get(rule["setting"]) == rule["value"]:
            settings[rule["setting"]] = rule["becomes"]
            substitutions.append(dict(rule))
    for key, value in target.spec["compile"]["maxtext"].items():
        if key in settings and settings[key] != value:
            reason = f"a compile-only build's setting (experiments/targets/{target.name}.yaml, compile.maxtext)"
            substitutions.append({"setting": key, "value": settings[key], "becomes": value, "reason": reason})
        settings[key] = value
    for key in [key for key in settings if key.startswith("dcn_") and key.endswith("_parallelism")]:
        ici = "ici_" + key.removeprefix("dcn_")
        settings[ici] = int(settings.get(ici, 1)) * int(settings.pop(key))
    skipped = {item["setting"] for item in run.not_compiled}
    not_compiled = [flag for flag in run.xla_flags if flag_name(flag) in skipped]
    kept = [flag for flag in run.xla_flags if flag not in not_compiled and flag not in unknown_flags]
    added = [dict(item) for item in validation["compile"]["compile_only_flags"]]
    parallelism = {key: int(value) for key, value in settings.items() if key.endswith("_parallelism")}
    row = Row(
        id=run.id,
        table=run.source,
        label=run.id,
        model=run.model,
        family=run.family,
        per_device_batch_size=settings["per_device_batch_size"],
        global_batch_size=int(settings["per_device_batch_size"] * run.gpus),
        max_target_length=settings["max_target_length"],
        parallelism=parallelism,
        devices=run.gpus,
        dtype=settings.get("dtype", "bfloat16"),
        quantization=settings.get("quantization", ""),
        scan_layers=settings.get("scan_layers", True),
        remat_policy=settings.get("remat_policy", "full"),
        placement={},
        xla_flags=[*kept, *(item["flag"] for item in added)],
        published={"step_seconds": run.step_seconds},
        citation=run.citation,
        source_file=run.source_file,
        maxtext_overrides=settings,
        # the run's allocator share, which sets the memory XLA's scheduler plans within (core/gpu.py)
        allocator_memory_fraction=float(run.environment.get(FRACTION_VARIABLE, JAX_DEFAULT_FRACTION)),
    )
    return CompiledAs(row, substitutions, not_compiled, added)
