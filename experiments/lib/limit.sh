# SPDX-License-Identifier: BSD-3-Clause
# The link model: what a run's own traffic costs on the link it ran over, as a lower bound on
# its time, for the scoreboard's two-host mode. Sourced by bash after common.sh (STATS_TOOL).
#
# The link is measured in the same session (exp_link_probe): its round trip (RTT: cm_bench's
# null active-message round trip, what any request and its answer cost) and its bandwidth (BW:
# cm_bench's get bandwidth with 16 gets of 1 MiB in flight). A run's statistics (CM_STATS,
# the timed section only: the apps call cm_stats_reset and cm_stats_stop) say what its protocol
# had to move and how often it had to wait for the other side. For process r of P:
#
#   data_r  = max(bytes into r, bytes out of r) / BW
#             into r: its gets (bytes_got) and the others' puts and messages, their share of
#             them (divided among the P-1 others); out of r: its puts and messages
#   sync_r  = barriers x ceil(log2 P) x RTT/2   (a barrier: log2 P rounds of one message)
#           + remote lock acquires x RTT/2      (a hand-off: one message)
#   fetch_r = min(fetches, acquires + 1) x RTT  (fetches: pages and lines fetched, TreadMarks's
#             page and diff requests; those of one interval can share a round trip, so at least
#             one per interval that fetched, at most one per fetch)
#   limit   = T_seq / P + max_r (data_r + sync_r + fetch_r)
#
# T_seq is the sequential program's time in the same session: the computation divided
# perfectly, plus what the link must carry, not overlapped with it. With one process per host
# every byte and message crosses the link (the scoreboard's two-host mode); with more, traffic
# inside a host is charged as if it crossed, so the limit is then higher than the link's own.

# exp_link_probe LOG CMD...: runs CMD (a two-process cm_bench --json across the hosts), keeps
# its output in LOG and prints "RTT_US BW_MBS", or returns 1.
exp_link_probe() {
    local out log=$1
    shift
    out=$("$@" 2>&1)
    printf '%s\n' "$out" > "$log"
    awk '
        /"name": "message round trip \(null\)"/ { if (match($0, /"cm": [0-9.]+/)) rtt = substr($0, RSTART + 6, RLENGTH - 6) }
        /"name": "get bandwidth \(16 in flight\)", "size": 1048576/ { if (match($0, /"cm": [0-9.]+/)) bw = substr($0, RSTART + 6, RLENGTH - 6) }
        END { if (rtt == "" || bw == "") exit 1; print rtt, bw }' <<< "$out"
}

# exp_limit STATS_JSON RTT_US BW_MBS SEQ_S: the run's limit in seconds (empty if its statistics
# cannot be read).
exp_limit() {
    local json=$1 rtt=$2 bw=$3 seq=$4
    [ -s "$json" ] || return 0
    "$STATS_TOOL" --per-process --columns job.nprocs,bytes_got,bytes_put,msg_bytes,barriers,lock_acquires_remote,acquires,pages_fetched,line_fills,msgs_page_req,msgs_diff_req \
        "$json" 2>/dev/null | awk -F, -v rtt="$rtt" -v bw="$bw" -v seq="$seq" '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        function v(name) { return (name in c) ? $(c[name]) + 0 : 0 }
        {
            r = NR - 1; np = v("job.nprocs")
            got[r] = v("bytes_got"); sent[r] = v("bytes_put") + v("msg_bytes")
            bars[r] = v("barriers"); locks[r] = v("lock_acquires_remote"); acq[r] = v("acquires")
            fetch[r] = v("pages_fetched") + v("line_fills") + v("msgs_page_req") + v("msgs_diff_req")
            allsent += sent[r]
        }
        END {
            if (r == 0 || np < 1 || bw <= 0) exit
            rounds = 0; for (d = 1; d < np; d *= 2) rounds++
            worst = 0
            for (i = 1; i <= r; i++) {
                in_ = got[i] + (np > 1 ? (allsent - sent[i]) / (np - 1) : 0)
                out = sent[i]
                data = (in_ > out ? in_ : out) / (bw * 1e6)
                sync = (bars[i] * rounds + locks[i]) * rtt / 2e6
                f = fetch[i] < acq[i] + 1 ? fetch[i] : acq[i] + 1
                t = data + sync + f * rtt / 1e6
                if (t > worst) worst = t
            }
            printf "%.6f\n", seq / np + worst
        }'
}
