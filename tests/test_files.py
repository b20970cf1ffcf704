"""Results are written atomically: a failed write leaves neither a partial file nor debris."""

from __future__ import annotations

import pytest

from offload_repro.core.files import read_json, write_json


class Unserialisable:
    pass


def test_write_then_read(tmp_path):
    write_json(tmp_path / "a" / "r.json", {"status": "ok"})
    assert read_json(tmp_path / "a" / "r.json") == {"status": "ok"}


def test_failed_write_leaves_nothing_behind(tmp_path):
    target = tmp_path / "r.json"
    with pytest.raises(TypeError):
        write_json(target, {"bad": Unserialisable()})
    assert list(tmp_path.iterdir()) == []


def test_failed_write_keeps_the_previous_complete_file(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    write_json(target, {"status": "ok"})

    def interrupted(*_args):
        raise KeyboardInterrupt

    monkeypatch.setattr("os.replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_json(target, {"status": "partial"})
    assert read_json(target) == {"status": "ok"}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]
