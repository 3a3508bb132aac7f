#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tests/vm/guest.sh: what guest vm1 of the two-VM cluster runs (tests/vm/run.sh starts it).
# Ranks on vm1 and vm2, started by mpirun over ssh, talk over soft-RoCE only
# (UCX_TLS=rc_verbs,ud_verbs,self on rxe0:1; GID index 0, the one UD wire-up works with), so
# every remote operation, inside a guest too, is an RDMA verb.
#   --short   mp_rma; litmus cases under CHSM (CAS and add directory), NSSN (MCS),
#             TreadMarks and two levels at 1+1; two apps at 2+2 (what .ci/run runs; under
#             twolevel the two processes of a guest share its copy of each page)
#   --long    mp_rma; every litmus case under CHSM CHSN CHHM NSSN NSHM (CAS, MCS and add
#             directory), TreadMarks (fault and scan) and two levels at 1+1 and 2+2; the nine
#             apps at 2+2;
#             cm_bench next to ucx_perftest floors measured in the same guests
#   --bench   cm_bench next to ucx_perftest, then the scoreboard across the guests (one rank
#             each; paper size; TreadMarks fault and scan, CHSM CHSN NSSN): Table 2 over verbs,
#             written to /out (run.sh --keep DIR keeps it)
#   --board   that scoreboard alone
mode=${1:---short}
export top_srcdir top_builddir
. "$top_srcdir/tests/lib.sh"
JOB_TIMEOUT=${CMT_JOB_TIMEOUT:-900} # TCG: everything runs 20-50x slower than on the host

note "guest $(hostname): $(uname -r), $(nproc) vCPUs, $(free -m | awk '/^Mem:/ {print $2}') MiB"
ibv_devinfo -d rxe0 | grep -E 'hca_id|transport|state|active_mtu' | sed 's/^/  /'
for _ in $(seq 120); do
    ssh -o ConnectTimeout=2 vm2 true 2>/dev/null && break
    sleep 1
done
ssh vm2 'echo "  vm2: $(hostname), rdma: $(rdma link show | head -1)"' || fail "vm2 does not answer over ssh"

# UCX_RC_TIMEOUT: under TCG an answer can take longer than UCX's 1 s, and soft-RoCE then
# retransmits. With the default, Linux 6.1's rxe left jobs hung in a 4 KiB RDMA read whose
# responder expected a PSN 4 packets (that read) past the requester's next, with no error
# counted and duplicate requests counted. The link is a stream socket: it loses nothing, so a
# retransmission here is never needed.
export UCX_TLS=rc_verbs,ud_verbs,self UCX_NET_DEVICES=rxe0:1 UCX_IB_GID_INDEX=0 UCX_RC_TIMEOUT=10s
export CM_LAUNCHER=mpirun
export CM_LAUNCHER_ARGS="--mca plm_rsh_agent ssh --mca oob_tcp_if_include eth0 --mca btl self,tcp --mca btl_tcp_if_include eth0"
export CM_APPS_DIR="$top_builddir/apps"
stats=/tmp/stats.json

# job N,M [VAR=value...] CMD...: N ranks on vm1, M on vm2 (expect_ok).
job() {
    local n=${1%,*} m=${1#*,} vars=()
    shift
    while [[ "$1" =~ ^[A-Za-z_][A-Za-z0-9_]*= ]]; do vars+=("$1"); shift; done
    expect_ok env "${vars[@]}" "$CMRUN" -n $((n + m)) --hosts vm1:$n,vm2:$m "$@"
}

note "the default region (64 GiB) cannot be pinned here: refused in one line per host"
expect_fail "$CMRUN" -n 2 --hosts vm1:1,vm2:1 "$MP/mp_rma" --expect-mapped no --iters 5
expect_out "error: CM_SHARED_SIZE=65536m: the network pins registered memory \(no on-demand paging\).*set CM_SHARED_SIZE to at most [0-9]+m"
[ "$(count_out 'error:')" -le 2 ] || fail "the refusal came $(count_out 'error:') times"
# soft-RoCE pins what is registered: a region the guests can hold
export CM_SHARED_SIZE=256m

note "one-sided layer over rc_verbs between the guests"
job 1,1 CM_STATS=$stats "$MP/mp_rma" --expect-mapped no --iters 20
expect_out "mp_rma: 2 ranks OK"
grep -o '"transports": "[^"]*"' $stats | sort -u | sed 's/^/  /'
grep -q '"transports": "[^"]*rc_verbs/rxe0:1' $stats || fail "the ranks did not reach each other over rc_verbs/rxe0:1"

if [ "$mode" = --bench ] || [ "$mode" = --board ]; then
    cases="" settings=() layouts="" apps=""
elif [ "$mode" = --short ]; then
    cases="msgpass counter barrier restore"
    settings=("CM_PROTOCOL=cashmere CM_VARIANT=CHSM CM_DIRECTORY=cas"
              "CM_PROTOCOL=cashmere CM_VARIANT=CHSM CM_DIRECTORY=add"
              "CM_PROTOCOL=cashmere CM_VARIANT=NSSN CM_DIRECTORY=mcs"
              "CM_PROTOCOL=treadmarks" "CM_PROTOCOL=twolevel")
    layouts="1,1"
    apps="sor water"
else
    cases="all"
    settings=("CM_PROTOCOL=treadmarks" "CM_PROTOCOL=treadmarks CM_TMK_WRITE_DETECT=scan"
              "CM_PROTOCOL=twolevel")
    for v in CHSM CHSN CHHM NSSN NSHM; do
        for dir in cas mcs add; do settings+=("CM_PROTOCOL=cashmere CM_VARIANT=$v CM_DIRECTORY=$dir"); done
    done
    layouts="1,1 2,2"
    apps="sor sor_l gauss fft mgrid em3d water mp3d appbt"
fi
for layout in $layouts; do
    for setting in "${settings[@]}"; do
        for c in $cases; do
            note "litmus $c, vm1 x vm2 ${layout/,/ + }, $setting"
            job $layout $setting "$MP/mp_litmus" $c --iters 10 --seed 7
            expect_out "^litmus $c: OK$"
        done
    done
done
for app in $apps; do
    for setting in "${settings[@]}"; do
        case "$setting" in *CM_DIRECTORY=mcs) continue ;; esac
        note "$app at test size, vm1 x vm2 2 + 2, $setting"
        job 2,2 $setting $app --size test
        expect_out "^VERIFY OK$"
    done
done

if [ "$mode" = --long ] || [ "$mode" = --bench ]; then
    note "cm_bench next to ucx_perftest, the same guests (TCG: read the ratios)"
    CMRUN=$CMRUN CM_BENCH=$CM_BENCH "$top_srcdir/tests/vm/bench.sh" || fail "the benchmark table"
fi
if [ "$mode" = --bench ] || [ "$mode" = --board ]; then
    note "the scoreboard across the guests over verbs (${CMT_VM_APPS:=sor gauss water fft}, paper size; ${CMT_VM_SETTINGS:=treadmarks treadmarks-scan CHSM/cas CHSM/add CHSN/add})"
    # One watchdog for the whole board: every run has its own --timeout inside it.
    JOB_TIMEOUT=36000
    expect_ok "$top_srcdir/experiments/scoreboard" --hosts vm1,vm2 \
        --size paper --apps "$CMT_VM_APPS" --settings "$CMT_VM_SETTINGS" \
        --reps "${CMT_VM_REPS:-1}" --timeout 1200 --out /out/scoreboard
    cat /out/scoreboard/scoreboard.md
fi
# Retransmissions (duplicate requests at a responder) mean the timeout above was too short.
for h in vm1 vm2; do
    echo "  $h soft-RoCE: $(ssh $h rdma statistic show link rxe0/1 |
        grep -oE '(duplicate_request|retry_exceeded_err|rcvd_seq_err) [0-9]+' | tr '\n' ' ')"
done
echo "PASS"
