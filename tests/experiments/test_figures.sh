#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# experiments/paper's tables, figures and report on a fixed set of runs (tests/experiments/
# runs.csv: three apps, every setting at 2 and 4 processes, a sweep, one failed run), so that
# a broken table, plot or verdict fails here rather than in a study: the normalized values,
# Table 2, all eight figures as PNG and SVG, a verdict per finding (each one known from the
# fixture), and a figure script that refuses a CSV it cannot draw.
. "$top_srcdir/tests/lib.sh"
lib="$top_srcdir/experiments/lib"
runs="$top_srcdir/tests/experiments/runs.csv"
command -v gnuplot >/dev/null 2>&1 || skip "gnuplot is not installed (Debian: gnuplot-nox)"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT

# The figures colour each variant by its mechanisms, read through cm_info (experiments/lib/common.sh).
export CM_INFO

note "tables from the fixed runs"
"$lib/tables.sh" "$runs" "$d" fixture test 2 "NHHN=left out by --variants;sweep:NHHM=cannot be delayed" ||
    fail "tables.sh failed"
# Fig. 1 row: median of 3.0, 3.15, 2.91 over NHHM's median of 1.0.
grep -qx 'sor,treadmarks,3.000000,2.910000,3.150000,3.0000,2.9100,3.1500,NHHM' "$d/fig1.csv" ||
    fail "fig1.csv: sor's TreadMarks row is not normalized to NHHM: $(grep '^sor,treadmarks,' "$d/fig1.csv")"
grep -q '^gauss,NSSM,' "$d/fig5.csv" || fail "fig5.csv lacks gauss NSSM at 2 processes"
grep -qx 'gauss,NSSM,4,0,0,,,,0,FAILED' "$d/cells.csv" || fail "the failed cell is not marked FAILED in cells.csv"
grep -qx 'gauss,4,9.600000,4.800000,NHHM,1.100000,8.73,4.36,8.73' "$d/table2.csv" ||
    fail "table2.csv: gauss at 4 processes: $(grep '^gauss,4,' "$d/table2.csv")"
grep -qx 'sor,2,3.000000,2.000000,CHHM,0.900000,3.33,2.22,3.00' "$d/table2.csv" ||
    fail "table2.csv: the best variant of sor at 2 processes is CHHM: $(grep '^sor,2,' "$d/table2.csv")"
# Fig. 7 is normalized to the best Cashmere setting at 1 us (NSHM), NHHM being absent.
awk -F, '$1 == "sor_l" && $2 == "NSHM" && $3 == 1 && $7 == "1.0000" && $10 == "NSHM at 1" { f = 1 } END { exit !f }' \
    "$d/fig7.csv" || fail "fig7.csv: not normalized to NSHM at 1 us"
grep -q 'NHHM absent: cannot be delayed' "$d/fig7.meta" || fail "fig7.meta does not say why NHHM is absent"
# Fig. 2: the categories add up to the total for an app-thread-only setting (NHHM: 0.4 ms).
awk -F, '$1 == "sor" && $2 == "NHHM" { s = $4 + $5 + $6 + $7 + $8 + $9 + $11; f = (s > 0.399 && s < 0.401 && $3 == 0.4) }
         END { exit !f }' "$d/fig2.csv" || fail "fig2.csv: NHHM's categories do not add up to its total"

note "all eight figures, PNG and SVG"
for f in 1 2 3 4 5 6 7 8; do
    "$lib/plot.sh" "fig$f" "$d/fig$f.csv" "$d/fig$f" || fail "plot.sh fig$f failed"
    [ -s "$d/fig$f.png" ] && head -c 8 "$d/fig$f.png" | grep -q PNG || fail "fig$f.png is not a PNG"
    grep -q '<svg' "$d/fig$f.svg" || fail "fig$f.svg is not an SVG"
done
for s in treadmarks treadmarks-scan CHHM NHHM; do
    grep -q ">$s<" "$d/fig1.svg" || fail "fig1.svg has no series '$s'"
done
grep -q '>synchronization wait<' "$d/fig2.svg" || fail "fig2.svg has no breakdown key"
grep -q '>NSHM<' "$d/fig8.svg" || fail "fig8.svg has no NSHM line"
# Colours from the mechanisms (cm_info --variants): NHHM and NHHN one pair, NHHN the light tint.
for c in 'rgb(214,  39,  40)' 'rgb(255, 152, 150)' 'rgb( 44, 160,  44)' 'rgb(152, 223, 138)'; do
    grep -qF "$c" "$d/fig3.svg" || fail "fig3.svg lacks the colour $c of its mechanisms"
done

note "a verdict per finding, each the one the fixture implies"
printf 'mode: full; size: test; processes: 2 4 (figures at 2); repetitions: 3\ncpus: 2 (test)\n' > "$d/record.txt"
"$lib/report.sh" "$d" > "$d/REPORT.md" || fail "report.sh failed"
want="1 CONFIRMED|2 CONFIRMED|3 CONFIRMED|4 CONFIRMED|5 CONFIRMED|6a CONFIRMED|6b CONFIRMED|7a CONFIRMED|7b CONFIRMED|8 REFUTED"
got=$(awk -F' [|] ' '/^\| [0-9]/ { sub(/^\| /, "", $1); printf "%s%s %s", (n++ ? "|" : ""), $1, $3 }' "$d/REPORT.md")
[ "$got" = "$want" ] || fail "verdicts: $got (expected $want)"
grep -q 'TreadMarks/NHHM from 2.00 (mgrid) to 12.00 (gauss)' "$d/REPORT.md" || fail "finding 2 lacks its numbers"
for f in 1 2 3 4 5 6 7 8; do grep -q "(fig$f.png)" "$d/REPORT.md" || fail "REPORT.md does not embed fig$f"; done
grep -q '^| gauss | 2.24 | 5.80 | NHHM 1.000000 s | 12.00 | 6.00 | 12.00 |' "$d/REPORT.md" || fail "REPORT.md: Table 2 row of gauss"

note "quick mode: every verdict labelled not meaningful, the way it would read kept"
mkdir "$d/q" && cp "$d"/*.csv "$d"/*.meta "$d/q/" 2>/dev/null
printf 'mode: quick; size: test; processes: 2 4 (figures at 2); repetitions: 1\ncpus: 2 (test)\n' > "$d/q/record.txt"
"$lib/report.sh" "$d/q" > "$d/q/REPORT.md" || fail "report.sh failed in quick mode"
grep -q '^\*\*Quick mode: these verdicts are not meaningful.\*\*' "$d/q/REPORT.md" || fail "quick REPORT.md lacks its warning"
got=$(awk -F' [|] ' '/^\| [0-9]/ { sub(/^\| /, "", $1); printf "%s%s %s", (n++ ? "|" : ""), $1, $3 }' "$d/q/REPORT.md")
want_q=$(echo "$want" | sed -E 's/ (CONFIRMED|REFUTED)/ not meaningful (quick; reads \1)/g')
[ "$got" = "$want_q" ] || fail "quick verdicts: $got (expected $want_q)"

note "a verdict follows the numbers: CHHM faster than NHHM on gauss refutes finding 3"
sed 's/^\(gauss:CHHM:2:[^,]*,gauss,CHHM,2,0,0,[0-9],fixture,test,\)[0-9.]*/\10.500000/' "$runs" > "$d/runs2.csv"
mkdir "$d/b" && cp "$d/record.txt" "$d/b/"
"$lib/tables.sh" "$d/runs2.csv" "$d/b" fixture test 2 "" && "$lib/report.sh" "$d/b" > "$d/b/REPORT.md" ||
    fail "tables or report failed on the changed runs"
grep -q '^| 3 | .* | REFUTED | CHHM faster than NHHM on: sor gauss (outside sor, sor_l, em3d: gauss)' "$d/b/REPORT.md" ||
    fail "finding 3 not refuted: $(grep '^| 3 ' "$d/b/REPORT.md")"

note "a figure script refuses what it cannot draw"
cut -d, -f1-5 "$d/fig1.csv" > "$d/nonorm.csv"
expect_fail "$lib/plot.sh" fig1 "$d/nonorm.csv" "$d/x"
expect_out "no column 'norm'"
head -1 "$d/fig7.csv" > "$d/empty.csv"
expect_fail "$lib/plot.sh" fig7 "$d/empty.csv" "$d/x"
awk -F, 'BEGIN { OFS = "," } NR > 1 { $6 = ""; $7 = ""; $8 = "" } 1' "$d/fig3.csv" > "$d/novalues.csv"
expect_fail "$lib/plot.sh" fig3 "$d/novalues.csv" "$d/x"
expect_out "no bar has a value"

note "runs are keyed by the code that ran, also where git cannot read the tree"
# A copy of the scripts outside any git checkout: the key is the binaries' own commit; where
# even that is unknown, a checksum of them; never one word shared by different code.
code_key() { # HERE CM_INFO [PATH]: prints CODE_KEY and CODE_NOTE
    (here=$1 CM_INFO=$2; PATH=${3:-$PATH}; die() { echo "die: $*"; exit 1; }
     . "$lib/common.sh"; exp_code; printf '%s\n%s\n' "$CODE_KEY" "$CODE_NOTE")
}
mkdir -p "$d/nogit/experiments"
built=$("$CM_INFO" | sed -n '1s/.*(commit \([^)]*\))$/\1/p')
[ -n "$built" ] || fail "cm_info names no commit"
out=$(code_key "$d/nogit/experiments" "$CM_INFO")
if [ "$built" != unknown ]; then
    [ "$(head -1 <<< "$out")" = "built:$built" ] || fail "outside a checkout, key '$(head -1 <<< "$out")', not built:$built"
fi
grep -q "not a git tree\|installed" <<< "$out" && fail "the record still says 'not a git tree' or 'installed': $out"
printf '#!/bin/sh\necho "Cashmere-RMA 0.1 (commit unknown)"\n' > "$d/fake_info"
chmod +x "$d/fake_info"
key1=$(code_key "$d/nogit/experiments" "$d/fake_info" | head -1)
printf '# another build\n' >> "$d/fake_info"
key2=$(code_key "$d/nogit/experiments" "$d/fake_info" | head -1)
case "$key1" in build:[0-9]*) ;; *) fail "an unknown commit keyed as '$key1'" ;; esac
[ "$key1" != "$key2" ] || fail "two different builds share the key $key1"
code_key "$d/nogit/experiments" "$d/fake_info" | tail -1 | grep -q "^commit unknown (built without git)" ||
    fail "the note does not say the commit is unknown"
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1 &&
    [ "$(git -C "$top_srcdir" rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$top_srcdir" && pwd -P)" ]; then
    note "... and root studying a clone another user owns still reads its commit"
    git clone -q "$top_srcdir" "$d/clone" && chown -R nobody "$d/clone" || fail "cannot make the clone"
    key=$(code_key "$d/clone/experiments" "$CM_INFO" | head -1)
    [[ "$key" =~ ^[0-9a-f]{40}$ ]] || fail "a clone owned by another user keyed as '$key'"
else
    echo "SKIP (part): the clone of another owner needs root and a git checkout of its own (a tarball's tree is none)"
fi
echo "PASS"
