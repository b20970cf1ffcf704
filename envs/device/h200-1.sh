#!/usr/bin/env bash
# The whole h200-1 subset on one lent H200, in under 10 minutes, as one prepared command:
#   device run, carry [".whl"], timeout_s 600:  bash envs/device/h200-1.sh
# Every row trains for real on the GPU (the OOM row really runs out of memory), offload rows
# are profiled, the host link is probed. What comes back ($OUT): one archive of the run and
# probe JSONs with their logs and trace summaries, and the full log. Back here:
#   tar -xzf <files_at>/h200-1-results.tar.gz
#   .venv/bin/snakemake --cores all --resources gpu=1 --config target=h200-1 compile_target=h200-1 --rerun-triggers mtime
# turns them into verdicts and the report, beside the H200 compile of the same scaled rows.
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
