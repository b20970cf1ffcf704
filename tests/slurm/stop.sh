#!/usr/bin/env bash
# Stop the cluster started by start.sh (slurmd, slurmctld, munged), by pid file only.
# Idempotent; escalates to SIGKILL after $STOP_TIMEOUT seconds.
# STOP_CLEAN=1 also deletes $SLURM_TEST_DIR.
set -uo pipefail
D=${SLURM_TEST_DIR:?set SLURM_TEST_DIR to a scratch directory}
TIMEOUT=${STOP_TIMEOUT:-15}
log() { echo "[slurm stop] $*" >&2; }

stop_pid() {  # stop_pid <name> <pidfile>
  local name=$1 pf=$2 pid t0
  [[ -s $pf ]] || { log "$name: no pid file"; return 0; }
  pid=$(cat "$pf")
  if ! kill -0 "$pid" 2>/dev/null; then log "$name: not running"; rm -f "$pf"; return 0; fi
  # guard against pid reuse: the process must be the expected binary
  if [[ "$(cat /proc/$pid/comm 2>/dev/null)" != "$name" ]]; then
    log "$name: pid $pid is $(cat /proc/$pid/comm 2>/dev/null), not touching it"; rm -f "$pf"; return 0
  fi
  kill -TERM "$pid" 2>/dev/null; t0=$SECONDS
  while kill -0 "$pid" 2>/dev/null; do
    if (( SECONDS - t0 >= TIMEOUT )); then log "$name: SIGKILL $pid"; kill -KILL "$pid" 2>/dev/null; break; fi
    sleep 0.2
  done
  rm -f "$pf"; log "$name: stopped ($pid)"
}

# cancel leftover jobs first, so slurmstepd children don't linger
if [[ -f $D/etc/slurm.conf ]] && [[ -s $D/run/slurmctld.pid ]] && kill -0 "$(cat "$D/run/slurmctld.pid")" 2>/dev/null; then
  SLURM_CONF=$D/etc/slurm.conf timeout 10 scancel --full --user="$(id -un)" 2>/dev/null || true
fi
stop_pid slurmd    "$D/run/slurmd.pid"
stop_pid slurmctld "$D/run/slurmctld.pid"
stop_pid munged    "$D/munge/munged.pid"
# any slurmstepd left over from jobs of this cluster (matched by SLURM_CONF in its environment)
for p in $(pgrep -x slurmstepd 2>/dev/null); do
  if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "SLURM_CONF=$D/etc/slurm.conf"; then kill -KILL "$p" 2>/dev/null && log "killed slurmstepd $p"; fi
done
[[ ${STOP_CLEAN:-0} == 1 ]] && rm -rf "$D" && log "removed $D"
exit 0
