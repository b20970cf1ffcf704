#!/usr/bin/env bash
# On the TPU machine: rejoin the pieces pack.sh made, check them against its manifest, and unpack
# the stack into PREFIX (py312/ and site/). Nothing is left half-unpacked: the tree is unpacked
# beside PREFIX and moved into place only when whole.
#
#   envs/device/tpu-stack/unpack.sh PIECES_DIR [PREFIX]      (default PREFIX: /tmp/tpu-stack)
#   source envs/device/tpu-stack/env.sh [PREFIX]             (then python3 is the stack's)
set -euo pipefail
PIECES=$1
PREFIX=${2:-/tmp/tpu-stack}
manifest=$PIECES/manifest
[[ -f $manifest ]] || { echo "unpack.sh: $manifest: missing (copy it with the pieces)" >&2; exit 1; }
read -r -a pieces <<< "$(awk '$1=="pieces" {$1=""; print}' "$manifest")"
want=$(awk '$1=="sha256" {print $2}' "$manifest")
for piece in "${pieces[@]}"; do
    [[ -f $PIECES/$piece ]] || { echo "unpack.sh: $PIECES/$piece: missing (the manifest lists ${pieces[*]})" >&2; exit 1; }
done
got=$(cd "$PIECES" && cat "${pieces[@]}" | sha256sum | cut -d' ' -f1)
[[ $got == "$want" ]] || { echo "unpack.sh: the joined pieces' sha256 is $got, the manifest's $want" >&2; exit 1; }
# xz where the machine has it, else Python's lzma (any Python 3 reads the stream)
if command -v xz >/dev/null; then unxz=(xz -dc -T0); else
    unxz=(python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.stdin.buffer), sys.stdout.buffer, 1 << 22)'); fi
partial=$PREFIX.partial
rm -rf "$partial"; mkdir -p "$partial"
(cd "$PIECES" && cat "${pieces[@]}") | "${unxz[@]}" | tar -x -C "$partial"
ln -sf python3.12 "$partial/py312/bin/python3"  # what env.sh puts first on PATH
rm -rf "$PREFIX"; mv "$partial" "$PREFIX"
echo "unpack.sh: $(awk '$1=="stack" {$1=""; print}' "$manifest") in $PREFIX ($(du -sm "$PREFIX" | cut -f1) MB)"
