"""A container reference -> the registry digest its tag names now, asked of `skopeo inspect`.

One resolver for both users: envs/resolve_containers.py records digests in envs/containers.yaml,
and a GPU run allowed to run an unpinned tag records the digest the tag had at run time.
skopeo needs no daemon and handles the registries' token challenges itself; its `Digest` is that
of the manifest (or multi-architecture index) the tag names, which is what `image@sha256:...` pins.
"""

from __future__ import annotations

import json
import re
import subprocess

DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


class DigestError(Exception):
    """A reference whose digest could not be resolved; the message is one line naming it and what failed."""


def resolve_digest(reference: str, wait_seconds: float = 120) -> str:
    """The digest ('sha256:' + 64 hex) that `reference` names in its registry now. Raises DigestError."""
    command = ["skopeo", "inspect", "--no-tags", f"docker://{reference}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=wait_seconds)
    except FileNotFoundError as error:
        raise DigestError(f"{reference}: skopeo is not installed (it resolves tags to digests)") from error
    except subprocess.TimeoutExpired as error:
        raise DigestError(f"{reference}: skopeo inspect did not answer within {wait_seconds:g} s") from error
    if done.returncode != 0:
        reason = " ".join(done.stderr.split()) or f"exit status {done.returncode}"
        raise DigestError(f"{reference}: skopeo inspect failed: {reason}")
    try:
        digest = json.loads(done.stdout)["Digest"]
    except (ValueError, TypeError, KeyError) as error:
        raise DigestError(f"{reference}: skopeo inspect answered no 'Digest' field in JSON") from error
    if not isinstance(digest, str) or not DIGEST.fullmatch(digest):
        raise DigestError(f"{reference}: skopeo inspect answered digest {digest!r}, not sha256:<64 hex>")
    return digest
