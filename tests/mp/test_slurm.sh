#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Slurm as a cluster's users meet it, on a private one-node cluster this test starts and
# removes: its own slurm.conf (SLURM_CONF), munge daemon, key and socket, free ports, and
# state, spool and log directories, all in one temporary directory. Jobs through
# salloc + cmrun, srun --mpi=pmix directly, and sbatch --wait, under Cashmere and TreadMarks;
# a failing rank fails the job within seconds; more ranks than the allocation has tasks
# (cmrun adds --overcommit). Needs root, slurm-wlm and munge; skipped, saying why, otherwise.
#
# Debian 12's Slurm (22.05) PMIx plugin dlopens /usr/lib/x86_64-linux-gnu/pmix2/lib/libpmix.so,
# the unversioned name only libpmix-dev installs; without it slurmd logs "can not load PMIx
# library" and srun --mpi=pmix fails. No mpi.conf or other setting is needed.
. "$top_srcdir/tests/lib.sh"
use_shm
leave_slurm # the test's own cluster, not an allocation make check may run in
export CM_APPS_DIR="$top_builddir/apps"
QUICK=60   # seconds: the watchdog of one job
START=30   # seconds: the daemons have this long to come up
FAIL_S=20  # seconds: a failing rank must have failed its job within this

[ "$(id -u)" = 0 ] || skip "needs root to start a private slurmctld, slurmd and munged"
PATH=$PATH:/usr/sbin:/sbin
for c in slurmctld slurmd munged munge unmunge salloc srun sbatch sinfo scancel ss; do
    command -v "$c" >/dev/null 2>&1 ||
        skip "$c is not installed (Debian: slurm-wlm, munge, iproute2)"
done
# slurmd 22.05 initializes its cgroup plugin whatever ProctrackType and TaskPlugin say, and
# gives up without a cgroup filesystem ("No filesystem mounted on /sys/fs/cgroup"), as in a
# chroot that mounts only sysfs.
awk '$2 ~ "^/sys/fs/cgroup" && ($3 == "cgroup" || $3 == "cgroup2") { f = 1 } END { exit !f }' /proc/mounts ||
    skip "slurmd needs a cgroup filesystem under /sys/fs/cgroup and none is mounted here"

dir=$(mktemp -d "${TMPDIR:-/tmp}/cmt-slurm.XXXXXX") || fail "mktemp -d"
conf=$dir/slurm.conf
pids=() # the daemons started here, last started first stopped

# Every process of this cluster has SLURM_CONF=$conf in its environment (the daemons, the
# slurmstepd they start, the ranks); ends those still alive.
sweep() {
    local p
    for p in /proc/[0-9]*; do
        [ "${p#/proc/}" = $$ ] && continue
        grep -qzxF "SLURM_CONF=$conf" "$p/environ" 2>/dev/null && kill -KILL "${p#/proc/}" 2>/dev/null
    done
}

cleanup() {
    local rc=$? i p
    trap - EXIT
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
        for f in slurmctld slurmd munged; do
            [ -s "$dir/log/$f.log" ] || continue
            echo "  ! last lines of $f.log:"
            tail -n 25 "$dir/log/$f.log" | sed 's/^/  !   /'
        done
    fi
    [ -n "${pid_slurmctld:-}" ] && timeout 10 scancel --quiet --user=root 2>/dev/null
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
        p=${pids[i]}
        kill -TERM "$p" 2>/dev/null
        for _ in $(seq 50); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    sweep
    rm -rf "$dir"
    exit "$rc"
}
trap cleanup EXIT

# wait_for SECONDS WHAT cmd...: until cmd succeeds; fails the test, naming WHAT, at the deadline.
wait_for() {
    local t=$1 what=$2 end
    shift 2
    end=$((SECONDS + t))
    until "$@"; do
        [ "$SECONDS" -lt "$end" ] || fail "$what: not within ${t}s"
        sleep 0.2
    done
}

# alive NAME: the daemon started as NAME is still running (not a zombie); fails otherwise.
alive() {
    local pid_var=pid_$1 state
    state=$(ps -o stat= -p "${!pid_var}" 2>/dev/null)
    if [ -z "$state" ] || [ "${state#Z}" != "$state" ]; then fail "$1 exited (see its log below)"; fi
}

# A port below the kernel's ephemeral range (where no outgoing connection can hold it) that
# no socket uses now in any state (ss -a), other than the one already taken.
free_port() {
    local p lo
    read -r lo _ < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || lo=32768
    [ "$lo" -gt 12000 ] || lo=32768
    for _ in $(seq 100); do
        p=$((10000 + RANDOM % (lo - 10000)))
        [ "$p" != "${1:-}" ] && [ -z "$(ss -Htan "sport = :$p")" ] && { echo "$p"; return 0; }
    done
    return 1
}

# munged checks that everyone can reach its socket and no one else can read its key.
chmod 755 "$dir"
mkdir -m 755 "$dir/run" || fail "mkdir in $dir"
mkdir -m 700 "$dir/munge" || fail "mkdir in $dir"
mkdir "$dir/log" "$dir/state" "$dir/spool" "$dir/tmp" "$dir/jobs" || fail "mkdir in $dir"
sock=$dir/run/munge.socket
head -c 1024 /dev/urandom > "$dir/munge/munge.key" || fail "cannot write a munge key"
chmod 400 "$dir/munge/munge.key" || fail "chmod of the munge key"

host=$(hostname -s)
ctld_port=$(free_port) || fail "no free port found"
slurmd_port=$(free_port "$ctld_port") || fail "no second free port found"
cat > "$conf" <<EOF
# A private one-node cluster for Cashmere-RMA's tests/mp/test_slurm.sh.
ClusterName=cmt$$
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
TmpFS=$dir/tmp
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
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
KillWait=2
InactiveLimit=0
NodeName=$host NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=cmt Nodes=$host Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:4
EOF
export SLURM_CONF=$conf

timeout 10 srun --mpi=list > "$dir/mpi_list" 2>&1 ||
    fail "srun --mpi=list with this slurm.conf: $(tr -s '\n\t ' ' ' < "$dir/mpi_list")"
grep -qw pmix "$dir/mpi_list" ||
    skip "srun has no pmix MPI plugin (srun --mpi=list: $(tr -s '\n\t ' ' ' < "$dir/mpi_list"))"

note "private cluster in $dir: slurmctld on port $ctld_port, slurmd on $slurmd_port, node $host"
munged -F --socket="$sock" --key-file="$dir/munge/munge.key" --pid-file="$dir/run/munged.pid" \
    --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" >/dev/null 2>&1 &
pid_munged=$!
pids+=("$pid_munged")
wait_for 10 "munged's socket" test -S "$sock"
alive munged
timeout 10 munge -n -S "$sock" | timeout 10 unmunge -S "$sock" >/dev/null ||
    fail "munge credential round trip through $sock"

slurmctld -D -i -f "$conf" >"$dir/log/slurmctld.out" 2>&1 &
pid_slurmctld=$!
pids+=("$pid_slurmctld")
slurmd -D -f "$conf" -N "$host" >"$dir/log/slurmd.out" 2>&1 &
pid_slurmd=$!
pids+=("$pid_slurmd")

node_idle() {
    alive slurmctld
    alive slurmd
    grep -q "slurmd started" "$dir/log/slurmd.log" 2>/dev/null &&
        [ "$(timeout 5 sinfo -h -N -n "$host" -o %T 2>/dev/null)" = idle ]
}
start=$SECONDS
wait_for "$START" "node $host idle in sinfo" node_idle
echo "(cluster up in $((SECONDS - start)) s)"
if grep -q "can not load PMIx library" "$dir/log/slurmd.log"; then
    skip "Slurm's PMIx plugin cannot load libpmix.so (Debian: install libpmix-dev on the nodes)"
fi

# ranks N: the output has one "rank R of N" line for each rank R < N.
ranks() {
    local r
    for ((r = 0; r < $1; r++)); do
        [ "$(count_out "^rank $r of $1:")" -eq 1 ] || fail "not one line from rank $r of $1"
    done
}

for proto in cashmere treadmarks; do
    export CM_PROTOCOL=$proto
    # How the app's result line names what ran: the default variant under Cashmere.
    if [ "$proto" = cashmere ]; then ran="protocol cashmere variant CHSM"; else ran="protocol $proto"; fi
    # The build the protocol needs, as cmrun picks it (PROG.hooks where it needs store checks).
    suffix=$("$CM_INFO" --check -n 4 | sed -n 's/^suffix=//p')

    note "$proto: salloc -n 4 cmrun -n 4: an app, a litmus program, one line per rank"
    expect_ok salloc -n 4 -t 2 "$CMRUN" -v -n 4 sor --size test
    expect_out "^cmrun: launcher srun .*, protocol $proto"
    printf '%s\n' "$out" | grep -q -- --overcommit && fail "--overcommit though the ranks fit"
    expect_out "^sor: .*, 4 processes: parallel section [0-9.]+ s, $ran$"
    expect_out "^VERIFY OK$"
    expect_ok salloc -n 4 -t 2 "$CMRUN" -n 4 "$MP/mp_litmus" all --iters 20
    expect_out "^litmus all: OK$"
    expect_ok salloc -n 4 -t 2 "$CMRUN" -n 4 "$MP/mp_init" info
    ranks 4

    note "$proto: srun --mpi=pmix -n 4 directly, the binary cmrun would pick (PROG$suffix)"
    expect_ok srun --mpi=pmix -n 4 -t 2 "$CM_APPS_DIR/sor$suffix" --size test
    expect_out "^sor: .*, 4 processes: parallel section [0-9.]+ s, $ran$"
    expect_out "^VERIFY OK$"
    expect_ok srun --mpi=pmix -n 4 -t 2 "$MP/mp_litmus$suffix" all --iters 20
    expect_out "^litmus all: OK$"
    expect_ok srun --mpi=pmix -n 4 -t 2 "$MP/mp_init$suffix" info
    ranks 4

    note "$proto: sbatch --wait, a script with cmrun and srun"
    cat > "$dir/jobs/ok.sh" <<EOF
#!/bin/bash
set -e
"$CMRUN" -n 4 sor --size test
srun --mpi=pmix -n 4 "$MP/mp_init$suffix" info
EOF
    rm -f "$dir/jobs/ok.out"
    expect_ok sbatch --wait -n 4 -t 2 -o "$dir/jobs/ok.out" -D "$dir/jobs" "$dir/jobs/ok.sh"
    out=$(cat "$dir/jobs/ok.out")
    printf '%s\n' "$out" | sed 's/^/  > /'
    expect_out "^sor: .*, 4 processes: parallel section [0-9.]+ s, $ran$"
    expect_out "^VERIFY OK$"
    ranks 4

    note "$proto: a failing rank fails the job, within ${FAIL_S} s"
    for c in "salloc -n 3 -t 2 $CMRUN -n 3 $MP/mp_init die-abort" \
             "salloc -n 3 -t 2 $CMRUN -n 3 $MP/mp_init die-exit0" \
             "srun --mpi=pmix -n 3 -t 2 $MP/mp_init$suffix die-abort" \
             "srun --mpi=pmix -n 3 -t 2 $MP/mp_init$suffix die-exit0"; do
        start=$SECONDS
        # shellcheck disable=SC2086 # the words of the command line, no blanks in the paths
        run $QUICK $c
        [ "$rc" -ne 0 ] || fail "exit status 0: $c"
        [ $((SECONDS - start)) -le $FAIL_S ] || fail "took $((SECONDS - start)) s: $c"
        printf '%s\n' "$out" | grep -q "passed a barrier its peer never reached" &&
            fail "a rank passed a barrier: $c"
    done
    run $QUICK srun --mpi=pmix -n 2 -t 2 "$CM_APPS_DIR/sor$suffix" --size test --corrupt
    [ "$rc" -ne 0 ] || fail "a failed verification exited 0 under srun"
    expect_out "^VERIFY FAILED$"
    cat > "$dir/jobs/fail.sh" <<EOF
#!/bin/bash
"$CMRUN" -n 3 "$MP/mp_init" die-abort
EOF
    start=$SECONDS
    run $QUICK sbatch --wait -n 3 -t 2 -o "$dir/jobs/fail.out" -D "$dir/jobs" "$dir/jobs/fail.sh"
    [ "$rc" -ne 0 ] || fail "sbatch --wait of a job whose rank aborts exited 0"
    [ $((SECONDS - start)) -le $FAIL_S ] || fail "sbatch --wait took $((SECONDS - start)) s"
done
unset CM_PROTOCOL

note "salloc -n 2 cmrun -n 4: more ranks than the allocation's tasks, cmrun adds --overcommit"
run $QUICK salloc -n 2 -t 2 srun --mpi=pmix -n 4 "$MP/mp_init.hooks" info
[ "$rc" -ne 0 ] || fail "srun -n 4 in a 2-task allocation ran without --overcommit"
expect_out "More processors requested than permitted"
expect_ok salloc -n 2 -t 2 "$CMRUN" -v -n 4 sor --size test
expect_out "^cmrun: srun -n 4 --mpi=pmix .*--overcommit"
expect_out "^sor: .*, 4 processes: parallel section [0-9.]+ s, protocol cashmere variant CHSM$"
expect_out "^VERIFY OK$"
expect_ok salloc -n 2 -t 2 "$CMRUN" -n 4 "$MP/mp_init" info
ranks 4
echo "PASS"
