#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine, for the `slurm`-marked tests and CI.
#
#   scripts/slurm-local.sh start    install Debian's Slurm if missing, write a config for this
#                                   host, start munged, mariadb, slurmdbd, slurmctld and slurmd,
#                                   wait until the node is idle (safe to run twice)
#   scripts/slurm-local.sh stop     cancel leftover jobs, then end exactly the daemons that
#                                   `start` started (by their PID files in the state dir)
#   scripts/slurm-local.sh status   which daemons run, sinfo, squeue
#   scripts/slurm-local.sh env      print `export SLURM_CONF=...` (eval it in your shell)
#
# Everything (configs, munge key and socket, database, spool, logs, PID files) lives in one
# project-owned state dir, $SLURM_LOCAL_DIR (default: <repo>/.slurm-local), so nothing under
# /etc or /var is touched except one convenience: when /etc/slurm/slurm.conf does not exist,
# it is made a symlink to our config (so plain `sbatch` works without SLURM_CONF) and removed
# again by `stop`. Needs root (the daemons, and apt-get when installing).
#
# Settings (environment): SLURM_LOCAL_DIR, SLURM_LOCAL_CPUS (CPUs the node offers, default
# nproc; more than nproc oversubscribes on purpose), SLURM_LOCAL_MEM_PER_CPU (MB, default
# memory per CPU when a job sets no --mem), SLURM_LOCAL_PORT (first of four ports:
# slurmctld, slurmd, slurmdbd, mariadb; default 6817), SLURM_LOCAL_TIMEOUT (s to wait for the
# node to become idle, default 120).
#
# Why by hand and not systemd: this machine and CI have no systemd and block service starts at
# install time, so each daemon is started directly with its paths pointed at the state dir.
set -euo pipefail
trap 'echo "slurm-local: error: line $LINENO failed: $BASH_COMMAND" >&2' ERR

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE=${SLURM_LOCAL_DIR:-$REPO/.slurm-local}
STATE=$(mkdir -p "$STATE" && cd "$STATE" && pwd)
CLUSTER=odtlocal
PARTITION=debug
HOST=$(hostname -s)
PORT=${SLURM_LOCAL_PORT:-6817}
CTLD_PORT=$PORT
SLURMD_PORT=$((PORT + 1))
DBD_PORT=$((PORT + 2))
DB_PORT=$((PORT + 3))
TIMEOUT=${SLURM_LOCAL_TIMEOUT:-120}
CONF=$STATE/etc/slurm.conf
DBD_CONF=$STATE/etc/slurmdbd.conf
# Unix socket paths may not exceed 107 bytes (munged's, mariadb's and slurmd's per-step sockets
# in its spool dir): under a deep checkout they go to a short per-state-dir folder in /tmp.
SOCKETS=$STATE/munge
SPOOL=$STATE/slurmd
if ((${#STATE} > 50)); then
    SOCKETS=/tmp/slurm-local-$(echo "$STATE" | md5sum | cut -c1-8)
    SPOOL=$SOCKETS/slurmd
fi
MUNGE_SOCKET=$SOCKETS/munge.socket.2
DB_SOCKET=$SOCKETS/mariadb.sock
RUN=$STATE/run
LOG=$STATE/log
SYSTEM_CONF=/etc/slurm/slurm.conf
PACKAGES=(munge mariadb-server slurmdbd slurmctld slurmd slurm-client)
export SLURM_CONF=$CONF

say() { echo "slurm-local: $*"; }
die() { echo "slurm-local: error: $*" >&2; exit 1; }

# --- PID-file bookkeeping ------------------------------------------------------------------
# A daemon counts as ours and running when its PID file names a live process whose executable
# is the expected one (guards against a stale PID file whose number was reused).
pid_of() {  # name -> pid (or nothing)
    local f=$RUN/$1.pid pid
    [[ -s $f ]] || return 0
    pid=$(tr -dc '0-9' <"$f")
    [[ -n $pid && -d /proc/$pid ]] || return 0
    [[ $(readlink -f "/proc/$pid/exe" 2>/dev/null) == *"$2"* ]] && echo "$pid"
    return 0
}
running() { [[ -n $(pid_of "$1" "$2") ]]; }

wait_for() {  # seconds description command...
    local secs=$1 what=$2; shift 2
    local end=$((SECONDS + secs))
    until "$@" >/dev/null 2>&1; do
        ((SECONDS < end)) || return 1
        sleep 0.5
    done
    say "$what ready after $((SECONDS - T0)) s"
}

stop_daemon() {  # name exe
    local pid; pid=$(pid_of "$1" "$2")
    if [[ -z $pid ]]; then rm -f "$RUN/$1.pid"; return 0; fi
    local t=$SECONDS
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 60); do [[ -d /proc/$pid ]] || break; sleep 0.25; done
    if [[ -d /proc/$pid ]]; then
        say "$1 (pid $pid) ignored SIGTERM for 15 s; sending SIGKILL"
        kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$RUN/$1.pid"
    say "stopped $1 (pid $pid) in $((SECONDS - t)) s"
}

port_free() {  # port daemon: fail clearly if another process (another checkout's cluster?) has it
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
        die "port $1 (for $2) is already in use: is another cluster running? Stop it with its own" \
            "'scripts/slurm-local.sh stop', or pick other ports: SLURM_LOCAL_PORT=<first of four>"
    fi
}

# --- install -------------------------------------------------------------------------------
install_packages() {
    local missing=()
    for exe in munged mariadbd mariadb-install-db slurmdbd slurmctld slurmd sbatch sacct; do
        command -v "$exe" >/dev/null 2>&1 || missing+=("$exe")
    done
    ((${#missing[@]} == 0)) && return 0
    [[ $(id -u) == 0 ]] || die "missing ${missing[*]} and not root: run as root or install ${PACKAGES[*]}"
    command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and no apt-get: install Slurm yourself"
    say "installing ${PACKAGES[*]} (missing: ${missing[*]})"
    local t=$SECONDS
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${PACKAGES[@]}" >"$STATE/apt-install.log" 2>&1 \
        || { tail -20 "$STATE/apt-install.log"; die "apt-get install failed (log: $STATE/apt-install.log)"; }
    say "installed in $((SECONDS - t)) s"
}

# --- configuration -------------------------------------------------------------------------
write_configs() {
    mkdir -p "$STATE/etc" "$STATE/munge" "$STATE/ctld" "$SPOOL" "$RUN" "$LOG" "$STATE/db" \
        "$SOCKETS"
    chmod 700 "$STATE/munge" "$SOCKETS"
    local cpus=${SLURM_LOCAL_CPUS:-$(nproc)}
    local mem; mem=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' | head -1)
    [[ -n $mem ]] || die "could not read this host's memory from 'slurmd -C'"
    local mem_per_cpu=${SLURM_LOCAL_MEM_PER_CPU:-$((mem / cpus < 2048 ? mem / cpus : 2048))}
    # slurm.conf: one node, one partition; the settings that matter for fast tests are
    # commented. Written atomically (tmp + mv) so a reader never sees half a file.
    cat >"$CONF.tmp" <<EOF
# Written by scripts/slurm-local.sh for host $HOST; regenerated by every start.
ClusterName=$CLUSTER
# addresses pinned to loopback: works even where the host name does not resolve
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
CredType=cred/munge
# our own munged; cred_expire also is how long a requeued job waits before it may start
# again (default 120 s)
AuthInfo=socket=$MUNGE_SOCKET,cred_expire=10
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$SPOOL
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
# default 3 s delay before a batch job is scheduled
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
# CPUs and memory are consumable, and a job without --mem gets DefMemPerCPU (without it one
# job takes the whole node's memory and an array runs one task at a time)
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=$mem_per_cpu
# trust the CPU count below even when it is more than the machine has
SlurmdParameters=config_overrides
# accounting: without it sacct is off, submitit sees UNKNOWN and never notices a dead job
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBD_PORT
# for slurmdbd connections the munge socket is taken from here, not from AuthInfo
AccountingStoragePass=$MUNGE_SOCKET
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
# a job past its time limit gets SIGTERM, then SIGKILL after KillWait seconds
KillWait=10
MinJobAge=300
InactiveLimit=0
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=$PARTITION Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
    mv -f "$CONF.tmp" "$CONF"
    # slurmdbd.conf holds a password: it must be private to SlurmUser
    (umask 077 && cat >"$DBD_CONF.tmp" <<EOF
# Written by scripts/slurm-local.sh; regenerated by every start.
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$RUN/slurmdbd.pid
LogFile=$LOG/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurm-local
StorageLoc=slurm_acct_db
EOF
    )
    mv -f "$DBD_CONF.tmp" "$DBD_CONF"
    chmod 600 "$DBD_CONF"
    if [[ -L $SYSTEM_CONF && ! -e $SYSTEM_CONF ]]; then  # dangling: a removed checkout's
        rm -f "$SYSTEM_CONF"
    fi
    if [[ ! -e $SYSTEM_CONF && -d /etc/slurm ]]; then
        ln -s "$CONF" "$SYSTEM_CONF"
        say "linked $SYSTEM_CONF -> $CONF"
    elif [[ $(readlink "$SYSTEM_CONF" 2>/dev/null) != "$CONF" ]]; then
        say "note: $SYSTEM_CONF is not ours; use: export SLURM_CONF=$CONF"
    fi
}

# --- daemons -------------------------------------------------------------------------------
start_munge() {
    running munged munged && return 0
    if [[ ! -s $STATE/munge/munge.key ]]; then
        (umask 077 && head -c 1024 /dev/urandom >"$STATE/munge/munge.key")
    fi
    rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
    # --force: munged refuses paths it deems insecure (e.g. a group-writable parent dir)
    munged 9>&- --force --socket="$MUNGE_SOCKET" --key-file="$STATE/munge/munge.key" \
        --pid-file="$RUN/munged.pid" --log-file="$LOG/munged.log" \
        --seed-file="$STATE/munge/munged.seed"
    wait_for 20 munged munge --socket="$MUNGE_SOCKET" --no-input \
        || die "munged did not start (log: $LOG/munged.log)"
}

# shellcheck disable=SC2120  # called with arguments through wait_for
db_sql() { mariadb --no-defaults --socket="$DB_SOCKET" -u root "$@"; }

start_mariadb() {
    running mariadb mariadbd && return 0
    if [[ ! -d $STATE/db/mysql ]]; then
        mariadb-install-db --no-defaults --datadir="$STATE/db" --user=root \
            --auth-root-authentication-method=socket --skip-test-db \
            >"$LOG/mariadb-install.log" 2>&1 \
            || die "mariadb-install-db failed (log: $LOG/mariadb-install.log)"
    fi
    # not a daemon by itself: run it detached; small buffers, listening on localhost only
    setsid mariadbd --no-defaults --user=root --datadir="$STATE/db" --socket="$DB_SOCKET" \
        --port="$DB_PORT" --bind-address=127.0.0.1 --pid-file="$RUN/mariadb.pid" \
        --log-error="$LOG/mariadb.log" --innodb-buffer-pool-size=64M \
        --innodb-log-file-size=16M --skip-name-resolve </dev/null >/dev/null 2>&1 9>&- &
    wait_for 60 mariadb db_sql -e "select 1" || die "mariadb did not start (log: $LOG/mariadb.log)"
    # shellcheck disable=SC2119
    db_sql <<'EOF'
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm-local';
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
EOF
}

start_slurmdbd() {
    running slurmdbd slurmdbd && return 0
    slurmdbd 9>&-  # has no -f: it reads slurmdbd.conf beside $SLURM_CONF
    wait_for 60 slurmdbd sacctmgr -n list cluster \
        || die "slurmdbd did not answer (log: $LOG/slurmdbd.log)"
}

start_slurmctld() {
    running slurmctld slurmctld && return 0
    slurmctld -f "$CONF" 9>&-
    wait_for 60 slurmctld scontrol ping || die "slurmctld did not answer (log: $LOG/slurmctld.log)"
}

start_slurmd() {
    running slurmd slurmd && return 0
    slurmd -f "$CONF" -N "$HOST" 9>&-
    say "started slurmd"
}

node_state() { sinfo -h -N -n "$HOST" -o %t 2>/dev/null | head -1; }
node_idle() { [[ $(node_state) =~ ^(idle|mix|alloc) ]]; }

cmd_start() {
    T0=$SECONDS
    install_packages
    local before; before=$({ cat "$CONF" 2>/dev/null || true; } | md5sum)
    write_configs
    # before starting anything: every port a daemon of ours is not already holding must be free
    running mariadb mariadbd || port_free "$DB_PORT" mariadb
    running slurmdbd slurmdbd || port_free "$DBD_PORT" slurmdbd
    running slurmctld slurmctld || port_free "$CTLD_PORT" slurmctld
    running slurmd slurmd || port_free "$SLURMD_PORT" slurmd
    if running slurmctld slurmctld && [[ $(md5sum <"$CONF") != "$before" ]]; then
        # node changes need a restart, not `scontrol reconfigure`; jobs survive (state is saved)
        say "configuration changed: restarting slurmctld and slurmd"
        stop_daemon slurmd slurmd
        stop_daemon slurmctld slurmctld
    fi
    start_munge
    start_mariadb
    start_slurmdbd
    start_slurmctld
    start_slurmd
    # a node left down/drained by an earlier unclean stop is brought back
    if [[ $(node_state) =~ ^(down|drain|drng|fail) ]]; then
        scontrol update nodename="$HOST" state=resume >/dev/null 2>&1 || true
    fi
    wait_for "$TIMEOUT" "node $HOST" node_idle || {
        sinfo -N -l || true
        die "node $HOST not idle after $TIMEOUT s (logs: $LOG/slurmd.log, $LOG/slurmctld.log)"
    }
    say "cluster '$CLUSTER' up in $((SECONDS - T0)) s: partition '$PARTITION', node $HOST ($(sinfo -h -N -o '%c CPUs, %m MB'))"
    say "for your shell: export SLURM_CONF=$CONF"
}

cmd_stop() {
    if running slurmctld slurmctld; then
        local jobs; jobs=$(squeue -h -o %A 2>/dev/null | sort -u | tr '\n' ' ')
        if [[ -n ${jobs// /} ]]; then
            say "cancelling leftover jobs: $jobs"
            # shellcheck disable=SC2086
            scancel $jobs 2>/dev/null || true
            local end=$((SECONDS + 30))
            while [[ -n $(squeue -h -o %A 2>/dev/null) ]] && ((SECONDS < end)); do sleep 0.5; done
        fi
    fi
    # reverse start order; each by its own PID file only
    stop_daemon slurmd slurmd
    stop_daemon slurmctld slurmctld
    stop_daemon slurmdbd slurmdbd
    stop_daemon mariadb mariadbd
    stop_daemon munged munged
    [[ $SOCKETS == "$STATE/munge" ]] || rm -rf "$SOCKETS"
    if [[ $(readlink "$SYSTEM_CONF" 2>/dev/null) == "$CONF" ]]; then
        rm -f "$SYSTEM_CONF"
        say "removed symlink $SYSTEM_CONF"
    fi
}

cmd_status() {
    local rc=0 pid
    for d in munged:munged mariadb:mariadbd slurmdbd:slurmdbd slurmctld:slurmctld slurmd:slurmd; do
        pid=$(pid_of "${d%%:*}" "${d##*:}")
        if [[ -n $pid ]]; then say "${d%%:*}: running (pid $pid)"; else say "${d%%:*}: stopped"; rc=3; fi
    done
    if running slurmctld slurmctld; then
        sinfo -N -l || true
        squeue || true
    fi
    say "state dir: $STATE"
    return $rc
}

lock() {  # one start/stop at a time per state dir (daemons are started with fd 9 closed,
    # or they would hold the lock for their lifetime)
    exec 9>"$STATE/.lock"
    flock -w 300 9 || die "another slurm-local.sh start/stop holds $STATE/.lock"
}

case ${1:-} in
    start) lock; cmd_start ;;
    stop) lock; cmd_stop ;;
    status) cmd_status ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    -h|--help|help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' ;;
    *) echo "usage: $0 start|stop|status|env   (see --help)" >&2; exit 2 ;;
esac
