/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The application lock whose release waits for nothing (issue 45; locks/cm_mcs.c, the
 * "lazy" release), checked with SPIN (tests/model/run.sh).
 *
 * An MCS queue lock (tail word at the lock's home, a queue node per process) where each node
 * has one word `link` (the successor's rank + 1, and RELEASED) changed only by atomics:
 *   acquire  resolve our previous position in this lock's queue (below); reset our node
 *            (link 0, locked 1); swap ourselves into the tail (one round trip); if there was
 *            a predecessor, fetch-add our rank + 1 into its link (one round trip): RELEASED
 *            in the word returned means the lock is ours already, else wait for locked = 0;
 *   release  fetch-or RELEASED into our own link (a local atomic): a successor there gets
 *            the hand-off (a put, not waited for); else a compare-and-swap of the tail from
 *            us to 0, not waited for: the release is over.
 * The old release waited for that compare-and-swap (one round trip per uncontended lock whose
 * home is elsewhere) and for the hand-off put's flush.
 *
 * A position is resolved when nobody can still link into it: we handed it off, or our
 * swap's result came back as us (the tail was ours: nobody behind), or, the swap having
 * failed (somebody swapped in behind us), their link has landed (they saw RELEASED: the lock
 * is theirs). Our node is reset only then: a link landing on a node reset for a later
 * position would make that process wait for a hand-off from us while we wait behind it.
 *
 * Operations in flight: the release's compare-and-swap lands at any moment (the NIC process
 * below), or is waited for when the position is resolved. Puts and fetching atomics that a
 * process waits for are one step each.
 *
 * Properties: mutual exclusion (an assertion on the number of owners), and SPIN's invalid end
 * states (no process left waiting: no lost hand-off, no deadlock).
 *
 * Its orderings that must fail:
 *   NO_RESOLVE     a process resets its node without resolving its last position (a link meant
 *                  for that position lands on the new one);
 *   SPLIT_RELEASE  the release reads its link, then sets RELEASED by a separate store (a
 *                  successor that links in between waits for a hand-off that never comes);
 *   SPLIT_LINK     the successor reads RELEASED by a get, then puts its link (or the put is
 *                  overtaken by the get): the predecessor's release can fall in between, and
 *                  it sees no successor while the successor saw no RELEASED.
 */

#ifndef NPROC
#define NPROC 3
#endif
#ifndef NACQ
#define NACQ 2         /* acquisitions per process */
#endif

#define RELEASED 8      /* above any rank + 1 */

byte tail = 0;                 /* rank + 1 of the last in the queue, 0: free */
byte link[NPROC];              /* each node's word: successor's rank + 1 | RELEASED */
bit locked[NPROC];
bit casq[NPROC];               /* a release's compare-and-swap in flight */
bit casres[NPROC];             /* its result came back: 1 it swapped (tail was us) */
bit casdone[NPROC];            /* its result is here */
byte owners = 0;

/* The release's compare-and-swap of the tail from us to 0, landing. */
inline cas_land(i) {
    atomic {
        if
        :: casq[i] && !casdone[i] ->
            if
            :: tail == i + 1 -> tail = 0; casres[i] = 1
            :: else -> casres[i] = 0
            fi;
            casdone[i] = 1
        :: else -> skip                             /* landed already */
        fi
    }
}

proctype P(byte me)
{
    byte k, pred, old;
    bit pendpos;     /* our last position is not resolved yet */

    for (k : 1 .. NACQ) {
        /* Resolve our last position. */
#ifndef NO_RESOLVE
        if
        :: pendpos ->
            cas_land(me);                           /* waited for, if still in flight */
            if
            :: casres[me] -> skip                   /* nobody behind us */
            :: else -> (link[me] & ~RELEASED) != 0  /* the one behind us has linked */
            fi;
            d_step { casq[me] = 0; casdone[me] = 0; casres[me] = 0; pendpos = 0 }
        :: else -> skip
        fi;
#else
        d_step { casq[me] = 0; casdone[me] = 0; casres[me] = 0; pendpos = 0 };
#endif
        d_step { link[me] = 0; locked[me] = 1 };    /* our node, before the tail names it */
        atomic { pred = tail; tail = me + 1 };      /* fetch-and-store */
        if
        :: pred != 0 ->
#ifndef SPLIT_LINK
            atomic { old = link[pred - 1]; link[pred - 1] = old + me + 1 };   /* fetching add */
#else
            old = link[pred - 1];                       /* a get ... */
            link[pred - 1] = link[pred - 1] + me + 1;   /* ... then a put of our link */
#endif
            assert((old & ~RELEASED) == 0);         /* one successor per position */
            if
            :: (old & RELEASED) != 0 -> skip        /* released already: ours */
            :: else -> locked[me] == 0              /* the hand-off */
            fi
        :: else -> skip
        fi;
        d_step { owners++; assert(owners == 1) };
        d_step { owners-- };
        /* Release. */
#ifndef SPLIT_RELEASE
        atomic { old = link[me]; link[me] = old | RELEASED };   /* fetch-or, local */
#else
        old = link[me];
        link[me] = link[me] | RELEASED;
#endif
        if
        :: (old & ~RELEASED) != 0 -> locked[(old & ~RELEASED) - 1] = 0   /* hand-off put */
        :: else -> d_step { casq[me] = 1; pendpos = 1 }                   /* not waited for */
        fi;
        d_step { pred = 0; old = 0 }
    }
    /* Finalize: every position resolved before the node's memory goes. */
    if
    :: pendpos ->
        cas_land(me);
        if
        :: casres[me] -> skip
        :: else -> (link[me] & ~RELEASED) != 0
        fi
    :: else -> skip
    fi
}

/* The network: a release's compare-and-swap lands whenever it lands. Only a landing is a
 * step here, so that processes left waiting are an invalid end state, not hidden behind a
 * network that can always move. */
active proctype NIC()
{
end:
    do
    :: casq[0] && !casdone[0] -> cas_land(0)
    :: casq[1] && !casdone[1] -> cas_land(1)
#if NPROC > 2
    :: casq[2] && !casdone[2] -> cas_land(2)
#endif
#if NPROC > 3
    :: casq[3] && !casdone[3] -> cas_land(3)
#endif
    od
}

init {
    byte i;
    atomic {
        for (i : 0 .. NPROC - 1) {
            run P(i)
        }
    }
}
