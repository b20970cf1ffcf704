"""Rows, tables and targets: loaded from YAML, validated by the schemas in workflow/schemas."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from offload_repro.core.files import DEVICE_RESULTS_DIR, REPO_ROOT, read_yaml

SCHEMA_DIR = REPO_ROOT / "workflow" / "schemas"
TARGET_DIR = REPO_ROOT / "experiments" / "targets"
# Data read by a fixed path (offload_repro.plan makes them inputs of every stage importing this).
READS = ("workflow/schemas/**/*.yaml",)


class DataError(ValueError):
    """A data file is malformed; the message names the file, the row and the field."""


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """The end of a refusal that names the closest of `known` to a misspelt `name`, or nothing."""
    close = difflib.get_close_matches(name, known, n=1)
    return f"; did you mean '{close[0]}'?" if close else ""


@cache
def schema(name: str) -> dict[str, Any]:
    return read_yaml(SCHEMA_DIR / f"{name}.schema.yaml")


def _where(data: Any, path: list[Any]) -> str:
    """ "row 3 (id 'x'), field 'a.b'" for a jsonschema error path (rows and claims by number and id)."""
    parts: list[str] = []
    if len(path) >= 2 and path[0] in ("rows", "claims", "runs", "regimes") and isinstance(path[1], int):
        item = data[path[0]][path[1]]  # the list's item the error lies in
        item_id = (item.get("id") or item.get("regime")) if isinstance(item, dict) else None
        parts.append(f"{path[0][:-1]} {path[1] + 1}" + (f" (id '{item_id}')" if item_id else ""))
        path = path[2:]
    field_name = ".".join(str(p) for p in path)
    parts.append(f"field '{field_name}'" if field_name else "top level")
    return ", ".join(parts)


def _shared(uri: str) -> Resource:
    """A shape several schemas share ("$ref: failure.schema.yaml"), stated once in its own file."""
    return Resource.from_contents(schema(uri.removesuffix(".schema.yaml")), default_specification=DRAFT202012)


SHARED = Registry(retrieve=_shared)


YAML_KINDS = {
    str: "a string",
    bool: "a boolean",
    int: "a number",
    float: "a number",
    list: "a list",
    type(None): "empty",
}


def _wanted_object(error: jsonschema.ValidationError) -> str | None:
    """For a value that should be an object, which keys the schema wants of it (each set of keys it
    takes, what else may be added, what each means); None where the schema names no keys."""
    wanted, properties = error.schema, error.schema.get("properties") or {}
    if error.validator != "type" or error.validator_value != "object" or not properties:
        return None
    branches = [wanted] if "required" in wanted else wanted.get("oneOf") or wanted.get("anyOf") or [wanted]
    ways = []
    for branch in branches:
        required = branch.get("required", [])
        barred = (branch.get("not") or {}).get("required", [])  # a key this way of writing it may not have
        optional = [key for key in properties if key not in (*required, *barred)]
        if not required:
            ways.append(f"any of {', '.join(optional)}")
        else:
            ways.append(" and ".join(required) + (f" ({', '.join(optional)} optional)" if optional else ""))
    meanings = "; ".join(f"{key}: {spec['description']}" for key, spec in properties.items() if "description" in spec)
    got = YAML_KINDS.get(type(error.instance), type(error.instance).__name__)
    wants = f"{error.instance!r} is {got}; write an object with the keys {', or '.join(dict.fromkeys(ways))}"
    return f"{wants}. {meanings}" if meanings else wants


def validate(data: Any, schema_name: str, source: str | Path) -> Any:
    """`data`, once it is valid against the schema `schema_name`; else a DataError naming each error's place."""
    validator = jsonschema.Draft202012Validator(schema(schema_name), registry=SHARED)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = [f"{source}: {_where(data, list(e.absolute_path))}: {_wanted_object(e) or e.message}" for e in errors]
        raise DataError("\n".join(lines))
    return data


@dataclass(frozen=True)
class Row:
    """One configuration of a published table, full-scale settings as published."""

    id: str
    table: str
    label: str
    model: str
    family: str
    per_device_batch_size: float
    global_batch_size: int
    max_target_length: int
    parallelism: dict[str, int]
    devices: int
    dtype: str
    quantization: str
    scan_layers: bool
    remat_policy: str
    placement: dict[str, str]
    xla_flags: list[str]
    published: dict[str, Any]
    citation: dict[str, str]
    assumptions: list[str] = field(default_factory=list)  # ids of experiments/assumptions.yaml
    # XLA flags the source does not list, each stated as an assumption; added after `xla_flags`
    unstated_xla_flags: list[str] = field(default_factory=list)
    source_file: str = ""
    # MaxText settings applied after the target's own when compiled: an assumption's alternative
    # (core/assumptions.py); empty for every row as published.
    maxtext_overrides: dict[str, Any] = field(default_factory=dict)
    # The share of GPU memory JAX's allocator takes on a run (XLA_PYTHON_CLIENT_MEM_FRACTION): None,
    # what the target's runs set (core/gpu.py, allocator_fraction); an assumption's alternative or a
    # published run's environment states its own.
    allocator_memory_fraction: float | None = None
    # What MaxText's sorted MoE dispatch multiplies each expert's tokens with: XLA's own
    # `jax.lax.ragged_dot` or core/grouped_matmul.py's tiled_gmm (table.schema.yaml says why).
    ragged_dot: str = "xla"

    def xla_flag(self, name: str) -> str | None:
        """The value the row's published flags give `name` ('--xla_gpu_...'), None where they do not set it."""
        return dict(flag.split("=", 1) for flag in self.xla_flags if "=" in flag).get(name)

    def tensors(self, placement: str) -> list[str]:
        return [name for name, where in self.placement.items() if where == placement]


def _load_table(path: Path) -> list[Row]:
    try:
        data = read_yaml(path)
    except Exception as err:  # a YAML syntax error names the line itself
        raise DataError(f"{path}: not valid YAML: {err}") from err
    validate(data, "table", path)
    defaults = data["defaults"]
    rows = []
    for entry in data["rows"]:
        merged = {**defaults, **entry}
        merged["placement"] = {**defaults["placement"], **entry.get("placement", {})}
        merged["assumptions"] = [*defaults.get("assumptions", []), *entry.get("assumptions", [])]
        merged.pop("dataset", None)
        rows.append(Row(table=data["table"], source_file=str(path), **merged))
    return rows


def load_rows(paths: list[str | Path]) -> list[Row]:
    rows = [row for path in paths for row in _load_table(Path(path))]
    seen: dict[str, str] = {}
    for row in rows:
        if row.id in seen:
            raise DataError(f"{row.source_file}: row id '{row.id}': field 'id': already used in {seen[row.id]}")
        seen[row.id] = row.source_file
    return rows


@dataclass(frozen=True)
class Target:
    """A hardware profile as data (see experiments/targets/)."""

    name: str
    kind: str
    launcher: str
    spec: dict[str, Any]
    # each hardware fact the file states without a citation, named by file and field
    uncited: tuple[str, ...] = ()

    @property
    def scale(self) -> dict[str, Any]:
        return self.spec["scale"]

    @property
    def maxtext(self) -> dict[str, Any]:
        return self.spec["maxtext"]

    @property
    def run_environment(self) -> dict[str, str]:
        """The variables a row's training processes run with on this target: a cluster's ranks take
        `cluster.environment`, a local run the target's own `environment`."""
        where = self.spec.get("cluster", {}) if self.launcher == "slurm" else self.spec
        return where.get("environment", {})

    @property
    def judges(self) -> list[str]:
        """Hardware classes whose claims this target's evidence may judge (see claims.yaml)."""
        return self.spec.get("judges", [])

    @property
    def repeats(self) -> int:
        """How many times each row runs on this target (each repeat its own training run)."""
        return self.spec.get("repeats", 1)

    @property
    def host_link_gb_s_per_direction(self) -> float | None:
        """The host link's bandwidth one way, GB/s (a bidirectional figure counts both ways)."""
        return self.link_gb_s_per_direction("host_link")

    @property
    def host_copy_gb_s_per_direction(self) -> float | None:
        """What one GPU's copies to or from the host get one way, GB/s: its host link, at most its
        share of its CPU's memory bandwidth, since every GPU of a CPU copies at once (each rank
        runs the same program)."""
        link, share = self.host_link_gb_s_per_direction, self.spec["hardware"].get("host_memory_gb_s_per_gpu")
        return min(link, share) if link and share else link

    def link_gb_s_per_direction(self, link_name: str) -> float | None:
        """A link's bandwidth one way, GB/s: `host_link` or `collective_link` of the hardware."""
        link = self.spec["hardware"].get(link_name)
        if not link:
            return None
        return link["bandwidth_gb_s"] / (2 if link.get("direction") == "bidirectional" else 1)

    @property
    def tasks_per_node(self) -> int:
        """JAX processes per node of a SLURM job: one per GPU, or the CPU target's tasks per node."""
        cluster = self.spec.get("cluster", {})
        return cluster.get("gpus_per_node", cluster.get("tasks_per_node", 1))

    @property
    def processes(self) -> int:
        """JAX processes of one row's run: one per task of its SLURM job, else one."""
        cluster = self.spec.get("cluster")
        if self.launcher != "slurm" or cluster is None:
            return 1
        return cluster["nodes"] * self.tasks_per_node


def merged(base: Any, override: Any) -> Any:
    """`override` laid over `base`: mappings merge key by key, anything else is replaced."""
    if isinstance(base, dict) and isinstance(override, dict):
        return {key: merged(base[key], value) if key in base else value for key, value in override.items()} | {
            key: value for key, value in base.items() if key not in override
        }
    return override


def _target_spec(name: str, directory: Path, seen: tuple[str, ...] = ()) -> dict[str, Any]:
    """The target's file, laid over the target it `extends` (if any), not yet validated."""
    path = directory / f"{name}.yaml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in directory.glob("*.yaml")))
        where = f" (extended by {seen[-1]})" if seen else ""
        raise DataError(f"{path}: no such target{where} (known: {known})")
    spec = read_yaml(path)
    base = spec.pop("extends", None) if isinstance(spec, dict) else None
    if base is None:
        return spec
    if base in (*seen, name):
        raise DataError(f"{path}: field 'extends': '{base}' extends itself through {' -> '.join((*seen, name))}")
    return merged(_target_spec(base, directory, (*seen, name)), spec)


def _derived(spec: dict[str, Any], path: Path) -> dict[str, Any]:
    """Geometry and host memory are stated once, in `hardware`; what follows from them is filled in
    here, and a file that also states one of them differently is refused."""
    hardware = spec.get("hardware") if isinstance(spec, dict) else None
    if not isinstance(hardware, dict):
        return spec
    nodes, per_node = hardware.get("nodes"), hardware.get("gpus_per_node")
    devices = hardware.get("devices")
    derived: dict[tuple[str, str], tuple[Any, str]] = {}  # (section, key): (value, what gives it)
    if isinstance(nodes, int) and isinstance(per_node, int):
        geometry = f"hardware.nodes x hardware.gpus_per_node ({nodes} x {per_node})"
        devices = nodes * per_node
        derived[("hardware", "devices")] = devices, geometry
        for key, value in (("nodes", nodes), ("gpus_per_node", per_node)):
            derived[("cluster", key)] = value, geometry
        derived[("compile", "topology")] = f"1x{nodes}x{per_node}", geometry  # partitions x hosts x devices per host
    if isinstance(devices, int):  # rows run on every device of the target, scaled or not
        derived[("scale", "devices")] = devices, f"hardware.devices ({devices})"
    host = hardware.get("host_memory")
    if isinstance(host, dict) and isinstance(per_node, int):
        per_gpu = host["gb_per_cpu"] * host["cpus_per_node"] / per_node
        derived[("hardware", "host_memory_gb_per_gpu")] = (
            int(per_gpu) if float(per_gpu).is_integer() else per_gpu,
            f"hardware.host_memory ({host['gb_per_cpu']} GB per CPU x {host['cpus_per_node']} CPUs per node"
            f" / {per_node} GPUs per node)",
        )
        if host.get("bandwidth_gb_s_per_cpu"):  # every GPU of a CPU copies at once: each gets its share
            derived[("hardware", "host_memory_gb_s_per_gpu")] = (
                host["bandwidth_gb_s_per_cpu"] * host["cpus_per_node"] / per_node,
                f"hardware.host_memory ({host['bandwidth_gb_s_per_cpu']} GB/s per CPU x {host['cpus_per_node']}"
                f" CPUs per node / {per_node} GPUs per node)",
            )
    for (section, key), (value, why) in derived.items():
        if not isinstance(spec.get(section), dict):
            continue
        stated = spec[section].get(key)
        if stated is not None and stated != value:
            raise DataError(
                f"{path}: field '{section}.{key}': {stated!r} contradicts {why}, which give"
                f" {value!r}; state it once, in hardware"
            )
        spec[section][key] = value
    return spec


# Hardware facts a target file states that are not derived from another: each needs its citation
# in hardware.citations (a source and the quoted sentence, or a stated assumption); `topology`
# may cite nodes and gpus_per_node.
CITED_LINKS = ("host_link", "collective_link", "network_link")
CITED_FACTS = ("host_memory", "nics_per_gpu", "nvlink_domain_nodes")


def cited_facts(spec: dict[str, Any]) -> list[str]:
    """The hardware facts of a target that need a citation, by their key in hardware.citations:
    each precision's peak (`peak_dense_tflops.bfloat16`), `hbm` (device memory and bandwidth, where
    XLA's description of the GPU states them), each link and each other stated fact."""
    hardware = spec.get("hardware") or {}
    facts = [f"peak_dense_tflops.{dtype}" for dtype in hardware.get("peak_dense_tflops") or {}]
    if (spec.get("compile") or {}).get("description_file") or hardware.get("device_memory_bytes") is not None:
        facts.append("hbm")
    facts += [key for key in (*CITED_LINKS, *CITED_FACTS) if hardware.get(key) is not None]
    return facts


def citable_facts(spec: dict[str, Any]) -> list[str]:
    """Every key hardware.citations may have: the facts that need a citation, and `topology`, which
    may cite nodes and gpus_per_node; sorted, as a refusal lists them."""
    return sorted({*cited_facts(spec), "topology"})


def _uncited(spec: dict[str, Any], path: Path) -> tuple[str, ...]:
    """Each fact without a citation, named by file and field; a citation of a fact the file does
    not state is refused."""
    facts = cited_facts(spec)
    citable = citable_facts(spec)
    citations = (spec.get("hardware") or {}).get("citations") or {}
    for key in citations:
        if key not in citable:
            raise DataError(
                f"{path}: field 'hardware.citations.{key}': cites a fact the file does not state;"
                f" the facts it can cite: {', '.join(citable)}"
            )
    description = (spec.get("compile") or {}).get("description_file")
    hbm = citations.get("hbm") or {}
    if description and "quote" in hbm:  # XLA's description is in the checkout: its quoted lines must be in it
        text = (REPO_ROOT / description).read_text()
        for line in [hbm["quote"]] if isinstance(hbm["quote"], str) else hbm["quote"]:
            if line not in text:
                raise DataError(f"{path}: field 'hardware.citations.hbm': {line!r} is not in {description}")
    return tuple(
        f"{path}: field 'hardware.{fact}': no citation (hardware.citations.{fact}: a source and the quoted"
        " sentence, or a stated assumption)"
        for fact in facts
        if fact not in citations
    )


def load_target(name: str, directory: Path = TARGET_DIR, nodes: int | None = None) -> Target:
    """The target of the file `name`; `nodes`: on that many nodes instead of the file's (a published
    run elsewhere states its own)."""
    path = directory / f"{name}.yaml"
    spec = _target_spec(name, directory)
    if nodes is not None and isinstance(spec.get("hardware"), dict):
        spec["hardware"]["nodes"] = nodes
    spec = _derived(spec, path)
    validate(spec, "target", path)
    if spec["name"] != name:
        raise DataError(f"{path}: field 'name': '{spec['name']}' differs from the file name '{name}'")
    for link, share in ((spec.get("hardware") or {}).get("link_efficiency") or {}).items():
        if not share["low"] <= share["central"] <= share["high"]:
            raise DataError(
                f"{path}: field 'hardware.link_efficiency.{link}': low {share['low']}, central {share['central']},"
                f" high {share['high']} are not in order"
            )
    uncited = _uncited(spec, path)
    return Target(name=name, kind=spec["kind"], launcher=spec["launcher"], spec=spec, uncited=uncited)


def kept_run_targets() -> list[str]:
    """The targets whose device tier's runs are kept as data (experiments/device-results/<target>/runs/):
    their pages are built from those runs on any machine."""
    root = REPO_ROOT / DEVICE_RESULTS_DIR
    return sorted(path.parent.name for path in root.glob("*/runs") if any(path.glob("*.json")))


def link_efficiency(target: Target, link: str, level: str, speed: dict[str, Any]) -> float:
    """The share of `link`'s cited bandwidth a target achieves at `level` (low, central, high): its
    file's measured range, else experiments/speed.yaml's."""
    measured = (target.spec["hardware"].get("link_efficiency") or {}).get(link)
    return (measured or speed["link_efficiency"])[level]


def hardware_classes() -> dict[str, list[str]]:
    """{hardware class: names of the targets that judge it}, from every target file; in each class the
    targets whose runs are kept as data come first, since their pages already judge what the class may."""
    kept = kept_run_targets()
    classes: dict[str, list[str]] = {}
    for path in sorted(TARGET_DIR.glob("*.yaml"), key=lambda path: (path.stem not in kept, path.stem)):
        for hardware in load_target(path.stem).judges:
            classes.setdefault(hardware, []).append(path.stem)
    return classes
