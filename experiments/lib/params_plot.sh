#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# params_plot.sh CSV OUTBASE: one figure of experiments/params with gnuplot, OUTBASE.png and
# OUTBASE.svg, from PARAM.csv (app,protocol,value,norm,median_s,min_s): one panel per app, a
# line per protocol, time over the protocol's achievable time against the parameter's values (the
# seed's figures 5, 7, 8, 10, 13, 14; evenly spaced, as the seed's points are). The parameter is
# the CSV's name. Fails (non-zero, the reason on stderr) on a CSV without those columns or data,
# or when gnuplot reports an error.
set -eu
csv=$1 base=$2
param=$(basename "$csv" .csv)
[ -s "$csv" ] || { echo "params_plot.sh: $csv: missing or empty" >&2; exit 1; }
[ "$(head -1 "$csv")" = "app,protocol,value,norm,median_s,min_s" ] ||
    { echo "params_plot.sh: $csv: not a sweep's columns (header: $(head -1 "$csv"))" >&2; exit 1; }
[ "$(tail -n +2 "$csv" | grep -c .)" -gt 0 ] || { echo "params_plot.sh: $csv: no data" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
case $param in
    overhead)  xl="host overhead (cycles per message)"; title="Host overhead (CM_NET_OVERHEAD)" ;;
    occupancy) xl="NI occupancy (cycles per 4 KiB packet)"; title="Network interface occupancy (CM_NET_OCCUPANCY)" ;;
    bandwidth) xl="I/O bus bandwidth (MB/s per MHz)"; title="Node-to-network bandwidth (CM_NET_BANDWIDTH)" ;;
    interrupt) xl="interrupt cost (cycles to issue, as many to deliver)"; title="Interrupt cost (CM_NET_INTERRUPT)" ;;
    page)      xl="page size (KiB)"; title="Page size (CM_PAGE_SIZE)" ;;
    ppn)       xl="processes per node"; title="Processes per node (the same total)" ;;
    *)         xl=$param; title=$param ;;
esac
values=$(tail -n +2 "$csv" | cut -d, -f3 | sort -g -u | paste -sd' ')
apps=$(tail -n +2 "$csv" | cut -d, -f1 | awk '!s[$0]++' | paste -sd' ')
protos=$(tail -n +2 "$csv" | cut -d, -f2 | awk '!s[$0]++' | paste -sd' ')
napps=$(wc -w <<< "$apps")
cols=$(( napps < 3 ? napps : 3 )); rows=$(( (napps + cols - 1) / cols ))
# One data file per app and protocol: x (the value's index), y.
i=0
declare -A xi
for v in $values; do xi[$v]=$i; i=$((i + 1)); done
tics=$(for v in $values; do printf '"%s" %d, ' "$v" "${xi[$v]}"; done | sed 's/, $//')
while IFS=, read -r a p v n _; do
    echo "${xi[$v]} $n" >> "$tmp/$a.$p.dat"
done < <(tail -n +2 "$csv")
colour() { case $1 in treadmarks) echo '#000000' ;; cashmere) echo '#1f77b4' ;; twolevel) echo '#2ca02c' ;; *) echo '#8c564b' ;; esac; }
w=$((cols * 380)) h=$((rows * 300 + 60))
for t in "pngcairo size $w,$h font 'sans,9'" "svg size $w,$h dynamic font 'sans,10'"; do
    ext=png; [[ $t == svg* ]] && ext=svg
    {
        echo "set terminal $t"; echo "set output '$base.$ext'"; echo "set termoption noenhanced"
        echo "set multiplot layout $rows,$cols title '$title: time over the achievable point, one panel per app'"
        echo "set xtics ($tics)"; echo "set xrange [-0.3:$((i - 1)).3]"; echo "set grid ytics"
        echo "set key top left font ',8'"; echo "set xlabel '$xl' font ',8'"; echo "set ylabel 'time / achievable'"
        for a in $apps; do
            echo "set title '$a'"
            plot="plot"
            for p in $protos; do
                [ -s "$tmp/$a.$p.dat" ] || continue
                plot="$plot '$tmp/$a.$p.dat' using 1:2 with linespoints lw 2 pt 7 lc rgb '$(colour "$p")' title '$p',"
            done
            [ "$plot" = plot ] && { echo "set multiplot next"; continue; }
            echo "${plot%,}"
        done
        echo "unset multiplot"
    } > "$tmp/plot.gp"
    gnuplot "$tmp/plot.gp" 2> "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
    if grep -qi "error\|warning" "$tmp/err"; then cat "$tmp/err" >&2; exit 1; fi
done
