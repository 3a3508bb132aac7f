#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The shell tests' runner under `make -j check`: each takes one lock for its whole run, so the
# multi-process tests still run one at a time (they time processes that share this machine's
# cores, and some wait seconds for a death or a stall to be seen), while the SPIN searches
# (tests/model/run.sh, minutes of pure CPU at the lowest priority) run beside them on what
# they leave idle.
#   tests/one_at_a_time.sh SCRIPT [ARGS...]
script=$1
case $script in
*tests/model/run.sh) exec "${BASH:-bash}" "$@" ;;
esac
lock=${top_builddir:-.}/tests/.one-at-a-time.lock
mkdir -p "$(dirname "$lock")"
# -o: the test's own processes (daemons, a rank left behind) do not inherit the lock, so
# nothing that outlives a test can hold up the next one. The log's last line says how long
# the test ran once it had the lock (what CI's time is made of).
exec flock -o "$lock" "${BASH:-bash}" -c \
    's=$SECONDS; "${BASH:-bash}" "$@"; rc=$?; echo "($1: $((SECONDS - s)) s)"; exit $rc' _ "$@"
