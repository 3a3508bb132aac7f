#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Stores into shared memory that the store hooks do not see (tests/mp/mp_unseen.c):
# uninstrumented code, before and after a hooked store to the same page, a raw
# system call, and at the page's home. Under software write forwarding (CHSM,
# CHSN) such a store never reaches the home; with CM_CHECK_STORES=yes every one
# must stop the job with a message naming the page (and, when it faulted, the
# instruction's object), while the stores the hooks do see (hooked, read(),
# memcpy) pass the check and arrive. TreadMarks sees every store by page
# protection: each mode must deliver 42 there, check or not.
. "$top_srcdir/tests/lib.sh"
P="$MP/mp_unseen.hooks"

for transport in shm tcp; do
    if [ $transport = shm ]; then use_shm; else use_tcp; fi
    for variant in CHSM CHSN; do
        note "$transport, $variant, CM_CHECK_STORES=yes: the seen stores pass"
        expect_ok env CM_VARIANT=$variant CM_CHECK_STORES=yes "$CMRUN" -n 2 "$P" ok
        expect_out 'mp_unseen ok: rank 0 sees 42$'
        for mode in fault opened syscall home; do
            note "$transport, $variant, CM_CHECK_STORES=yes: $mode"
            expect_fail env CM_VARIANT=$variant CM_CHECK_STORES=yes "$CMRUN" -n 2 "$P" $mode
            expect_out 'CM_CHECK_STORES: .*(page [0-9]+)'
            [ "$(count_out 'CM_CHECK_STORES:')" -eq 1 ] || fail "the error was not reported exactly once"
            case $mode in
                fault|home) expect_out 'by the instruction at 0x[0-9a-f]+ \(.* in .*mp_unseen' ;;
                opened|syscall) expect_out 'changed .*without a store the hooks saw' ;;
            esac
        done
    done
    note "$transport, CHSM without the check: the unseen stores run (rank 0 may see 42 or 0)"
    for mode in fault opened syscall home; do
        expect_ok env CM_VARIANT=CHSM "$CMRUN" -n 2 "$P" $mode
    done
    for check in no yes; do
        for mode in ok fault opened syscall home; do
            note "$transport, TreadMarks, CM_CHECK_STORES=$check: $mode"
            expect_ok env CM_PROTOCOL=treadmarks CM_CHECK_STORES=$check "$CMRUN" -n 2 "$P" $mode
            expect_out 'mp_unseen [a-z]+: rank [01] sees 42$'
        done
    done
done
