"""What a measured-run file (experiments/measured-elsewhere/*.yaml) may say to MaxText and XLA: its
settings checked as MaxText would take them (its keys, its enums, a mesh that spans the run's GPUs
and nodes, a model's own config overridden only where asked), its XLA flags as XLA would parse
them, and its substitutions. Each check raises a DataError naming the file, the run and the field.
"""

from __future__ import annotations

import ast
import math
import re
from functools import cache
from pathlib import Path
from typing import Any

from offload_repro.core.data import DataError, did_you_mean, schema
from offload_repro.core.files import read_yaml
from offload_repro.core.maxtext_configs import (
    base_config,
    model_config,
    model_settings,
)


@cache
def maxtext_keys() -> frozenset[str]:
    """Every setting MaxText knows: the keys of its own defaults file."""
    return frozenset(read_yaml(base_config()))


def check_settings(path: Path, where: str, settings: dict[str, Any]) -> None:
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


def check_mesh(
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


def check_flags(path: Path, where: str, flags: list[str], kept: list[dict[str, str]]) -> None:
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


def check_model_overrides(path: Path, where: str, settings: dict[str, Any], own: dict[str, Any], model: str) -> None:
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


def check_substitutions(path: Path, where: str, rules: list[dict[str, Any]], runs: list[dict[str, Any]]) -> None:
    """Each of a file's own substitutions replaces a MaxText setting with a value MaxText takes, and
    applies to at least one run (`runs`: the runs' settings it may apply to)."""
    for index, rule in enumerate(rules):
        field_name = f"substitutions[{index}]"
        check_settings(path, f"{where}, {field_name}", {rule["setting"]: rule["becomes"]})
        if not any(settings.get(rule["setting"]) == rule["value"] for settings in runs):
            raise DataError(
                f"{path}: {where}, field '{field_name}.value': {rule['value']!r} is the {rule['setting']} of no run"
                " of the file, so it replaces nothing"
            )
