#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The include graph keeps the layers (docs/ARCHITECTURE.md, "Layers"): a file may include
# its own folder's headers and those of a lower layer, nothing above it and nothing of a
# sibling at its own height; the protocols' folders are private to themselves. Fails with
# one line per offending include.
#
#   tests/layers.sh [TOP]   first that the check fails on a small tree with one include
#                           upwards (so that it can fail), then the tree at TOP (default:
#                           $top_srcdir or .)
#
# The layers, lowest first. A folder's rank; files of one folder ("component") may always
# include each other. include/ is the public API, config.h the build's: every layer's.
LAYERS='
include                   0
util                      0
rma                       1
locks                     2
directory                 3
writenotice               3
src/access                4
src/protocols             5
src/protocols/cashmere    6
src/protocols/treadmarks  6
src/protocols/none        6
src/protocols/twolevel    6
src/runtime               7
src/tools                 8
compat                    8
'
# Headers found by name alone (include/ is on the include path), and the build's own.
PUBLIC='cm.h tmk.h Tmk.h cm_parmacs.h config.h'

set -u

# The component of a path: its longest folder prefix in LAYERS ("" if none).
layers_check() {
    local top=$1
    (cd "$top" && find util rma locks directory writenotice src compat include \
                    -name '*.[ch]' 2>/dev/null | LC_ALL=C sort | while read -r f; do
        grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" /dev/null |
            sed 's/^\([^:]*\):\([0-9]*\):.*"\([^"]*\)".*/\1 \2 \3/'
    done) | awk -v layers="$LAYERS" -v public="$PUBLIC" '
        BEGIN {
            n = split(layers, l, /[ \n]+/)
            for (i = 1; i < n; i++) if (l[i] != "") { rank[l[i]] = l[i + 1]; i++ }
            split(public, p, " "); for (i in p) pub[p[i]] = 1
            bad = 0
        }
        function comp(path,   d, best) {
            best = ""
            d = path
            while (sub(/\/[^\/]*$/, "", d)) if (d in rank && length(d) > length(best)) best = d
            return best
        }
        {
            file = $1; line = $2; inc = $3
            if (inc in pub) next
            from = comp(file); to = comp(inc)
            if (from == "") next
            if (to == "") { printf "%s:%s: includes \"%s\", in no layer\n", file, line, inc; bad++; next }
            if (from == to) next
            # A protocol folder is private: only the protocol itself sees its headers.
            if (to ~ /^src\/protocols\/./) {
                printf "%s:%s: includes \"%s\", private to %s\n", file, line, inc, to; bad++; next
            }
            if (rank[to] >= rank[from]) {
                printf "%s:%s: includes \"%s\": %s (layer %d) may not include %s (layer %d)\n",
                       file, line, inc, from, rank[from], to, rank[to]
                bad++
            }
        }
        END { if (bad) { printf "layers: %d include(s) against the layering\n", bad; exit 1 } }'
}

layers_self_test() {
    # A minimal tree that keeps the layers passes; the same tree with rma/ including the
    # runtime must fail, naming the line.
    tmp=$(mktemp -d) || exit 1
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/util" "$tmp/rma" "$tmp/src/runtime"
    printf '#include "cm.h"\n' > "$tmp/util/cm_log.h"
    printf '#include "util/cm_log.h"\n' > "$tmp/rma/cm_rma.c"
    printf '#include "rma/cm_rma.h"\n' > "$tmp/src/runtime/cm_init.c"
    if ! out=$(layers_check "$tmp"); then
        echo "layers self-test: a tree that keeps the layers failed: $out" >&2
        exit 1
    fi
    printf '#include "src/runtime/cm_runtime.h"\n' >> "$tmp/rma/cm_rma.c"
    if out=$(layers_check "$tmp"); then
        echo "layers self-test: rma/ including the runtime passed" >&2
        exit 1
    fi
    case $out in
    *"rma/cm_rma.c:2: includes \"src/runtime/cm_runtime.h\""*) ;;
    *) echo "layers self-test: the failure did not name the line: $out" >&2; exit 1 ;;
    esac
    echo "layers self-test: passes a layered tree; fails an include upwards: ${out%%$'\n'*}"
}

(layers_self_test) || exit 1

top=${1:-${top_srcdir:-.}}
layers_check "$top" || exit 1
echo "layers: every include of $(cd "$top" && find util rma locks directory writenotice src compat include -name '*.[ch]' | wc -l) files points down"
