"""The pinned container images (envs/containers.yaml): one reader, validated against its schema."""

from __future__ import annotations

from functools import cache
from typing import Any

from offload_repro.core.data import validate
from offload_repro.core.files import REPO_ROOT, read_yaml

CONTAINERS_FILE = REPO_ROOT / "envs" / "containers.yaml"
READS = ("envs/containers.yaml",)


@cache
def containers() -> dict[str, Any]:
    return validate(read_yaml(CONTAINERS_FILE), "containers", CONTAINERS_FILE)


def unpinned_containers() -> list[str]:
    """Images that envs/containers.yaml names without a digest."""
    return sorted(name for name, entry in containers()["containers"].items() if entry["digest"] is None)
