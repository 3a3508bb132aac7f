#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# tables.sh RUNS.CSV OUTDIR COMMIT SIZE PROCS ABSENT
#
# From the runs of experiments/paper (runs.csv, one row per run) to the CSVs each figure is
# drawn from, with a .meta beside each (title, normalization, what is absent and why):
#   cells.csv    every cell: median, min, max over its verified runs, runs, verdict
#   fig1,3-6.csv app,setting,median_s,min_s,max_s,norm,norm_min,norm_max,ref
#   fig2.csv     app,setting,total_ms,data_wait_ms,page_copy_ms,protocol_ms,write_through_ms,
#                twins_diffs_ms,sync_ms,handler_ms,rest_ms (mean per process and run)
#   fig7.csv     app,setting,latency_us,...; fig8.csv app,setting,bandwidth_mbs,...
#   table2.csv   app,procs,treadmarks_s,treadmarks_scan_s,best,best_s,ratio,ratio_scan,ratio_nhhm
# PROCS: the process count of the figures. ABSENT: "VARIANT=why;..." and "sweep:VARIANT=why;".
set -eu
runs=$1 out=$2 commit=$3 size=$4 pfig=$5 absent=${6:-}
. "$(dirname "$0")/csv.sh"

# The cells: median, min and max of the verified runs; the worst verdict of any run.
awk -F, -v commit="$commit" -v size="$size" "$CSV_AWK"'
NR == 1 { csv_header(); next }
col("commit") == commit && col("size") == size {
    c = col("app") "," col("setting") "," col("procs") "," col("latency_us") "," col("bandwidth_mbs")
    if (!(c in seen)) { seen[c] = 1; order[++n] = c; v[c] = "OK" }
    if (col("verify") == "OK") { t[c] = t[c] " " col("time_s"); k[c]++ } else if (v[c] == "OK") v[c] = col("verify")
}
END {
    print "app,setting,procs,latency_us,bandwidth_mbs,median_s,min_s,max_s,runs,verify"
    for (i = 1; i <= n; i++) {
        c = order[i]; m = split(t[c], x, " ")
        for (a = 1; a <= m; a++) for (b = a + 1; b <= m; b++) if (x[b] + 0 < x[a] + 0) { y = x[a]; x[a] = x[b]; x[b] = y }
        if (m == 0) { printf "%s,,,,0,%s\n", c, v[c]; continue }
        med = (m % 2) ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2
        printf "%s,%.6f,%.6f,%.6f,%d,%s\n", c, med, x[1], x[m], m, v[c]
    }
}' "$runs" > "$out/cells.csv"

# why VARIANT: the reason it is absent, or nothing.
why() { tr ';' '\n' <<< "$absent" | sed -n "s/^$1=//p" | head -1; }

# normalized FIG "TITLE" SETTINGS...: one bar per setting and app at $pfig, no delay injected.
normalized() {
    local fig=$1 title=$2 notes="" s w
    shift 2
    for s in "$@"; do
        w=$(why "$s")
        [ -n "$w" ] && notes="$notes$s absent: $w. "
    done
    awk -F, -v pfig="$pfig" -v settings="$*" "$CSV_AWK"'
    NR == 1 { csv_header(); next }
    col("procs") == pfig && col("latency_us") == 0 {
        a = col("app"); s = col("setting"); m = col("median_s")
        if (!(a in seen)) { seen[a] = 1; apps[++na] = a }
        if (col("verify") == "OK" && col("runs") > 0) { med[a, s] = m; lo[a, s] = col("min_s"); hi[a, s] = col("max_s")
            if (s !~ /^treadmarks/ && (best[a] == "" || m < best[a])) { best[a] = m; bs[a] = s } }
        else bad[a, s] = col("verify")
    }
    END {
        print "app,setting,median_s,min_s,max_s,norm,norm_min,norm_max,ref"
        ns = split(settings, S, " ")
        for (a = 1; a <= na; a++) {
            app = apps[a]
            if ((app, "NHHM") in med) { ref = med[app, "NHHM"]; rn = "NHHM" } else { ref = best[app]; rn = bs[app] }
            for (i = 1; i <= ns; i++) {
                s = S[i]
                if ((app, s) in med && ref > 0)
                    printf "%s,%s,%.6f,%.6f,%.6f,%.4f,%.4f,%.4f,%s\n", app, s, med[app, s], lo[app, s], hi[app, s],
                        med[app, s] / ref, lo[app, s] / ref, hi[app, s] / ref, rn
                else if ((app, s) in bad)
                    printf "%s,%s,,,,,,,%s\n", app, s, bad[app, s]
            }
        }
    }' "$out/cells.csv" > "$out/$fig.csv"
    {
        echo "title: $title ($pfig processes, $size size)"
        echo "ylabel: time / NHHM's time"
        if awk -F, "$CSV_AWK"'NR == 1 { csv_header(); next } col("norm") != "" && col("ref") != "NHHM" { x = 1 } END { exit x }' "$out/$fig.csv"; then
            echo "note: normalized to NHHM; bars: median of the runs, whiskers: fastest and slowest. $notes"
        else
            echo "note: normalized to NHHM where it ran, otherwise to the best variant that did (column ref of the CSV). $notes"
        fi
    } > "$out/$fig.meta"
}

normalized fig1 "Fig. 1: TreadMarks and Cashmere" treadmarks treadmarks-scan CHHM NHHM
normalized fig3 "Fig. 3: Cashmere without a merge buffer" NHHM CHHM NHHN CHHN
normalized fig4 "Fig. 4: software line fills" NHHM CHHM NSHM NSHN
normalized fig5 "Fig. 5: software doubling, line transfers" treadmarks NHHM NSSN NSSM
normalized fig6 "Fig. 6: software doubling, page copying" treadmarks NHHM CHSN CHSM

# Fig. 2: the exclusive timers of every verified run at $pfig, as the paper's categories.
awk -F, -v commit="$commit" -v size="$size" -v pfig="$pfig" "$CSV_AWK"'
NR == 1 { csv_header(); next }
col("commit") == commit && col("size") == size && col("procs") == pfig && col("latency_us") == 0 &&
col("verify") == "OK" && col("nprocs_stats") > 0 &&
(col("setting") == "treadmarks" || col("setting") == "treadmarks-scan" || col("setting") == "CHHM" ||
 col("setting") == "NHHM") {
    k = col("app") "," col("setting")
    if (!(k in n)) order[++no] = k
    n[k]++
    tot[k] += col("total_ns"); dw[k] += col("line_fill_ns") + col("data_wait_ns"); pc[k] += col("page_copy_ns")
    pr[k] += col("fault_ns") + col("release_ns") + col("acquire_ns")
    wt[k] += col("write_through_ns"); td[k] += col("twin_diff_ns")
    sy[k] += col("lock_wait_ns") + col("barrier_ns"); hd[k] += col("handler_ns") + col("offload_cpu_ns")
}
END {
    print "app,setting,total_ms,data_wait_ms,page_copy_ms,protocol_ms,write_through_ms,twins_diffs_ms,sync_ms,handler_ms,rest_ms"
    for (i = 1; i <= no; i++) {
        k = order[i]; c = n[k] * 1e6
        rest = tot[k] - dw[k] - pc[k] - pr[k] - wt[k] - td[k] - sy[k]
        if (rest < 0) rest = 0
        printf "%s,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f\n", k, tot[k] / c, dw[k] / c, pc[k] / c,
            pr[k] / c, wt[k] / c, td[k] / c, sy[k] / c, hd[k] / c, rest / c
    }
}' "$runs" > "$out/fig2.csv"
{
    echo "title: Fig. 2: where the time goes ($pfig processes, $size size)"
    echo "ylabel: ms per process"
    echo "note: exclusive timers (CM_STATS), mean per process and run. Handler: TreadMarks requests served by the progress thread, CHH*'s offload thread (on another thread, stacked on top). Store doubling by hooks and NHHM's remote cache misses are inside the rest (too fine-grained to time). $(w=$(why NHHM); [ -n "$w" ] && echo "NHHM absent: $w.")"
} > "$out/fig2.meta"

# Figs. 7 and 8: the sweeps, normalized per app to NHHM at 1 us and 400 MB/s, or the best
# Cashmere setting swept there.
sweep() { # FIG COLUMN FIXED-COLUMN FIXED-VALUE REFPOINT TITLE (columns of cells.csv by name)
    local fig=$1 xname=$2 fcol=$3 fval=$4 refx=$5 title=$6 notes
    awk -F, -v pfig="$pfig" -v fcol="$fcol" -v fval="$fval" -v refx="$refx" -v xname="$xname" "$CSV_AWK"'
    NR == 1 { csv_header(); next }
    col("procs") == pfig && col("latency_us") != 0 && col(fcol) == fval {
        a = col("app"); s = col("setting"); x = col(xname); m = col("median_s")
        k = a "," s "," x
        if (!(k in seen)) { seen[k] = 1; order[++no] = k }
        if (col("verify") == "OK" && col("runs") > 0) { med[k] = m; lo[k] = col("min_s"); hi[k] = col("max_s")
            if (x == refx && s != "treadmarks" && (best[a] == "" || m < best[a])) { best[a] = m; bs[a] = s }
            if (x == refx && s == "NHHM") { nh[a] = m } }
        else bad[k] = col("verify")
    }
    END {
        print "app,setting," xname ",median_s,min_s,max_s,norm,norm_min,norm_max,ref"
        for (i = 1; i <= no; i++) {
            k = order[i]; split(k, f, ",")
            ref = (f[1] in nh) ? nh[f[1]] : best[f[1]]; rn = (f[1] in nh) ? "NHHM" : bs[f[1]]
            if ((k in med) && ref > 0)
                printf "%s,%.6f,%.6f,%.6f,%.4f,%.4f,%.4f,%s\n", k, med[k], lo[k], hi[k], med[k] / ref, lo[k] / ref, hi[k] / ref, rn " at " refx
            else printf "%s,,,,,,,%s\n", k, bad[k]
        }
    }' "$out/cells.csv" > "$out/$fig.csv"
    if [ "$(wc -l < "$out/$fig.csv")" -le 1 ]; then rm -f "$out/$fig.csv"; return; fi
    notes=$(tr ';' '\n' <<< "$absent" | sed -n 's/^sweep:\([A-Z]*\)=\(.*\)/\1 absent: \2./p' | paste -sd' ')
    {
        echo "title: $title ($pfig processes, $size size)"
        echo "ylabel: time / reference"
        echo "note: normalized per app to NHHM at the reference point where it ran, otherwise to the fastest Cashmere setting there (CSV column ref). $notes"
    } > "$out/$fig.meta"
}
sweep fig7 latency_us bandwidth_mbs 400 1 "Fig. 7: network latency (400 MB/s)"
sweep fig8 bandwidth_mbs latency_us 1 400 "Fig. 8: network bandwidth (1 us)"

# Table 2: TreadMarks / the best Cashmere variant, at every process count.
awk -F, "$CSV_AWK"'
NR == 1 { csv_header(); next }
col("latency_us") == 0 && col("verify") == "OK" && col("runs") > 0 {
    k = col("app") "," col("procs"); s = col("setting"); m = col("median_s")
    if (!(k in seen)) { seen[k] = 1; order[++no] = k }
    if (s == "treadmarks") tm[k] = m
    else if (s == "treadmarks-scan") ts[k] = m
    else {
        if (best[k] == "" || m < best[k]) { best[k] = m; bs[k] = s }
        if (s == "NHHM") nh[k] = m
    }
}
END {
    print "app,procs,treadmarks_s,treadmarks_scan_s,best,best_s,ratio,ratio_scan,ratio_nhhm"
    for (i = 1; i <= no; i++) {
        k = order[i]
        printf "%s,%s,%s,%s,%s,%s,%s,%s\n", k, (k in tm) ? tm[k] : "", (k in ts) ? ts[k] : "", bs[k], best[k],
            ((k in tm) && best[k] > 0) ? sprintf("%.2f", tm[k] / best[k]) : "",
            ((k in ts) && best[k] > 0) ? sprintf("%.2f", ts[k] / best[k]) : "",
            ((k in tm) && (k in nh) && nh[k] > 0) ? sprintf("%.2f", tm[k] / nh[k]) : ""
    }
}' "$out/cells.csv" > "$out/table2.csv"
