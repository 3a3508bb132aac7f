#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# plot.sh FIG CSV OUTBASE: draws one figure of experiments/paper with gnuplot, as OUTBASE.png
# and OUTBASE.svg, from the CSV tables.sh wrote (and its .meta: title, ylabel, note; optional).
#   fig1, fig3-fig6  bars per app and setting, normalized (columns norm, norm_min, norm_max)
#   fig2             stacked bars: the overhead breakdown per app and setting
#   fig7, fig8       lines per setting against latency or bandwidth, one panel per app
# Fails (non-zero, the reason on stderr) on a CSV without the columns of its figure, with no
# data, or when gnuplot reports an error.
set -eu
fig=$1 csv=$2 base=$3
meta=${csv%.csv}.meta
[ -s "$csv" ] || { echo "plot.sh: $csv: missing or empty" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

field() { [ -f "$meta" ] && sed -n "s/^$1: //p" "$meta" | head -1 || true; }
title=$(field title); ylabel=$(field ylabel); note=$(field note)
: "${title:=$fig}" "${ylabel:=}"
# gnuplot strings in single quotes: double any quote inside.
q() { printf "'%s'" "${1//\'/\'\'}"; }
# notelabel TAG WIDTH HEIGHT: the note as a gnuplot label across the bottom of a figure WIDTH x
# HEIGHT pixels, wrapped to its width, its last line just above the bottom edge.
notelabel() {
    local w n
    w=$(fold -s -w $(($2 / 7)) <<< "$note" | sed 's/[[:space:]]*$//; s/\\/\\\\/g; s/"/\\"/g')
    n=$(wc -l <<< "$w")
    w=$(awk '{ printf "%s%s", (NR > 1 ? "\\n" : ""), $0 }' <<< "$w")
    echo "set label $1 \"$w\" at screen 0.01, screen $(awk -v n="$n" -v h="$3" 'BEGIN { printf "%.4f", (n * 11 + 2) / h }') left font ',8'"
}

# notelines WIDTH: how many lines the note takes in a figure WIDTH pixels wide.
notelines() { fold -s -w $(($1 / 7)) <<< "$note" | wc -l; }

# panel I COLS ROWS BOTTOM: origin and size of panel I (from 0, row by row) of a grid that
# leaves BOTTOM (a fraction of the height) to the note and the top 6% to the title.
panel() {
    awk -v i="$1" -v c="$2" -v r="$3" -v b="$4" 'BEGIN { w = 1 / c; h = (0.94 - b) / r
        printf "set origin %.4f,%.4f; set size %.4f,%.4f\n", (i % c) * w, b + (r - 1 - int(i / c)) * h, w, h }'
}

need() { # the header must name these columns
    local h c
    h=$(head -1 "$csv")
    for c in "$@"; do
        [[ ",$h," == *",$c,"* ]] || { echo "plot.sh: $csv: no column '$c' (header: $h)" >&2; exit 1; }
    done
}
col() { head -1 "$csv" | tr ',' '\n' | grep -nx "$1" | cut -d: -f1; }

. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# One colour per setting, the scoreboard's; without a merge buffer, the lighter tint.
colour() { exp_colour "$1" light; }

terminals() { # the gnuplot script $1 drawn twice: PNG and SVG, at width $2, height $3
    local t
    for t in "pngcairo size $2,$3 font 'sans,10'" "svg size $2,$3 dynamic font 'sans,11'"; do
        local ext=png
        [[ $t == svg* ]] && ext=svg
        { echo "set terminal $t"; echo "set output $(q "$base.$ext")"; echo "set termoption noenhanced"
          cat "$1"; } > "$tmp/run.gp"
        gnuplot "$tmp/run.gp" 2> "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
        # gnuplot reports some problems (an empty plot, a bad range) only as warnings.
        if grep -Eiq 'warning: (skipping|empty|no valid)|all points' "$tmp/err"; then
            cat "$tmp/err" >&2; exit 1
        fi
        [ -s "$base.$ext" ] || { echo "plot.sh: gnuplot wrote no $base.$ext" >&2; exit 1; }
    done
}

case $fig in
fig1|fig3|fig4|fig5|fig6)
    need app setting norm norm_min norm_max
    cn=$(col norm); cl=$(col norm_min); ch=$(col norm_max)
    # Wide: one row per app, three columns per setting ("?" where it has no bar).
    settings=$(awk -F, 'NR > 1 && !s[$2]++ { printf "%s ", $2 }' "$csv")
    awk -F, -v cn="$cn" -v cl="$cl" -v ch="$ch" -v settings="$settings" '
        NR == 1 { next }
        { if (!($1 in seen)) { seen[$1] = 1; apps[++na] = $1 } if ($cn != "") { v[$1, $2] = $cn " " $cl " " $ch } }
        END { ns = split(settings, S, " ")
              for (a = 1; a <= na; a++) { printf "%s", apps[a]
                  for (i = 1; i <= ns; i++) printf " %s", ((apps[a], S[i]) in v) ? v[apps[a], S[i]] : "? ? ?"
                  printf "\n" } }' "$csv" > "$tmp/d"
    [ -s "$tmp/d" ] && [ -n "$settings" ] || { echo "plot.sh: $csv: no rows" >&2; exit 1; }
    read -r lo hi < <(awk -F, -v cl="$cl" -v ch="$ch" 'NR > 1 && $cl != "" { if (lo == "" || $cl < lo) lo = $cl; if ($ch > hi) hi = $ch }
        END { if (lo == "") exit 1; print lo, hi }' "$csv") || { echo "plot.sh: $csv: no bar has a value" >&2; exit 1; }
    napps=$(wc -l < "$tmp/d")
    width=$((300 + napps * 24 * $(wc -w <<< "$settings")))
    (( width < 640 )) && width=640
    {
        echo "set title $(q "$title")"
        notelabel 1 $width 560
        echo "set bmargin 7; set key outside top center horizontal; set grid ytics"
        echo "set ylabel $(q "$ylabel"); set datafile missing '?'"
        echo "set style data histogram; set style histogram errorbars gap 2 lw 1; set style fill solid 0.85 border -1"
        echo "set xtics nomirror; set xrange [-0.6:$napps - 0.4]"
        if awk -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(hi / lo > 20) }'; then
            echo "set logscale y; set yrange [$lo / 1.5:$hi * 1.5]"
        else
            echo "set yrange [0:$hi * 1.12]"
        fi
        plot="" i=0
        for s in $settings; do
            c=$((2 + 3 * i))
            plot="$plot${plot:+, }'$tmp/d' using $c:$((c + 1)):$((c + 2))$([ $i = 0 ] && echo ':xtic(1)') title '$s' lc rgb '$(colour "$s")'"
            i=$((i + 1))
        done
        echo "plot $plot, 1 with lines dt 2 lc 'black' notitle"
    } > "$tmp/p.gp"
    terminals "$tmp/p.gp" $width 560
    ;;
fig2)
    need app setting data_wait_ms page_copy_ms protocol_ms write_through_ms twins_diffs_ms sync_ms handler_ms rest_ms
    apps=$(awk -F, 'NR > 1 && !s[$1]++ { printf "%s ", $1 }' "$csv")
    [ -n "$apps" ] || { echo "plot.sh: $csv: no rows" >&2; exit 1; }
    napps=$(wc -w <<< "$apps")
    cols=3; (( napps < cols )) && cols=$napps
    (( cols < 2 )) && cols=2
    rows=$(( (napps + 1 + cols - 1) / cols ))   # one more cell for the key
    width=$((cols * 380)); noteh=$(( $(notelines $width) * 11 + 12 )); height=$((rows * 330 + noteh))
    bottom=$(awk -v n="$noteh" -v h="$height" 'BEGIN { printf "%.4f", n / h }')
    names=(data_wait_ms page_copy_ms protocol_ms write_through_ms twins_diffs_ms sync_ms handler_ms rest_ms)
    labels=("data wait (faults, line misses)" "page copying" "protocol processing" "write-through, merge"
            "twins, diffs, write scans" "synchronization wait" "interrupts, offload thread" "rest (computation)")
    colours=('#d62728' '#ff7f0e' '#1f77b4' '#2ca02c' '#9467bd' '#8c564b' '#e377c2' '#dddddd')
    {
        echo "set multiplot title $(q "$title")"
        echo "set style data histogram; set style histogram rowstacked; set style fill solid 0.9 border -1"
        echo "set boxwidth 0.7; set grid ytics; set ylabel $(q "$ylabel"); set key off; set yrange [0:*]"
        echo "set xtics rotate by -30 font ',9'"
        idx=0
        for app in $apps; do
            awk -F, -v app="$app" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                $1 == app { printf "%s %s %s %s %s %s %s %s %s\n", $2, $c["data_wait_ms"], $c["page_copy_ms"], $c["protocol_ms"],
                    $c["write_through_ms"], $c["twins_diffs_ms"], $c["sync_ms"], $c["rest_ms"], $c["handler_ms"] }' "$csv" > "$tmp/d$idx"
            echo "set title $(q "$app")"
            panel $idx $cols $rows $bottom
            plot="'$tmp/d$idx' using 2:xtic(1) lc rgb '${colours[0]}'"
            order=(0 1 2 3 4 5 7 6)   # the rest before the other thread's time, stacked on top
            for j in 1 2 3 4 5 6 7; do
                k=${order[$j]}
                plot="$plot, '' using $((j + 2)) lc rgb '${colours[$k]}'"
            done
            echo "plot $plot"
            idx=$((idx + 1))
        done
        # A last panel holding only the key.
        echo "unset title; unset xtics; unset ytics; unset ylabel; unset grid; unset border; set yrange [0:1]; set xrange [0:1]"
        echo "set key inside center center vertical font ',9'"
        panel $idx $cols $rows $bottom
        keys="" order=(0 1 2 3 4 5 7 6)
        for j in 0 1 2 3 4 5 6 7; do
            k=${order[$j]}
            keys="$keys${keys:+, }NaN with boxes fill solid 0.9 lc rgb '${colours[$k]}' title $(q "${labels[$k]}")"
        done
        notelabel 2 $width $height
        echo "plot $keys"
        echo "unset multiplot"
    } > "$tmp/p.gp"
    terminals "$tmp/p.gp" $width $height
    ;;
fig7|fig8)
    x=$([ $fig = fig7 ] && echo latency_us || echo bandwidth_mbs)
    xl=$([ $fig = fig7 ] && echo "latency (us)" || echo "bandwidth (MB/s)")
    need app setting "$x" norm norm_min norm_max
    cx=$(col "$x"); cn=$(col norm); cl=$(col norm_min); ch=$(col norm_max)
    apps=$(awk -F, 'NR > 1 && !s[$1]++ { printf "%s ", $1 }' "$csv")
    [ -n "$apps" ] || { echo "plot.sh: $csv: no rows" >&2; exit 1; }
    napps=$(wc -w <<< "$apps")
    cols=2; (( napps < cols )) && cols=$napps
    rows=$(( (napps + cols - 1) / cols ))
    xs=$(awk -F, -v cx="$cx" 'NR > 1 { print $cx }' "$csv" | sort -gu | paste -sd,)
    read -r xlo xhi < <(tr , ' ' <<< "$xs" | awk '{ print $1 / 1.3, $NF * 1.3 }')
    width=$((cols * 480)); (( width < 640 )) && width=640
    noteh=$(( $(notelines $width) * 11 + 12 )); height=$((rows * 380 + noteh))
    bottom=$(awk -v n="$noteh" -v h="$height" 'BEGIN { printf "%.4f", n / h }')
    {
        echo "set multiplot title $(q "$title")"
        echo "set logscale x; set xtics ($xs); set xrange [$xlo:$xhi]; set grid; set key below horizontal font ',9'"
        echo "set xlabel $(q "$xl"); set ylabel $(q "$ylabel")"
        notelabel 9 $width $height
        idx=0 p=0
        for app in $apps; do
            plot=""
            for s in $(awk -F, -v app="$app" -v cn="$cn" 'NR > 1 && $1 == app && $cn != "" && !u[$2]++ { print $2 }' "$csv"); do
                awk -F, -v app="$app" -v s="$s" -v cx="$cx" -v cn="$cn" -v cl="$cl" -v ch="$ch" \
                    'NR > 1 && $1 == app && $2 == s && $cn != "" { print $cx, $cn, $cl, $ch }' "$csv" | sort -g > "$tmp/d$idx"
                plot="$plot${plot:+, }'$tmp/d$idx' using 1:2:3:4 with yerrorlines lw 2 pt 7 lc rgb '$(colour "$s")' title '$s'"
                idx=$((idx + 1))
            done
            [ -n "$plot" ] || { echo "plot.sh: $csv: $app has no point with a value" >&2; exit 1; }
            echo "set title $(q "$app")"
            panel $p $cols $rows $bottom
            p=$((p + 1))
            echo "plot $plot, 1 with lines dt 2 lc 'black' notitle"
        done
        echo "unset multiplot"
    } > "$tmp/p.gp"
    terminals "$tmp/p.gp" $width $height
    ;;
*)
    echo "plot.sh: unknown figure '$fig' (fig1 to fig8)" >&2; exit 2 ;;
esac
