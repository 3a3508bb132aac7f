#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Bad input and failures: a clear one-line error and a non-zero exit on every
# rank, within seconds; never a hang (every run is under a short timeout).
. "$top_srcdir/tests/lib.sh"
use_shm
QUICK=30

note "bad CM_* value through cmrun: one line, before anything starts"
run $QUICK env CM_NET_LATENCY=abc "$CMRUN" -n 4 "$MP/mp_init" info
[ "$rc" -ne 0 ] || fail "accepted CM_NET_LATENCY=abc"
expect_out "^cashmere: error: CM_NET_LATENCY='abc' is not a time"
[ "$(count_out "CM_NET_LATENCY='abc'")" -eq 1 ] || fail "expected exactly one error line"
[ "$(count_out '^rank ')" -eq 0 ] || fail "a rank ran despite the bad value"

if command -v mpirun >/dev/null 2>&1; then
    note "bad CM_* value with the launcher used directly: each rank refuses it on its own"
    # mpirun kills the other ranks as soon as the first exits, so how many print varies.
    root=""; [ "$(id -u)" = 0 ] && root=--allow-run-as-root
    run $QUICK env CM_PROGRESS_THREAD=sometimes mpirun $root --oversubscribe -np 4 "$MP/mp_init" info
    [ "$rc" -ne 0 ] || fail "accepted CM_PROGRESS_THREAD=sometimes"
    n=$(count_out "^cashmere\[[0-3]\]: error: CM_PROGRESS_THREAD='sometimes' is not one of auto\|on\|off$")
    [ "$n" -ge 1 ] || fail "no rank reported the bad value"
    [ "$(count_out '^rank [0-9]+ of ')" -eq 0 ] || fail "a rank ran despite the bad value"
    note "... and a single process (no launcher) does too"
    run $QUICK env CM_PROGRESS_THREAD=sometimes "$MP/mp_init" info
    [ "$rc" -eq 1 ] || fail "exit status $rc"
    [ "$(count_out 'error: CM_PROGRESS_THREAD')" -eq 1 ] || fail "not exactly one line"
else
    echo "SKIP (part): mpirun not installed, per-rank error check not run"
fi

note "misspelled setting: refused by cmrun in one line naming the right one, no rank started"
for bad in "CM_NET_LATENCYY=1us:CM_NET_LATENCYY (did you mean CM_NET_LATENCY?)" \
           "CM_VARIENT=CHSN:CM_VARIENT (did you mean CM_VARIANT?)"; do
    run $QUICK env "${bad%%:*}" "$CMRUN" -n 2 "$MP/mp_init" info
    [ "$rc" -eq 1 ] || fail "${bad%%:*}: exit status $rc"
    [ "$(printf '%s\n' "$out" | grep -cxF "cashmere: error: unknown setting ${bad#*:}; \`cm_info -c\` lists every setting")" -eq 1 ] ||
        fail "${bad%%:*}: not exactly one line naming the right setting"
    [ "$(printf '%s\n' "$out" | grep -c .)" -eq 1 ] || fail "${bad%%:*}: more than one line"
    [ "$(count_out '^rank [0-9]+ of ')" -eq 0 ] || fail "${bad%%:*}: a rank ran"
done
note "... a tool's variable (CM_RESULTS_DIR, CM_VM_*) is no setting and no error"
expect_ok env CM_RESULTS_DIR=/nonexistent CM_VM_REPS=1 "$CMRUN" -n 2 "$MP/mp_init.hooks" info
note "... and without cmrun the process refuses it itself"
run $QUICK env CM_NET_LATENCYY=1us "$MP/mp_init.hooks" info
[ "$rc" -eq 1 ] || fail "exit status $rc"
[ "$(count_out 'unknown setting CM_NET_LATENCYY')" -eq 1 ] || fail "the error is not printed exactly once"
note "... cm_info -c, which the error points at, lists the settings and warns"
expect_ok env CM_NET_LATENCYY=1us "$CM_INFO" -c
expect_out "warning: unknown setting CM_NET_LATENCYY"
expect_out "^CM_NET_LATENCY="

note "a variant in the wrong case: refused with the right spelling"
run $QUICK env CM_VARIANT=chsn "$CMRUN" -n 2 "$MP/mp_init.hooks" info
[ "$rc" -eq 1 ] || fail "exit status $rc"
[ "$(count_out "^cashmere: error: CM_VARIANT='chsn' is not one of .* \(did you mean CM_VARIANT=CHSN\?\)$")" -eq 1 ] ||
    fail "not one line with the right spelling"
[ "$(count_out '^rank [0-9]+ of ')" -eq 0 ] || fail "a rank ran"

note "a transport list UCX cannot use: refused before launch, naming what is here"
run $QUICK env UCX_TLS=tpc "$CMRUN" -n 2 "$MP/mp_init.hooks" info
[ "$rc" -eq 1 ] || fail "UCX_TLS=tpc: exit status $rc"
[ "$(count_out "^cashmere: error: UCX_TLS=tpc: UCX has no transport 'tpc' \(did you mean tcp\?\); this machine offers .*tcp")" -eq 1 ] ||
    fail "UCX_TLS=tpc: not one line suggesting tcp"
[ "$(printf '%s\n' "$out" | grep -c .)" -eq 1 ] || fail "UCX_TLS=tpc: more than one line (UCX's own errors?)"
if ! "$CM_INFO" | grep -q "rc_verbs"; then
    run $QUICK env UCX_TLS=rc_verbs "$CMRUN" -n 2 "$MP/mp_init.hooks" info
    [ "$rc" -eq 1 ] || fail "UCX_TLS=rc_verbs without a device: exit status $rc"
    expect_out "^cashmere: error: UCX_TLS=rc_verbs: none of these transports is available on this machine"
    note "... but a job on other hosts may name transports this machine lacks"
    expect_ok env UCX_TLS=rc_verbs "$CM_INFO" --check -n 2 --local 0
fi
expect_ok env UCX_TLS=tcp,sm "$CMRUN" -n 2 "$MP/mp_init.hooks" info
expect_ok env "UCX_TLS=^cma" "$CMRUN" -n 2 "$MP/mp_init.hooks" info

note "a size without its unit: refused, saying sizes without a unit are bytes"
run $QUICK env CM_SHARED_SIZE=16 "$CMRUN" -n 2 "$MP/mp_init.hooks" info
[ "$rc" -eq 1 ] || fail "CM_SHARED_SIZE=16: exit status $rc"
[ "$(count_out "^cashmere: error: CM_SHARED_SIZE='16' is 16 bytes, less than the least \(64k\): a size without a unit is bytes; add one, e.g. CM_SHARED_SIZE=16g$")" -eq 1 ] ||
    fail "CM_SHARED_SIZE=16: not the one line"

note "shared base not page aligned"
run $QUICK env CM_SHARED_BASE=0x200000000100 "$CMRUN" -n 2 "$MP/mp_init" info
[ "$rc" -ne 0 ] || fail "accepted an unaligned base"
expect_out "CM_SHARED_BASE=0x200000000100 is not a multiple of the page size"

note "shared range already in use in the process"
run $QUICK "$CMRUN" -n 2 "$MP/mp_init" premap
[ "$rc" -ne 0 ] || fail "premap run succeeded"
expect_out "address range 0x200000000000-0x201000000000 is already in use"
printf '%s\n' "$out" | grep -q "accepted a taken range" && fail "cm_init clobbered a mapping"

note "shared region larger than the address space"
run $QUICK env CM_SHARED_SIZE=200t "$CMRUN" -n 2 "$MP/mp_init" info
[ "$rc" -ne 0 ] || fail "a 200 TiB region was accepted"
expect_out "shared region: cannot reserve|does not fit"

# The address space of every process is capped here (ulimit -v 8 GiB): a region is reserved
# whole in every process, so a size beyond the cap is refused before anything starts, with the
# size that fits; and a regression cannot make a job commit terabytes on a shared test machine.
CAPPED=(bash -c 'ulimit -v $((8 << 20)) && exec "$@"' capped)

for size in 1t 16t; do
    note "CM_SHARED_SIZE=$size: more address space than a process may have here: refused up front, one line"
    start=$SECONDS
    run $QUICK env CM_SHARED_SIZE=$size "${CAPPED[@]}" "$CMRUN" -n 2 "$MP/mp_init" info
    elapsed=$((SECONDS - start))
    [ "$rc" -ne 0 ] || fail "CM_SHARED_SIZE=$size accepted"
    [ "$elapsed" -le 10 ] || fail "took ${elapsed}s to refuse"
    [ "$(count_out "CM_SHARED_SIZE=$size needs .* of address space per process .*: at most CM_SHARED_SIZE=[0-9]+[kmgt]? fits")" -eq 1 ] ||
        fail "not exactly one line saying what would fit"
    [ "$(count_out 'UCX')" -eq 0 ] || fail "UCX messages"
    [ "$(count_out '^cashmere\[')" -eq 0 ] || fail "a rank started"
done

for mode in die-abort die-exit0 die-kill; do
    note "a rank that dies ($mode): the whole job ends non-zero"
    run $QUICK "$CMRUN" -n 3 "$MP/mp_init" $mode
    [ "$rc" -ne 0 ] || fail "$mode: job exited 0"
    printf '%s\n' "$out" | grep -q "passed a barrier its peer never reached" && fail "$mode: barrier passed"
done

note "a rank that leaves without cm_finalize: the library says which and where, once"
run $QUICK "$CMRUN" -n 3 "$MP/mp_init" die-exit0
[ "$rc" -ne 0 ] || fail "job exited 0"
[ "$(count_out '^cashmere\[1\]: error: rank 1 called exit\(0\) in main \(mp_init(\.hooks)?\+0x[0-9a-f]+\) without cm_finalize')" -eq 1 ] ||
    fail "no single line naming rank 1, exit(0) and where"
run $QUICK "$CMRUN" -n 3 "$MP/mp_init" die-return
[ "$rc" -ne 0 ] || fail "job exited 0"
[ "$(count_out '^cashmere\[1\]: error: rank 1 returned 0 from main without cm_finalize')" -eq 1 ] ||
    fail "no single line naming rank 1 and its return from main"
printf '%s\n' "$out" | grep -q "passed a barrier its peer never reached" && fail "barrier passed"

note "a rank killed by a signal (the kernel's OOM killer, kill -9): cmrun ends the job within seconds and names it"
for mode in die-kill die-kill-barrier die-kill-lock die-abort; do
    for stop in "" stop-launcher; do
        # stop-launcher: the launcher is stopped first and never reacts (mpirun stuck in
        # "abort is already in progress"): cmrun alone must end the job.
        start=$SECONDS
        run $QUICK "$CMRUN" -n 3 "$MP/mp_init" $mode $stop
        elapsed=$((SECONDS - start))
        [ "$rc" -ne 0 ] || fail "$mode $stop: job exited 0"
        [ "$elapsed" -le 15 ] || fail "$mode $stop: took ${elapsed}s"
        # SIGKILL can record nothing (cmrun names the signal where it sees the rank's zombie:
        # a stopped launcher does not reap it); abort() records its own (cm_exit.c, signal.R).
        case $mode in
            die-abort) said='was killed by signal 6 \(SIGABRT, aborted\)' ;;
            *)         said='(died without a word of its own|was killed by signal 9 \(SIGKILL)' ;;
        esac
        [ "$(count_out "^cmrun: error: rank 1 \\(pid [0-9]+\\) $said")" -eq 1 ] ||
            fail "$mode $stop: not exactly one line from cmrun naming rank 1 and how it died"
        printf '%s\n' "$out" | grep -Eq "passed a barrier|acquired a lock" && fail "$mode: went on"
    done
done

note "a rank that crashes says how: the signal and its last words (glibc's message)"
for how in double-free assert segv; do
    run $QUICK "$CMRUN" -n 3 "$MP/mp_stuck" die $how
    [ "$rc" -ne 0 ] || fail "$how: job exited 0"
    case $how in
        double-free) said='signal 6 \(SIGABRT, aborted\); its last words: glibc: free\(\): double free detected' ;;
        assert)      said="signal 6 \\(SIGABRT, aborted\\); its last words: glibc: .*mp_stuck.c:[0-9]+: main: Assertion .* failed" ;;
        segv)        said='signal 11 \(SIGSEGV, segmentation fault\)' ;;
    esac
    [ "$(count_out "^cmrun: error: rank 1 \\(pid [0-9]+\\) was killed by $said")" -eq 1 ] ||
        fail "$how: not one line from cmrun naming rank 1's signal and last words"
    [ "$(count_out 'without a word')" -eq 0 ] || fail "$how: taken for a rank that said nothing"
done

note "a plain binary under a variant that forwards writes in software, started without cmrun"
run $QUICK "$MP/mp_init" info
[ "$rc" -ne 0 ] || fail "a plain binary ran under CHSM"
expect_out "CM_VARIANT=CHSM forwards writes in software, but this program was built without store checks: build it with cmcc$"

note "variants not implemented yet are refused clearly, naming those that are (from the table)"
implemented=$("$CM_INFO" --variants | awk '$2 != "not-implemented" {print $1}' | paste -sd, | sed 's/,/, /g')
missing=$("$CM_INFO" --variants | awk '$2 == "not-implemented" {print $1; exit}')
if [ -n "$missing" ]; then
    run $QUICK env CM_VARIANT=$missing "$CMRUN" -n 2 "$MP/mp_init" info
    [ "$rc" -ne 0 ] || fail "$missing accepted"
    expect_out "CM_VARIANT=$missing is not implemented yet \(implemented: $implemented\)"
else
    echo "(every variant of the table is implemented: no refusal to check)"
fi

note "a variant that maps homes' memory (NH**) where peers cannot be mapped: one line, no job"
run $QUICK env UCX_TLS=tcp UCX_NET_DEVICES=lo CM_VARIANT=NHHM "$CMRUN" -n 3 "$MP/mp_init" info
[ "$rc" -ne 0 ] || fail "NHHM accepted over TCP"
expect_out "^cashmere: error: CM_VARIANT=NHHM maps each page onto its home's memory, but UCX_TLS=tcp leaves out"
[ "$(count_out 'error:')" -eq 1 ] || fail "not exactly one error line"
[ "$(count_out '^rank [0-9]+ of ')" -eq 0 ] || fail "a rank ran"
run $QUICK env CM_NET_LATENCY=5us CM_VARIANT=NHHN "$CMRUN" -n 2 "$MP/mp_init" info
[ "$rc" -ne 0 ] || fail "NHHN accepted with an injected delay"
expect_out "^cashmere: error: CM_VARIANT=NHHN: loads and stores reach the home through a mapping, where no network delay can be injected"
if command -v mpirun >/dev/null 2>&1; then
    note "... and by the ranks when the launcher is used directly"
    run $QUICK env UCX_TLS=tcp UCX_NET_DEVICES=lo CM_VARIANT=NHHM mpirun $root --oversubscribe -np 3 \
        "$MP/mp_init" info
    [ "$rc" -ne 0 ] || fail "NHHM ran over TCP"
    [ "$(count_out "^cashmere\[[0-2]\]: error: CM_VARIANT=NHHM maps each page onto its home's memory, but UCX_TLS=tcp leaves out")" -ge 1 ] ||
        fail "no rank refused NHHM over TCP"
    [ "$(count_out '^rank [0-9]+ of ')" -eq 0 ] || fail "a rank ran"
fi
run $QUICK env CM_MERGE_LINES=0 "$CMRUN" -n 2 "$MP/mp_init" info
[ "$rc" -ne 0 ] || fail "a merge buffer of 0 lines accepted"
expect_out "CM_MERGE_LINES=0: CHSM needs a merge buffer of at least one line"
run $QUICK env CM_DIRECTORY=cas "$CMRUN" -n 2 "$MP/mp_init" info
[ "$rc" -eq 0 ] || fail "cas directory at 2 processes"

note "writes forwarded by an offload thread over TCP need a multi-threaded transport: one line"
run $QUICK env UCX_TLS=tcp UCX_NET_DEVICES=lo CM_PROGRESS_THREAD=off CM_VARIANT=CHHM "$CMRUN" -n 3 \
    "$MP/mp_init" info
[ "$rc" -ne 0 ] || fail "CHHM ran with CM_PROGRESS_THREAD=off over TCP"
[ "$(count_out "^cashmere: error: CM_VARIANT=CHHM forwards writes from an offload thread, which puts to homes not mapped here; CM_PROGRESS_THREAD=off")" -eq 1 ] ||
    fail "not said once, before launch"
[ "$(count_out 'error:')" -eq 1 ] || fail "more than one error line"
[ "$(count_out '^rank [0-9]+ of ')" -eq 0 ] || fail "a rank ran"
if command -v mpirun >/dev/null 2>&1; then
    note "... and by the ranks when the launcher is used directly"
    run $QUICK env UCX_TLS=tcp UCX_NET_DEVICES=lo CM_PROGRESS_THREAD=off CM_VARIANT=CHHM \
        mpirun $root --oversubscribe -np 3 "$MP/mp_init" info
    [ "$rc" -ne 0 ] || fail "CHHM ran with CM_PROGRESS_THREAD=off over TCP"
    [ "$(count_out "^cashmere\[[0-2]\]: error: CM_VARIANT=CHHM forwards writes from an offload thread")" -ge 1 ] ||
        fail "no rank refused it"
    [ "$(count_out '^rank [0-9]+ of ')" -eq 0 ] || fail "a rank ran"
fi

for proto in cashmere treadmarks; do
    note "$proto: a rank that falls silent (SIGSTOP, as on a frozen host) is lost after CM_PEER_TIMEOUT: one line names it"
    start=$SECONDS
    run $QUICK env CM_PROTOCOL=$proto CM_PEER_TIMEOUT=2s "$CMRUN" -n 3 "$MP/mp_init" stop
    elapsed=$((SECONDS - start))
    [ "$rc" -ne 0 ] || fail "$proto: the job exited 0"
    [ "$(count_out "^cashmere\[0\]: error: lost rank 1 on host $(hostname): nothing heard from it for 2 s \(CM_PEER_TIMEOUT\): ")" -eq 1 ] ||
        fail "$proto: not one line from rank 0 naming rank 1 and this host"
    [ "$(count_out 'error: lost ')" -eq 1 ] || fail "$proto: the loss was reported more than once"
    [ "$(count_out 'passed the barrier')" -eq 0 ] || fail "$proto: a rank passed a barrier without rank 1"
    echo "  ended in ${elapsed} s (CM_PEER_TIMEOUT=2s)"
    [ "$elapsed" -le 20 ] || fail "$proto: took ${elapsed} s"

    note "$proto: a rank computing outside the library for twice CM_PEER_TIMEOUT is not lost (its heartbeats come from a thread)"
    run $QUICK env CM_PROTOCOL=$proto CM_PEER_TIMEOUT=1s "$CMRUN" -n 3 "$MP/mp_init" stall 2.5
    [ "$rc" -eq 0 ] || fail "$proto: a computing rank was taken for lost"
    [ "$(count_out '^stall rank [0-2]: passed the barrier$')" -eq 3 ] || fail "$proto: not every rank passed"
done
note "CM_PEER_TIMEOUT=0 turns the heartbeats off: no thread, and a computing rank still passes"
run $QUICK env CM_PEER_TIMEOUT=0 CM_LOG_LEVEL=debug "$CMRUN" -n 2 "$MP/mp_init" stall 0.5
[ "$rc" -eq 0 ] || fail "CM_PEER_TIMEOUT=0: exit status $rc"
[ "$(count_out 'heartbeats:')" -eq 0 ] || fail "CM_PEER_TIMEOUT=0 still started the heartbeats"
run $QUICK env CM_LOG_LEVEL=debug "$CMRUN" -n 2 "$MP/mp_init" info
[ "$(count_out 'heartbeats: every 0.5 s to the 1 other processes; one silent for 5 s is lost')" -eq 2 ] ||
    fail "the default heartbeat (every 0.5 s, lost after 5 s) is not on in both ranks"

note "the shared heap runs out: one line for the job (rank 0's), and the job fails"
run $QUICK "$CMRUN" -n 3 "$MP/mp_init" oom
[ "$rc" -ne 0 ] || fail "oom run exited 0"
[ "$(count_out 'the shared heap is exhausted')" -eq 1 ] ||
    fail "$(count_out 'the shared heap is exhausted') lines, not one, say the heap is exhausted"
expect_out "^cashmere\\[0\\]: error: cm_malloc"
expect_out "cm_malloc\([0-9]+\): the shared heap is exhausted: [0-9]+ of its [0-9]+ bytes in use \(CM_SHARED_SIZE=[0-9]+[mg] less [0-9]+ bytes for cm_malloc_local, a quarter, CM_LOCAL_HEAP's default\); CM_SHARED_SIZE=[0-9]+[mg] would fit this request$"
printf '%s\n' "$out" | grep -q "beyond the shared region" && fail "cm_malloc returned past the end"

note "a lock id beyond CM_LOCKS"
run $QUICK env CM_LOCKS=64 "$CMRUN" -n 2 "$MP/mp_init" badlock
[ "$rc" -ne 0 ] || fail "badlock run exited 0"
expect_out "lock id 64 is out of range: CM_LOCKS=64 allows 0..63"
run $QUICK env CM_PROTOCOL=treadmarks CM_LOCKS=64 "$CMRUN" -n 2 "$MP/mp_init" badlock
[ "$rc" -ne 0 ] || fail "badlock run exited 0 under treadmarks"
expect_out "lock id 64 is out of range: CM_LOCKS=64 allows 0..63"

note "several processes started without PMIx are refused, not run as N singletons"
run $QUICK env SLURM_STEP_NUM_TASKS=4 "$MP/mp_init" info
[ "$rc" -ne 0 ] || fail "ran as a singleton under a PMIx-less srun"
expect_out "srun --mpi=pmix"
run $QUICK env PMI_SIZE=2 PMI_RANK=0 "$MP/mp_init" info
[ "$rc" -ne 0 ] || fail "ran as a singleton under a PMI-2 launcher"
expect_out "Cashmere needs PMIx"
echo "PASS"
