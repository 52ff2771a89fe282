#!/usr/bin/env bash
# Configure and start a one-node SLURM cluster on this machine: munged, MariaDB, slurmdbd, slurmctld, slurmd, each
# started by hand (there is no systemd in a container), then wait until `sinfo` shows the node idle.
# Idempotent: a daemon already running is left alone, the config files are rewritten from the templates beside this
# script. State, config and logs live under $POSATTN_SLURM_DIR (default /var/lib/posattn-slurm), never in the repo;
# /etc/slurm/slurm.conf and /etc/slurm/slurmdbd.conf are symlinks to them so that every client finds the cluster.
# One partition, `debug` (default). Needs root; run scripts/slurm/install.sh first.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
STATE="${POSATTN_SLURM_DIR:-/var/lib/posattn-slurm}"
CLUSTER="${POSATTN_SLURM_CLUSTER:-posattn}"
NODE="$(hostname -s)"
CTLD_PORT="${POSATTN_SLURMCTLD_PORT:-6817}"
SLURMD_PORT="${POSATTN_SLURMD_PORT:-6818}"
DBD_PORT="${POSATTN_SLURMDBD_PORT:-6819}"
DB_PORT="${POSATTN_SLURM_DB_PORT:-3307}"
ETC="$STATE/etc"
t0=$(date +%s%N)

say() { printf 'slurm up: %s\n' "$*"; }
die() { printf 'slurm up: error: %s\n' "$*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "must run as root (daemons are started by hand)"
for b in slurmctld slurmd slurmdbd munged mariadbd sacctmgr sinfo; do
  command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] || die "$b not found: run scripts/slurm/install.sh first"
done

# A daemon runs when its pid file names a live process of that program.
running() { # $1 pid file, $2 program name
  local pid; [ -s "$1" ] || return 1; pid="$(cat "$1")"
  [ -d "/proc/$pid" ] && grep -q "$2" "/proc/$pid/comm" 2>/dev/null
}
wait_for() { # $1 seconds, $2 what, rest: command that succeeds when ready
  local n="$1" what="$2"; shift 2
  for ((i = 0; i < n * 4; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.25; done
  die "$what not ready after ${n}s (logs in $STATE/log/)"
}
fill() { # template -> file, filling @VARS@
  sed -e "s|@STATE@|$STATE|g" -e "s|@CLUSTER@|$CLUSTER|g" -e "s|@NODE@|$NODE|g" \
      -e "s|@CTLD_PORT@|$CTLD_PORT|g" -e "s|@SLURMD_PORT@|$SLURMD_PORT|g" -e "s|@DBD_PORT@|$DBD_PORT|g" \
      -e "s|@DB_PORT@|$DB_PORT|g" -e "s|@DB_PASS@|$DB_PASS|g" -e "s|@NODE_LINE@|$NODE_LINE|g" \
      -e "s|@DEF_MEM_PER_CPU@|$DEF_MEM_PER_CPU|g" "$1" > "$2"
}

# --- directories: each daemon writes only where its user may -------------------------------------------------
mkdir -p "$ETC" "$STATE"/{ctld,slurmd,run,log,mysql,mysql-run} /run/munge /var/log/munge /var/lib/munge
chown slurm:slurm "$STATE"/{ctld,run,log}  # slurmctld and slurmdbd chdir into their log dir
chown mysql:mysql "$STATE"/{mysql,mysql-run}
chown munge:munge /run/munge /var/log/munge /var/lib/munge
for f in slurmctld slurmdbd; do touch "$STATE/log/$f.log"; chown slurm:slurm "$STATE/log/$f.log"; done
touch "$STATE/log/mariadb.log"; chown mysql:mysql "$STATE/log/mariadb.log"

# --- config files from the templates ---------------------------------------------------------------------------
[ -s "$ETC/db.pass" ] || { head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' > "$ETC/db.pass"; chmod 600 "$ETC/db.pass"; }
DB_PASS="$(cat "$ETC/db.pass")"
# the real CPUs, sockets, cores, threads and memory of this machine, as slurmd sees them
NODE_LINE="$(slurmd -C | head -1 | sed "s/^NodeName=[^ ]*/NodeName=$NODE/")"
cpus="$(sed -n 's/.*CPUs=\([0-9]*\).*/\1/p' <<<"$NODE_LINE")"
mem="$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$NODE_LINE")"
DEF_MEM_PER_CPU=$(( mem / cpus ))
fill "$HERE/slurm.conf.in" "$ETC/slurm.conf"
fill "$HERE/slurmdbd.conf.in" "$ETC/slurmdbd.conf"
fill "$HERE/my.cnf.in" "$ETC/my.cnf"
chmod 644 "$ETC/slurm.conf" "$ETC/my.cnf"
chown slurm:slurm "$ETC/slurmdbd.conf"; chmod 600 "$ETC/slurmdbd.conf"  # slurmdbd refuses a readable one
mkdir -p /etc/slurm
for f in slurm.conf slurmdbd.conf; do
  if [ -e "/etc/slurm/$f" ] && [ "$(readlink -f "/etc/slurm/$f")" != "$ETC/$f" ]; then
    die "/etc/slurm/$f exists and is not ours (a real cluster's config?): not overwriting it"
  fi
  ln -sfn "$ETC/$f" "/etc/slurm/$f"
done
say "node $NODE_LINE; config in $ETC, logs in $STATE/log"

# --- munge: the authentication every SLURM message carries ------------------------------------------------------
if [ ! -s /etc/munge/munge.key ]; then mungekey --create --keyfile=/etc/munge/munge.key; fi
chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key
if ! running /run/munge/munged.pid munged; then
  rm -f /run/munge/munged.pid
  runuser -u munge -- /usr/sbin/munged
  touch "$STATE/run/munged.ours"   # down.sh stops munged only when we started it
  say "munged started"
fi
wait_for 10 munged bash -c 'munge -n | unmunge'

# --- MariaDB for slurmdbd: own data directory, socket and port ------------------------------------------------
DB=(mariadb --defaults-file="$ETC/my.cnf" --socket="$STATE/mysql-run/mysqld.sock" -u root)
if [ ! -d "$STATE/mysql/mysql" ]; then
  mariadb-install-db --defaults-file="$ETC/my.cnf" --user=mysql --datadir="$STATE/mysql" \
    --auth-root-authentication-method=socket --skip-test-db > "$STATE/log/mariadb-install.log" 2>&1 \
    || die "mariadb-install-db failed: see $STATE/log/mariadb-install.log"
fi
if ! running "$STATE/mysql-run/mysqld.pid" mariadbd; then
  setsid nohup mariadbd --defaults-file="$ETC/my.cnf" >> "$STATE/log/mariadb.log" 2>&1 < /dev/null &
  say "mariadbd started"
fi
wait_for 30 MariaDB mariadb-admin --defaults-file="$ETC/my.cnf" --socket="$STATE/mysql-run/mysqld.sock" -u root ping
"${DB[@]}" -e "CREATE DATABASE IF NOT EXISTS slurm_acct_db;
  CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
  ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"

# --- slurmdbd and the accounting records: cluster, account, users -------------------------------------------------
if ! running "$STATE/run/slurmdbd.pid" slurmdbd; then slurmdbd; say "slurmdbd started"; fi
wait_for 60 slurmdbd sacctmgr -n list cluster
sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER" || sacctmgr -i add cluster "$CLUSTER" >/dev/null
sacctmgr -n -P list account format=account | grep -qx posattn \
  || sacctmgr -i add account posattn Cluster="$CLUSTER" Description=posattn Organization=posattn >/dev/null
# a `high` QOS that preempts (requeues) jobs of the default `normal` QOS: `sbatch --qos=high` preempts
sacctmgr -n -P list qos format=name | grep -qx high || sacctmgr -i add qos high Priority=100 >/dev/null
sacctmgr -i modify qos high set Preempt=normal PreemptMode=requeue >/dev/null || true
for u in root ${SUDO_USER:-}; do
  sacctmgr -n -P list assoc format=account,user | grep -qx "posattn|$u" \
    || sacctmgr -i add user "$u" Account=posattn DefaultAccount=posattn Cluster="$CLUSTER" >/dev/null
  sacctmgr -i modify user "$u" set QOS=normal,high >/dev/null || true
done

# --- slurmctld and slurmd -------------------------------------------------------------------------------------------
if ! running "$STATE/run/slurmctld.pid" slurmctld; then slurmctld; say "slurmctld started"
else scontrol reconfigure >/dev/null 2>&1 || true; fi
wait_for 30 slurmctld scontrol ping
if ! running "$STATE/run/slurmd.pid" slurmd; then slurmd -N "$NODE"; say "slurmd started"; fi

# --- wait until the node is idle (or busy with jobs left from an earlier up) ------------------------------------------
node_ok() { sinfo -h -n "$NODE" -o %T | grep -Eqx 'idle|mixed|allocated|completing'; }
for ((i = 0; i < 120; i++)); do
  node_ok && break
  if sinfo -h -n "$NODE" -o %T | grep -Eq 'down|drain'; then
    scontrol update NodeName="$NODE" State=RESUME >/dev/null 2>&1 || true
  fi
  sleep 0.5
done
node_ok || die "node $NODE is $(sinfo -h -n "$NODE" -o %T) after 60s: see $STATE/log/slurmd.log and slurmctld.log"
sinfo
ms=$(( ($(date +%s%N) - t0) / 1000000 )); say "up in $((ms / 1000)).$(printf '%03d' $((ms % 1000)))s"
