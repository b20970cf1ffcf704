#!/usr/bin/env bash
# Wheels for envs/device/h200-1.sh on a GPU machine that cannot reach PyPI. A JAX GPU image
# brings its own jax/jaxlib with CUDA, flax, optax, orbax, transformers, numpy and pyyaml;
# MaxText and the small set it needs beyond those go into .whl/ (git ignores it), which
# h200-1.sh installs when it finds it. Copy .whl/ along with the checkout (about 60 MiB).
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
rm -rf .whl && mkdir -p .whl
platforms=()
for n in 17 24 27 28 31 34; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
.venv/bin/python -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${platforms[@]}" --platform manylinux2014_x86_64 -d .whl \
    maxtext==0.2.5 grain==0.2.18 qwix==0.1.8 tokamax==0.0.17 aqtp==0.9.0 drjax==0.2.1 \
    pathwaysutils==0.1.13 omegaconf==2.4.0 antlr4-python3-runtime==4.9.3 ml-collections==1.1.0 \
    pydantic==2.14.4 pydantic-core absl-py==2.5.1
du -sh .whl
