"""MaxText's own configuration files, as shipped in the installed package: its defaults and each
model's dimensions (read, never re-typed here)."""

from __future__ import annotations

import re
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from offload_repro.core.files import read_yaml


def base_config() -> Path:
    """MaxText's own defaults file, as shipped in the installed package."""
    spec = find_spec("maxtext")
    if spec is None or spec.origin is None:
        raise RuntimeError("maxtext is not installed in this Python environment")
    return Path(spec.origin).parent / "configs" / "base.yml"


def model_file(model: str) -> Path:
    return base_config().parent / "models" / f"{model}.yml"


@cache
def model_settings(model: str) -> dict[str, Any]:
    """What the named model's own YAML sets (MaxText's defaults apart)."""
    return read_yaml(model_file(model))


@cache
def model_config(model: str) -> dict[str, Any]:
    """MaxText's defaults overlaid with the named model's YAML."""
    return {**read_yaml(base_config()), **model_settings(model)}


def model_kind(model: str) -> str:
    """Dense or MoE, as the model's own config says (more than one expert: MoE)."""
    return "MoE" if int(model_config(model).get("num_experts") or 1) > 1 else "dense"


def model_family(model: str) -> str:
    """The model's own family: the letters its MaxText name starts with (llama3-70b: llama,
    mixtral-8x7b: mixtral, deepseek3-671b: deepseek), whatever its kind."""
    found = re.match(r"[a-z]+", model)
    return found.group() if found else model
