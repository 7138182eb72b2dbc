#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine, for `motionkit batch --executor slurm` rehearsals and the
# tests that need one (tests/test_slurm_cluster.py). Needs root and Debian's packages:
#   apt-get install slurm-wlm munge
# Usage: benchmarks/slurm_local.sh start|stop|status
# `start` writes a one-node, one-partition slurm.conf (no accounting: submitit's sacct calls find nothing,
# motionkit says so once), starts munged, slurmctld and slurmd, and waits until the node is idle.
set -euo pipefail

STATE=${SLURM_LOCAL_DIR:-${MOTIONKIT_HOME:-$HOME/.cache/motionkit}/slurm}
CONF=/etc/slurm/slurm.conf
NODE=$(hostname -s)
CPUS=$(nproc)
MEM_MB=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))

need() { command -v "$1" >/dev/null || { echo "slurm_local: $1 not found (apt-get install slurm-wlm munge)" >&2; exit 2; }; }

start() {
  need slurmctld; need slurmd; need munged
  [ "$(id -u)" = 0 ] || { echo "slurm_local: run as root" >&2; exit 2; }
  mkdir -p "$STATE"/{ctld,d,log} /etc/slurm /etc/munge /var/run/munge /var/lib/munge /var/log/munge
  if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
  chown -R munge:munge /etc/munge /var/run/munge /var/lib/munge /var/log/munge 2>/dev/null || true
  chmod 0700 /etc/munge && chmod 0400 /etc/munge/munge.key
  pgrep -x munged >/dev/null || munged --force
  cat > "$CONF" <<EOF
ClusterName=motionkit
SlurmctldHost=$NODE
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$STATE/slurmctld.pid
SlurmdPidFile=$STATE/slurmd.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
NodeName=$NODE CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
  pgrep -x slurmctld >/dev/null || slurmctld
  pgrep -x slurmd >/dev/null || slurmd
  for _ in $(seq 60); do
    if sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then
      echo "slurm_local: node $NODE up ($CPUS CPUs, $MEM_MB MB), partition debug"
      return 0
    fi
    sleep 1
  done
  echo "slurm_local: the node did not come up; see $STATE/log" >&2
  exit 1
}

stop() {
  pkill -x slurmd || true
  pkill -x slurmctld || true
  echo "slurm_local: stopped (munged left running)"
}

status() { sinfo 2>&1 || true; squeue 2>&1 || true; }

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
