#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The short stress run of make check: one round of the whole matrix of
# tests/mp/stress.sh (every litmus case, wordlocks included, under every
# variant that runs here with both directory forms and under TreadMarks, over
# shared memory and TCP, at 3 and 4 processes: 684 runs), each run with its
# own random delays and knobs, in an order shuffled from the driver seed. No
# run starts after 100 s (80-170 runs on 2 cores get started; test_cluster.sh adds a
# round across two hosts), so a
# slow or hanging protocol cannot hold make check for long, and each make
# check covers another part of the matrix. The driver seed is new each time and
# printed; CMT_STRESS_SEED repeats one.
# The long version: tests/mp/stress.sh --rounds 200 (tests/README.md, "The stress driver").
: "${top_srcdir:?run through make check}"
stress=("$BASH" "$top_srcdir/tests/mp/stress.sh")
# --cases all: every case in one job (the acceptance matrix's form); unknown cases still refused.
out=$("${stress[@]}" --cases all --settings CHSM/mcs --transports shm --procs 2 2>&1) ||
    { echo "$out"; echo "FAIL: stress.sh --cases all"; exit 1; }
grep -q "all 1 runs passed" <<<"$out" || { echo "$out"; echo "FAIL: --cases all ran no job"; exit 1; }
if "${stress[@]}" --cases bogus >/dev/null 2>&1; then
    echo "FAIL: stress.sh accepted the unknown case 'bogus'"; exit 1
fi
seed=()
[ -z "${CMT_STRESS_SEED-}" ] || seed=(--seed "$CMT_STRESS_SEED")
exec "${stress[@]}" --rounds 1 --budget 100 "${seed[@]}"
