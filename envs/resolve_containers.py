"""Resolve each container's tag to its registry digest and record it in envs/containers.yaml.

Run where the registry is reachable: `.venv/bin/python envs/resolve_containers.py [NAME ...]`.
Uses `skopeo inspect` (no daemon needed); only the `digest:` lines of the file are rewritten,
so its comments survive.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import yaml

CONTAINERS = Path(__file__).resolve().parent / "containers.yaml"


def registry_digest(reference: str) -> str:
    done = subprocess.run(
        ["skopeo", "inspect", "--no-tags", f"docker://{reference}"], capture_output=True, text=True, timeout=120
    )
    if done.returncode != 0:
        raise SystemExit(f"skopeo could not inspect {reference}: {done.stderr.strip()}")
    digest = json.loads(done.stdout)["Digest"]
    if not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        raise SystemExit(f"{reference}: unexpected digest {digest!r}")
    return digest


def record(text: str, name: str, digest: str) -> str:
    """Replace the digest line inside the block of container `name`."""
    block = re.compile(rf"(^  {re.escape(name)}:\n(?:    .*\n)*?    digest: ).*$", re.M)
    updated, count = block.subn(rf"\g<1>{digest}", text)
    if count != 1:
        raise SystemExit(f"{CONTAINERS}: no digest line for container '{name}'")
    return updated


def main(names: list[str]) -> None:
    text = CONTAINERS.read_text()
    containers = yaml.safe_load(text)["containers"]
    for name in names or list(containers):
        digest = registry_digest(containers[name]["reference"])
        text = record(text, name, digest)
        print(f"{name}: {containers[name]['reference']} -> {digest}")
    CONTAINERS.write_text(text)


if __name__ == "__main__":
    main(sys.argv[1:])
