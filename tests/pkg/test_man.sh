#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The manual pages: cashmere(7) documents exactly the settings cm_info -c knows (both come
# from the configuration table), and every page renders without a groff warning.
. "$top_srcdir/tests/lib.sh"

page="$top_builddir/man/cashmere.7"
[ -s "$page" ] || fail "man/cashmere.7 was not generated"

note "cashmere(7) and cm_info -c list the same CM_* settings"
want=$("$top_builddir/src/tools/cm_info" -c | sed -n 's/^\(CM_[A-Z_]*\)=.*/\1/p' | sort)
have=$(sed -n 's/^\.B \(CM_[A-Z_]*\)$/\1/p' "$page" | sort)
[ -n "$want" ] || fail "cm_info -c listed no settings"
[ "$want" = "$have" ] || fail "cashmere(7) and cm_info -c differ: $(diff <(echo "$want") <(echo "$have") | tr '\n' ' ')"
echo "$(echo "$want" | wc -l) settings"

note "each setting's default is the table's"
for name in CM_VARIANT CM_WN_RING CM_OFFLOAD_PAUSE; do
    def=$(env -u "$name" "$top_builddir/src/tools/cm_info" -c | sed -n "s/^# type: .*default: \(.*\)$/\1/p;/^$name=/q" | tail -1)
    grep -A3 "^\.B $name\$" "$page" | grep -q "Default: \\\\fB$def\\\\fR" ||
        fail "$name: default '$def' not in cashmere(7)"
done

note "every page renders without warnings"
if ! command -v groff >/dev/null; then
    echo "rendering not checked: groff is not installed (Debian: groff-base)"
else
    for m in "$top_srcdir"/man/*.1 "$page"; do
        w=$(groff -man -Tutf8 -ww -z "$m" 2>&1)
        [ -z "$w" ] || fail "$(basename "$m"): $w"
        echo "$(basename "$m"): ok"
    done
fi
echo "PASS"
