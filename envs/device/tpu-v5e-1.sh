#!/usr/bin/env bash
# The one-chip tier (target tpu-v5e-1) on a machine with one TPU v5e, as one script of at most
# 10 minutes a call. It needs no Snakemake and no .venv there: either Python 3.12 with
# envs/requirements-tpu.lock installed, or the stack envs/device/tpu-stack/pack.sh carries
# (unpacked by envs/device/tpu-stack/unpack.sh; set TPU_STACK to where).
#
#   On the chip, in a copy of this checkout:
#       TPU_STACK=/tmp/tpu-stack OUT=/path/for/results bash envs/device/tpu-v5e-1.sh [ROW...]
#   1. probes the host link (device <-> pinned_host copies at the offloaded tensors' sizes);
#   2. with DERIVE=1, derives DeepSeek's depth again from compiled memory on the chip
#      (scale.derivation in the target file; the kept derivation chose the depth the file states)
#      and, where the chosen depth is not the file's, writes it there and says so;
#   3. trains each row (all, or those named) with MaxText's own trainer, 3 times (the target's
#      repeats, in one process: the program compiles once), each 10 timed steps after the compile
#      and warm-up, profiling the first repeat of each offload row; a row that runs out of memory is
#      recorded with the runtime's words. A row that is one program with a row already run here
#      (XLA:TPU reads none of XLA:GPU's flags) is filed from that row's record, not trained again.
#   Each step is skipped when its result is already in results/, so a second call continues
#   where the first stopped (DEADLINE_S, default 540, bounds one call). PROBE=0 skips the probe;
#   REPEATS=N runs each named row N times instead of the target's repeats (the record says how
#   many ran). $OUT receives tpu-v5e-1-results.tar.gz (the run, probe and derivation files, each
#   run's log), the offload rows' traces where small enough, and the log.
#
#   Back in the checkout where the report is built:
#       python -m offload_repro.produce.measured.device_results tpu-v5e-1 tpu-v5e-1-results.tar.gz ...
#   validates them and files them under experiments/device-results/tpu-v5e-1/ (with the waits read
#   from the trace-events.json beside each archive), from which the main job builds the page.
set -uo pipefail
cd "$(dirname "$0")/../.."
if [[ -n ${TPU_STACK:-} ]]; then
    # shellcheck source=tpu-stack/env.sh
    source envs/device/tpu-stack/env.sh "$TPU_STACK"
fi
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD/workflow${PYTHONPATH:+:$PYTHONPATH}"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
started=$SECONDS; deadline=$((SECONDS + ${DEADLINE_S:-540}))
log() { echo "[tpu-v5e-1 $(date +%T)] $*" | tee -a "$OUT/tpu-v5e-1.log"; }
target=tpu-v5e-1
results=results/$target
tables=(experiments/rows/llama3.1-405b.yaml experiments/rows/deepseek-v3-671b.yaml)

# Every step needs this stack and the chip: if either is missing, say so once and stop.
python3 -c "import jax, jaxlib, maxtext, sys; import maxtext.trainers.pre_train.train, offload_repro.produce.measured.launch
d = jax.devices()[0]; stats = d.memory_stats() or {}
print('python', sys.version.split()[0], 'jax', jax.__version__, 'jaxlib', jaxlib.__version__, '|', d.platform, d.device_kind,
      '| bytes_limit', stats.get('bytes_limit'), '| memories', [m.kind for m in d.addressable_memories()])
assert d.platform == 'tpu', 'no TPU: JAX sees ' + d.platform" 2>&1 | grep -v '^\[transformers\]' | tee -a "$OUT/$target.log"
(( PIPESTATUS[0] == 0 )) || { log "the stack does not import, or sees no TPU: nothing can run"; exit 1; }

if [[ ${PROBE:-1} == 1 && ! -f $results/probe.json ]]; then
    log "probe"
    timeout 120 python3 -m offload_repro.cli probe --tables "${tables[@]}" --target $target --repeats 3 \
        --out $results/probe.json >> "$OUT/$target.log" 2>&1 || log "probe failed"
fi

derivation=results/derivations/$target.json
if [[ ${DERIVE:-0} == 1 && ! -f $derivation ]]; then  # the command the target file states, with this machine's python3
    read -r -a derive <<< "$(python3 -c "import yaml
print(yaml.safe_load(open('experiments/targets/$target.yaml'))['scale']['derivation']['command'].removeprefix('python '))")"
    log "derive: python3 ${derive[*]}"
    timeout 300 python3 "${derive[@]}" > "$OUT/derive.log" 2>&1 || log "derivation failed (see derive.log)"
fi
if [[ -f $derivation ]]; then  # the derived value, written into this copy's target file where it differs
    python3 -m offload_repro.produce.compiled.derive_scale --apply "$derivation" 2>&1 | tee -a "$OUT/$target.log"
fi

# The capacity rows first: they are what the chip is most needed for.
rows=(deepseek-device-mb2 deepseek-device-mb8 deepseek-offload-optimized deepseek-offload-plain deepseek-remat
      llama-baseline llama-qkv-offload-lhs llama-qkv-offload-nolhs llama-qkv-offload-lhs-pipelined)
(( $# )) && rows=("$@")
for row in "${rows[@]}"; do
    [[ -f $results/runs/$row.json ]] && { log "$row: already run"; continue; }
    left=$((deadline - SECONDS))
    (( left > 60 )) || { log "out of time before $row (call again to continue)"; break; }
    log "run $row (at most ${left}s)"
    timeout "$left" python3 -m offload_repro.cli run --tables "${tables[@]}" --row "$row" --target $target \
        ${REPEATS:+--repeats "$REPEATS"} --once-per-program --out "$results/runs/$row.json" --work-dir "$results/work/$row" 2>&1 | grep -v '^\[transformers\]' \
        | tail -3 | tee -a "$OUT/$target.log"
done

# What comes back: the records, each run's log (the lines its numbers come from) and the trace summaries.
logs=(); for log_file in "$results"/work/*/train.log "$results"/work/*/repeat-*/train.log; do
    [[ -f $log_file ]] && logs+=("$log_file"); done
tar -czf "$OUT/$target-results.tar.gz" $results/probe.json $results/runs $derivation "${logs[@]}" 2>/dev/null
# The offload rows' profiles: the events by name (to read how this device names its copies) and,
# where small enough to carry back, the traces themselves.
mapfile -t traces < <(find $results/work -name 'perfetto_trace.json.gz' 2>/dev/null | sort)
if (( ${#traces[@]} )); then
    python3 -m offload_repro.produce.measured.trace "${traces[@]}" > "$OUT/trace-events.json" 2>> "$OUT/$target.log"
    tar -czf "$OUT/traces.tar.gz" "${traces[@]}"
fi
log "done in $((SECONDS - started)) s: $(ls $results/runs 2>/dev/null | wc -l) of 9 rows have a record"
