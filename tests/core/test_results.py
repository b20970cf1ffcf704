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
    with pytest.raises(ResultError, match=r"probe\.json: field 'kind': expected 'run', found 'probe'"):
        read_result(tmp_path / "probe.json", "run")


def test_a_producer_cannot_write_a_malformed_result(tmp_path):
    with pytest.raises(ResultError, match=r"probe\.json: field 'transfers\.0\.bytes'"):
        write_result(tmp_path / "probe.json", "probe", {**PROBE, "transfers": [{"bytes": "many"}]})
    assert not (tmp_path / "probe.json").exists()


STAMPED = json.dumps({"kind": "probe", "schema_version": SCHEMA_VERSION, **PROBE}, indent=2)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (STAMPED[:100], r"not valid JSON at line \d+.*truncated \(100 bytes\)"),
        (
            STAMPED.replace('"schema_version": 1', '"schema_version": 0'),
            r"field 'schema_version': 0, this code reads 1",
        ),
        (json.dumps({"status": "ok"}), r"field 'kind': None is not one of"),
        (None, r"cannot be read"),  # no file
    ],
    ids=["truncated", "old-version", "no-kind", "missing"],
)
def test_a_damaged_foreign_or_missing_file_is_refused_by_name(tmp_path, text, message):
    path = tmp_path / "llama-baseline.json"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ResultError, match=r"llama-baseline\.json: " + message):
        read_any(path)
