#!/usr/bin/env bash
# Start a throw-away single-node SLURM cluster (munged + slurmctld + slurmd),
# everything (conf, key, socket, state, spool, logs, pids) under $SLURM_TEST_DIR.
# Idempotent: if the daemons are already up (pid files alive) they are reused.
# Usage: eval "$(start.sh)"
# Env: SLURM_TEST_DIR (required), SLURMCTLD_PORT, SLURMD_PORT, START_TIMEOUT, FAKE_GPUS
# Needs root (slurmd must run as root to launch jobs).
# Prints: export SLURM_CONF=... PATH=$SLURM_TEST_DIR/bin:$PATH
set -euo pipefail

D=${SLURM_TEST_DIR:?set SLURM_TEST_DIR to a scratch directory}
CTLD_PORT=${SLURMCTLD_PORT:-6817}
SLURMD_PORT=${SLURMD_PORT:-6818}
TIMEOUT=${START_TIMEOUT:-30}
HOST=$(hostname -s)
CPUS=$(nproc)
MEM_MB=$(awk '/MemTotal/ {print int($2/1024)}' /proc/meminfo)
REALMEM=$(( MEM_MB * 9 / 10 ))       # a bit under the machine's
SLURM_USER=$(id -un)                   # run everything as the invoking user
FAKE_GPUS=${FAKE_GPUS:-0}              # >0: advertise N fake "gpu" GRES (no devices) on the node

log() { echo "[slurm start] $*" >&2; }
alive() { [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }
wait_for() {  # wait_for <desc> <cmd...>
  local desc=$1; shift; local t0=$SECONDS
  until "$@" >/dev/null 2>&1; do
    if (( SECONDS - t0 >= TIMEOUT )); then log "timeout waiting for $desc"; return 1; fi
    sleep 0.5
  done
}

for b in munged mungekey slurmctld slurmd sinfo; do
  command -v "$b" >/dev/null || { log "missing $b: apt-get install -y slurmctld slurmd slurm-client munge"; exit 1; }
done

mkdir -p "$D"/{etc,munge,state,spool,log,run}
chmod 755 "$D/munge"   # clients (non-root too) need x on the socket dir; key itself is 0600
CONF=$D/etc/slurm.conf

# ---------------------------------------------------------------- slurm.conf
# (re)generated unless a slurmctld of this dir is running (then keep what it uses)
if [[ ! -f $CONF ]] || ! alive "$D/run/slurmctld.pid"; then
cat > "$CONF" <<EOF
ClusterName=offloadrepro
$( ((FAKE_GPUS>0)) && echo "GresTypes=gpu")
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=$SLURM_USER
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.socket
# no cgroups: plain process tracking, no task affinity/containment
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
MpiDefault=none
MailProg=/bin/true
# jobs submitted without --mem must not grab the whole node
DefMemPerCPU=256
ReturnToService=2
# keep finished jobs visible in squeue long enough for snakemake's squeue status check
MinJobAge=300
SchedulerParameters=sched_interval=1
MessageTimeout=10
SlurmctldTimeout=30
SlurmdTimeout=60
InactiveLimit=0
KillWait=5
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$REALMEM State=UNKNOWN$( ((FAKE_GPUS>0)) && echo " Gres=gpu:$FAKE_GPUS")
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
fi
if (( FAKE_GPUS > 0 )) && { [[ ! -f $D/etc/gres.conf ]] || ! alive "$D/run/slurmctld.pid"; }; then
  # slurmd drops file-less GPUs ("Removing file-less GPU"), so point File= at plain
  # placeholder files; no cgroup device constraint is configured, so nothing is bound.
  mkdir -p "$D/dev"; : > "$D/etc/gres.conf"
  for ((i=0; i<FAKE_GPUS; i++)); do
    touch "$D/dev/fakegpu$i"
    echo "NodeName=$HOST Name=gpu File=$D/dev/fakegpu$i" >> "$D/etc/gres.conf"
  done
fi
export SLURM_CONF=$CONF

# ---------------------------------------------------------------- client shims
# $D/bin/{srun,sbatch,...} pin SLURM_CONF. Needed because the slurm-jobstep plugin
# (used inside every snakemake job) strips all SLURM_* vars except a few job ids
# before calling the nested `srun`, so SLURM_CONF is lost and srun dies with
# "fetch_config: DNS SRV lookup failed". Put $D/bin first in PATH (the job inherits
# PATH via sbatch --export=ALL). sbatch invocations are also logged to $D/log/sbatch.calls.
mkdir -p "$D/bin"
for c in srun sbatch squeue scancel sinfo scontrol sacct salloc; do
  real=$(command -v -p "$c" || echo "/usr/bin/$c")
  {
    echo '#!/bin/sh'
    echo "export SLURM_CONF='$CONF'"
    [ "$c" = sbatch ] && echo "printf '%s\\n' \"\$*\" >> '$D/log/sbatch.calls'"
    echo "exec $real \"\$@\""
  } > "$D/bin/$c"
  chmod +x "$D/bin/$c"
done

# ---------------------------------------------------------------- munge
if ! alive "$D/munge/munged.pid"; then
  [[ -f $D/munge/munge.key ]] || mungekey --create --keyfile="$D/munge/munge.key" --bits=1024
  chmod 600 "$D/munge/munge.key"
  rm -f "$D/munge/munge.socket" "$D/munge/munge.socket.lock"
  log "starting munged"
  # --force: tolerate e.g. a stale socket / lax perms on a parent dir such as /tmp
  munged --force --key-file="$D/munge/munge.key" --socket="$D/munge/munge.socket" \
         --pid-file="$D/munge/munged.pid" --log-file="$D/log/munged.log" \
         --seed-file="$D/munge/munged.seed" --num-threads=2
fi
wait_for "munge socket" bash -c "munge -n -S '$D/munge/munge.socket' | unmunge -S '$D/munge/munge.socket'"

# ---------------------------------------------------------------- slurmctld
if ! alive "$D/run/slurmctld.pid"; then
  log "starting slurmctld"
  # -c: clear previous state (fresh cluster every start); -i: ignore state errors
  slurmctld -f "$CONF" -c -i
fi
wait_for "slurmctld" bash -c "scontrol ping | grep -q UP"

# ---------------------------------------------------------------- slurmd
if ! alive "$D/run/slurmd.pid"; then
  log "starting slurmd"
  slurmd -f "$CONF" -N "$HOST"
fi
wait_for "node $HOST idle" bash -c "sinfo -h -n '$HOST' -o %t | grep -Eq '^(idle|mix|alloc)'"

log "cluster up: $(sinfo -h -o '%P %t %D %c %m')"
echo "export SLURM_CONF=$CONF PATH=$D/bin:\$PATH"
