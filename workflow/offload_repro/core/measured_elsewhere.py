"""Published training runs measured elsewhere (experiments/measured-elsewhere/*.yaml), loaded and
validated, and each made into what a compile here takes: a row of the run's model at its settings,
and its target at its node count (experiments/validation.yaml says what a compile here changes).

A file is one source; a user adds published runs by writing one. Nothing here is specific to a
source: every setting a run needs is in its file. What its settings and flags may say to MaxText and
XLA is checked by core/measured_run_checks.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from offload_repro.core.data import DataError, Row, Target, load_target, validate
from offload_repro.core.files import REPO_ROOT, checkout_relative, read_yaml
from offload_repro.core.gpu import FRACTION_VARIABLE, JAX_DEFAULT_FRACTION
from offload_repro.core.maxtext_configs import (
    model_config,
    model_family,
    model_file,
    model_kind,
)
from offload_repro.core.measured_run_checks import (
    KEEP_FIELD,
    check_flags,
    check_mesh,
    check_model_overrides,
    check_settings,
    check_substitutions,
)

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
    kind: str  # dense or MoE: the model's own config says
    family: str  # the model's own family (mixtral-8x7b: mixtral), never another's of its kind
    # the source's family of its kind, whose claims its error bounds and whose calibration (c)
    # carries (experiments/validation.yaml, kinds): an MoE Mixtral's is deepseek
    source_family: str
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
    # MaxText settings the run's own file replaces for a compile here, each with why
    substitutions: list[dict[str, Any]] = field(default_factory=list)


def family_of(path: Path, model: str) -> tuple[str, str]:
    """The model's kind (dense or MoE) and the source's family of that kind, whose claims its error
    bounds and whose calibration (c) carries (experiments/validation.yaml, kinds)."""
    kind = model_kind(model)
    for entry in load_validation()["kinds"].values():
        if entry["what"] == kind:
            return kind, entry["families"][0]
    raise DataError(
        f"{path}: field 'defaults.model': '{model}' is a {kind} model, and no kind of {VALIDATION_FILE}"
        f" (kinds.<name>.what) is {kind}"
    )


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
    model = defaults["model"]
    if not model_file(model).is_file():
        raise DataError(f"{path}: field 'defaults.model': '{model}' is not a model of MaxText ({model_file(model)})")
    check_settings(path, "defaults", defaults["maxtext"])
    check_flags(path, "defaults", defaults["xla_flags"], defaults.get(KEEP_FIELD, []))
    kind, source_family = family_of(path, model)
    every = [{**defaults["maxtext"], **entry.get("maxtext", {})} for entry in data["runs"]]
    check_substitutions(path, "defaults", defaults.get("substitutions", []), every)
    runs = []
    for index, entry in enumerate(data["runs"]):
        where = f"run {index + 1} (id '{entry.get('id')}')"
        own = entry.get("maxtext", {})
        check_settings(path, where, own)
        check_flags(path, where, entry.get("xla_flags", []), entry.get(KEEP_FIELD, []))
        settings = {**defaults["maxtext"], **own}
        check_substitutions(path, where, entry.get("substitutions", []), [settings])
        check_model_overrides(path, where, settings, own, model)
        if settings.get("model_name", model) != model:
            source = "" if "model_name" in own else " (the file's defaults)"
            raise DataError(
                f"{path}: {where}, field 'maxtext.model_name'{source}: '{settings['model_name']}' is not the file's"
                f" model '{model}' (defaults.model), which the compile here takes"
            )
        if entry["gpus"] != entry["nodes"] * data["gpus_per_node"]:
            raise DataError(
                f"{path}: {where}, field 'gpus': {entry['gpus']} is not nodes x gpus_per_node"
                f" ({entry['nodes']} x {data['gpus_per_node']})"
            )
        maxtext_defaults = model_config(model)
        batch = settings.get("per_device_batch_size", maxtext_defaults["per_device_batch_size"]) * entry["gpus"]
        if batch != int(batch):
            source = "" if "per_device_batch_size" in own else " (the file's defaults)"
            raise DataError(
                f"{path}: {where}, field 'maxtext.per_device_batch_size'{source}: x {entry['gpus']} GPUs is a batch"
                f" of {batch:g} sequences, not a whole number (MaxText would truncate it to {int(batch)})"
            )
        # each mesh axis at the size MaxText gives it, a -1 resolved and every axis not 1 written out: a compile
        # here (one slice) and any reader of the settings see the mesh that ran without MaxText's defaults
        for key, value in check_mesh(path, where, settings, own, model, data["gpus_per_node"], entry["nodes"]).items():
            if key in settings or value != 1 or maxtext_defaults[key] != value:
                settings[key] = value
        runs.append(
            MeasuredRun(
                id=entry["id"],
                source=data["source"],
                source_file=checkout_relative(path),
                target=data["target"],
                kind=kind,
                family=model_family(model),
                source_family=source_family,
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
                substitutions=[*defaults.get("substitutions", []), *entry.get("substitutions", [])],
            )
        )
    return runs


def load_measured(paths: list[Path] | None = None) -> list[MeasuredRun]:
    """Every run of the files (by default every file of experiments/measured-elsewhere/, so that a
    new one enters by itself); a run id is used once."""
    runs: list[MeasuredRun] = []
    seen: dict[str, str] = {}
    for path in sorted(MEASURED_DIR.glob("*.yaml")) if paths is None else paths:
        for run in load_file(path):
            if run.id in seen:
                raise DataError(f"{run.source_file}: run id '{run.id}': field 'id': already used in {seen[run.id]}")
            seen[run.id] = run.source_file
            runs.append(run)
    return runs


def load_validation() -> dict[str, Any]:
    data = read_yaml(REPO_ROOT / VALIDATION_FILE)
    validate(data, "validation", VALIDATION_FILE)
    return data


def target_for(run: MeasuredRun) -> Target:
    """The run's target at the run's node count."""
    return load_target(run.target, nodes=run.nodes)


def gpu_of(run: MeasuredRun, target: Target | None = None) -> str:
    """The GPU the run measured (its target's accelerator): two files of one GPU share it."""
    return (target or load_target(run.target)).spec["hardware"].get("accelerator") or run.target


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
    sources = ((validation["compile"]["substitutions"], VALIDATION_FILE), (run.substitutions, run.source_file))
    for rules, stated_in in sources:  # this build's, then the run file's own
        for rule in rules:
            if settings.get(rule["setting"]) == rule["value"]:
                settings[rule["setting"]] = rule["becomes"]
                substitutions.append({**rule, "stated_in": stated_in})
    for key, value in target.spec["compile"]["maxtext"].items():
        if key in settings and settings[key] != value:
            reason = f"a compile-only build's setting (experiments/targets/{target.name}.yaml, compile.maxtext)"
            substitutions.append({"setting": key, "value": settings[key], "becomes": value, "reason": reason})
        settings[key] = value
    for key in [key for key in settings if key.startswith("dcn_") and key.endswith("_parallelism")]:
        ici = "ici_" + key.removeprefix("dcn_")
        settings[ici] = int(settings.get(ici, 1)) * int(settings.pop(key))
    skipped = {item["setting"] for item in run.not_compiled}
    not_compiled = [flag for flag in run.xla_flags if flag.split("=", 1)[0] in skipped]
    kept = [flag for flag in run.xla_flags if flag not in not_compiled and flag not in unknown_flags]
    added = [dict(item) for item in validation["compile"]["compile_only_flags"]]
    parallelism = {key: int(value) for key, value in settings.items() if key.endswith("_parallelism")}
    row = Row(
        id=run.id,
        table=run.source,
        label=run.id,
        model=run.model,
        family=run.source_family,  # what the source's rows of its kind compile with
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
