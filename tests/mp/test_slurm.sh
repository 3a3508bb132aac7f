#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Slurm as a cluster's users meet it, on a private one-node cluster this test starts and
# removes (tests/slurm.sh). Jobs through salloc + cmrun, srun --mpi=pmix directly, and sbatch
# --wait, under Cashmere and TreadMarks; a failing rank fails the job within seconds; more
# ranks than the allocation has tasks (cmrun adds --overcommit). Needs root, slurm-wlm and
# munge; skipped, saying why, otherwise. A lost host under srun: test_slurm_lost.sh.
. "$top_srcdir/tests/lib.sh"
use_shm
leave_slurm # the test's own cluster, not an allocation make check may run in
export CM_APPS_DIR="$top_builddir/apps"
QUICK=60   # seconds: the watchdog of one job
FAIL_S=20  # seconds: a failing rank must have failed its job within this

. "$top_srcdir/tests/slurm.sh"
trap 'rc=$?; [ $rc -eq 0 ] || [ $rc -eq 77 ] || slurm_logs; slurm_down; exit $rc' EXIT
host=$(hostname -s)
slurm_up "$host" 127.0.0.1 env
dir=$slurm_dir

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
