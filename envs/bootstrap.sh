#!/usr/bin/env bash
# Build the pinned environment in .venv (Python 3.12, exact versions with hashes).
# Idempotent: a .venv already built from the same lock files is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."

LOCKS=(envs/requirements.lock envs/requirements-gpu-compile.lock)
STAMP=.venv/.offload-repro-lock
# The install options are part of the stamp: a .venv built without bytecode is built again.
INSTALL_OPTIONS="--require-hashes --no-deps --compile-bytecode"
wanted=$( (cat "${LOCKS[@]}"; echo "$INSTALL_OPTIONS") | sha256sum | cut -d' ' -f1)
if [[ -x .venv/bin/python && -f $STAMP && $(cat "$STAMP") == "$wanted" ]]; then
    exit 0
fi

find_python() {
    # MaxText 0.2.5 needs Python >= 3.12; pyenv installs are found even when not selected.
    local candidate
    for candidate in python3.12 "$(command -v pyenv >/dev/null && pyenv root)"/versions/3.12*/bin/python3.12 \
                     /usr/bin/python3.12 /usr/local/bin/python3.12; do
        if [[ -n $candidate ]] && "$candidate" -c 'import sys; assert sys.version_info[:2] == (3, 12)' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}
python=$(find_python) || { echo "bootstrap: Python 3.12 not found (install python3.12, then rerun)" >&2; exit 1; }

echo "bootstrap: building .venv with $python" >&2
rm -rf .venv
"$python" -m venv .venv
.venv/bin/python -m pip install --quiet uv==0.13.9
# Every package is pinned with its hashes in the locks, so dependencies are not re-resolved:
# --no-deps keeps the CUDA compiler plugins from pulling CUDA runtime wheels. Bytecode is compiled
# once here: a process that may not write it (PYTHONDONTWRITEBYTECODE) would otherwise compile
# Snakemake's and pandas' sources at every start (about 2 s of each snakemake call).
# shellcheck disable=SC2086
.venv/bin/uv pip install --quiet --python .venv/bin/python $INSTALL_OPTIONS \
    -r envs/requirements.lock -r envs/requirements-gpu-compile.lock
echo "$wanted" > "$STAMP"
echo "bootstrap: .venv ready" >&2
