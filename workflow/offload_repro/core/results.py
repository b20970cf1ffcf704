"""Typed result files: every file a stage writes has a kind, a schema_version and a JSON Schema
(workflow/schemas/results/<kind>.schema.yaml). Writers validate before writing, so a producer
bug never leaves a malformed file; readers validate, so a damaged file stops the reading rule
with an error naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from offload_repro.core.data import SCHEMA_DIR, DataError, validate
from offload_repro.core.files import write_json

SCHEMA_VERSION = 1
# Every kind with a schema (workflow/schemas/results/<kind>.schema.yaml): a new kind needs only its schema.
KINDS = tuple(sorted(path.name.removesuffix(".schema.yaml") for path in (SCHEMA_DIR / "results").glob("*.schema.yaml")))


class ResultError(DataError):
    """A result file is missing, damaged or of the wrong shape; the message names file and field."""


def check(data: Any, kind: str, source: str | Path) -> None:
    if not isinstance(data, dict):
        raise ResultError(f"{source}: top level: a {kind} result must be a JSON object")
    if data.get("kind") != kind:
        raise ResultError(f"{source}: field 'kind': expected '{kind}', found {data.get('kind')!r}")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ResultError(
            f"{source}: field 'schema_version': {data.get('schema_version')!r}, this code reads {SCHEMA_VERSION}; "
            "rebuild the file (delete it and rerun the workflow)"
        )
    try:
        validate(data, f"results/{kind}", source)
    except DataError as err:
        raise ResultError(str(err)) from None


def write_result(path: str | Path, kind: str, data: dict[str, Any]) -> dict[str, Any]:
    """Stamp, validate and atomically write one result; returns what was written."""
    record = {"kind": kind, "schema_version": SCHEMA_VERSION, **data}
    check(record, kind, path)
    write_json(path, record)
    return record


def read_any(path: str | Path, kind: str | None = None) -> dict[str, Any]:
    """A result file of `kind` (None: of any kind), validated against the schema of its kind."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise ResultError(f"{path}: cannot be read: {err.strerror}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ResultError(
            f"{path}: not valid JSON at line {err.lineno}, column {err.colno} ({err.msg}); "
            f"the file is damaged or truncated ({len(text)} bytes): delete it and rerun the workflow"
        ) from None
    found = data.get("kind") if isinstance(data, dict) else None
    if found not in KINDS:
        raise ResultError(f"{path}: field 'kind': {found!r} is not one of {list(KINDS)}")
    check(data, kind or found, path)  # a file of another kind is refused by its field 'kind'
    return data


def read_result(path: str | Path, kind: str) -> dict[str, Any]:
    return read_any(path, kind)


def read_by_row(paths: list[Path], kind: str) -> dict[str, dict[str, Any]]:
    """Results of one kind, by the row (or run) each is of."""
    return {result["row"]: result for result in (read_result(path, kind) for path in paths)}
