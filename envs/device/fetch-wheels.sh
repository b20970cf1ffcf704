#!/usr/bin/env bash
# Packages for envs/device/h200-1.sh on a GPU machine that cannot reach PyPI. A JAX GPU image
# brings its own jax/jaxlib with CUDA, numpy, pyyaml, pandas, transformers and the like; what
# MaxText's trainer and this project import beyond those is below. The list is what
# `python -c "import maxtext.trainers.pre_train.train, offload_repro.produce.measured.launch"`
# loads, less what such an image holds; flax, optax and orbax are carried anyway because MaxText
# 0.2.5 needs newer ones than some images have. Versions come from envs/requirements.lock.
#
# Writes .site.tgz (git ignores it; about 37 MiB): the packages installed and trimmed of what no
# row loads (xprof's web viewer and event database, other models' tokenizers, notebooks).
# h200-1.sh unpacks it when it finds it beside the checkout.
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qx '/.site.tgz' .git/info/exclude 2>/dev/null || echo '/.site.tgz' >> .git/info/exclude
names=(maxtext flax optax orbax-checkpoint grain qwix tokamax xprof aqtp drjax einshape pathwaysutils
    omegaconf ml-collections pydantic pydantic-core annotated-types typing-inspection
    jsonschema jsonschema-specifications referencing rpds-py array-record immutabledict fire
    termcolor portpicker tensorboardx truststore opentelemetry-api fastapi starlette uvicorn
    httpx2 httpcore2 cffi cryptography google-api-core google-auth google-cloud-core
    google-cloud-storage google-cloud-storage-control google-crc32c google-resumable-media
    googleapis-common-protos grpc-google-iam-v1 grpcio-status)
pins=()
for name in "${names[@]}"; do
    pin=$(grep -i -o -E "^${name}==[^ ]+" envs/requirements.lock) || { echo "$name is not in envs/requirements.lock" >&2; exit 1; }
    pins+=("$pin")
done
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
platforms=()
for n in 17 24 27 28 31 34 35; do platforms+=(--platform "manylinux_2_${n}_x86_64"); done
.venv/bin/python -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp "${platforms[@]}" --platform manylinux2014_x86_64 -d "$work/wheels" "${pins[@]}"
.venv/bin/python -m pip install --quiet --no-index --no-deps --no-compile --target "$work/site" "$work"/wheels/*.whl
(cd "$work/site" && rm -rf bin xprof/static xprof/convert/events_db/python/*.so \
    maxtext/assets/tokenizers/qwen3-tokenizer maxtext/assets/tokenizers/*gemma* \
    maxtext/examples maxtext/inference/scripts/notebooks)
tar -czf .site.tgz.part -C "$work/site" . && mv .site.tgz.part .site.tgz
du -sh .site.tgz
