#!/usr/bin/env bash
# Start a single-host Slurm cluster (slurmctld + slurmd + munged on this machine) for tests/slurm.
#
# Run as root on a fresh Debian/Ubuntu machine (CI) or again on one where it already runs: every
# step is skipped when its result is already there. No GPU, no cgroups and no accounting database
# are needed (proctrack/linuxproc, task/none, accounting_storage/none: `sacct` does not answer
# there, and our tracking falls back to squeue/scontrol). Prints one line on success; exit 1 with
# the reason otherwise. Environment: SLURM_UP_TIMEOUT (seconds to wait for an idle node, default 60).
set -euo pipefail

started=$(date +%s)
timeout_s=${SLURM_UP_TIMEOUT:-60}
conf_dir=/etc/slurm
conf=$conf_dir/slurm.conf
log_dir=/var/log/slurm

die() { echo "slurm-up: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "must run as root (it installs packages and starts daemons)"

node_idle() { sinfo -h -N -o '%t' 2>/dev/null | grep -Eq '^(idle|mix|alloc)'; }

# --- the slurm.conf we want: one host, its CPUs, a bit less memory than it has --------------------
host=$(hostname -s)
cpus=$(nproc)
mem_mb=$(awk '/^MemTotal:/ {print int($2 / 1024)}' /proc/meminfo)
real_mb=$(( mem_mb * 90 / 100 ))  # a bit below the real amount, so slurmd never reports "Low RealMemory"
# Loopback addresses: the host name need not resolve (containers often lack it in /etc/hosts).
want_conf=$(cat <<EOF
# Written by .ci/slurm-up.sh: a single-host cluster for tests (no GPU, no cgroups, no accounting).
ClusterName=a1xci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurm/slurmctld.pid
SlurmdPidFile=/run/slurm/slurmd.pid
SlurmctldLogFile=$log_dir/slurmctld.log
SlurmdLogFile=$log_dir/slurmd.log
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SlurmdParameters=config_overrides
ReturnToService=2
JobRequeue=1
MinJobAge=600
KillWait=5
InactiveLimit=0
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$real_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
)
marker="# Written by .ci/slurm-up.sh"
# A cluster that answers is left alone unless it runs an older config of this script.
if command -v sinfo >/dev/null && node_idle; then
    if ! grep -qs "^$marker" "$conf" || [ "$(cat "$conf")" = "$want_conf" ]; then
        echo "slurm-up: already up ($(sinfo -V), node $(sinfo -h -N -o %N | head -n1) $(sinfo -h -N -o %t | head -n1))"
        exit 0
    fi
fi

# --- packages (distribution's own: slurmctld, slurmd, munge, slurm-client) -----------------------
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
        || ! command -v munged >/dev/null || ! command -v sbatch >/dev/null; then
    command -v apt-get >/dev/null || die "apt-get not found: install slurmctld slurmd munge by hand"
    # No init system in a container: keep the packages' postinst from starting unconfigured daemons.
    added_policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
        added_policy=1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt_log=$(mktemp)
    if ! { apt-get update -q && apt-get install -y -q --no-install-recommends slurmctld slurmd slurm-client munge; } \
            >"$apt_log" 2>&1; then
        tail -n 20 "$apt_log" >&2
        die "apt-get install slurmctld slurmd slurm-client munge failed (last lines above)"
    fi
    rm -f "$apt_log"
    if [ -n "$added_policy" ]; then rm -f /usr/sbin/policy-rc.d; fi
fi

# --- munge ---------------------------------------------------------------------------------------
mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
if [ ! -s /etc/munge/munge.key ]; then
    if command -v mungekey >/dev/null; then
        mungekey --create --keyfile=/etc/munge/munge.key >/dev/null
    else
        dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
    fi
fi
munge_user=root
id munge >/dev/null 2>&1 && munge_user=munge
chown -R "$munge_user:" /etc/munge /var/lib/munge /var/log/munge /run/munge
chmod 0700 /etc/munge /var/lib/munge /var/log/munge
chmod 0400 /etc/munge/munge.key
chmod 0755 /run/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    if [ "$munge_user" = munge ]; then
        su -s /bin/sh munge -c 'munged' || die "munged did not start"
    else
        munged --force || die "munged did not start"
    fi
    for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
    munge -n | unmunge >/dev/null 2>&1 || die "munge does not answer (see /var/log/munge/munged.log)"
fi

# --- slurm.conf (a changed one needs restarted daemons) ------------------------------------------
mkdir -p "$conf_dir" "$log_dir" /var/spool/slurmctld /var/spool/slurmd /run/slurm
if [ ! -f "$conf" ] || [ "$(cat "$conf")" != "$want_conf" ]; then
    printf '%s\n' "$want_conf" > "$conf"
    for pidfile in /run/slurm/slurmd.pid /run/slurm/slurmctld.pid; do
        pid=$(cat "$pidfile" 2>/dev/null || true)
        if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then
            for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        fi
    done
fi

# --- daemons -------------------------------------------------------------------------------------
running() { local pid; pid=$(cat "$1" 2>/dev/null || true); [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; }
running /run/slurm/slurmctld.pid || slurmctld || die "slurmctld did not start (see $log_dir/slurmctld.log)"
running /run/slurm/slurmd.pid || slurmd || die "slurmd did not start (see $log_dir/slurmd.log)"

deadline=$(( $(date +%s) + timeout_s ))
until node_idle; do
    state=$(sinfo -h -N -o '%t' 2>/dev/null | head -n1 || true)
    case "$state" in
        drain*|down*) scontrol update NodeName="$host" State=RESUME >/dev/null 2>&1 || true ;;
    esac
    [ "$(date +%s)" -lt "$deadline" ] || die "node $host not idle after ${timeout_s}s (state: ${state:-no answer}; see $log_dir)"
    sleep 0.5
done

echo "slurm-up: $(sinfo -V) up in $(( $(date +%s) - started ))s: node $host idle, $cpus CPUs, ${real_mb} MB"
