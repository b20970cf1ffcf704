#!/usr/bin/env bash
# The one-GPU tier (target h200-1) on any machine with one H200, as one script that ends
# within 10 minutes. It needs no Snakemake and no .venv there, only Python 3.12 with a CUDA
# build of jax (an NGC JAX container has one); if that machine cannot install MaxText itself,
# run envs/device/fetch-wheels.sh beside it first and bring the .whl/ folder along.
#
#   On the H200, in a copy of this checkout:
#       OUT=/path/for/results bash envs/device/h200-1.sh
#   Every row trains for real on the GPU (the row that runs out of memory really does), the
#   offload rows are profiled and the host link is probed. $OUT receives the run and probe
#   files with their logs and trace summaries (h200-1-results.tar.gz) and the whole log.
#
#   Back in the checkout where the report is built:
#       tar -xzf h200-1-results.tar.gz
#       .venv/bin/snakemake --cores all --resources gpu=1 --config target=h200-1 compile_target=h200-1 \
#           --rerun-triggers mtime
#   turns them into verdicts and the h200-1 page, beside the H200 compile of the same rows.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/workflow"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
log() { echo "[h200-1 $(date +%T)] $*" | tee -a "$OUT/h200-1.log"; }

if [[ -d .whl ]]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        || { log "wheel install failed"; exit 1; }
    export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$OUT/h200-1.log"
python3 -c "import jax, maxtext; print('jax', jax.__version__, jax.devices())" 2>&1 | tee -a "$OUT/h200-1.log"

tables=(experiments/rows/llama3.1-405b.yaml experiments/rows/deepseek-v3-671b.yaml)
# The capacity rows first: they are what this tier is for.
rows=(deepseek-device-mb2 deepseek-device-mb8 deepseek-offload-optimized deepseek-offload-plain deepseek-remat
      llama-qkv-offload-lhs llama-qkv-offload-nolhs llama-qkv-offload-lhs-pipelined llama-baseline)
log "probe"
timeout 60 python3 -m offload_repro.cli probe --tables "${tables[@]}" --target h200-1 \
    --out results/h200-1/probe.json >> "$OUT/h200-1.log" 2>&1 || log "probe failed"
deadline=$((SECONDS + 540))
for row in "${rows[@]}"; do
    left=$((deadline - SECONDS))
    (( left > 30 )) || { log "out of time before $row"; break; }
    log "run $row (at most ${left}s)"
    timeout "$left" python3 -m offload_repro.cli run --tables "${tables[@]}" --row "$row" --target h200-1 \
        --out "results/h200-1/runs/$row.json" --work-dir "results/h200-1/work/$row" 2>&1 | tee -a "$OUT/h200-1.log"
done
# Traces stay behind (large); their summaries are in the run JSONs.
tar -czf "$OUT/h200-1-results.tar.gz" --exclude='*/trace/*' --exclude='*/output/*' results/h200-1
log "done: $(ls results/h200-1/runs | wc -l) rows"
