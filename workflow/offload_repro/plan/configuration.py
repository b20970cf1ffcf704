"""The docs' configuration table (docs/configuration.md), generated from the config's schema (what each key sets) and
experiments/config.yaml (its default), so that neither the table nor the config drifts from them."""

from __future__ import annotations

from typing import Any

import yaml

from offload_repro.core.files import REPO_ROOT, read_yaml

SCHEMA = REPO_ROOT / "workflow" / "schemas" / "config.schema.yaml"
DEFAULTS = REPO_ROOT / "experiments" / "config.yaml"
READS = ("workflow/schemas/config.schema.yaml", "experiments/config.yaml")
CONFIG_PAGE = REPO_ROOT / "docs" / "configuration.md"  # where the table lives


def _shown(value: Any) -> str:
    """A default as YAML writes it in one line."""
    return yaml.safe_dump(value, default_flow_style=True, width=10_000).removesuffix("\n...\n").strip()


def config_table() -> str:
    """One line per key of the config, in the schema's order: its default and its description."""
    properties, defaults = read_yaml(SCHEMA)["properties"], read_yaml(DEFAULTS)
    lines = ["| key | default | what it sets |", "| --- | --- | --- |"]
    for key, spec in properties.items():
        lines.append(f"| `{key}` | `{_shown(defaults[key])}` | {spec['description']} |")
    return "\n".join(lines)
