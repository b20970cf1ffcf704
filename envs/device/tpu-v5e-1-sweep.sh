#!/usr/bin/env bash
# The placement-pair sweep (experiments/sweeps/tpu-v5e-1.yaml) on one TPU v5e chip, in calls of at most
# 10 minutes. Each model family's points train in one process (produce/measured/sweep_runner.py: one
# import, one runtime start; each point compiles once, its later repeats read JAX's cache).
#
#   On the chip, in a copy of this checkout, with the stack of envs/device/tpu-stack/ unpacked:
#       TPU_STACK=/tmp/tpu-stack OUT=/path/for/results bash envs/device/tpu-v5e-1-sweep.sh [FAMILY...]
#   FAMILY: llama, deepseek (default: both, in that order). DEADLINE_S (default 540) bounds a call: a
#   point whose next repeat would not end in time is left for the next call, which goes on where this
#   one stopped (a point recorded whole is skipped; a partial one keeps the repeats it finished).
#   REPEATS=N runs each point N times instead of the sweep file's repeats. $OUT receives
#   tpu-v5e-1-sweep.tar.gz (points, programs and each repeat's train.log) and the log.
#
#   Back in the checkout where the report is built:
#       python -m offload_repro.produce.measured.sweep_results tpu-v5e-1 tpu-v5e-1-sweep.tar.gz ...
set -uo pipefail
cd "$(dirname "$0")/../.."
if [[ -n ${TPU_STACK:-} ]]; then
    # shellcheck source=tpu-stack/env.sh
    source envs/device/tpu-stack/env.sh "$TPU_STACK"
fi
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/workflow${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
started=$SECONDS; deadline=$((SECONDS + ${DEADLINE_S:-540}))
log() { echo "[tpu-v5e-1-sweep $(date +%T)] $*" | tee -a "$OUT/tpu-v5e-1-sweep.log"; }
sweep=results/tpu-v5e-1/sweep
families=(llama deepseek)
(( $# )) && families=("$@")

python3 -c "import jax; d = jax.devices()[0]; assert d.platform == 'tpu', 'no TPU: JAX sees ' + d.platform
print('jax', jax.__version__, '|', d.device_kind)" 2>&1 | tee -a "$OUT/tpu-v5e-1-sweep.log"
(( PIPESTATUS[0] == 0 )) || { log "the stack does not import, or sees no TPU: nothing can run"; exit 1; }

for family in "${families[@]}"; do
    left=$((deadline - SECONDS))
    (( left > 90 )) || { log "stopped after $((SECONDS - started)) s: call again to continue"; break; }
    log "$family (at most ${left}s)"
    # the runner stops itself before a repeat it has no time for; timeout is the backstop, 20 s later
    timeout "$left" python3 -m offload_repro.produce.measured.sweep_runner tpu-v5e-1 "$family" "$sweep" \
        --deadline-s $((left - 20)) ${REPEATS:+--repeats "$REPEATS"} 2>&1 | grep -v '^\[transformers\]' \
        | tee -a "$OUT/tpu-v5e-1-sweep.log"
    (( PIPESTATUS[0] == 124 )) && log "stopped after $((SECONDS - started)) s: call again to continue"
done

logs=(); for log_file in "$sweep"/work/*/repeat-*/train.log; do [[ -f $log_file ]] && logs+=("$log_file"); done
tar -czf "$OUT/tpu-v5e-1-sweep.tar.gz" "$sweep/points" "$sweep/programs" "${logs[@]}" 2>/dev/null
whole=$(grep -L '"status": "partial"' "$sweep"/points/*.json 2>/dev/null | wc -l)
log "done in $((SECONDS - started)) s: $whole of $(grep -c -- '- {id:' experiments/sweeps/tpu-v5e-1.yaml) points recorded whole"
