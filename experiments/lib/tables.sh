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

# The cells: median, min and max of the verified runs; the worst verdict of any run.
awk -F, -v commit="$commit" -v size="$size" '
NR == 1 { next }
$8 == commit && $9 == size {
    c = $2 "," $3 "," $4 "," $5 "," $6
    if (!(c in seen)) { seen[c] = 1; order[++n] = c; v[c] = "OK" }
    if ($11 == "OK") { t[c] = t[c] " " $10; k[c]++ } else if (v[c] == "OK") v[c] = $11
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
    awk -F, -v pfig="$pfig" -v settings="$*" '
    NR == 1 { next }
    $3 == pfig && $4 == 0 {
        if (!($1 in seen)) { seen[$1] = 1; apps[++na] = $1 }
        if ($10 == "OK" && $9 > 0) { med[$1, $2] = $6; lo[$1, $2] = $7; hi[$1, $2] = $8
            if ($2 !~ /^treadmarks/ && (best[$1] == "" || $6 < best[$1])) { best[$1] = $6; bs[$1] = $2 } }
        else bad[$1, $2] = $10
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
        if awk -F, 'NR > 1 && $6 != "" && $9 != "NHHM" { x = 1 } END { exit x }' "$out/$fig.csv"; then
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
awk -F, -v commit="$commit" -v size="$size" -v pfig="$pfig" '
NR == 1 { next }
$8 == commit && $9 == size && $4 == pfig && $5 == 0 && $11 == "OK" && $12 > 0 &&
($3 == "treadmarks" || $3 == "treadmarks-scan" || $3 == "CHHM" || $3 == "NHHM") {
    k = $2 "," $3
    if (!(k in n)) order[++no] = k
    n[k]++
    # total fault lock barrier release acquire handler offload line page wt data twin = $13..$25
    tot[k] += $13; dw[k] += $21 + $24; pc[k] += $22; pr[k] += $14 + $17 + $18
    wt[k] += $23; td[k] += $25; sy[k] += $15 + $16; hd[k] += $19 + $20
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
sweep() { # FIG COLUMN(4: latency, 5: bandwidth) FIXED-COLUMN FIXED-VALUE REFPOINT XNAME TITLE
    local fig=$1 col=$2 fcol=$3 fval=$4 refx=$5 xname=$6 title=$7 notes
    awk -F, -v pfig="$pfig" -v col="$col" -v fcol="$fcol" -v fval="$fval" -v refx="$refx" -v xname="$xname" '
    NR == 1 { next }
    $3 == pfig && $4 != 0 && $fcol == fval {
        k = $1 "," $2 "," $col
        if (!(k in seen)) { seen[k] = 1; order[++no] = k }
        if ($10 == "OK" && $9 > 0) { med[k] = $6; lo[k] = $7; hi[k] = $8
            if ($col == refx && $2 != "treadmarks" && (best[$1] == "" || $6 < best[$1])) { best[$1] = $6; bs[$1] = $2 }
            if ($col == refx && $2 == "NHHM") { nh[$1] = $6 } }
        else bad[k] = $10
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
sweep fig7 4 5 400 1 latency_us "Fig. 7: network latency (400 MB/s)"
sweep fig8 5 4 1 400 bandwidth_mbs "Fig. 8: network bandwidth (1 us)"

# Table 2: TreadMarks / the best Cashmere variant, at every process count.
awk -F, '
NR == 1 { next }
$4 == 0 && $10 == "OK" && $9 > 0 {
    k = $1 "," $3
    if (!(k in seen)) { seen[k] = 1; order[++no] = k }
    if ($2 == "treadmarks") tm[k] = $6
    else if ($2 == "treadmarks-scan") ts[k] = $6
    else {
        if (best[k] == "" || $6 < best[k]) { best[k] = $6; bs[k] = $2 }
        if ($2 == "NHHM") nh[k] = $6
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
