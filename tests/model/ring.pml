/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The write-notice ring alone (writenotice/cm_wn.c), with posters that post
 * concurrently to one owner, as cm_wn_post's contract allows: checked with
 * SPIN (tests/model/run.sh). In the protocol every post of a page happens
 * under that page's directory entry (cashmere.pml), so two posts of one page
 * never overlap there; this model shows that the ring is sound without
 * relying on that.
 *
 * Property (suppression): a poster that relies on a notice already being in
 * the ring (it read the pending word as 1) relies on one that the owner has
 * still to visit, or on the overflow flag. Ghost state counts the reserved
 * notices per page not yet visited. Also: a slot is empty when written (no
 * notice lost), every process finishes (no deadlock), and after the last
 * drain no pending word is left set (a stale one would suppress notices
 * forever).
 *
 * OLD_PENDING: the pending word swapped to 1 before the reservation (the
 * version before the fix): must fail.
 */
#ifndef NPOSTER
#define NPOSTER 2
#endif
#ifndef NPOSTS
#define NPOSTS 2       /* notices each poster posts */
#endif
#ifndef NPAGE
#define NPAGE 2
#endif
#ifndef CAP
#define CAP 2
#endif

/*
 * Reachability probes: run with PROBE=n in the environment, the verifier must
 * fail at REACHED(n) ("assertion violated (n==0)"), which shows that the
 * search really reaches that path (tests/model/run.sh). A choice at run time,
 * so that one compiled verifier serves every probe; without PROBE the guard
 * is never true and nothing else changes.
 */
c_code { int cm_probe; }
#define PROBE_INIT c_code { cm_probe = getenv("PROBE") ? atoi(getenv("PROBE")) : 0; }
#define REACHED(n) if :: c_expr { cm_probe == (n) } -> assert((n) == 0) :: else -> skip fi
#define R_SUPPRESSED 1   /* a poster relies on a notice already in the ring */
#define R_OVERFLOW   2   /* a poster finds the ring full */
#define R_WAIT_SLOT  3   /* the owner finds a reserved slot not yet written */

byte head, tail;
bit ovf;
byte slot[CAP];
bit pending[NPAGE];

byte queued[NPAGE];    /* ghost: reserved notices of the page not yet visited */
bit allinv;            /* ghost: overflow consumed, invalidation of everything not done yet */
byte done;             /* posters finished */

proctype poster()
{
    byte k, pg, widx;
    bit pv, reserved;

    do
    :: k < NPOSTS ->
        if
        :: pg = 0
        :: NPAGE > 1 -> pg = 1
        fi;
#ifdef OLD_PENDING
        atomic {
            pv = pending[pg]; pending[pg] = 1;
            assert(!pv || queued[pg] > 0 || ovf || allinv)
        };
#else
        atomic { pv = pending[pg]; assert(!pv || queued[pg] > 0 || ovf || allinv) };
#endif
        if
        :: pv -> REACHED(R_SUPPRESSED)
        :: else ->
            atomic {                                 /* compare-and-swap loop on ctl */
                if
                :: tail - head < CAP -> widx = tail % CAP; tail++; reserved = 1; queued[pg]++
                :: else -> ovf = 1; reserved = 0; REACHED(R_OVERFLOW)
                fi
            };
            if
            :: reserved ->
#ifndef OLD_PENDING
                pending[pg] = 1;                     /* put, fenced before the slot's */
#endif
                atomic { assert(slot[widx] == 0); slot[widx] = pg + 1 }
            :: else -> skip
            fi
        fi;
        d_step { pv = 0; reserved = 0; widx = 0; pg = 0; k++ }
    :: else -> break
    od;
    done++
}

/* cm_wn_drain with a visit that stands for the invalidation. */
inline drain() {
    atomic { n = tail - head; h = head; sawovf = ovf };
    if
    :: n == 0 && !sawovf -> skip
    :: else ->
        i = 0;
        do
        :: i < n ->
#ifdef WAIT_PROBES   /* a separate step: compiled only for its probe run */
            if
            :: slot[(h + i) % CAP] == 0 -> REACHED(R_WAIT_SLOT)
            :: else -> skip
            fi;
#endif
            atomic { slot[(h + i) % CAP] != 0 -> dp = slot[(h + i) % CAP] - 1; slot[(h + i) % CAP] = 0 };
            pending[dp] = 0;                         /* clear, then visit */
            queued[dp]--;                            /* the visit */
            dp = 0;
            i++
        :: else -> break
        od;
        atomic { head = head + n; sawovf = ovf; ovf = 0; allinv = sawovf };
        if
        :: sawovf ->
#ifdef OLD_PENDING
            /* The old drain cleared every pending word after an overflow. */
            d_step { i = 0; do :: i < NPAGE -> pending[i] = 0; i++ :: else -> break od; i = 0 };
#endif
            allinv = 0                               /* every cached page invalidated */
        :: else -> skip
        fi
    fi;
    d_step { n = 0; h = 0; i = 0; sawovf = 0 }
}

active proctype owner()
{
    byte n, h, i, dp;
    bit sawovf, last;

    do
    :: drain()
    :: done == NPOSTER -> drain(); break
    od;
    /* Nothing is in flight any more: every notice visited, no pending word left set. */
    i = 0;
    do
    :: i < NPAGE -> assert(pending[i] == 0 && queued[i] == 0); i++
    :: else -> break
    od
}

init {
    byte i;
    PROBE_INIT;
    atomic {
        do
        :: i < NPOSTER -> run poster(); i++
        :: else -> break
        od
    }
}
