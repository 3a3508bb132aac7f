#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# cm_stats merges the statistics files (CM_STATS=FILE, cashmere-stats/1) of real runs into one
# CSV: one row per run, or per process; the schema's scalar members and every timer and
# counter of util/cm_stats.h as columns, each holding what the file says; fields with commas,
# quotes or line breaks quoted. A bad option is one line and exit 2; a file it cannot use,
# one line naming it and exit 1.
. "$top_srcdir/tests/lib.sh"
use_shm
export CM_APPS_DIR="$top_builddir/apps"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Every timer and counter, in the order util/cm_stats.h declares them.
# (As many timers as the table's block declares: the parse must find them all.)
values=$(sed -n 's/^ *_(\([a-z_0-9]*\), *".*/\1/p' "$top_srcdir/util/cm_stats.h" | paste -sd,)
ntimers=$(sed -n '/^#define CM_STATS_TIMERS/,/^$/p' "$top_srcdir/util/cm_stats.h" | grep -c '^ *_([a-z_0-9]*_ns,')
[ "$ntimers" -ge 13 ] && [ "$(tr ',' '\n' <<< "$values" | grep -c '_ns$')" -eq "$ntimers" ] ||
    fail "could not read util/cm_stats.h"
commit=$(sed -n 's/^#define CM_BUILD_COMMIT "\(.*\)"$/\1/p' "$top_builddir/util/cm_commit.h")
[ -n "$commit" ] || fail "no commit in util/cm_commit.h"
# json_total NAME FILE: the job's total of a timer or counter, read from the file's total line.
json_total() { sed -n 's/^  "total": {.*"'"$1"'": \([0-9]*\)[,}].*/\1/p' "$2"; }
# csv_rows: $out without its header.
csv_rows() { printf '%s\n' "$out" | tail -n +2; }

note "two real jobs: sor at 2 processes under Cashmere (CHSM) and TreadMarks"
expect_ok env CM_STATS="$tmp/a.json" "$CMRUN" -n 2 sor --size test
iters=$(sed -n 's/.*, \([0-9]*\) iterations, .*/\1/p' <<< "$out")
expect_ok env CM_PROTOCOL=treadmarks CM_STATS="$tmp/b.json" "$CMRUN" -n 2 sor --size test

note "the timed section only (cm_stats_reset to cm_stats_stop): not the barrier before the check"
[ -n "$iters" ] || fail "no iteration count in sor's result line"
for f in a b; do
    n=$(json_total barriers "$tmp/$f.json")
    [ "$n" = $((2 * 2 * iters)) ] || fail "$f.json: $n barriers in all, the timed section has 2 x $((2 * iters))"
done

note "one row per run: the header is the schema's"
expect_ok "$STATS_TOOL" "$tmp/a.json" "$tmp/b.json"
run_cols="file,schema,program,binary,args,protocol,variant,mechanisms.fill,mechanisms.write"
run_cols+=",mechanisms.merge,mechanisms.build,mechanisms.fabric,description,job.nprocs,job.nodes"
run_cols+=",job.procs_per_node,job.page_size,library.version,library.commit,machine.hostname,machine.cores"
run_cols+=",machine.kernel,ucx.version,ucx.tls,ucx.transports,time.start,time.end"
[ "$(printf '%s\n' "$out" | head -1)" = "$run_cols,$values" ] ||
    fail "header: $(printf '%s\n' "$out" | head -1)"
[ "$(csv_rows | wc -l)" -eq 2 ] || fail "not one row per file"

note "what ran, as the files say"
cols=file,schema,program,binary,args,protocol,variant,mechanisms.fill,mechanisms.write,mechanisms.merge
cols+=,job.nprocs,job.nodes,job.procs_per_node,library.version,library.commit,ucx.tls
expect_ok "$STATS_TOOL" --columns "$cols" "$tmp/a.json" "$tmp/b.json"
[ "$(printf '%s\n' "$out" | head -1)" = "$cols" ] || fail "--columns: not those columns"
expect_out "^$tmp/a.json,cashmere-stats/1,sor,sor.hooks,--size test,cashmere,CHSM,page,hooks,buffer,2,1,2,$PACKAGE_VERSION,$commit,\"posix,sysv,self\"$"
expect_out "^$tmp/b.json,cashmere-stats/1,sor,sor,--size test,treadmarks,,,,,2,1,2,$PACKAGE_VERSION,$commit,\"posix,sysv,self\"$"
# A field with commas is quoted: the description.
expect_ok "$STATS_TOOL" -c description,program "$tmp/a.json"
expect_out '^"cashmere CHSM: CH: a fault copies .*",sor$'

note "every total, as the files have it"
expect_ok "$STATS_TOOL" -c "$values" "$tmp/a.json" "$tmp/b.json"
i=0
for f in a b; do
    i=$((i + 1))
    row=$(csv_rows | sed -n "${i}p")
    k=0
    for name in ${values//,/ }; do
        k=$((k + 1))
        want=$(json_total "$name" "$tmp/$f.json")
        got=$(cut -d, -f$k <<< "$row")
        [ -n "$want" ] && [ "$got" = "$want" ] || fail "$f.json: $name is '$got' in the CSV, '$want' in the file"
    done
done
[ "$(json_total read_faults "$tmp/a.json")" -gt 0 ] || fail "no read fault in a Cashmere run"
[ "$(json_total msgs "$tmp/b.json")" -gt 0 ] || fail "no message in a TreadMarks run"

note "waits on peers per event, over TCP: a remote page costs a read fault a wait at least, a job of one process waits on nobody"
events="waits_read_fault waits_write_fault waits_first_touch waits_release waits_acquire waits_lock waits_barrier"
for proto in cashmere treadmarks; do
    expect_ok env CM_PROTOCOL=$proto CM_STATS="$tmp/w.json" UCX_TLS=tcp UCX_NET_DEVICES=lo \
        "$CMRUN" -n 2 gauss --size test
    faults=$(json_total read_faults "$tmp/w.json")
    waits=$(json_total waits "$tmp/w.json")
    sum=0
    for e in $events; do sum=$((sum + $(json_total $e "$tmp/w.json"))); done
    echo "  $proto: $faults read faults, $(json_total waits_read_fault "$tmp/w.json") waits in them; $waits waits, $sum in events"
    [ "$faults" -gt 0 ] && [ "$(json_total waits_read_fault "$tmp/w.json")" -gt 0 ] ||
        fail "$proto over TCP: no wait in $faults read faults"
    [ "$sum" -gt 0 ] && [ "$sum" -le "$waits" ] || fail "$proto: $sum waits in events, $waits in all"
    expect_ok env CM_PROTOCOL=$proto CM_STATS="$tmp/w.json" "$CMRUN" -n 1 gauss --size test
    [ "$(json_total waits "$tmp/w.json")" = 0 ] || fail "$proto, one process: $(json_total waits "$tmp/w.json") waits"
done

note "--per-process: a row per process; the totals are their sums, total_ns their longest"
expect_ok "$STATS_TOOL" --per-process -c file,rank,host,pid,local_procs,total_ns,read_faults,msgs \
    "$tmp/a.json" "$tmp/b.json"
[ "$(csv_rows | wc -l)" -eq 4 ] || fail "not 4 rows for 2 jobs of 2 processes"
[ "$(csv_rows | cut -d, -f2 | paste -sd' ')" = "0 1 0 1" ] || fail "ranks: $(csv_rows | cut -d, -f2)"
[ "$(csv_rows | cut -d, -f5 | sort -u)" = 2 ] || fail "local_procs is not 2"
for f in a b; do
    sums=$(csv_rows | awk -F, -v f="$tmp/$f.json" '$1 == f { if ($6 > t) t = $6; r += $7; m += $8 }
                                                    END { print t, r, m }')
    want="$(json_total total_ns "$tmp/$f.json") $(json_total read_faults "$tmp/$f.json") $(json_total msgs "$tmp/$f.json")"
    [ "$sums" = "$want" ] || fail "$f.json: processes give '$sums', the total '$want'"
done

note "strings escaped in the file come back whole; CSV quoting (RFC 4180)"
printf '%s' '{"schema": "cashmere-stats/1", "program": "a,\"b\"\\c\nd \u00e9",
  "args": ["x", "y z"], "variant": null, "processes": [], "total": {"timers": {"t_ns": 1}}}' > "$tmp/s.json"
# (from standard input: run gives a command /dev/null)
expect_ok bash -c '"$0" -c file,program,args,variant,t_ns - < "$1"' "$STATS_TOOL" "$tmp/s.json"
[ "$out" = "$(printf 'file,program,args,variant,t_ns\n-,"a,""b""\\c\nd \303\251",x y z,,1')" ] ||
    fail "escaping: $out"

note "the schema's columns whichever files: TreadMarks runs only still have the variant's"
expect_ok "$STATS_TOOL" "$tmp/b.json"
[ "$(printf '%s\n' "$out" | head -1)" = "$run_cols,$values" ] ||
    fail "header: $(printf '%s\n' "$out" | head -1)"
expect_ok "$STATS_TOOL" -p "$tmp/b.json"
[ "$(printf '%s\n' "$out" | head -1)" = "$run_cols,rank,host,local_procs,pid,transports,$values" ] ||
    fail "header: $(printf '%s\n' "$out" | head -1)"

note "--help, --version; bad options: one line, exit 2"
expect_ok "$STATS_TOOL" --help
expect_out "^usage: cm_stats \[--per-process\] \[--columns LIST\] FILE\.\.\.$"
expect_version "$STATS_TOOL" cm_stats
for bad in "" "--bogus $tmp/a.json" "--columns" "-c nope $tmp/a.json"; do
    # shellcheck disable=SC2086
    expect_usage_error 30 "^cm_stats: .*\(see cm_stats --help\)$" "$STATS_TOOL" $bad
done
# A member's last name alone: the column it names.
expect_usage_error 30 "^cm_stats: --columns: no column 'nprocs' in these files \(did you mean job\.nprocs\?\)$" \
    "$STATS_TOOL" -c nprocs "$tmp/a.json"

note "files it cannot use: one line naming the file, exit 1"
head -c 300 "$tmp/a.json" > "$tmp/cut.json"
echo '{"schema": "cashmere-stats/2", "processes": [], "total": {}}' > "$tmp/v2.json"
expect_ok "$CMRUN" -n 2 "$CM_BENCH" --json --batches 1
printf '%s\n' "$out" | sed -n '/^{$/,/^}$/p' > "$tmp/bench.json"
for bad in "$tmp/none.json:cannot read" "$tmp/cut.json:not JSON: line [0-9]+: " \
           "$tmp/v2.json:schema cashmere-stats/2: this cm_stats reads cashmere-stats/1" \
           "$tmp/bench.json:not a statistics file"; do
    run 30 "$STATS_TOOL" "$tmp/a.json" "${bad%%:*}"
    [ "$rc" -eq 1 ] || fail "cm_stats ${bad%%:*}: exit $rc, not 1"
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "cm_stats ${bad%%:*}: not one line"
    expect_out "^cm_stats: ${bad%%:*}: ${bad#*:}"
done
echo "PASS"
