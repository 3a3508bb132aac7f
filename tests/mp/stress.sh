#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Stress driver: every litmus case (tests/mp/mp_litmus.c) under every protocol
# setting, transport and process count, N rounds, each run with its own random
# litmus seed, injected network delay and rare-path knobs. Every draw comes from
# one printed driver seed, and every run prints as one command line that
# reproduces it. Runs are watched: a hang is killed (with the processes'
# stacks in its log) and counted as a failure. At the end: a table of runs and
# failures per case and setting; the exit status is non-zero if any run failed.
#
# From a build tree: tests/mp/stress.sh [options]; `stress.sh --help` lists them.
# `make check` runs it through test_stress.sh (one round); the long run is
#   tests/mp/stress.sh --rounds 200

set -u

ALL_CASES="msgpass counter barrier falseshare weak migrate memops wordlocks refill restore churn bytes reuse"

usage() {
    cat <<EOF
usage: stress.sh [options]

  --rounds N        runs of every combination (default 1)
  --cases LIST      litmus cases (default: $ALL_CASES;
                    all: every case in one run)
  --settings LIST   VARIANT/DIRECTORY for Cashmere, treadmarks or twolevel (default: the three
                    directory forms of every variant 'cm_info --variants' says runs here,
                    treadmarks and twolevel: $ALL_SETTINGS)
  --transports LIST shm, tcp, hosts (default: shm tcp); hosts: across two hosts, UCX choosing
                    (tests/cluster.sh: CMT_STRESS_HOSTS="HOST_A HOST_B", the ranks split between
                    them, and CMT_STRESS_PREFIX, the command that runs cmrun inside host A;
                    CMT_STRESS_HOSTS_MAPPED=1 where UCX maps every peer: the NH variants too)
  --procs LIST      process counts (default: 3 4)
  --iters N         iterations of each case (default 50, mp_litmus's own)
  --seed N          driver seed; every random draw follows from it (default: random, printed)
  --delays LIST     CM_NET_LATENCY values drawn from (default: 0 1us 5us 20us)
  -j, --jobs N      runs at a time (default 1)
  --timeout S       seconds before a run counts as hung (default: CMT_JOB_TIMEOUT or 120)
  --budget S        start no run after S seconds; the rest is reported as not run (default: none)
  --out DIR         keep logs and the report here (default: a new directory under \${TMPDIR:-/tmp},
                    removed if every run passed)
  -v, --verbose     one line per run, not only per failure
  -h, --help        this text

LISTs are space- or comma-separated. Per run, drawn from the driver seed and the run's identity
(case, setting, transport, processes, round), so narrowing the selection repeats the same runs:
the litmus seed, CM_NET_LATENCY, sometimes CM_NET_OVERHEAD and CM_NET_BANDWIDTH,
CM_PROGRESS_THREAD, CM_WAIT=block (in a third of the runs), and per protocol its rare paths (Cashmere: CM_UNSAFE_THRESHOLD=0, a small
CM_WN_RING, CM_FIRST_TOUCH=no, CM_MERGE_LINES=1, CM_FORWARD=store|release, CM_FORWARD=batch with 256-byte batches, CM_REFETCH=paper|used, CM_PREFETCH=8; TreadMarks: CM_TMK_GC_BYTES=4k, CM_TMK_WRITE_DETECT=scan, CM_REFETCH=paper|used, CM_PREFETCH=8; two levels: a small CM_WN_RING, whose bins overflow).
EOF
}

die() { echo "stress.sh: error: $*" >&2; exit 2; }

# The build tree: make check says where; by hand, the current directory if it is one, else the
# source tree (an in-tree build).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -z "${top_builddir-}" ]; then
    if [ -x "$PWD/src/tools/cmrun" ]; then top_builddir=$PWD; else top_builddir=$(cd "$here/../.." && pwd); fi
fi
top_builddir=$(cd "$top_builddir" && pwd)
CMRUN="$top_builddir/src/tools/cmrun"
CM_INFO="$top_builddir/src/tools/cm_info"
LITMUS="$top_builddir/tests/mp/mp_litmus"

# Across hosts the launcher's settings (the fixture's rsh agent) go into each run's command line.
hosts_env=()
[ -n "${CM_LAUNCHER-}" ] && hosts_env+=("CM_LAUNCHER=$CM_LAUNCHER")
[ -n "${CM_LAUNCHER_ARGS-}" ] && hosts_env+=("CM_LAUNCHER_ARGS=$CM_LAUNCHER_ARGS")
# Runs must not inherit the caller's settings: the printed command lines are the whole truth.
for v in $(compgen -e | grep -E '^(CM|UCX)_'); do unset "$v"; done

# The variant table, as this machine runs it over shared memory and over TCP.
VARIANTS_SHM=$(UCX_TLS=posix,sysv,self "$CM_INFO" --variants) || die "$CM_INFO --variants failed"
VARIANTS_TCP=$(UCX_TLS=tcp "$CM_INFO" --variants) || die "$CM_INFO --variants failed"
ALL_SETTINGS="$(awk '$2 == "available" {printf "%s/cas %s/mcs %s/add ", $1, $1, $1}' <<< "$VARIANTS_SHM")treadmarks twolevel"
# has_column SETTING KEY=VALUE: whether the setting's variant has that column in the table.
has_column() {
    case "$1" in treadmarks|twolevel) return 1 ;; esac
    awk -v v="${1%/*}" -v kv="$2" '$1 == v { for (i = 3; i <= NF; i++) if ($i == kv) found = 1 }
        END {exit !found}' <<< "$VARIANTS_SHM"
}
# runs_over SETTING TRANSPORT: whether the variant of the setting runs over that transport.
# variants_over TRANSPORT: cm_info's variant table for it (across hosts as over TCP: nothing
# mapped; CMT_STRESS_HOSTS_MAPPED=1 where the hosts share /dev/shm and UCX maps every peer,
# tests/cluster.sh's "kernel" and "shared" fixtures).
variants_over() {
    if [ "$1" = shm ] || { [ "$1" = hosts ] && [ -n "${CMT_STRESS_HOSTS_MAPPED:-}" ]; }; then
        echo "$VARIANTS_SHM"
    else
        echo "$VARIANTS_TCP"
    fi
}

runs_over() {
    case "$1" in treadmarks|twolevel) return 0 ;; esac
    awk -v v="${1%/*}" '$1 == v && $2 == "available" {found = 1} END {exit !found}' \
        <<< "$(variants_over "$2")"
}

rounds=1
cases=$ALL_CASES
settings=$ALL_SETTINGS
transports="shm tcp"
procs="3 4"
iters=50
dseed=""
delays="0 1us 5us 20us"
jobs=1
tmo=${CMT_JOB_TIMEOUT:-120}
budget=0
out=""
verbose=0

while [ $# -gt 0 ]; do
    case "$1" in
        --rounds|--cases|--settings|--transports|--procs|--iters|--seed|--delays|-j|--jobs|--timeout|--budget|--out)
            [ $# -ge 2 ] || die "$1 needs a value" ;;
    esac
    case "$1" in
        --rounds)     rounds=$2; shift 2 ;;
        --cases)      cases=${2//,/ }; shift 2 ;;
        --settings)   settings=${2//,/ }; shift 2 ;;
        --transports) transports=${2//,/ }; shift 2 ;;
        --procs)      procs=${2//,/ }; shift 2 ;;
        --iters)      iters=$2; shift 2 ;;
        --seed)       dseed=$2; shift 2 ;;
        --delays)     delays=${2//,/ }; shift 2 ;;
        -j|--jobs)    jobs=$2; shift 2 ;;
        --timeout)    tmo=$2; shift 2 ;;
        --budget)     budget=$2; shift 2 ;;
        --out)        out=$2; shift 2 ;;
        -v|--verbose) verbose=1; shift ;;
        -h|--help)    usage; exit 0 ;;
        *)            usage >&2; die "unknown argument $1" ;;
    esac
done

isnum() { [[ "$2" =~ ^[0-9]+$ ]] || die "$1 needs a number, got '$2'"; }
isnum --rounds "$rounds"; isnum --iters "$iters"; isnum --jobs "$jobs"; isnum --timeout "$tmo"
isnum --budget "$budget"
[ "$jobs" -ge 1 ] || die "--jobs must be at least 1"
if [ ! -x "$CMRUN" ] || [ ! -x "$LITMUS" ]; then
    die "no built $CMRUN or $LITMUS: run from a build tree after 'make check TESTS='"
fi
[ -n "$dseed" ] || dseed=$(( $(od -An -N4 -tu4 /dev/urandom) % 1000000000 ))
isnum --seed "$dseed"

# mp_litmus runs any unknown name as nothing and says OK: only known cases count.
for c in $cases; do
    [[ " $ALL_CASES all " == *" $c "* ]] || die "unknown litmus case '$c' (known: $ALL_CASES all)"
done
for t in $transports; do
    case "$t" in
        shm|tcp) ;;
        hosts) read -r host_a host_b <<< "${CMT_STRESS_HOSTS:-}"
               [ -n "${host_b:-}" ] || die "--transports hosts needs CMT_STRESS_HOSTS=\"HOST_A HOST_B\"" ;;
        *) die "unknown transport '$t' (shm, tcp, hosts)" ;;
    esac
done
for n in $procs; do
    if [[ ! "$n" =~ ^[0-9]+$ ]] || [ "$n" -lt 2 ]; then die "process counts must be 2 or more, got '$n'"; fi
done

# setting_env SETTING: sets the array senv to the CM_* settings it stands for.
setting_env() {
    case "$1" in
        treadmarks) senv=(CM_PROTOCOL=treadmarks) ;;
        twolevel)   senv=(CM_PROTOCOL=twolevel) ;;
        */*)        senv=(CM_PROTOCOL=cashmere "CM_VARIANT=${1%/*}" "CM_DIRECTORY=${1#*/}") ;;
        *)          return 1 ;;
    esac
}
# A bad setting would fail every one of its runs; say so once, before anything runs.
for s in $settings; do
    setting_env "$s" || die "setting '$s' is neither VARIANT/DIRECTORY, treadmarks nor twolevel"
    if [ -x "$CM_INFO" ]; then
        env "${senv[@]}" "$CM_INFO" --check >/dev/null || die "setting '$s' is not valid here"
    fi
done
for d in $delays; do
    [ -x "$CM_INFO" ] || break
    env CM_NET_LATENCY="$d" "$CM_INFO" --check >/dev/null || die "bad delay '$d'"
done

if [ -n "$out" ]; then
    mkdir -p "$out" || die "cannot create $out"
    out=$(cd "$out" && pwd)
    keep_out=1
else
    out=$(mktemp -d "${TMPDIR:-/tmp}/cm-stress.XXXXXX") || die "mktemp failed"
    keep_out=0
fi
mkdir -p "$out/runs"

# Draws: a 31-bit LCG (the C library's classic constants) seeded per run from a checksum of the
# driver seed and the run's identity, so the same run draws the same values whatever else runs.
rng_seed() { read -r rng _ < <(printf '%s' "$1" | cksum); }
# draw N: $r is uniform enough in [0, N) for the small N used here.
draw() { rng=$(( (rng * 1103515245 + 12345) & 0x7fffffff )); r=$(( (rng >> 16) % $1 )); }
# pick WORDS...: $r is one of the words.
pick() { draw $#; local a=("$@"); r=${a[$r]}; }

# make_cmd CASE SETTING TRANSPORT NP ROUND: sets the array cmd to the run's full command line.
make_cmd() {
    local c=$1 s=$2 t=$3 n=$4 k=$5 lseed e
    rng_seed "$dseed/$c/$s/$t/$n/$k"
    draw 32768; lseed=$r; draw 32768; lseed=$(( lseed * 32768 + r + 1 ))
    setting_env "$s"
    # Transports as use_shm/use_tcp in tests/lib.sh.
    case "$t" in
        shm)   e=("UCX_TLS=posix,sysv,self") ;;
        tcp)   e=(UCX_TLS=tcp UCX_NET_DEVICES=lo) ;;
        hosts) e=("${hosts_env[@]}") ;; # UCX picks: shared memory inside a host, the link across
    esac
    e+=("${senv[@]}")
    # The injected delays shift when remote operations complete relative to each other.
    # shellcheck disable=SC2086 # the list is split on purpose
    # Not where loads and stores reach homes through a mapping (fabric=map): no delay applies
    # there, and the variant refuses them. The draws are made all the same, so that the other
    # draws of the run stay what they are.
    local d=()
    pick $delays; [ "$r" = 0 ] || d+=("CM_NET_LATENCY=$r")
    draw 4; if [ "$r" = 0 ]; then pick 1us 5us; d+=("CM_NET_OVERHEAD=$r"); fi
    draw 8; if [ "$r" = 0 ]; then pick 100MB 1GB; d+=("CM_NET_BANDWIDTH=$r"); fi
    has_column "$s" fabric=map || e+=("${d[@]}")
    # The progress thread changes who serves peers and when: shared memory runs without one by
    # default, TCP with one; each sometimes the other way.
    # (Not off over TCP where an offload thread puts: the variant refuses a single-threaded
    # transport.)
    draw 4; if [ "$r" = 0 ]; then
        if [ "$t" = shm ]; then e+=(CM_PROGRESS_THREAD=on)
        elif ! has_column "$s" write=offload; then e+=(CM_PROGRESS_THREAD=off); fi
    fi
    # Blocking waits: woken by peers' stores, the progress thread, messages (needs the thread).
    draw 3; if [ "$r" = 0 ] && [[ " ${e[*]} " != *" CM_PROGRESS_THREAD=off "* ]]; then
        pick 0 50us; e+=(CM_WAIT=block "CM_WAIT_SPIN=$r")
    fi
    if [ "$s" = treadmarks ]; then
        draw 4; [ "$r" != 0 ] || e+=(CM_TMK_GC_BYTES=4k)     # garbage collection at every barrier
        draw 2; [ "$r" != 0 ] || e+=(CM_TMK_WRITE_DETECT=scan) # writable pages compared, not faulted
        draw 3; [ "$r" != 0 ] || { pick paper used; e+=("CM_REFETCH=$r"); }  # diffs at the access / acquire
        draw 3; [ "$r" != 0 ] || e+=(CM_PREFETCH=8)         # a miss asks for its block's diffs
    elif [ "$s" = twolevel ]; then
        draw 4; [ "$r" != 0 ] || { pick 2 4; e+=("CM_WN_RING=$r"); }  # bins overflow: hosts drop all
    else
        draw 4; [ "$r" != 0 ] || e+=(CM_UNSAFE_THRESHOLD=0)  # every weak page unsafe
        draw 4; [ "$r" != 0 ] || { pick 2 4; e+=("CM_WN_RING=$r"); }  # notice ring overflows
        draw 6; [ "$r" != 0 ] || e+=(CM_FIRST_TOUCH=no)      # homes stay round-robin
        # Only variants with a merge buffer; with one line nearly every store evicts.
        if has_column "$s" merge=buffer; then draw 4; [ "$r" != 0 ] || e+=(CM_MERGE_LINES=1); fi
        # Software forwarding as stored and at the release (auto batches across TCP).
        if has_column "$s" write=hooks; then draw 3; [ "$r" != 0 ] || { pick store release; e+=("CM_FORWARD=$r"); }; fi
        # Page copies: the paper's self-invalidation (the default refetches used pages).
        if has_column "$s" fill=page; then draw 3; [ "$r" != 0 ] || { pick paper used; e+=("CM_REFETCH=$r"); }; fi
        # Batches on shared memory too, and small ones (full batches leave mid-interval).
        if has_column "$s" fill=page && has_column "$s" write=hooks; then
            draw 3; [ "$r" != 0 ] || e+=(CM_FORWARD=batch CM_FORWARD_BATCH=256)
        fi
        # Prefetch on a miss: joins and copies without waiting, on the word as seen.
        if has_column "$s" fill=page; then draw 3; [ "$r" != 0 ] || e+=(CM_PREFETCH=8); fi
    fi
    cmd=(env "${e[@]}" "$CMRUN" -n "$n" "$LITMUS" "$c" --iters "$iters" --seed "$lseed")
    if [ "$t" = hosts ]; then
        # shellcheck disable=SC2206 # the prefix is a command line of words without quoting
        cmd=(${CMT_STRESS_PREFIX:-} env "${e[@]}" "$CMRUN" -n "$n"
             --hosts "$host_a:$(( (n + 1) / 2 )),$host_b:$(( n / 2 ))" "$LITMUS" "$c"
             --iters "$iters" --seed "$lseed")
    fi
}

# quoted WORDS...: the words as one line a shell reads back as the same words (quotes only where
# needed, so that the usual repro line stays readable).
quoted() {
    local w l=()
    for w in "$@"; do
        if [[ "$w" =~ ^[A-Za-z0-9_./=,:+-]+$ ]]; then l+=("$w"); else l+=("$(printf '%q' "$w")"); fi
    done
    echo "${l[*]}"
}

# session_alive SID: whether a process of that session is alive (zombies are dead already).
# shellcheck disable=SC2009
session_alive() { ps -s "$1" -o stat= 2>/dev/null | grep -qv '^Z'; }

# watch ID CASE: runs "${cmd[@]}" in its own session, its output in runs/ID.log, under the
# watchdog of tests/lib.sh's run(), except that a hang is recorded rather than fatal; writes
# "SECONDS STATUS" to runs/ID.res. STATUS: ok, exit=N, timeout, leftover (processes outlived
# the job), no-ok (exit 0 without the case's OK line).
watch() {
    local id=$1 c=$2 log="$out/runs/$1.log" pid rc st t0 el p
    t0=${EPOCHREALTIME/./}
    printf '$ %s\n' "$(quoted "${cmd[@]}")" >"$log"
    setsid "${cmd[@]}" >>"$log" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$out/runs/$id.pid"
    while kill -0 "$pid" 2>/dev/null; do
        if [ $(( ${EPOCHREALTIME/./} - t0 )) -ge $(( tmo * 1000000 )) ]; then
            {
                echo "! still running after ${tmo}s; processes of the job:"
                ps -s "$pid" -o pid,ppid,stat,wchan:24,args 2>/dev/null
                if command -v gdb >/dev/null 2>&1; then
                    for p in $(ps -s "$pid" -o pid= 2>/dev/null); do
                        echo "! stacks of $p:"
                        timeout 20 gdb -p "$p" -batch -ex 'thread apply all bt' 2>/dev/null |
                            grep -E '^(#|Thread)' | head -40
                    done
                fi
            } >>"$log" 2>&1
            pkill -TERM -s "$pid" 2>/dev/null
            sleep 2
            pkill -KILL -s "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
            st=timeout
            break
        fi
        sleep 0.1
    done
    if [ -z "${st-}" ]; then
        wait "$pid"
        rc=$?
        # Zombies are dead already (pgrep would count them). Across hosts mpirun returns without
        # waiting for the remote shell, which ends with the far daemon at about the same moment:
        # what is still there 0.5 s later was left behind.
        for _ in 1 2 3 4 5; do
            session_alive "$pid" || break
            sleep 0.1
        done
        if session_alive "$pid"; then
            { echo "! processes of the job outlived it:"; ps -s "$pid" -o pid,ppid,stat,args; } >>"$log"
            pkill -KILL -s "$pid" 2>/dev/null
            st=leftover
        elif [ "$rc" -ne 0 ]; then
            st="exit=$rc"
        elif ! grep -q "^litmus $c: OK\$" "$log"; then
            st=no-ok
        else
            st=ok
        fi
    fi
    el=$(( ${EPOCHREALTIME/./} - t0 ))
    rm -f "$out/runs/$id.pid"
    printf '%d.%d %s\n' $(( el / 1000000 )) $(( el % 1000000 / 100000 )) "$st" >"$out/runs/$id.res.tmp"
    mv "$out/runs/$id.res.tmp" "$out/runs/$id.res"
}

# The run list, round by round; within a round shuffled (from the seed), so a --budget cut or
# parallel runs meet different neighbours each time.
list=()
for ((k = 1; k <= rounds; k++)); do
    rl=()
    for n in $procs; do for t in $transports; do for s in $settings; do
        if ! runs_over "$s" "$t"; then
            [ "$k" = 1 ] && [ "$n" = "${procs%% *}" ] &&
                echo "stress: $s over $t: not run ($(awk -v v="${s%/*}" '$1 == v' <<< "$(variants_over "$t")" | sed -n 's/.* why=//p'))"
            continue
        fi
        for c in $cases; do rl+=("$c $s $t $n $k"); done
    done; done; done
    rng_seed "$dseed/shuffle/$k"
    for ((i = ${#rl[@]} - 1; i > 0; i--)); do
        draw 32768; draw2=$r; draw 32768; j=$(( (draw2 * 32768 + r) % (i + 1) ))
        x=${rl[i]}; rl[i]=${rl[j]}; rl[j]=$x
    done
    list+=("${rl[@]}")
done
total=${#list[@]}
[ "$total" -gt 0 ] || die "nothing to run"
per_round=$(( total / rounds ))

echo "stress: driver seed $dseed (repeat all of this with --seed $dseed and the same selection)"
echo "  cases:      $cases"
echo "  settings:   $settings"
echo "  transports: $transports; processes: $procs; rounds: $rounds; iters: $iters"
echo "  per run: litmus seed, CM_NET_LATENCY from {$delays}, sometimes CM_NET_OVERHEAD,"
echo "  CM_NET_BANDWIDTH, CM_PROGRESS_THREAD and the protocol's rare-path knobs (--help)"
echo "  $total runs, $jobs at a time, ${tmo}s watchdog each$([ "$budget" -gt 0 ] && echo ", none started after ${budget}s")"
echo "  build tree $top_builddir; output in $out"

declare -A nrun nfail
failed=0 done_n=0 notrun=0
pending=()
start=$SECONDS
: >"$out/runs.tsv"

# collect: accounts for every finished run (a .res file), printing failures as they come.
collect() {
    local id c s t n k st secs line e left=()
    for id in "${pending[@]}"; do
        if [ ! -f "$out/runs/$id.res" ]; then left+=("$id"); continue; fi
        read -r c s t n k <<<"${list[$((10#$id))]}"
        read -r secs st <"$out/runs/$id.res"
        line=$(sed -n 1s/^..//p "$out/runs/$id.log")
        if [ "$interrupted" = 1 ] && [ "$st" != ok ]; then
            # Killed by the interruption, not by a protocol bug: not done.
            rm -f "$out/runs/$id.log" "$out/runs/$id.res"
            continue
        fi
        nrun["$c|$s $t ${n}p"]=$(( ${nrun["$c|$s $t ${n}p"]:-0} + 1 ))
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$k" "$c" "$s" "$t" "$n" "$st" \
            "$secs" "$line" >>"$out/runs.tsv"
        done_n=$(( done_n + 1 ))
        if [ "$st" = ok ]; then
            [ "$verbose" = 0 ] || echo "  ok   [$done_n/$total] $c $s $t ${n}p ${secs}s: $line"
            rm -f "$out/runs/$id.log" "$out/runs/$id.res"
        else
            nfail["$c|$s $t ${n}p"]=$(( ${nfail["$c|$s $t ${n}p"]:-0} + 1 ))
            failed=$(( failed + 1 ))
            e=$(grep -m1 -E 'FAIL|error|!' "$out/runs/$id.log" | cut -c1-160)
            echo "  FAIL [$done_n/$total] $c $s $t ${n}p round $k: $st after ${secs}s"
            [ -z "$e" ] || echo "       $e"
            echo "       log:   $out/runs/$id.log"
            echo "       repro: $line"
            rm -f "$out/runs/$id.res"
            printf '%s %s %s %sp round %s: %s\n  log:   %s\n  repro: %s\n' "$c" "$s" "$t" "$n" "$k" \
                "$st" "$out/runs/$id.log" "$line" >>"$out/failures.txt"
        fi
        if [ "$verbose" = 0 ] && [ $(( done_n % per_round )) = 0 ]; then
            echo "  [$done_n/$total] $(( done_n / per_round )) round(s) done, $failed failed, $(( SECONDS - start ))s"
        fi
    done
    pending=("${left[@]}")
}

# Ctrl-C or a kill of the driver: end every run still going (their sessions), then report.
interrupted=0
# shellcheck disable=SC2317 # reached through the trap
stop() {
    local f
    interrupted=1
    for f in "$out"/runs/*.pid; do
        [ -f "$f" ] && pkill -KILL -s "$(cat "$f")" 2>/dev/null
    done
}
trap stop INT TERM

for ((i = 0; i < total && !interrupted; i++)); do
    if [ "$budget" -gt 0 ] && [ $(( SECONDS - start )) -ge "$budget" ]; then
        notrun=$(( total - i ))
        echo "  budget of ${budget}s spent: $notrun of $total runs not started"
        break
    fi
    while [ "${#pending[@]}" -ge "$jobs" ]; do
        wait -n 2>/dev/null
        [ $? != 127 ] || break  # no run left to wait for
        collect
    done
    [ "$interrupted" = 0 ] || break
    read -r c s t n k <<<"${list[$i]}"
    id=$(printf '%06d' "$i")
    make_cmd "$c" "$s" "$t" "$n" "$k"
    watch "$id" "$c" &
    pending+=("$id")
done
# Every started run is accounted for, even when a signal cuts a wait short.
while [ "${#pending[@]}" -gt 0 ]; do
    wait -n 2>/dev/null
    [ $? != 127 ] || break
    collect
done
collect
[ "$interrupted" = 0 ] || { notrun=$(( total - done_n )); echo "  interrupted: $notrun runs not done"; }

# The report: one row per setting, transport and process count; one column per case.
report() {
    local s t n c cell row w=10 rr rf
    printf '%-24s' "failed/runs"
    for c in $cases; do printf ' %*s' "$w" "$c"; done
    printf ' %*s\n' "$w" total
    for n in $procs; do for t in $transports; do for s in $settings; do
        row="$s $t ${n}p" rr=0 rf=0
        printf '%-24s' "$row"
        for c in $cases; do
            cell="${nfail["$c|$row"]:-0}/${nrun["$c|$row"]:-0}"
            [ "${nfail["$c|$row"]:-0}" = 0 ] || cell="!$cell"
            rr=$(( rr + ${nrun["$c|$row"]:-0} )) rf=$(( rf + ${nfail["$c|$row"]:-0} ))
            printf ' %*s' "$w" "$cell"
        done
        printf ' %*s\n' "$w" "$rf/$rr"
    done; done; done
    printf '%-24s' total
    for c in $cases; do
        rr=0 rf=0
        for n in $procs; do for t in $transports; do for s in $settings; do
            rr=$(( rr + ${nrun["$c|$s $t ${n}p"]:-0} )) rf=$(( rf + ${nfail["$c|$s $t ${n}p"]:-0} ))
        done; done; done
        printf ' %*s' "$w" "$rf/$rr"
    done
    printf ' %*s\n' "$w" "$failed/$done_n"
}
{
    echo "stress: driver seed $dseed, $done_n runs in $(( SECONDS - start ))s, $failed failed$([ "$notrun" = 0 ] || echo ", $notrun not run")"
    report
} | tee "$out/report.txt"

if [ "$failed" -gt 0 ]; then
    # Last, so that a log cut in its middle (a CI page) still shows what failed and how.
    cat "$out/failures.txt"
    for log in $(awk '$1 == "log:" {print $2}' "$out/failures.txt" | head -3); do
        echo "--- the end of $log"
        tail -n 15 "$log" | cut -c1-240
    done
    echo "stress: FAILED: $failed of $done_n runs; repro lines in $out/failures.txt, logs in $out/runs,"
    echo "  every run in $out/runs.tsv"
    exit 1
fi
if [ "$keep_out" = 1 ]; then
    echo "stress: all $done_n runs passed; report and runs.tsv in $out"
else
    rm -rf "$out"
    echo "stress: all $done_n runs passed"
fi
# An interrupted stress run proves less than it was asked to: not a pass.
[ "$interrupted" = 0 ] || { echo "stress: interrupted"; exit 130; }
exit 0
