"""Resolve a container image tag to its registry digest at run time, with the standard library only.

Docker Registry HTTP API v2: `HEAD /v2/<repository>/manifests/<tag>` answers the manifest's digest
in `Docker-Content-Digest`. Public images on ghcr.io, nvcr.io and Docker Hub first answer 401 with a
`WWW-Authenticate: Bearer realm=...,service=...,scope=...` challenge; an anonymous token from that
realm opens them. The digest is that of the manifest (or index) the tag names, which is what
`image@sha256:...` pins, so a multi-architecture tag resolves to its index, as `skopeo inspect` does.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

# Index types first: a tag that names an index must resolve to the index, not one platform's manifest.
MANIFEST_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
DOCKER_HUB = "registry-1.docker.io"
DOCKER_HUB_NAMES = ("docker.io", "index.docker.io", DOCKER_HUB)
REPOSITORY = re.compile(r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*")
TAG = re.compile(r"[\w][\w.-]{0,127}")


class RegistryError(Exception):
    """A reference that could not be resolved; the message is one line naming it and what failed."""


def split_reference(reference: str) -> tuple[str, str, str]:
    """'ghcr.io/nvidia/jax:maxtext' -> ('ghcr.io', 'nvidia/jax', 'maxtext').

    Docker's rules: a first component with '.' or ':' (or 'localhost') is a registry, else Docker Hub
    (registry-1.docker.io, one-component names under 'library/'); no tag means 'latest'. A reference
    pinned with '@sha256:...' gives that digest in place of the tag (any tag beside it is ignored).
    """
    name, at, digest = reference.strip().partition("@")
    if at and not DIGEST.fullmatch(digest):
        raise RegistryError(f"{reference}: '{digest}' is not a sha256 digest")
    registry, slash, rest = name.partition("/")
    if not slash or not ("." in registry or ":" in registry or registry == "localhost"):
        registry, rest = DOCKER_HUB, name
    elif registry in DOCKER_HUB_NAMES:
        registry = DOCKER_HUB
    repository, colon, tag = rest.rpartition(":") if ":" in rest.rsplit("/", 1)[-1] else (rest, "", "")
    tag = tag if colon else "latest"
    if registry == DOCKER_HUB and "/" not in repository:
        repository = f"library/{repository}"
    if not REPOSITORY.fullmatch(repository):
        raise RegistryError(f"{reference}: '{repository}' is not a valid repository name")
    if not TAG.fullmatch(tag):
        raise RegistryError(f"{reference}: '{tag}' is not a valid tag")
    return registry, repository, digest if at else tag


def _challenge(header: str) -> dict[str, str]:
    """'Bearer realm="...",service="...",scope="..."' -> its parameters; {} when it is not Bearer."""
    scheme, _, params = header.strip().partition(" ")
    if scheme.lower() != "bearer":
        return {}
    return {key.lower(): value for key, value in re.findall(r'(\w+)="([^"]*)"', params)}


def _request(url: str, method: str, headers: dict[str, str], timeout_s: float) -> Any:
    return urllib.request.urlopen(urllib.request.Request(url, method=method, headers=headers), timeout=timeout_s)


def _token(reference: str, challenge: dict[str, str], repository: str, timeout_s: float) -> str:
    realm = challenge.get("realm")
    if not realm:
        raise RegistryError(f"{reference}: the registry's Bearer challenge names no realm")
    query = {"service": challenge.get("service"), "scope": challenge.get("scope") or f"repository:{repository}:pull"}
    url = realm + ("&" if "?" in realm else "?") + urllib.parse.urlencode({k: v for k, v in query.items() if v})
    try:
        with _request(url, "GET", {}, timeout_s) as answer:
            body = json.loads(answer.read())
    except urllib.error.HTTPError as error:
        raise RegistryError(f"{reference}: anonymous token from {realm} refused: HTTP {error.code}") from error
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as error:
        raise RegistryError(f"{reference}: anonymous token from {realm} failed: {_reason(error)}") from error
    token = body.get("token") or body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token:
        raise RegistryError(f"{reference}: {realm} answered no token")
    return token


def _reason(error: BaseException) -> str:
    reason = getattr(error, "reason", None) or error
    return " ".join(str(reason).split()) or type(error).__name__


def _manifest(reference: str, url: str, method: str, headers: dict[str, str], timeout_s: float) -> tuple[Any, bytes]:
    """(response headers, body) of one manifest request; 401 is raised as HTTPError for the caller."""
    try:
        with _request(url, method, headers, timeout_s) as answer:
            return answer.headers, answer.read()
    except urllib.error.HTTPError as error:
        if error.code == 401:
            raise
        raise RegistryError(f"{reference}: {method} {url} answered HTTP {error.code} {error.reason}") from error
    except (urllib.error.URLError, OSError, http.client.HTTPException, ValueError) as error:
        raise RegistryError(f"{reference}: {method} {url} failed: {_reason(error)}") from error


def resolve_digest(reference: str, timeout_s: float = 20, scheme: str = "https") -> str:
    """The registry digest ('sha256:' + 64 hex) the tag in `reference` names now; a reference pinned
    with '@sha256:...' is answered without a network call. Raises RegistryError."""
    registry, repository, tag = split_reference(reference)
    if DIGEST.fullmatch(tag):
        return tag
    url = f"{scheme}://{registry}/v2/{repository}/manifests/{tag}"
    headers = {"Accept": ", ".join(MANIFEST_TYPES)}
    for method in ("HEAD", "GET"):  # GET only where HEAD answers no digest header: hash the manifest
        try:
            answer, body = _manifest(reference, url, method, headers, timeout_s)
        except urllib.error.HTTPError as error:  # 401: once, for an anonymous token
            if "Authorization" in headers:
                raise RegistryError(f"{reference}: {method} {url} refused the anonymous token (HTTP 401)") from error
            challenge = _challenge(error.headers.get("WWW-Authenticate", ""))
            if not challenge:
                raise RegistryError(
                    f"{reference}: {registry} needs credentials (HTTP 401, no Bearer challenge)"
                ) from error
            headers["Authorization"] = f"Bearer {_token(reference, challenge, repository, timeout_s)}"
            try:
                answer, body = _manifest(reference, url, method, headers, timeout_s)
            except urllib.error.HTTPError as again:
                raise RegistryError(f"{reference}: {method} {url} refused the anonymous token (HTTP 401)") from again
        digest = answer.get("Docker-Content-Digest")
        if method == "GET" and body:
            computed = "sha256:" + hashlib.sha256(body).hexdigest()
            if digest and digest != computed:
                raise RegistryError(
                    f"{reference}: {registry} sent digest {digest} for a manifest that hashes to {computed}"
                )
            digest = computed
        if digest:
            if not DIGEST.fullmatch(digest):
                raise RegistryError(f"{reference}: {registry} answered digest {digest!r}, not sha256:<64 hex>")
            return digest
    raise RegistryError(f"{reference}: {registry} answered neither a Docker-Content-Digest nor a manifest")
