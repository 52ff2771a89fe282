#!/usr/bin/env bash
# Stop the one-node SLURM cluster that up.sh started: slurmd, slurmctld, slurmdbd, MariaDB, and munged when up.sh
# started it. Each daemon is stopped by the pid in its pid file (SIGTERM, then waited for). State is kept under
# $POSATTN_SLURM_DIR, so the next up.sh finds the queue, the accounting database and finished jobs where they were.
# Jobs still running keep running (their slurmstepd outlives slurmd) unless they are cancelled first.
set -euo pipefail

STATE="${POSATTN_SLURM_DIR:-/var/lib/posattn-slurm}"
say() { printf 'slurm down: %s\n' "$*"; }
[ "$(id -u)" -eq 0 ] || { echo "slurm down: must run as root" >&2; exit 1; }

stop() { # $1 pid file, $2 program name
  local pid; [ -s "$1" ] || return 0; pid="$(cat "$1")"
  if [ -d "/proc/$pid" ] && grep -q "$2" "/proc/$pid/comm" 2>/dev/null; then
    kill -TERM "$pid"
    for ((i = 0; i < 120; i++)); do [ -d "/proc/$pid" ] || break; sleep 0.25; done
    if [ -d "/proc/$pid" ]; then say "$2 ($pid) still running after 30s: SIGKILL"; kill -KILL "$pid" || true; fi
    say "$2 stopped"
  fi
  rm -f "$1"
}

stop "$STATE/run/slurmd.pid" slurmd
stop "$STATE/run/slurmctld.pid" slurmctld
stop "$STATE/run/slurmdbd.pid" slurmdbd
stop "$STATE/mysql-run/mysqld.pid" mariadbd
if [ -e "$STATE/run/munged.ours" ]; then stop /run/munge/munged.pid munged; rm -f "$STATE/run/munged.ours"; fi
say "done (state kept in $STATE)"
