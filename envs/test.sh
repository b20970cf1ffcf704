#!/usr/bin/env bash
# The tests, in two tiers. Extra arguments go to pytest.
#
#   envs/test.sh --quick   after each edit: unit tests, dry runs on workflow copies, report
#                          rendering. Needs .venv (envs/bootstrap.sh); installs nothing, starts
#                          no SLURM and no main job, writes nothing into the checkout (no
#                          bytecode, no pytest cache).
#   envs/test.sh           everything: builds .venv if needed, installs the browser and SLURM
#                          the slow tests use (Debian packages, when run as root), runs the quick
#                          tier, checks that it left the checkout as it was, then the slow, SLURM
#                          and browser tests.
#
# What each tier covers: docs/testing.md.
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK="not slow and not slurm and not browser"

# The quick tier runs a test file per core (pytest-xdist): a file's tests share one worker, so a
# module's fixture is made once.
quick_tier() {
    PYTHONDONTWRITEBYTECODE=1 .venv/bin/python -m pytest -p no:cacheprovider -m "$QUICK" \
        --numprocesses auto --dist loadfile "$@"
}

if [[ ${1:-} == --quick ]]; then
    shift
    [[ -x .venv/bin/python ]] || { echo "test: no .venv here; build it once with envs/bootstrap.sh" >&2; exit 1; }
    quick_tier "$@"
    exit
fi

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

# The quick tier's promise, checked where it runs: nothing in the checkout is newer afterwards.
before=$(mktemp)
trap 'rm -f "$before"' EXIT
quick_tier "$@"
touched=$(find . -path ./.venv -prune -o -path ./.git -prune -o -newer "$before" -print)
if [[ -n $touched ]]; then
    echo "test: the quick tier wrote into the checkout:" >&2
    echo "$touched" >&2
    [[ -z ${OFFLOAD_REPRO_REQUIRE_ALL:-} ]] || exit 1
fi
# (pytest exits 5 when arguments select no slow test: that is not a failure.)
.venv/bin/python -m pytest -m "not ($QUICK)" --durations=15 "$@" || { rc=$?; (( rc == 5 )) || exit $rc; }
