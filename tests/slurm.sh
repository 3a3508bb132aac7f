# SPDX-License-Identifier: BSD-3-Clause
# A private Slurm cluster for tests (sourced after tests/lib.sh): its own slurm.conf
# (SLURM_CONF), munge daemon, key and socket, free ports, and state, spool and log directories,
# all in one directory, removed at the end. One node on this machine, or one node per host of
# tests/cluster.sh (each slurmd in its host, slurmctld in the first; munged's socket is a path,
# which every network namespace reaches). Needs root, slurm-wlm and munge; skips, saying why.
#
#   slurm_up NAME ADDR PREFIX [NAME ADDR PREFIX]...
#       start the cluster: a node NAME at ADDR whose daemons run under PREFIX (a command that
#       enters its host, or "env" for this machine); slurmctld runs with the first node
#   $slurm_dir      the directory (its jobs/ subdirectory is for job scripts and output)
#   $slurm_on       the prefix of the first node: where salloc, srun and sinfo reach slurmctld
#   slurm_down      stop every daemon and process of the cluster (also on exit)
#
# Debian 12's Slurm (22.05) PMIx plugin dlopens /usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so,
# the unversioned name only libpmix-dev installs; without it slurmd logs "can not load PMIx
# library" and srun --mpi=pmix fails. No mpi.conf or other setting is needed.

SLURM_START=30 # seconds: the daemons have this long to come up
slurm_dir=
slurm_on=
slurm_pids=()  # the daemons started here, last started first stopped
slurm_nodes=()

slurm_check() {
    [ "$(id -u)" = 0 ] || skip "needs root to start a private slurmctld, slurmd and munged"
    PATH=$PATH:/usr/sbin:/sbin
    local c
    for c in slurmctld slurmd munged munge unmunge salloc srun sbatch sinfo scancel ss; do
        command -v "$c" >/dev/null 2>&1 ||
            skip "$c is not installed (Debian: slurm-wlm, munge, iproute2)"
    done
    # slurmd 22.05 initializes its cgroup plugin whatever ProctrackType and TaskPlugin say,
    # and gives up without a cgroup filesystem ("No filesystem mounted on /sys/fs/cgroup"),
    # as in a chroot that mounts only sysfs.
    awk '$2 ~ "^/sys/fs/cgroup" && ($3 == "cgroup" || $3 == "cgroup2") { f = 1 } END { exit !f }' \
        /proc/mounts || skip "slurmd needs a cgroup filesystem under /sys/fs/cgroup and none is mounted here"
}

# Every process of this cluster has SLURM_CONF=$conf in its environment (the daemons, the
# slurmstepd they start, the ranks); ends those still alive.
slurm_sweep() {
    local p
    [ -n "$slurm_dir" ] || return 0
    for p in /proc/[0-9]*; do
        [ "${p#/proc/}" = $$ ] && continue
        grep -qzxF "SLURM_CONF=$slurm_dir/slurm.conf" "$p/environ" 2>/dev/null &&
            kill -KILL "${p#/proc/}" 2>/dev/null
    done
}

# slurm_logs: the last lines of every daemon's log (after a failure).
slurm_logs() {
    local f
    for f in "$slurm_dir"/log/*.log; do
        [ -s "$f" ] || continue
        echo "  ! last lines of ${f##*/}:"
        tail -n 25 "$f" | sed 's/^/  !   /'
    done
    echo "  ! sinfo: $(timeout 5 $slurm_on sinfo -h -N -o '%N %T %E' 2>&1 | tr '\n' ';')"
}

slurm_down() {
    local i p
    [ -n "$slurm_dir" ] || return 0
    # shellcheck disable=SC2086 # the prefix: words of a command
    timeout 10 $slurm_on scancel --quiet --user=root 2>/dev/null
    for ((i = ${#slurm_pids[@]} - 1; i >= 0; i--)); do
        p=${slurm_pids[i]}
        kill -TERM "$p" 2>/dev/null
        for _ in $(seq 50); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    slurm_pids=()
    slurm_sweep
    rm -rf "$slurm_dir"
    slurm_dir=
    slurm_on=
    unset SLURM_CONF
}

# slurm_wait_for SECONDS WHAT cmd...: until cmd succeeds; fails the test, naming WHAT, at the
# deadline.
slurm_wait_for() {
    local t=$1 what=$2 end
    shift 2
    end=$((SECONDS + t))
    until "$@"; do
        [ "$SECONDS" -lt "$end" ] || { slurm_logs; fail "$what: not within ${t}s"; }
        sleep 0.2
    done
}

# slurm_alive PID NAME: the daemon is still running (not a zombie); fails otherwise.
slurm_alive() {
    local state
    state=$(ps -o stat= -p "$1" 2>/dev/null)
    if [ -z "$state" ] || [ "${state#Z}" != "$state" ]; then slurm_logs; fail "$2 exited"; fi
}

# A port below the kernel's ephemeral range (where no outgoing connection can hold it) that
# no socket uses now in any state (ss -a), other than the one already taken.
slurm_free_port() {
    local p lo
    read -r lo _ < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
    [ "$lo" -gt 12000 ] || lo=32768
    for _ in $(seq 100); do
        p=$((10000 + RANDOM % (lo - 10000)))
        [ "$p" != "${1:-}" ] && [ -z "$(ss -Htan "sport = :$p")" ] && { echo "$p"; return 0; }
    done
    return 1
}

slurm_up() {
    local conf sock ctld_port slurmd_port names="" n first_addr first_prefix
    slurm_check
    slurm_dir=$(mktemp -d -p /var/tmp cmt-slurm.XXXXXX) || fail "mktemp -d"
    conf=$slurm_dir/slurm.conf
    # munged checks that everyone can reach its socket and no one else can read its key.
    chmod 755 "$slurm_dir"
    mkdir -m 755 "$slurm_dir/run" || fail "mkdir in $slurm_dir"
    mkdir -m 700 "$slurm_dir/munge" || fail "mkdir in $slurm_dir"
    mkdir "$slurm_dir/log" "$slurm_dir/state" "$slurm_dir/spool" "$slurm_dir/tmp" \
        "$slurm_dir/jobs" || fail "mkdir in $slurm_dir"
    for ((n = 1; n <= $#; n += 3)); do
        mkdir "$slurm_dir/spool/${!n}" || fail "mkdir in $slurm_dir"
    done
    sock=$slurm_dir/run/munge.socket
    head -c 1024 /dev/urandom > "$slurm_dir/munge/munge.key" || fail "cannot write a munge key"
    chmod 400 "$slurm_dir/munge/munge.key" || fail "chmod of the munge key"
    ctld_port=$(slurm_free_port) || fail "no free port found"
    slurmd_port=$(slurm_free_port "$ctld_port") || fail "no second free port found"
    first_addr=$2
    first_prefix=$3
    slurm_on=$3
    # Where slurmstepd puts a step's PMIx directory: one per node (a shared one collides:
    # "Cannot create client cli tmpdir ... File exists"); the namespace hosts have their own
    # /tmp (tests/cluster.sh).
    local tmpfs=$slurm_dir/tmp
    [ $# -le 3 ] || tmpfs=/tmp
    slurm_nodes=()
    {
        cat <<EOF
# A private cluster for Cashmere-RMA's tests (tests/slurm.sh).
ClusterName=cmt$$
SlurmctldHost=$1($first_addr)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$slurm_dir/state
SlurmdSpoolDir=$slurm_dir/spool/%n
TmpFS=$tmpfs
SlurmctldPidFile=$slurm_dir/run/slurmctld.pid
SlurmdPidFile=$slurm_dir/run/slurmd.%n.pid
SlurmctldLogFile=$slurm_dir/log/slurmctld.log
SlurmdLogFile=$slurm_dir/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
# CPUs=4 on any machine (this one may have 2 cores): slurmd takes the configured size.
SlurmdParameters=config_overrides
ReturnToService=2
# slurmctld pings a node it has not heard from every SlurmdTimeout/3 (100 s by default): a
# node whose link comes back is in service again within 10 s, not 100.
SlurmdTimeout=30
KillWait=2
InactiveLimit=0
EOF
        while [ $# -ge 3 ]; do
            echo "NodeName=$1 NodeAddr=$2 CPUs=4 State=UNKNOWN"
            slurm_nodes+=("$1" "$3")
            names+="${names:+,}$1"
            shift 3
        done
        echo "PartitionName=cmt Nodes=$names Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:4"
    } > "$conf"
    export SLURM_CONF=$conf

    # shellcheck disable=SC2086
    timeout 10 $slurm_on srun --mpi=list > "$slurm_dir/mpi_list" 2>&1 ||
        fail "srun --mpi=list with this slurm.conf: $(tr -s '\n\t ' ' ' < "$slurm_dir/mpi_list")"
    grep -qw pmix "$slurm_dir/mpi_list" ||
        skip "srun has no pmix MPI plugin (srun --mpi=list: $(tr -s '\n\t ' ' ' < "$slurm_dir/mpi_list"))"

    note "private cluster in $slurm_dir: slurmctld on port $ctld_port, slurmd on $slurmd_port, nodes $names"
    munged -F --socket="$sock" --key-file="$slurm_dir/munge/munge.key" \
        --pid-file="$slurm_dir/run/munged.pid" --log-file="$slurm_dir/log/munged.log" \
        --seed-file="$slurm_dir/munge/seed" >/dev/null 2>&1 &
    slurm_pids+=($!)
    slurm_wait_for 10 "munged's socket" test -S "$sock"
    slurm_alive "${slurm_pids[-1]}" munged
    timeout 10 munge -n -S "$sock" | timeout 10 unmunge -S "$sock" >/dev/null ||
        fail "munge credential round trip through $sock"

    # shellcheck disable=SC2086 # PREFIX: the words of a command
    $first_prefix slurmctld -D -i -f "$conf" >"$slurm_dir/log/slurmctld.out" 2>&1 &
    slurm_pids+=($!)
    for ((n = 0; n < ${#slurm_nodes[@]}; n += 2)); do
        # shellcheck disable=SC2086
        ${slurm_nodes[n + 1]} slurmd -D -f "$conf" -N "${slurm_nodes[n]}" \
            >"$slurm_dir/log/slurmd.${slurm_nodes[n]}.out" 2>&1 &
        slurm_pids+=($!)
    done
    local start=$SECONDS
    slurm_wait_for "$SLURM_START" "nodes $names idle in sinfo" slurm_idle
    echo "(cluster up in $((SECONDS - start)) s)"
    if grep -q "can not load PMIx library" "$slurm_dir"/log/slurmd.*.log; then
        skip "Slurm's PMIx plugin cannot load libpmix.so (Debian: install libpmix-dev on the nodes)"
    fi
}

# Every node up and idle, every daemon alive.
slurm_idle() {
    local n p
    for p in "${slurm_pids[@]}"; do slurm_alive "$p" "a daemon (pid $p)"; done
    for ((n = 0; n < ${#slurm_nodes[@]}; n += 2)); do
        grep -q "slurmd started" "$slurm_dir/log/slurmd.${slurm_nodes[n]}.log" 2>/dev/null &&
            [ "$(timeout 5 $slurm_on sinfo -h -N -n "${slurm_nodes[n]}" -o %T 2>/dev/null)" = idle ] ||
            return 1
    done
}
