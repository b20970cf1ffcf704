"""Pinned containers: the one tag -> digest resolver and the digest-recording command, with
skopeo replaced by a stand-in script on PATH."""

from __future__ import annotations

import importlib.util
import json
import re

import pytest
import yaml

from conftest import REPO
from offload_repro.core.image_digest import DigestError, resolve_digest

spec = importlib.util.spec_from_file_location("resolve_containers", REPO / "envs" / "resolve_containers.py")
resolve = importlib.util.module_from_spec(spec)
spec.loader.exec_module(resolve)

DIGEST = "sha256:" + "0123456789abcdef" * 4
REFERENCE = "nvcr.io/nvidia/jax:25.01-maxtext-py3"
ANSWER = f"echo '{json.dumps({'Name': 'ghcr.io/nvidia/jax', 'Digest': DIGEST})}'"


def test_a_tag_resolves_to_the_digest_skopeo_inspect_answers(skopeo):
    args = skopeo(ANSWER)
    assert resolve_digest(REFERENCE) == DIGEST
    assert args.read_text().splitlines() == ["inspect", "--no-tags", f"docker://{REFERENCE}"]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (
            "printf 'manifest unknown\\nfor this tag\\n' >&2; exit 1",
            "skopeo inspect failed: manifest unknown for this tag",
        ),
        ("exit 3", "skopeo inspect failed: exit status 3"),
        ("echo 'not json'", "skopeo inspect answered no 'Digest' field"),
        ("""echo '{"Name": "ghcr.io/nvidia/jax"}'""", "skopeo inspect answered no 'Digest' field"),
        ("""echo '{"Digest": "md5:1234"}'""", "skopeo inspect answered digest 'md5:1234', not sha256"),
        ("""echo '{"Digest": "sha256:ABC"}'""", "skopeo inspect answered digest 'sha256:ABC', not sha256"),
        ("exec sleep 30", "skopeo inspect did not answer within 0.5 s"),  # a skopeo that hangs is stopped
    ],
)
def test_what_skopeo_fails_or_answers_wrongly_is_a_one_line_digest_error(skopeo, body, words):
    skopeo(body)
    with pytest.raises(DigestError) as raised:
        resolve_digest(REFERENCE, wait_seconds=0.5)
    message = str(raised.value)
    assert message.startswith(f"{REFERENCE}: ") and words in message and "\n" not in message


def test_without_skopeo_the_error_says_it_is_not_installed(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no skopeo, wherever this runs
    with pytest.raises(DigestError, match=re.escape(f"{REFERENCE}: skopeo is not installed")):
        resolve_digest(REFERENCE)


@pytest.fixture
def containers_copy(tmp_path, monkeypatch):
    copy = tmp_path / "containers.yaml"
    copy.write_text((REPO / "envs" / "containers.yaml").read_text())
    monkeypatch.setattr(resolve, "CONTAINERS", copy)
    return copy


def test_recording_a_digest_keeps_comments_and_other_entries(containers_copy, skopeo):
    original = containers_copy.read_text()
    args = skopeo(ANSWER)
    resolve.main(["jax-deepseek-v3-maxtext"])
    text = containers_copy.read_text()
    data = yaml.safe_load(text)
    assert data["containers"]["jax-deepseek-v3-maxtext"]["digest"] == DIGEST
    assert data["containers"]["jax-maxtext"]["digest"] is None
    assert text.count("\n#") == original.count("\n#")  # comments survive
    assert args.read_text().splitlines()[-1] == "docker://ghcr.io/nvidia/jax:deepseek_v3_maxtext"


def test_a_failed_resolve_stops_the_command_and_leaves_the_file_as_it_was(containers_copy, skopeo):
    original = containers_copy.read_text()
    skopeo("echo 'requested access to the resource is denied' >&2; exit 1")
    failed = "container 'jax-maxtext': nvcr.io/nvidia/jax:25.01-maxtext-py3: skopeo inspect failed: requested access"
    with pytest.raises(SystemExit, match=re.escape(failed)):
        resolve.main([])
    assert containers_copy.read_text() == original


def test_an_unknown_container_name_is_refused_before_any_lookup(containers_copy, skopeo):
    args = skopeo(ANSWER)
    with pytest.raises(SystemExit, match="no container named jax-typo"):
        resolve.main(["jax-typo"])
    assert not args.exists()
