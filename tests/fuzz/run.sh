#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The libFuzzer harnesses (tests/fuzz/fuzz_*.c): every decoder of outside input.
#   config    the CM_* value parsers and the environment scan (util/cm_config.c)
#   json      the JSON parser of the statistics tools (util/cm_json_parse.c)
#   stats     cm_stats's reader of statistics files (src/tools/cm_stats_table.c)
#   split     the splitter of CM_LAUNCHER_ARGS (util/cm_split.c), with a round-trip check
#   tmk_wire  every TreadMarks message form (src/protocols/treadmarks/cm_tmk_wire.c), then the intervals
#             and diffs of what it accepts
#   tmk_diff  TreadMarks diffs from a peer, and the codec's round trip
#   trace     cm_trace's reader of trace files and its --top report (src/tools/cm_trace_read.c,
#             cm_trace_top.c, cm_trace_split.c, cm_trace_barrier.c)
# Each is built with Debian's clang, libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer
# from the decoder's sources alone (not the project's shadow or UCX). First every input that
# once failed (tests/fuzz/regress/NAME) and the corpus (tests/fuzz/corpus/NAME) run once; then
# the fuzzer runs from the corpus.
#
#   run.sh [--seconds S | --runs N] [--jobs J] [NAME...]
#     --seconds S   each harness for S seconds (default 15: make check)
#     --runs N      each harness for N executions (make fuzz-long: 10^7)
#     --jobs J      harnesses at once (default: the cores)
# A failure keeps the input that caused it and says where; add it to tests/fuzz/regress/NAME.
set -u
: "${top_srcdir:=$(cd "$(dirname "$0")/../.." && pwd)}" "${top_builddir:=$top_srcdir}"
seconds=15
runs=""
jobs=$(nproc 2>/dev/null || echo 1)
names=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) seconds=$2; shift 2 ;;
        --runs) runs=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        -h|--help) sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "run.sh: unknown option $1" >&2; exit 2 ;;
        *) names+=("$1"); shift ;;
    esac
done
all=(config json stats split tmk_wire tmk_diff trace)
[ ${#names[@]} -gt 0 ] || names=("${all[@]}")

declare -A sources=(
    [config]="util/cm_config.c util/cm_log.c util/cm_status.c"
    [json]="util/cm_json_parse.c util/cm_json.c util/cm_status.c"
    [stats]="src/tools/cm_stats_table.c util/cm_json_parse.c util/cm_json.c util/cm_status.c"
    [split]="util/cm_split.c"
    [tmk_wire]="src/protocols/treadmarks/cm_tmk_wire.c src/protocols/treadmarks/cm_tmk_diff.c src/protocols/treadmarks/cm_tmk_interval.c"
    [tmk_diff]="src/protocols/treadmarks/cm_tmk_diff.c"
    [trace]="src/tools/cm_trace_read.c src/tools/cm_trace_top.c src/tools/cm_trace_split.c src/tools/cm_trace_barrier.c"
)

CC=${FUZZ_CC:-clang}
if ! command -v "$CC" > /dev/null 2>&1; then
    echo "SKIP: $CC is not installed (Debian: apt-get install clang): the fuzzers were not run"
    exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/cm-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' > "$work/probe.c"
if ! "$CC" -fsanitize=fuzzer,address "$work/probe.c" -o "$work/probe" 2> "$work/probe.err"; then
    echo "SKIP: $CC cannot build a libFuzzer program ($(head -1 "$work/probe.err")): install clang's libFuzzer (Debian: clang)"
    exit 77
fi

bin="$top_builddir/tests/fuzz/bin"
mkdir -p "$bin"
# one NAME: builds, replays and fuzzes one harness; its report on stdout, status 1 on failure.
one() {
    local name=$1 src=() f corpus regress out opts dirs limit what start c keep execs cov
    for f in ${sources[$name]}; do src+=("$top_srcdir/$f"); done
    echo "== $name: build"
    if ! "$CC" -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
        -I"$top_builddir" -I"$top_srcdir" -I"$top_srcdir/include" -D_GNU_SOURCE \
        "$top_srcdir/tests/fuzz/fuzz_$name.c" "${src[@]}" -lm -o "$bin/fuzz_$name" 2>&1; then
        echo "FAIL: $name does not build"
        return 1
    fi
    corpus="$top_srcdir/tests/fuzz/corpus/$name"
    regress="$top_srcdir/tests/fuzz/regress/$name"
    out="$work/$name"
    mkdir -p "$out/new" "$out/crash"
    opts=(-artifact_prefix="$out/crash/" -print_final_stats=1 -max_len=65536 -timeout=10
          -rss_limit_mb=2048)
    echo "== $name: the inputs that once failed, and the corpus, once each"
    dirs=("$corpus")
    [ -d "$regress" ] && dirs=("$regress" "$corpus")
    if ! "$bin/fuzz_$name" "${opts[@]}" -runs=0 "${dirs[@]}" > "$out/replay.log" 2>&1; then
        tail -40 "$out/replay.log" | sed 's/^/  | /'
        echo "FAIL: $name fails on a kept input"
        return 1
    fi
    if [ -n "$runs" ]; then
        limit=(-runs="$runs")
        what="$runs executions"
    else
        limit=(-max_total_time="$seconds")
        what="$seconds s"
    fi
    echo "== $name: fuzzing for $what"
    start=$SECONDS
    if ! "$bin/fuzz_$name" "${opts[@]}" "${limit[@]}" "$out/new" "$corpus" > "$out/fuzz.log" 2>&1; then
        tail -60 "$out/fuzz.log" | sed 's/^/  | /'
        for c in "$out"/crash/*; do
            [ -e "$c" ] || continue
            keep="$top_builddir/tests/fuzz/failed-$name-$(basename "$c")"
            cp "$c" "$keep"
            echo "  the input: $keep ($(od -An -c -N 80 "$c" | tr -s ' ' | head -c 200))"
        done
        echo "FAIL: $name: the fuzzer found a failure (keep the input in tests/fuzz/regress/$name once fixed)"
        return 1
    fi
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz.log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$out/fuzz.log" | tail -1)
    echo "  $name: ${execs:-?} executions in $((SECONDS - start)) s, $cov, $(ls "$out/new" | wc -l) new inputs, no failure"
}

for name in "${names[@]}"; do
    [ -n "${sources[$name]:-}" ] || { echo "run.sh: no harness $name (${all[*]})" >&2; exit 2; }
done
# $jobs at a time; each report printed whole once all are done, in order.
running=0
for name in "${names[@]}"; do
    if [ "$running" -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
    ( one "$name" > "$work/$name.report" 2>&1; echo $? > "$work/$name.status" ) &
    running=$((running + 1))
done
wait
failed=0
for name in "${names[@]}"; do
    cat "$work/$name.report"
    [ "$(cat "$work/$name.status" 2>/dev/null)" = 0 ] || failed=1
done
[ "$failed" = 0 ] || exit 1
echo "PASS"
