#!/usr/bin/env bash
# The test command: builds the environment if needed, installs the system programs the
# browser and SLURM tests use (Debian packages, when run as root), then runs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
envs/bootstrap.sh

missing=()
command -v chromium >/dev/null || missing+=(chromium)
command -v slurmctld >/dev/null || missing+=(slurmctld slurmd slurm-client munge)
if (( ${#missing[@]} )); then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
        echo "test: installing ${missing[*]}" >&2
        apt-get update -qq >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
        echo "test: not installed, their tests will be skipped: ${missing[*]}" >&2
    fi
fi
exec .venv/bin/python -m pytest "$@"
