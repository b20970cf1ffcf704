#!/usr/bin/env bash
# Pack the pinned stack for a TPU machine that has no package index and no Python 3.12: Python
# 3.12 itself, what a TPU row imports from .venv (jax, jaxlib, MaxText 0.2.5 and their needs,
# this package's own needs) and libtpu 0.0.50.1 (what jax[tpu]==0.12.0.1 asks for, checked
# against envs/requirements-tpu.lock). One xz stream, split into pieces small enough to carry
# one at a time; unpack.sh rejoins and checks them there.
#
#   envs/bootstrap.sh && envs/device/tpu-stack/pack.sh [OUT_DIR]     (default .tpu-stack)
#
# Writes OUT_DIR/p00, p01, ... and OUT_DIR/manifest (the checksum of the joined stream and the
# pieces' names). About 300 MB in 5 pieces at the default xz level; 4 minutes on 2 cores.
# XZ_LEVEL=0 packs fast and large (the tests use it); PIECE_MIB sets the piece size.
set -euo pipefail
cd "$(dirname "$0")/../../.."
OUT=${1:-.tpu-stack}
XZ_LEVEL=${XZ_LEVEL:-6}
PIECE_MIB=${PIECE_MIB:-59}
SITE=.venv/lib/python3.12/site-packages
PYTHON_HOME=$(.venv/bin/python -c 'import sys; print(sys.base_prefix)')
[[ -d $SITE/maxtext ]] || { echo "pack.sh: no .venv with MaxText: run envs/bootstrap.sh first" >&2; exit 1; }
[[ -f $PYTHON_HOME/lib/libpython3.12.so.1.0 ]] || {
    echo "pack.sh: $PYTHON_HOME has no shared libpython3.12 to carry" >&2; exit 1; }

work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
tree=$work/tree; mkdir -p "$tree/py312/bin" "$tree/py312/lib" "$tree/site"

# 1. Python 3.12: the interpreter, libpython and the standard library, less what no row runs.
cp -a "$PYTHON_HOME/bin/python3.12" "$tree/py312/bin/"
cp -a "$PYTHON_HOME/lib/libpython3.12.so.1.0" "$tree/py312/lib/"
cp -a "$PYTHON_HOME/lib/python3.12" "$tree/py312/lib/"
(cd "$tree/py312/lib/python3.12" && rm -rf test idlelib tkinter turtledemo ensurepip lib2to3 site-packages \
    config-3.12-x86_64-linux-gnu lib-dynload/_tkinter* && mkdir site-packages)

# 2. What a row imports, with each package's metadata (versions are read from it).
PYTHONPATH=workflow .venv/bin/python envs/device/tpu-stack/closure.py "$SITE" "$work/entries" >/dev/null
while read -r entry; do
    [[ $entry == libtpu ]] || cp -a "$SITE/$entry" "$tree/site/"
done < "$work/entries"
.venv/bin/python - "$SITE" "$tree/site" <<'PY'
import csv, shutil, sys
from pathlib import Path
site, out = Path(sys.argv[1]), Path(sys.argv[2])
# A distribution one of whose entries is carried is carried whole: its metadata (versions are read
# from it) and every entry it installed, the shared libraries its extensions link (numpy.libs) too.
carried = {p.name for p in out.iterdir()}
for info in site.glob("*.dist-info"):
    record = info / "RECORD"
    tops = {row[0].split("/")[0] for row in csv.reader(record.open()) if row} if record.exists() else set()
    if not tops & carried:
        continue
    shutil.copytree(info, out / info.name, ignore=shutil.ignore_patterns("RECORD"))
    for top in sorted(tops - carried - {".."}):
        if not top.endswith(".dist-info") and top != "libtpu" and (site / top).exists():
            (shutil.copytree if (site / top).is_dir() else shutil.copy2)(site / top, out / top)
PY
# Not imported by a row: xprof's web viewer, other models' tokenizers, notebooks.
(cd "$tree/site" && rm -rf bin xprof/static maxtext/examples maxtext/assets/tokenizers/qwen3-tokenizer \
    maxtext/assets/tokenizers/*gemma* maxtext/inference/scripts/notebooks)
find "$tree" -name __pycache__ -type d -prune -exec rm -rf {} +
strip -s "$tree/site/jaxlib/libjax_common.so"

# 3. libtpu, from its wheel, checked against the lock's hashes.
version=$(grep -o -E '^libtpu==[^ ]+' envs/requirements-tpu.lock)
awk -v pin="$version" '$1==pin {on=1; print pin " \\"; next} on && /--hash/ {print; next} {on=0}' \
    envs/requirements-tpu.lock | sed '$ s/ \\$//' > "$work/libtpu.txt"
.venv/bin/python -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_31_x86_64 --require-hashes -r "$work/libtpu.txt" -d "$work/wheel"
.venv/bin/python - "$work"/wheel/libtpu-*.whl "$tree/site" <<'PY'
import sys, zipfile
wheel, site = sys.argv[1:]
with zipfile.ZipFile(wheel) as archive:  # the package and its metadata, less the SDK no row loads
    archive.extractall(site, [n for n in archive.namelist() if n.startswith("libtpu") and n != "libtpu/sdk.so"])
PY
rm -f "$tree"/site/libtpu-*.dist-info/RECORD
strip -s "$tree/site/libtpu/libtpu.so"

# 4. One xz stream, split.
mkdir -p "$OUT"; rm -f "$OUT"/p?? "$OUT/manifest"
tar -cf - -C "$tree" py312 site | xz "-$XZ_LEVEL" -T2 > "$work/stack.tar.xz"
split -b "${PIECE_MIB}M" -d -a 2 "$work/stack.tar.xz" "$OUT/p"
{
    echo "sha256 $(sha256sum "$work/stack.tar.xz" | cut -d' ' -f1)"
    echo "bytes $(stat -c %s "$work/stack.tar.xz")"
    echo "pieces $(cd "$OUT" && ls p?? | tr '\n' ' ')"
    echo "stack python $(.venv/bin/python -c 'import sys; print(sys.version.split()[0])') $version" \
        "$(grep -o -E '^(jax|jaxlib|maxtext)==[^ ]+' envs/requirements.lock | tr '\n' ' ')"
} > "$OUT/manifest"
cat "$OUT/manifest"
