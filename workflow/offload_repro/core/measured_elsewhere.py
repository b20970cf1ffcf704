"""Published training runs measured elsewhere (experiments/measured-elsewhere/*.yaml), loaded and
validated, and each made into what a compile here takes: a row of the run's model at its settings,
and its target at its node count (experiments/validation.yaml says what a compile here changes).

A file is one source; a user adds published runs by writing one. Nothing here is specific to a
source: every setting a run needs is in its file.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from offload_repro.core.data import DataError, Row, Target, did_you_mean, load_target, schema, validate
from offload_repro.core.files import REPO_ROOT, checkout_relative, read_yaml
from offload_repro.core.gpu import FRACTION_VARIABLE, JAX_DEFAULT_FRACTION
from offload_repro.core.maxtext_configs import (
    base_config,
    model_config,
    model_family,
    model_file,
    model_kind,
    model_settings,
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


@cache
def maxtext_keys() -> frozenset[str]:
    """Every setting MaxText knows: the keys of its own defaults file."""
    return frozenset(read_yaml(base_config()))


def _check_settings(path: Path, where: str, settings: dict[str, Any]) -> None:
    """Settings MaxText does not know, then values its config refuses (or that make no step), found
    without starting MaxText."""
    known = maxtext_keys()
    for key in settings:
        if key not in known:
            raise DataError(
                f"{path}: {where}, field 'maxtext.{key}': not a MaxText setting (not in its base.yml)"
                + did_you_mean(key, known)
            )
    choices = maxtext_choices()
    for key, value in settings.items():
        if key in choices and value not in choices[key]:
            raise DataError(
                f"{path}: {where}, field 'maxtext.{key}': {value!r} is not one MaxText takes"
                f" (its configs/types.py allows {sorted(choices[key])})" + did_you_mean(str(value), choices[key])
            )
    for key, kinds, what in (
        ("per_device_batch_size", int | float, "a positive number"),
        ("max_target_length", int, "a positive whole number of tokens"),
    ):
        value = settings.get(key)
        if key in settings and (isinstance(value, bool) or not isinstance(value, kinds) or value <= 0):
            raise DataError(f"{path}: {where}, field 'maxtext.{key}': {value!r} is not {what}")


def _union_members(node: ast.expr) -> list[ast.expr]:
    """The members of `X | Y | None` (or a single annotation)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [*_union_members(node.left), *_union_members(node.right)]
    return [node]


def _strings(nodes: list[ast.expr]) -> frozenset[str] | None:
    values = [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return frozenset(values) if values and len(values) == len(nodes) else None


def _literal_strings(node: ast.expr) -> frozenset[str] | None:
    """The strings of `Literal["a", "b"]`; None where `node` is not a Literal of strings alone."""
    if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "Literal"):
        return None
    return _strings(node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice])


@cache
def maxtext_choices() -> dict[str, frozenset[str]]:
    """The values MaxText's config takes for each setting typed as one of its enums or a Literal of
    strings, read from its own configs/types.py (parsed, not imported: importing it starts JAX)."""
    tree = ast.parse((base_config().parent / "types.py").read_text(encoding="utf-8"))
    choices: dict[str, frozenset[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id == "Enum" for b in node.bases):
            values = [item.value for item in node.body if isinstance(item, ast.Assign)]
            if found := _strings(values):
                choices[node.name] = found
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and (found := _literal_strings(node.value))
        ):
            choices[node.targets[0].id] = found
    by_setting: dict[str, set[frozenset[str]]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        allowed: set[str] = set()
        for part in _union_members(node.annotation):
            if isinstance(part, ast.Constant) and part.value is None:
                continue
            if isinstance(part, ast.Name) and part.id in choices:
                allowed |= choices[part.id]
            elif (found := _literal_strings(part)) is not None:
                allowed |= found
            else:
                break  # a member of another type (str, int, ...): any value of it may be meant
        else:
            by_setting.setdefault(node.target.id, set()).add(frozenset(allowed))
    # a name two config classes type differently is left unchecked
    return {key: next(iter(sets)) for key, sets in by_setting.items() if len(sets) == 1}


# A mesh axis takes its size from ici_<name>_parallelism and dcn_<name>_parallelism, <name> the
# axis's own but for these two (MaxText's configs/types.py, ici_map and dcn_map).
AXIS_SETTING = {"stage": "pipeline", "model": "tensor"}
GROUPS = (("ici", "ICI", "GPUs per node"), ("dcn", "DCN", "nodes"))


def _mesh(
    path: Path, where: str, settings: dict[str, Any], own: dict[str, Any], model: str, gpus_per_node: int, nodes: int
) -> dict[str, int]:
    """Every mesh axis's ICI and DCN size as MaxText makes them (maxtext_utils.create_device_mesh and
    max_utils.fill_unspecified_mesh_axes): the ICI axes span a node's GPUs and the DCN axes the nodes;
    in each group at most one axis is -1, which becomes the group's size over the others' product.
    `own`: the run's own settings (the rest are the file's defaults or MaxText's)."""
    defaults = model_config(model)

    def field_of(key: str) -> str:
        origin = "" if key in own else " (the file's defaults)" if key in settings else " (MaxText's default)"
        return f"field 'maxtext.{key}'{origin}"

    axes = settings.get("mesh_axes", defaults["mesh_axes"])
    if not (isinstance(axes, list) and all(isinstance(axis, str) for axis in axes)):
        raise DataError(f"{path}: {where}, {field_of('mesh_axes')}: {axes!r} is not a list of axis names")
    names = [AXIS_SETTING.get(axis, axis) for axis in axes]
    for key, value in settings.items():
        for prefix, _, _ in GROUPS:
            name = key.removeprefix(f"{prefix}_").removesuffix("_parallelism")
            if key == f"{prefix}_{name}_parallelism" and name not in names and value != 1:
                raise DataError(
                    f"{path}: {where}, {field_of(key)}: {value!r}, but MaxText's mesh_axes {axes} have no axis"
                    f" '{name}', so MaxText ignores it"
                )
    sizes = {"ici": gpus_per_node, "dcn": nodes}
    spans: dict[str, list[tuple[str, int]]] = {}
    for prefix, group, unit in GROUPS:
        size = sizes[prefix]
        # an axis with no setting of its own (MaxText's attn_dp, say) is 1
        keys = [key for name in names if (key := f"{prefix}_{name}_parallelism") in defaults]
        values = [(key, settings.get(key, defaults[key])) for key in keys]
        for key, value in values:
            if isinstance(value, bool) or not isinstance(value, int) or (value < 1 and value != -1):
                raise DataError(
                    f"{path}: {where}, {field_of(key)}: {value!r} is not a size MaxText takes: a whole number"
                    " of devices, at least 1, or -1 for what the group's other axes leave"
                )
        unspecified = list(dict.fromkeys(key for key, value in values if value == -1))
        if len(unspecified) > 1:
            raise DataError(
                f"{path}: {where}, {field_of(unspecified[1])}: -1, and so is {unspecified[0]}: MaxText fills at"
                f" most one {group} axis (-1) with what the others leave"
            )
        if unspecified:
            others = math.prod(value for _, value in values if value != -1)
            if size % others:
                raise DataError(
                    f"{path}: {where}, {field_of(unspecified[0])}: -1 cannot be resolved: the run's {size}"
                    f" {unit} are not a whole multiple of the other {group} axes' product {others}"
                )
            values = [(key, size // others if value == -1 else value) for key, value in values]
        spans[group] = values
    total = math.prod(value for values in spans.values() for _, value in values)
    for prefix, group, unit in GROUPS:
        size, product = sizes[prefix], math.prod(value for _, value in spans[group])
        if product != size:
            axes_text = " x ".join(f"{key} {value}" for key, value in spans[group] if value != 1) or "every axis 1"
            devices = gpus_per_node * nodes
            spanned = f"its parallelism spans {total} devices, not {devices}; " if total != devices else ""
            raise DataError(
                f"{path}: {where}, field 'maxtext': {spanned}its {group} axes ({axes_text}) span {product},"
                f" not the run's {size} {unit}"
            )
    return dict(pair for values in spans.values() for pair in values)


FLAG = re.compile(r"--xla_[a-z0-9_]+")
KEEP_FIELD = "xla_flags_as_passed"


def _flag_problem(flag: str) -> tuple[str, bool] | None:
    """What is wrong with an XLA flag as XLA_FLAGS would carry it (joined by spaces and split again
    by XLA's own parser, xla/parse_flags_from_env.cc), and whether it can still be passed as it is
    without changing how XLA reads the flags around it; None where nothing is."""
    name, equals, value = flag.partition("=")
    if not FLAG.fullmatch(name):
        return "not an XLA flag (--xla_<name> or --xla_<name>=<value>)", False
    if equals and not value:
        return "its value is empty", True
    if any(char.isspace() for char in value):
        return "its value holds whitespace, where XLA_FLAGS splits: the rest would be read as another flag", False
    if value and value[0] in "\"'":
        if len(value) < 2 or value[-1] != value[0] or value[0] in value[1:-1]:
            return (
                f"its value opens a quote ({value[0]}) it does not close: XLA would read every flag after it"
                " as part of this value",
                False,
            )
        unquoted = f"{name}={value[1:-1]}"
        takes = f"its value is quoted: XLA strips the quotes and takes {value[1:-1]!r}"
        # the unquoted flag is offered only where it is taken itself (not an empty value, say)
        return (f"{takes}; write {unquoted!r}" if _flag_problem(unquoted) is None else takes), True
    if quote := next((char for char in value if char in "\"'"), None):
        return f"a stray quote ({quote}) in its value: XLA takes it as part of the value {value!r}", True
    return None


def _kept_as_passed(flag: str) -> str:
    """How `flag` is listed as passed, in YAML, with the keys the schema requires of an item of KEEP_FIELD."""
    item = schema("measured_elsewhere")["$defs"]["flags_as_passed"]["items"]
    quoted = "'" + flag.replace("'", "''") + "'"  # YAML's single quotes: the flag exactly as it stands
    keys = [
        f"{key}: {quoted}" if key == "flag" else f"{key}: <{item['properties'][key].get('description', key)}>"
        for key in item["required"]
    ]
    return f"{KEEP_FIELD}: [{{{', '.join(keys)}}}]"


def _check_flags(path: Path, where: str, flags: list[str], kept: list[dict[str, str]]) -> None:
    """Each flag well-formed, or malformed but listed in `kept` (the source passed it so, and the
    file says what XLA made of it)."""
    kept_flags = {item["flag"] for item in kept}
    for index, flag in enumerate(flags):
        if (problem := _flag_problem(flag)) is None:
            continue
        reason, keepable = problem
        if keepable and flag in kept_flags:
            continue
        if flag in kept_flags:
            hint = "; it cannot be passed as it is without changing how XLA reads the flags around it"
        elif keepable:
            hint = f"; if the run passed it so, list it as passed beside xla_flags: {_kept_as_passed(flag)}"
        else:
            hint = ""
        raise DataError(f"{path}: {where}, field 'xla_flags[{index}]': {flag!r}: {reason}{hint}")
    for index, item in enumerate(kept):
        if item["flag"] not in flags:
            raise DataError(
                f"{path}: {where}, field '{KEEP_FIELD}[{index}].flag': {item['flag']!r} is not one of its xla_flags"
            )
        if _flag_problem(item["flag"]) is None:
            raise DataError(
                f"{path}: {where}, field '{KEEP_FIELD}[{index}].flag': {item['flag']!r} is well-formed;"
                " only a malformed flag is listed as passed"
            )


def _family_of(path: Path, model: str) -> tuple[str, str]:
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


def _check_model_overrides(path: Path, where: str, settings: dict[str, Any], own: dict[str, Any], model: str) -> None:
    """MaxText refuses a setting its model file also sets, to another value, unless
    override_model_config is true (configs/pyconfig.py, validate_no_keys_overridden_twice)."""
    if settings.get("override_model_config") is True:
        return
    fixed = model_settings(model)
    for key, value in settings.items():
        if key in fixed and key != "model_name" and fixed[key] != value:
            origin = "" if key in own else " (the file's defaults)"
            raise DataError(
                f"{path}: {where}, field 'maxtext.{key}'{origin}: {value!r}, where MaxText's {model}.yml sets"
                f" {fixed[key]!r}; MaxText refuses a setting its model file also sets unless"
                " override_model_config is true: set it in the run's maxtext if the run did"
            )


def _check_substitutions(path: Path, where: str, rules: list[dict[str, Any]], runs: list[dict[str, Any]]) -> None:
    """Each of a file's own substitutions replaces a MaxText setting with a value MaxText takes, and
    applies to at least one run (`runs`: the runs' settings it may apply to)."""
    for index, rule in enumerate(rules):
        field_name = f"substitutions[{index}]"
        _check_settings(path, f"{where}, {field_name}", {rule["setting"]: rule["becomes"]})
        if not any(settings.get(rule["setting"]) == rule["value"] for settings in runs):
            raise DataError(
                f"{path}: {where}, field '{field_name}.value': {rule['value']!r} is the {rule['setting']} of no run"
                " of the file, so it replaces nothing"
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
    _check_settings(path, "defaults", defaults["maxtext"])
    _check_flags(path, "defaults", defaults["xla_flags"], defaults.get(KEEP_FIELD, []))
    kind, source_family = _family_of(path, model)
    every = [{**defaults["maxtext"], **entry.get("maxtext", {})} for entry in data["runs"]]
    _check_substitutions(path, "defaults", defaults.get("substitutions", []), every)
    runs = []
    for index, entry in enumerate(data["runs"]):
        where = f"run {index + 1} (id '{entry.get('id')}')"
        own = entry.get("maxtext", {})
        _check_settings(path, where, own)
        _check_flags(path, where, entry.get("xla_flags", []), entry.get(KEEP_FIELD, []))
        settings = {**defaults["maxtext"], **own}
        _check_substitutions(path, where, entry.get("substitutions", []), [settings])
        _check_model_overrides(path, where, settings, own, model)
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
        for key, value in _mesh(path, where, settings, own, model, data["gpus_per_node"], entry["nodes"]).items():
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
