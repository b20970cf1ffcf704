#!/usr/bin/env bash
# The one-GPU tier (target h200-1) on any machine with one H200, as one script that ends
# within 10 minutes. It needs no Snakemake and no .venv there, only Python 3.12 with a CUDA
# build of jax (an NGC JAX container has one); if that machine cannot install MaxText itself,
# run envs/device/fetch-wheels.sh here first and bring .site.tgz along.
#
#   On the H200, in a copy of this checkout:
#       OUT=/path/for/results bash envs/device/h200-1.sh
#   Every row trains for real on the GPU (the row that runs out of memory really does), the
#   offload rows are profiled and the host link is probed. Where the copy carries the source
#   hardware's prediction (results/predicted/gb200-nvl72.json, its calibration), each row that
#   ran is also compiled for h200-1 and predicted, so that predicted and measured come back
#   together and the page sets them side by side. $OUT receives the run, probe, compile and
#   prediction files with their logs and trace summaries (h200-1-results.tar.gz) and the whole log.
#
#   Back in the checkout where the report is built:
#       tar -xzf h200-1-results.tar.gz
#       .venv/bin/snakemake --cores all --resources gpu=1 --config target=h200-1 compile_target=h200-1 \
#           --rerun-triggers mtime
#   turns them into verdicts and the h200-1 page, beside the H200 compile of the same rows.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/workflow${PYTHONPATH:+:$PYTHONPATH}"  # packages installed elsewhere stay visible
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
log() { echo "[h200-1 $(date +%T)] $*" | tee -a "$OUT/h200-1.log"; }

if [[ -f .site.tgz ]]; then  # from envs/device/fetch-wheels.sh
    mkdir -p /tmp/site && tar -xzf .site.tgz -C /tmp/site || { log "unpacking .site.tgz failed"; exit 1; }
    export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a "$OUT/h200-1.log"
# Every row needs this stack: if it cannot import, say so once and stop, instead of failing each row.
python3 -c "import jax, maxtext; import maxtext.trainers.pre_train.train; import offload_repro.produce.measured.launch
print('jax', jax.__version__, jax.devices())" 2>&1 | tee -a "$OUT/h200-1.log"
(( PIPESTATUS[0] == 0 )) || { log "the stack does not import: no row can run"; exit 1; }

tables=(experiments/rows/llama3.1-405b.yaml experiments/rows/deepseek-v3-671b.yaml)
# The capacity rows first: they are what this tier is for.
rows=(deepseek-device-mb2 deepseek-device-mb8 deepseek-offload-optimized deepseek-offload-plain deepseek-remat
      llama-qkv-offload-lhs llama-qkv-offload-nolhs llama-qkv-offload-lhs-pipelined llama-baseline)
log "probe"
timeout 60 python3 -m offload_repro.cli probe --tables "${tables[@]}" --target h200-1 \
    --out results/h200-1/probe.json >> "$OUT/h200-1.log" 2>&1 || log "probe failed"
deadline=$((SECONDS + 480))
for row in "${rows[@]}"; do
    left=$((deadline - SECONDS))
    (( left > 30 )) || { log "out of time before $row"; break; }
    log "run $row (at most ${left}s)"
    timeout "$left" python3 -m offload_repro.cli run --tables "${tables[@]}" --row "$row" --target h200-1 \
        --out "results/h200-1/runs/$row.json" --work-dir "results/h200-1/work/$row" 2>&1 | tee -a "$OUT/h200-1.log"
done
# Predicted evidence for the rows that ran, from their programs compiled for this target.
if [[ -f results/predicted/gb200-nvl72.json ]]; then
    compiled=()
    for run in results/h200-1/runs/*.json; do
        row=$(basename "$run" .json)
        left=$((deadline + 60 - SECONDS))
        (( left > 20 )) || { log "out of time before compiling $row"; break; }
        log "compile $row (at most ${left}s)"
        timeout "$left" python3 -m offload_repro.cli compile --tables "${tables[@]}" --row "$row" --target h200-1 \
            --out "results/compiled/h200-1/$row.json" --work-dir "results/compiled/h200-1/work/$row" \
            --programs results/programs/h200-1 >> "$OUT/h200-1.log" 2>&1 \
            && compiled+=("results/compiled/h200-1/$row.json") || log "compile $row failed"
    done
    if (( ${#compiled[@]} )); then
        log "predict ${#compiled[@]} rows"
        timeout 60 python3 -m offload_repro.cli predict --tables "${tables[@]}" --target h200-1 \
            --out results/predicted/h200-1.json --calibrated-by results/predicted/gb200-nvl72.json \
            "${compiled[@]}" >> "$OUT/h200-1.log" 2>&1 || log "predict failed"
    fi
else
    log "no results/predicted/gb200-nvl72.json in this copy: the prediction is built at home instead"
fi
# Traces stay behind (large); their summaries are in the run JSONs.
extra=(); for path in results/compiled/h200-1 results/predicted/h200-1.json; do [[ -e $path ]] && extra+=("$path"); done
tar -czf "$OUT/h200-1-results.tar.gz" --exclude='*/trace/*' --exclude='*/output/*' --exclude='*/work/*' \
    results/h200-1 "${extra[@]}"
log "done: $(ls results/h200-1/runs | wc -l) rows"
