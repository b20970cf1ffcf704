"""Reading data files and writing results atomically, readable as the umask allows."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[3]
# What a device tier measured, kept as data: <target>/runs/*.json and probe.json
DEVICE_RESULTS_DIR = "experiments/device-results"
_UMASK_LOCK = threading.Lock()


def read_yaml(path: str | Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def current_umask() -> int:
    # The only portable way to read the umask is to set it; the lock keeps threads from racing.
    with _UMASK_LOCK:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


def write_atomically(path: str | Path, text: str | bytes) -> None:
    """Write to a temporary file beside `path`, then rename: readers never see half a file.

    mkstemp creates the file 0600 and the rename keeps that mode, so the mode a plain
    open() would have given (0666 less the umask) is set before the rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        binary = isinstance(text, bytes)
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), 0o666 & ~current_umask())
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def checkout_relative(path: Path) -> str:
    """A path as a result records it: relative to the checkout where it lies inside it."""
    return str(path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path)


def write_json(path: str | Path, data: Any) -> None:
    write_atomically(path, json.dumps(data, indent=2, sort_keys=False) + "\n")


def read_json(path: str | Path) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def write_gzip_text(path: str | Path, text: str) -> None:
    """`text` gzipped to `path`, atomically (a compiled program's HLO: tens of MB as text)."""
    write_atomically(path, gzip.compress(text.encode("utf-8"), compresslevel=6))
