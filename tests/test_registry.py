"""Tag -> digest against a real local registry: an HTTP server speaking the v2 manifest endpoints,
one repository behind an anonymous bearer token (as ghcr.io and nvcr.io are) and one open."""

from __future__ import annotations

import hashlib
import json
import re
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from offload_repro.cluster.registry import MANIFEST_TYPES, RegistryError, resolve_digest, split_reference

TOKEN = "anonymous-pull-token"
MANIFEST = json.dumps({"schemaVersion": 2, "mediaType": MANIFEST_TYPES[0], "manifests": []}).encode()
MANIFEST_DIGEST = "sha256:" + hashlib.sha256(MANIFEST).hexdigest()
OPEN_DIGEST = "sha256:" + "ab" * 32


class Registry(BaseHTTPRequestHandler):
    seen: list[tuple[str, str, dict[str, str]]]

    def log_message(self, *_: object) -> None:  # keep pytest output clean
        pass

    def _answer(self, code: int, headers: dict[str, str], body: bytes = b"") -> None:
        self.send_response(code)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _serve(self) -> None:
        self.seen.append((self.command, self.path, dict(self.headers)))
        path, _, query = self.path.partition("?")
        port = self.server.server_address[1]
        manifest_headers = {"Content-Type": MANIFEST_TYPES[0]}
        if path == "/token":
            asked = urllib.parse.parse_qs(query)
            if asked == {"service": ["test-registry"], "scope": ["repository:private/app:pull"]}:
                self._answer(200, {"Content-Type": "application/json"}, json.dumps({"token": TOKEN}).encode())
            else:
                self._answer(400, {}, b"bad token request")
        elif path in ("/v2/private/app/manifests/v1", "/v2/denied/app/manifests/v1", "/v2/noscope/app/manifests/v1"):
            # denied: the token opens nothing; noscope: a challenge the token endpoint will refuse
            scope = "" if path.startswith("/v2/noscope") else ',scope="repository:private/app:pull"'
            challenge = f'Bearer realm="http://127.0.0.1:{port}/token",service="test-registry"{scope}'
            if self.headers.get("Authorization") != f"Bearer {TOKEN}" or path.startswith("/v2/denied"):
                self._answer(401, {"WWW-Authenticate": challenge}, b'{"errors":[{"code":"UNAUTHORIZED"}]}')
            else:
                self._answer(200, manifest_headers | {"Docker-Content-Digest": MANIFEST_DIGEST}, MANIFEST)
        elif path == "/v2/open/app/manifests/v2.1":
            self._answer(200, manifest_headers | {"Docker-Content-Digest": OPEN_DIGEST}, MANIFEST)
        elif path == "/v2/nodigest/app/manifests/v1":  # some registries omit the header: the body is hashed
            self._answer(200, manifest_headers, MANIFEST)
        elif path == "/v2/baddigest/app/manifests/v1":
            self._answer(200, manifest_headers | {"Docker-Content-Digest": "md5:1234"}, MANIFEST)
        elif path == "/v2/basic/app/manifests/v1":
            self._answer(401, {"WWW-Authenticate": 'Basic realm="registry"'})
        else:
            self._answer(404, {"Content-Type": "application/json"}, b'{"errors":[{"code":"MANIFEST_UNKNOWN"}]}')

    do_GET = do_HEAD = _serve


@pytest.fixture
def registry() -> Iterator[tuple[str, list[tuple[str, str, dict[str, str]]]]]:
    seen: list[tuple[str, str, dict[str, str]]] = []
    handler = type("RecordingRegistry", (Registry,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()


def test_a_token_protected_tag_resolves_through_the_bearer_challenge(registry):
    host, seen = registry
    assert resolve_digest(f"{host}/private/app:v1", timeout_s=5, scheme="http") == MANIFEST_DIGEST
    assert [(method, path.partition("?")[0]) for method, path, _ in seen] == [
        ("HEAD", "/v2/private/app/manifests/v1"),
        ("GET", "/token"),
        ("HEAD", "/v2/private/app/manifests/v1"),
    ]
    first, retried = seen[0][2], seen[2][2]
    assert "Authorization" not in first
    assert retried["Authorization"] == f"Bearer {TOKEN}"
    for headers in (first, retried):
        assert [kind.strip() for kind in headers["Accept"].split(",")] == list(MANIFEST_TYPES)


def test_an_open_tag_resolves_with_one_head_request(registry):
    host, seen = registry
    assert resolve_digest(f"{host}/open/app:v2.1", timeout_s=5, scheme="http") == OPEN_DIGEST
    assert [(method, path) for method, path, _ in seen] == [("HEAD", "/v2/open/app/manifests/v2.1")]


def test_without_a_digest_header_the_manifest_itself_is_hashed(registry):
    host, seen = registry
    assert resolve_digest(f"{host}/nodigest/app:v1", timeout_s=5, scheme="http") == MANIFEST_DIGEST
    assert [method for method, _, _ in seen] == ["HEAD", "GET"]


def test_an_unknown_tag_is_a_one_line_error_naming_the_reference(registry):
    host, _ = registry
    reference = f"{host}/open/app:missing"
    with pytest.raises(RegistryError) as raised:
        resolve_digest(reference, timeout_s=5, scheme="http")
    message = str(raised.value)
    assert message.startswith(f"{reference}: HEAD ") and "HTTP 404" in message and "\n" not in message


@pytest.mark.parametrize(
    ("path", "words"),
    [
        ("baddigest/app:v1", "'md5:1234', not sha256"),
        ("basic/app:v1", "needs credentials"),
        ("denied/app:v1", "HEAD .* refused the anonymous token"),
        ("noscope/app:v1", r"anonymous token from http://127\.0\.0\.1:\d+/token refused: HTTP 400"),
    ],
)
def test_what_a_registry_refuses_is_a_registry_error(registry, path, words):
    host, _ = registry
    with pytest.raises(RegistryError, match=words):
        resolve_digest(f"{host}/{path}", timeout_s=5, scheme="http")


def test_an_unreachable_registry_is_a_registry_error():
    with pytest.raises(RegistryError, match=r"127\.0\.0\.1:1/open/app:v1: HEAD .* failed"):
        resolve_digest("127.0.0.1:1/open/app:v1", timeout_s=5, scheme="http")


def test_a_pinned_reference_needs_no_network():
    digest = "sha256:" + "0123456789abcdef" * 4
    # port 1 refuses connections: any network call would raise
    assert resolve_digest(f"127.0.0.1:1/nvidia/jax:maxtext@{digest}", scheme="http") == digest


@pytest.mark.parametrize(
    ("reference", "parts"),
    [
        ("ghcr.io/nvidia/jax:maxtext", ("ghcr.io", "nvidia/jax", "maxtext")),
        ("nvcr.io/nvidia/jax:25.04-maxtext-py3", ("nvcr.io", "nvidia/jax", "25.04-maxtext-py3")),
        ("ubuntu", ("registry-1.docker.io", "library/ubuntu", "latest")),
        ("ubuntu:24.04", ("registry-1.docker.io", "library/ubuntu", "24.04")),
        ("docker.io/ubuntu:24.04", ("registry-1.docker.io", "library/ubuntu", "24.04")),
        ("nvidia/cuda:12.9.1-base", ("registry-1.docker.io", "nvidia/cuda", "12.9.1-base")),
        ("index.docker.io/nvidia/cuda", ("registry-1.docker.io", "nvidia/cuda", "latest")),
        ("localhost/app", ("localhost", "app", "latest")),
        ("127.0.0.1:5000/team/app", ("127.0.0.1:5000", "team/app", "latest")),
        ("127.0.0.1:5000/team/app:v1", ("127.0.0.1:5000", "team/app", "v1")),
        (f"ghcr.io/nvidia/jax:maxtext@sha256:{'a' * 64}", ("ghcr.io", "nvidia/jax", f"sha256:{'a' * 64}")),
        (f"ubuntu@sha256:{'b' * 64}", ("registry-1.docker.io", "library/ubuntu", f"sha256:{'b' * 64}")),
    ],
)
def test_split_reference(reference, parts):
    assert split_reference(reference) == parts


@pytest.mark.parametrize(
    "reference", ["ghcr.io/NVIDIA/jax:maxtext", "ghcr.io/nvidia/jax:", "ubuntu@sha256:abc", "ghcr.io/nvidia/jax:-x"]
)
def test_split_reference_refuses_malformed_references(reference):
    with pytest.raises(RegistryError, match="^" + re.escape(reference) + ": "):
        split_reference(reference)
