#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The programs of the #@flavours lines (apps/Makefile.inc, tests/Makefile.inc) exist in
# every build the variant table asks for: for each variant `cm_info --variants` lists, the
# binary cmrun would pick (`cm_info --check`'s suffix=) of every such program is built. The
# kept flavours.am is what util/cm_flavours.sh prints from the table and the lists now. And
# the generator refuses a table whose BUILD column it has no rule for (so that it can fail),
# rather than leave that build out.
set -u
top_srcdir=${top_srcdir:-.} top_builddir=${top_builddir:-.}
CM_INFO="$top_builddir/src/tools/cm_info"
fail() { echo "FAIL: $*" >&2; exit 1; }

progs=$(sed -n 's/^#@flavours [a-z]* [A-Z]* \([^ ]*\) .*/\1/p' \
        "$top_srcdir/apps/Makefile.inc" "$top_srcdir/tests/Makefile.inc")
[ -n "$progs" ] || fail "no #@flavours line found"
variants=$("$CM_INFO" --variants | awk '{print $1}')
[ -n "$variants" ] || fail "cm_info --variants listed nothing"
n=0
for v in $variants; do
    suffix=$(CM_VARIANT=$v "$CM_INFO" --check | sed -n 's/^suffix=//p')
    for p in $progs; do
        [ -x "$top_builddir/$p$suffix" ] || fail "$v runs $p$suffix, which was not built"
        n=$((n + 1))
    done
done
echo "flavours: $(wc -w <<< "$progs") programs x $(wc -w <<< "$variants") variants: $n binaries found"

now=$(sh "$top_srcdir/util/cm_flavours.sh" "$top_srcdir" apps/Makefile.inc tests/Makefile.inc) ||
    fail "util/cm_flavours.sh failed"
[ "$now" = "$(cat "$top_srcdir/flavours.am")" ] ||
    fail "flavours.am is not what util/cm_flavours.sh writes from the table and lists now (make rewrites it)"

# A build kind without a rule: the generator stops with one line.
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/util"
sed 's/_(CHSM, PAGE, HOOKS,   BUFFER, STORES,/_(CHSM, PAGE, HOOKS,   BUFFER, GPU,/
     s/^\(    _(ACCESSES, "accesses", ".access")\)$/\1 \\\n    _(GPU, "gpu", ".gpu")/' \
    "$top_srcdir/util/cm_variant_table.h" > "$tmp/util/cm_variant_table.h"
grep -q 'BUFFER, GPU,' "$tmp/util/cm_variant_table.h" && grep -q '_(GPU, "gpu"' "$tmp/util/cm_variant_table.h" ||
    fail "the self-test's table edit did not apply"
printf '#@flavours check MP tests/mp/x tests/mp/x.c\n' > "$tmp/frag.inc"
if err=$(sh "$top_srcdir/util/cm_flavours.sh" "$tmp" frag.inc 2>&1 >/dev/null); then
    fail "cm_flavours.sh accepted a build it has no rule for"
fi
case $err in *"build GPU"*) ;; *) fail "cm_flavours.sh failed without naming the build: $err" ;; esac
echo "flavours: a build without a rule is refused: $err"
