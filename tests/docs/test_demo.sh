#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's run-command ends in a demo: what follows its `ldconfig &&`, run here against the
# build tree (cmrun, the apps and cm_bench of this build). It must show the shared memory at
# work in a few readable lines: an application verifying under Cashmere and under TreadMarks,
# each with its time, then cm_bench's table (no JSON), and name nothing the build lacks.
. "$top_srcdir/tests/lib.sh"
use_shm
cmd=$(awk '/<!-- run-command -->/ {f = 1; next} f && /^```sh/ {g = 1; next} g && /^```/ {exit} g {print}' \
      "$top_srcdir/README.md")
[ -n "$cmd" ] || fail "README.md has no run-command"
demo=${cmd##*ldconfig && }
[ "$demo" != "$cmd" ] || fail "the run-command has no demo after 'ldconfig &&'"
note "the demo: $demo"
# The installed tools by their names, as after make install: this build's.
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
ln -s "$CMRUN" "$bin/cmrun"
for t in cm_info cm_bench; do ln -s "$top_builddir/src/tools/$t" "$bin/$t"; done
export CM_APPS_DIR="$top_builddir/apps"
expect_ok env PATH="$bin:$PATH" bash -c "$demo"
[ "$(count_out '^VERIFY OK$')" -eq 2 ] || fail "not two verified runs"
expect_out "parallel section [0-9.]+ s, protocol cashmere variant CHSM$"
expect_out "parallel section [0-9.]+ s, protocol treadmarks$"
expect_out "^operation +size +measured +reference +ratio +reference is$"
expect_out "^barrier, 2 processes "
printf '%s\n' "$out" | grep -q '^ *[{"]' && fail "the demo prints JSON"
lines=$(printf '%s\n' "$out" | grep -c .)
[ "$lines" -le 40 ] || fail "the demo prints $lines lines"
echo "demo: $lines lines"
echo "PASS"
