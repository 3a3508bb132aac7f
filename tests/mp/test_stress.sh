#!/bin/bash
# The short stress run of make check: one round of the whole matrix of
# tests/mp/stress.sh (every litmus case, wordlocks included, under CHSM and
# CHSN with both directory forms and under TreadMarks, over shared memory and
# TCP, at 3 and 4 processes: 180 runs, about 2.5 minutes on 2 cores), each run
# with its own random delays and knobs. The driver seed is new each time and
# printed; CMT_STRESS_SEED repeats one. No run starts after 5 minutes, so a
# slow or hanging protocol cannot hold make check for long.
# The long version: tests/mp/stress.sh --rounds 200 (README, Tests).
: "${top_srcdir:?run through make check}"
seed=()
[ -z "${CMT_STRESS_SEED-}" ] || seed=(--seed "$CMT_STRESS_SEED")
exec "$BASH" "$top_srcdir/tests/mp/stress.sh" --rounds 1 --budget 300 "${seed[@]}"
