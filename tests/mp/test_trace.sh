#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The event trace (CM_TRACE, issue 47) and cm_trace:
#   - off by default: a job writes no trace file;
#   - under Cashmere (shared memory), TreadMarks (TCP: the clock's offsets measured over the
#     network) and two levels, 3 processes, the litmus cases: one file per rank, cm_trace's
#     JSON follows the Trace Event Format's rules (trace_check.c, written apart from
#     cm_trace), and the trace agrees with the job's statistics: as many read faults, lock
#     waits and holds as lock acquires, barriers but cm_finalize's own; TreadMarks's write
#     faults too (Cashmere counts only the faults that bring a page in, the trace every one);
#   - every clock offset has an error bound, and the CSV has a row per event of the JSON;
#   - Cashmere's page fetches as many as it counts; TreadMarks's messages each sent, served
#     and joined by an arrow (a flow), its page requests as many as it counts;
#   - a two-event buffer (CM_TRACE_BUFFER=2) writes out all the time: the same checks hold,
#     and the statistics' trace_ns counts the writing;
#   - the errors: a trace where nothing can be written, a bare word for CM_TRACE, a trace
#     with a rank missing, no trace at all: one line and a non-zero exit each.
. "$top_srcdir/tests/lib.sh"
TRACE="$top_builddir/src/tools/cm_trace"
CHECK="$top_builddir/tests/mp/trace_check"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || fail "cannot enter $tmp"

note "off by default: no trace file"
use_shm
expect_ok "$CMRUN" -n 2 "$MP/mp_litmus" mp --iters 5
[ -z "$(find "$tmp" -name '*.cmtrace')" ] || fail "a job without CM_TRACE wrote $(find "$tmp" -name '*.cmtrace')"

# got KIND: how many events of KIND ("X read fault") trace_check counted in $out, 0 if none.
got() { printf '%s\n' "$out" | awk -v k="$1" '$0 ~ "^"k" [0-9]+$" {print $NF; f=1} END {if (!f) print 0}'; }

# traced NAME NPROCS [VAR=VALUE ...]: the litmus cases traced to $tmp/NAME, the trace
# checked against the format's rules and the job's statistics.
traced() {
    local name=$1 np=$2 rf wf bar lw lh acq
    shift 2
    expect_ok env "$@" CM_TRACE="$tmp/$name" CM_STATS="$tmp/$name.json" "$CMRUN" -n "$np" \
        "$MP/mp_litmus" all --iters 5 --seed 3
    expect_out "^litmus all: OK$"
    [ "$(find "$tmp" -name "$name.*.cmtrace" | wc -l)" = "$np" ] || fail "$name: not one trace file per rank"
    run 60 "$TRACE" "$tmp/$name"
    [ "$rc" = 0 ] || fail "$name: cm_trace's summary: exit status $rc"
    [ "$(count_out 'clock at end: offset [-+][0-9.]* us, error at most [0-9.]* us')" = "$np" ] ||
        fail "$name: not every rank has its clock's offset and error"
    local err
    err=$(printf '%s\n' "$out" | grep -o 'error at most [0-9.]* us' | awk '$4 > m {m = $4} END {print m + 0}')
    run 60 "$TRACE" --json "$tmp/$name.trace.json" --csv "$tmp/$name.csv" "$tmp/$name"
    [ "$rc" = 0 ] || fail "$name: cm_trace --json --csv: exit status $rc"
    run 60 "$CHECK" "$tmp/$name.trace.json" "$np"
    [ "$rc" = 0 ] || fail "$name: the JSON breaks the trace-event format's rules"
    rf=$(got "X read fault") wf=$(got "X write fault") bar=$(got "X barrier")
    lw=$(got "X lock wait") lh=$(got "X lock hold")
    [ "$rf" = "$(stats_total read_faults "$tmp/$name.json")" ] ||
        fail "$name: $rf read faults traced, $(stats_total read_faults "$tmp/$name.json") counted"
    acq=$(( $(stats_total lock_acquires_local "$tmp/$name.json") + $(stats_total lock_acquires_remote "$tmp/$name.json") ))
    [ "$lw" = "$acq" ] && [ "$lh" = "$acq" ] || fail "$name: $lw lock waits and $lh holds traced, $acq acquires counted"
    [ "$bar" = $(( $(stats_total barriers "$tmp/$name.json") - np )) ] ||
        fail "$name: $bar barriers traced, $(stats_total barriers "$tmp/$name.json") counted (with cm_finalize's)"
    [ "$bar" -gt 0 ] && [ "$lw" -gt 0 ] || fail "$name: no barrier or no lock traced"
    [ "$(printf '%s\n' "$out" | awk '/^[BX] / {n++} END {print n+0}')" -gt 0 ] || fail "$name: no span"
    # The CSV: a row per event of the JSON (its metadata, the arrows between events and the
    # ends of phases left open aside).
    local rows json_events
    rows=$(($(wc -l < "$tmp/$name.csv") - 1))
    json_events=$(printf '%s\n' "$out" | awk '$1 != "M" && $1 != "s" && $1 != "f" && $1 != "events" {n += $NF} END {print n}')
    [ "$rows" -ge $((json_events - 2 * np)) ] && [ "$rows" -le "$json_events" ] ||
        fail "$name: $rows CSV rows for $json_events events in the JSON"
    [ "$(grep -c ',lock wait,' "$tmp/$name.csv")" = "$lw" ] || fail "$name: the CSV's lock waits differ from the JSON's"
    # One clock: no rank leaves a barrier before the last one arrived, within twice the worst
    # clock error (the offsets are what puts the ranks' events in this order).
    awk -F, -v tol="$(echo "2 * $err + 1" | bc)" -v np="$np" '
        $3 == "barrier" { n[$6]++; if (!($6 in a) || $4 > a[$6]) a[$6] = $4
                          e = $4 + $5; if (!($6 in d) || e < d[$6]) d[$6] = e }
        END { for (b in n) if (n[b] == np) { full++; if (a[b] > d[b] + tol) { bad++
                  printf "barrier %s: the last arrival at %.3f us, a departure at %.3f us\n", b, a[b], d[b] } }
              if (full == 0) { print "no barrier of every rank"; exit 1 }
              exit bad > 0 }' "$tmp/$name.csv" || fail "$name: a departure before the last arrival, on the job's clock"
}

note "Cashmere over shared memory, 3 processes"
traced cm 3 CM_PROTOCOL=cashmere
[ "$(got "X write fault")" -ge "$(stats_total write_faults "$tmp/cm.json")" ] || fail "cm: fewer write faults traced than counted"
[ "$(got "B fault_ns")" -gt 0 ] || fail "cm: no fault phase"
[ "$(got "X page fetch")" = "$(stats_total pages_fetched "$tmp/cm.json")" ] && [ "$(got "X page fetch")" -gt 0 ] ||
    fail "cm: $(got "X page fetch") page fetches traced, $(stats_total pages_fetched "$tmp/cm.json") counted"
# --top: the same fetches, every rank's time, the locks with their acquires, the pages named.
run 60 "$TRACE" --top "$tmp/cm"
[ "$rc" = 0 ] || fail "cm_trace --top: exit status $rc"
expect_out "^page fetches \\(one-sided gets from the home\\): $(stats_total pages_fetched "$tmp/cm.json"), "
[ "$(count_out '^  rank [0-9]: [0-9.]* ms traced; outside the protocol')" = 3 ] || fail "--top: not every rank's time"
[ "$(printf '%s\n' "$out" | awk '/^locks by time waited/ {f=1; next} f && /^ +[0-9]+ +[0-9]+ / {n += $2} /^pages/ {f=0} END {print n+0}')" -gt 0 ] ||
    fail "--top: no lock acquires listed"
expect_out "^ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+ +[0-9]+  block of [0-9]+ bytes at \\+0x[0-9a-f]+ from .*, offset \\+[0-9]+"
if command -v addr2line > /dev/null; then
    # Named by the call that allocated them (mp_litmus.c is built with -g).
    expect_out " from test_[a-z_]+ at mp_litmus\\.c:[0-9]+, offset \\+[0-9]+"
else
    echo "allocations not named by function: addr2line is not installed (Debian: binutils)"
fi
# The pages more than one rank wrote: no more than all of them; where some, their allocations.
shared=$(printf '%s\n' "$out" | sed -n 's/^pages written by more than one rank: \([0-9]*\) of \([0-9]*\) (.*/\1 \2/p')
[ -n "$shared" ] && [ "${shared% *}" -le "${shared#* }" ] || fail "--top: no count of pages written by several ranks ($shared)"
[ "${shared% *}" = 0 ] || expect_out "^  allocations by the faults and fetches on those pages:"
# The barriers: as many as traced, each rank's time in them the sum of its three parts.
expect_out "^barriers: $(( $(stats_total barriers "$tmp/cm.json") / 3 - 1 )); "
bad=$(printf '%s\n' "$out" | awk '/^  rank [0-9]+: in barriers / {
    d = $5 - ($8 + $12 + $18); if (d < 0) d = -d; if (d > 0.0025) print }')
[ -z "$bad" ] || fail "--top: a rank's barrier time is not the sum of its parts: $bad"
[ "$(count_out '^  rank [0-9]+: in barriers [0-9.]+ = waiting [0-9.]+ \+ the barrier [0-9.]+ \+ leaving after the first [0-9.]+; last [0-9]+ times$')" = 3 ] ||
    fail "--top: not every rank's barrier time"
expect_out "^  the last arrivals came [0-9.]+ ms after the others' mean in all; "

note "PARMACS locks named by their LOCKINIT and ALOCKINIT (with the index)"
expect_ok env CM_TRACE="$tmp/pl" "$CMRUN" -n 2 "$top_builddir/tests/compat/p_locks" 2
run 60 "$TRACE" --top "$tmp/pl"
[ "$rc" = 0 ] || fail "cm_trace --top of p_locks: exit status $rc"
# p_locks marks its region of interest (cm_stats_reset, cm_stats_stop): the pages count it.
expect_out "^pages by faults and fetches \(of [0-9]+ pages, in the statistics' interval: cm_stats_reset to cm_stats_stop\):$"
if command -v addr2line > /dev/null; then
    # p_locks.C: ALOCKINIT(Global->locks, NLOCKS) makes locks 0..65535, then LOCKINIT(idlock).
    bad=$(printf '%s\n' "$out" | awk '/^locks by time/ {f = 1; next} /^pages/ {f = 0}
        f && /p_locks\.C:/ && $1 < 65536 && $NF != "[" $1 "]" {print}')
    [ -z "$bad" ] || fail "--top: an ALOCKINIT lock not named by its index: $bad"
    expect_out "^ +[0-9]+ .* from main at p_locks\\.C:[0-9]+ \\[[0-9]+\\]$"
else
    echo "locks not named by their LOCKINIT: addr2line is not installed (Debian: binutils)"
fi

note "TreadMarks over TCP, 3 processes"
use_tcp lo
traced tmk 3 CM_PROTOCOL=treadmarks
[ "$(got "X write fault")" = "$(stats_total write_faults "$tmp/tmk.json")" ] || fail "tmk: write faults differ"
[ "$(got "B handler_ns")" -gt 0 ] || fail "tmk: no request served traced"
# Every message sent is served, and the arrow from one to the other is drawn.
for m in "page request" "diff request" "lock request" "lock grant"; do
    n=$(got "X send $m")
    [ "$n" -gt 0 ] && [ "$(got "X serve $m")" = "$n" ] && [ "$(got "s $m")" = "$n" ] && [ "$(got "f $m")" = "$n" ] ||
        fail "tmk: $m: $n sent, $(got "X serve $m") served, $(got "s $m")/$(got "f $m") arrows"
done
[ "$(got "X send page request")" = "$(stats_total msgs_page_req "$tmp/tmk.json")" ] ||
    fail "tmk: $(got "X send page request") page requests traced, $(stats_total msgs_page_req "$tmp/tmk.json") counted"
# --top splits every page fetch into the seed's segments, and every lock acquire: by message
# (followed from its grant back to its request) or with the token already here.
tmk_waits=$(got "X lock wait")
run 60 "$TRACE" --top "$tmp/tmk"
[ "$rc" = 0 ] || fail "cm_trace --top: exit status $rc"
expect_out "^TreadMarks page fetches: $(stats_total msgs_page_req "$tmp/tmk.json") from request to the reply's handler, [0-9.]+ us on average: request on the wire [0-9.]+ us, queued at the target [0-9.]+ us, served [0-9.]+ us, reply on the wire [0-9.]+ us, queued at the requester [0-9.]+ us$"
[ "$(count_out '^  rank [0-9]: [0-9]+, [0-9.]+ [0-9.]+ [0-9.]+ [0-9.]+ [0-9.]+ us$')" -ge 2 ] ||
    fail "--top: no page fetch split per rank"
expect_out "^TreadMarks lock acquires by message: [0-9]+ \\([0-9]+ more with the token here, 0 not followed back\\) from request to the grant taken, [0-9.]+ us on average: request on the wire [0-9.]+ us, at the manager [0-9.]+ us, forward on the wire [0-9.]+ us, at the last holder [0-9.]+ us, grant on the wire [0-9.]+ us, at the requester [0-9.]+ us$"
split=$(printf '%s\n' "$out" | sed -n 's/^TreadMarks lock acquires by message: \([0-9]*\) (\([0-9]*\) more.*/\1 \2/p')
[ "$(( ${split% *} + ${split#* } ))" = "$tmk_waits" ] && [ "${split% *}" -gt 0 ] ||
    fail "--top: $split acquires split (by message, token here) of $tmk_waits"

note "the timeline picture of the TreadMarks run"
if command -v gnuplot > /dev/null; then
    run 120 "$TRACE" --timeline "$tmp/tmk-timeline" "$tmp/tmk"
    [ "$rc" = 0 ] || fail "cm_trace --timeline: exit status $rc"
    [ "$(count_out '[Ww]arning')" = 0 ] || fail "gnuplot warned"
    for ext in png svg; do
        [ -s "$tmp/tmk-timeline.$ext" ] || fail "no $ext picture"
    done
    for text in "rank 0" "rank 2" compute fault lock barrier; do
        grep -q ">$text<" "$tmp/tmk-timeline.svg" || fail "the SVG has no '$text'"
    done
    run 120 "$TRACE" --locks "$tmp/tmk-locks" "$tmp/tmk"
    [ "$rc" = 0 ] || fail "cm_trace --locks: exit status $rc"
    [ "$(count_out '[Ww]arning')" = 0 ] || fail "gnuplot warned"
    [ "$(ls "$tmp"/tmk-locks-lock*.png | wc -l)" = 3 ] && [ "$(ls "$tmp"/tmk-locks-lock*.svg | wc -l)" = 3 ] ||
        fail "--locks drew $(ls "$tmp"/tmk-locks-lock*.png | wc -l) locks, not the 3 waited for longest"
    grep -q '>holding<' "$tmp"/tmk-locks-lock*.svg || fail "the lock pictures show no hold"
    # One stretch per line of each lane's block, every rank's lanes within the plot's rows.
    awk '/^[0-9]/ && ($2 < 0 || $2 > 20 || $3 < 0) {bad++} END {exit bad > 0}' "$tmp/tmk-timeline.dat" ||
        fail "a stretch outside the lanes, or of negative length"
    # A window: every box inside it, the x axis its; --zoom: each lock's picture 2 ms wide.
    run 120 "$TRACE" --timeline "$tmp/tmk-win" --window 1:3 "$tmp/tmk"
    [ "$rc" = 0 ] || fail "cm_trace --timeline --window: exit status $rc"
    awk '/^[0-9]/ && ($1 - $3 < 0.99999 || $1 + $3 > 3.00001) {bad++} END {exit bad > 0}' "$tmp/tmk-win.dat" ||
        fail "--window 1:3: a stretch outside the window"
    grep -q '^set xrange \[1.000000:3.000000\]' "$tmp/tmk-win.gp" || fail "--window 1:3: not the picture's x range"
    run 120 "$TRACE" --locks "$tmp/tmk-zoom" --zoom 2 "$tmp/tmk"
    [ "$rc" = 0 ] || fail "cm_trace --locks --zoom: exit status $rc"
    for gp in "$tmp"/tmk-zoom-lock*.gp; do
        awk '/^set xrange/ {x = $3; gsub(/\[|\]/, "", x); split(x, a, ":"); w = a[2] - a[1]
                             if (w < 1.99999 || w > 2.00001) bad++; n++}
             END {exit !(n == 2 && !bad)}' "$gp" || { grep xrange "$gp"; fail "--zoom 2: $gp is not 2 ms wide"; }
    done
else
    echo "the timeline is not drawn: gnuplot is not installed (Debian: gnuplot-nox)"
fi

note "cm_bench's trace floors with the trace on: a span and a phase's record"
use_shm
expect_ok env CM_TRACE="$tmp/bench" "$CMRUN" -n 2 "$CM_BENCH" --batches 1
expect_out "^trace event \(CM_TRACE on\) +- +[0-9.]+ ns"
expect_out "^statistics phase \(CM_TRACE on\) +- +[0-9.]+ ns"

note "two levels, 3 processes of one host"
use_shm
traced tl 3 CM_PROTOCOL=twolevel

note "a two-event buffer: written out all the time, the same trace"
traced small 3 CM_TRACE_BUFFER=2
[ "$(stats_total trace_ns "$tmp/small.json")" -gt 0 ] || fail "trace_ns counted no writing with CM_TRACE_BUFFER=2"
# Each write-out is a phase of its own inside another: no timer of a process may come out
# above its wall time (a write-out at a phase's end once made that phase's time negative).
over=$(grep '"rank": [0-9]' "$tmp/small.json" | awk '{
    t = 0; if (match($0, /"total_ns": [0-9]+/)) t = substr($0, RSTART + 12, RLENGTH - 12) + 0
    s = $0
    while (match(s, /"[a-z_]+_ns": [0-9]+/)) {
        kv = substr(s, RSTART, RLENGTH); s = substr(s, RSTART + RLENGTH)
        split(kv, a, "\": "); if (a[2] + 0 > t) print a[1] "\" " a[2] " > total_ns " t
    }}')
[ -z "$over" ] || fail "a timer above its process's wall time with CM_TRACE_BUFFER=2: $over"

note "nowhere to write: one line, before any rank starts its work"
run 60 env CM_TRACE=/nonexistent/dir/run "$CMRUN" -n 2 "$MP/mp_litmus" mp --iters 5
[ "$rc" != 0 ] || fail "CM_TRACE into a missing directory was accepted"
[ "$(count_out 'error: CM_TRACE=/nonexistent/dir/run.0.cmtrace: cannot write there: directory /nonexistent/dir does not exist')" -ge 1 ] ||
    fail "no line naming the missing directory"
[ "$(count_out 'error: CM_TRACE=')" -le 2 ] || fail "the refusal came more than once per host"

note "a bare word: neither off nor a path"
run 60 env CM_TRACE=trace "$CMRUN" -n 2 "$MP/mp_litmus" mp --iters 5
[ "$rc" != 0 ] || fail "CM_TRACE=trace was accepted"
expect_out "CM_TRACE='trace' is neither off nor a file path"

note "cm_trace: a bad window or zoom, each refused in one line before anything is read"
for args in "--window 3:1 --timeline $tmp/w" "--window 1 --timeline $tmp/w" "--window 1:2 --top" \
            "--zoom 0 --locks $tmp/w" "--zoom 2 --timeline $tmp/w" "--zoom 2 --window 1:2 --locks $tmp/w"; do
    # shellcheck disable=SC2086 # the arguments are words
    run 60 "$TRACE" $args "$tmp/none"
    [ "$rc" = 2 ] && [ "$(count_out '^cm_trace: ')" = 1 ] && [ "$(count_out '^usage: ')" = 1 ] ||
        fail "cm_trace $args: exit status $rc, not one error line and the usage"
done

note "experiments/trace-examples: no SPLASH-3 tree, or one not built, refused in one line"
run 60 "$top_srcdir/experiments/trace-examples" "$tmp/no-splash"
[ "$rc" = 2 ] && [ "$(count_out "^trace-examples: error: $tmp/no-splash: no such directory$")" = 1 ] ||
    fail "trace-examples without a SPLASH-3 tree: exit status $rc"
mkdir -p "$tmp/codes/apps/barnes"
run 60 "$top_srcdir/experiments/trace-examples" --out "$tmp/ex" "$tmp/codes"
[ "$rc" = 2 ] && [ "$(count_out "^trace-examples: error: $tmp/codes/apps/barnes/BARNES is not built")" = 1 ] &&
    [ ! -e "$tmp/ex" ] || fail "trace-examples with BARNES not built: exit status $rc"

note "cm_trace: a rank missing, no trace, a bad flag"
rm "$tmp/cm.1.cmtrace"
run 60 "$TRACE" "$tmp/cm"
[ "$rc" = 1 ] || fail "a trace without rank 1: exit status $rc"
expect_out "cm_trace: error: .*rank"
[ "$(count_out 'error:')" = 1 ] || fail "more than one error line"
run 60 "$TRACE" "$tmp/none"
[ "$rc" = 1 ] && [ "$(count_out "cm_trace: error: no trace at $tmp/none")" = 1 ] || fail "no trace: exit status $rc"
run 60 "$TRACE" --bogus "$tmp/tl"
[ "$rc" = 2 ] || fail "an unknown flag: exit status $rc"
expect_out "cm_trace: unknown option --bogus"
echo "PASS"
