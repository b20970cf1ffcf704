#!/usr/bin/env bash
# Re-resolve envs/requirements.lock from envs/requirements.in (exact pins, with hashes).
set -euo pipefail
cd "$(dirname "$0")"
../.venv/bin/uv pip compile requirements.in --python-version 3.12 --generate-hashes \
    --output-file requirements.lock --quiet
../.venv/bin/uv pip compile requirements-gpu-compile.txt --python-version 3.12 --generate-hashes \
    --no-deps --output-file requirements-gpu-compile.lock --quiet
# A TPU VM's lock: the same versions as requirements.lock (its pins are constraints), plus libtpu.
../.venv/bin/uv pip compile requirements-tpu.in -c requirements.lock --python-version 3.12 --generate-hashes \
    --output-file requirements-tpu.lock --quiet
