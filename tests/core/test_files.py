"""Results are written atomically: a failed write leaves neither a partial file nor debris."""

from __future__ import annotations

import os
import stat

import pytest

from offload_repro.core.files import read_json, write_json


def test_failed_write_leaves_nothing_behind(tmp_path):
    with pytest.raises(TypeError):
        write_json(tmp_path / "r.json", {"bad": object()})
    assert list(tmp_path.iterdir()) == []


def test_failed_write_keeps_the_previous_complete_file(tmp_path, monkeypatch):
    target = tmp_path / "a" / "r.json"  # its folder is made on the way
    write_json(target, {"status": "ok"})
    assert read_json(target) == {"status": "ok"}

    def interrupted(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr("os.replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_json(target, {"status": "partial"})
    assert read_json(target) == {"status": "ok"}
    assert [p.name for p in target.parent.iterdir()] == ["r.json"]


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_results_honour_the_umask(tmp_path, umask, mode):
    previous = os.umask(umask)
    try:
        write_json(tmp_path / "r.json", {"status": "ok"})
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "r.json").stat().st_mode) == mode
