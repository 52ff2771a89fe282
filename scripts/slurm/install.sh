#!/usr/bin/env bash
# Install a one-node SLURM cluster's packages from Debian: slurmctld + slurmd + client, munge (authentication),
# slurmdbd and a local MariaDB (accounting, so that `sacct` and submitit can see job states).
# Idempotent: does nothing when every binary is already there. Needs root (or sudo) and apt-get.
set -euo pipefail

need=(slurmctld slurmd sbatch sacct slurmdbd munged mariadbd)
missing=()
for b in "${need[@]}"; do
  command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || missing+=("$b")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "slurm install: already installed (slurmctld $(dpkg-query -W -f '${Version}' slurmctld 2>/dev/null))"
  exit 0
fi
echo "slurm install: missing ${missing[*]}; installing Debian's packages"

SUDO=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "slurm install: needs root or sudo" >&2; exit 1; }
  SUDO=sudo
fi
export DEBIAN_FRONTEND=noninteractive
# apt-cache finds nothing before the first update on a fresh machine
if ! apt-cache show slurmctld >/dev/null 2>&1; then $SUDO apt-get update -qq; fi
# policy-rc.d: no service is started during the install (there is no systemd in a container; up.sh starts them)
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null; $SUDO chmod +x /usr/sbin/policy-rc.d
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
$SUDO apt-get install -y -qq --no-install-recommends \
  slurmctld slurmd slurm-client slurmdbd munge mariadb-server mariadb-client >/dev/null
echo "slurm install: done (slurmctld $(dpkg-query -W -f '${Version}' slurmctld))"
