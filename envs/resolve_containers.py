"""Resolve each container's tag to its registry digest and record it in envs/containers.yaml.

Run where the registry is reachable: `.venv/bin/python envs/resolve_containers.py [NAME ...]`.
The digest comes from offload_repro.core.image_digest (`skopeo inspect`, no daemon needed), the
same resolver a GPU run uses for an unpinned tag. Only the `digest:` lines of the file are
rewritten, so its comments survive.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflow"))
from offload_repro.core.data import DataError, validate
from offload_repro.core.image_digest import DigestError, resolve_digest

CONTAINERS = Path(__file__).resolve().parent / "containers.yaml"


def record(text: str, name: str, digest: str) -> str:
    """Replace the digest line inside the block of container `name`."""
    block = re.compile(rf"(^  {re.escape(name)}:\n(?:    .*\n)*?    digest: ).*$", re.M)
    updated, count = block.subn(rf"\g<1>{digest}", text)
    if count != 1:
        raise SystemExit(f"{CONTAINERS}: no digest line for container '{name}'")
    return updated


def main(names: list[str]) -> None:
    text = CONTAINERS.read_text()
    data = yaml.safe_load(text)
    try:
        validate(data, "containers", CONTAINERS)
    except DataError as error:
        raise SystemExit(str(error)) from error
    containers = data["containers"]
    unknown = sorted(set(names) - set(containers))
    if unknown:
        raise SystemExit(f"{CONTAINERS}: no container named {', '.join(unknown)} (known: {', '.join(containers)})")
    for name in names or list(containers):
        try:
            digest = resolve_digest(containers[name]["reference"])
        except DigestError as error:  # nothing is written: the file stays as it was
            raise SystemExit(f"{CONTAINERS}: container '{name}': {error}") from error
        text = record(text, name, digest)
        print(f"{name}: {containers[name]['reference']} -> {digest}")
    CONTAINERS.write_text(text)


if __name__ == "__main__":
    main(sys.argv[1:])
