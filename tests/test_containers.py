"""Pinned containers: the digest-recording command, with skopeo replaced by a stand-in."""

from __future__ import annotations

import importlib.util
import json
import os
import stat

import yaml

from offload_repro.core.files import REPO_ROOT

spec = importlib.util.spec_from_file_location("resolve_containers", REPO_ROOT / "envs" / "resolve_containers.py")
resolve = importlib.util.module_from_spec(spec)
spec.loader.exec_module(resolve)

DIGEST = "sha256:" + "0123456789abcdef" * 4


def test_recording_a_digest_keeps_comments_and_other_entries(tmp_path, monkeypatch):
    original = (REPO_ROOT / "envs" / "containers.yaml").read_text()
    copy = tmp_path / "containers.yaml"
    copy.write_text(original)
    fake = tmp_path / "bin" / "skopeo"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho '{json.dumps({'Digest': DIGEST})}'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(resolve, "CONTAINERS", copy)
    resolve.main(["jax-deepseek-v3-maxtext"])
    text = copy.read_text()
    data = yaml.safe_load(text)
    assert data["containers"]["jax-deepseek-v3-maxtext"]["digest"] == DIGEST
    assert data["containers"]["jax-maxtext"]["digest"] is None
    assert text.count("\n#") == original.count("\n#")  # comments survive
