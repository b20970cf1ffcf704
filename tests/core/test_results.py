"""Typed result files: a damaged or malformed file is refused with its path and the field."""

from __future__ import annotations

import json

import pytest

from offload_repro.core.results import SCHEMA_VERSION, ResultError, read_any, read_result, write_result

PROBE = {
    "target": "h200-1",
    "status": "ok",
    "message": None,
    "device_kind": "NVIDIA H200",
    "platform": "gpu",
    "link_limit_gb_s_per_direction": 64.0,
    "repeats": 5,
    "transfers": [{"bytes": 33554432, "d2h_gb_s": 51.2, "h2d_gb_s": 53.0}],
}


def test_written_results_carry_their_kind_and_schema_version(tmp_path):
    written = write_result(tmp_path / "probe.json", "probe", PROBE)
    assert written["kind"] == "probe" and written["schema_version"] == SCHEMA_VERSION
    assert read_result(tmp_path / "probe.json", "probe") == written


def test_a_producer_cannot_write_a_malformed_result(tmp_path):
    with pytest.raises(ResultError, match=r"probe\.json: field 'transfers\.0\.bytes'"):
        write_result(tmp_path / "probe.json", "probe", {**PROBE, "transfers": [{"bytes": "many"}]})
    assert not (tmp_path / "probe.json").exists()


def test_a_truncated_file_names_itself(tmp_path):
    path = tmp_path / "llama-baseline.json"
    write_result(path, "probe", PROBE)
    path.write_text(path.read_text()[:100])
    with pytest.raises(ResultError, match=r"llama-baseline\.json: not valid JSON at line \d+.*truncated \(100 bytes\)"):
        read_any(path)


def test_a_file_of_another_kind_or_version_is_refused(tmp_path):
    path = tmp_path / "r.json"
    write_result(path, "probe", PROBE)
    with pytest.raises(ResultError, match=r"r\.json: field 'kind': expected 'run', found 'probe'"):
        read_result(path, "run")
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema_version": 0}))
    with pytest.raises(ResultError, match=r"field 'schema_version': 0, this code reads 1"):
        read_any(path)
    path.write_text(json.dumps({"status": "ok"}))
    with pytest.raises(ResultError, match=r"r\.json: field 'kind': None is not one of"):
        read_any(path)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(ResultError, match=r"nothere\.json: cannot be read"):
        read_any(tmp_path / "nothere.json")
