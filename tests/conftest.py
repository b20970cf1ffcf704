"""Shared fixtures: the repository's own data, and small files written per test."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TABLES = sorted(str(p) for p in (REPO / "experiments" / "rows").glob("*.yaml"))


def require(program: str) -> None:
    """Skip when a system program is missing, unless CI demands every test run."""
    if shutil.which(program) is None:
        message = f"{program} is not installed (envs/test.sh installs it as root)"
        if os.environ.get("OFFLOAD_REPRO_REQUIRE_ALL"):
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def tables() -> list[str]:
    return TABLES
