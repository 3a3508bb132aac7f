/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The two-level lock that stays at a host until another host asks for it (issue 46;
 * src/protocols/twolevel/cm_2l_sync.c), checked with SPIN (tests/model/run.sh).
 *
 * Two hosts of two processes. Per host and lock, in the host's memory: a mutex `m` (the
 * processes of the host take it in turn), `held` (the host has a place in the lock's queue
 * between hosts) and `next` (the process of another host queued right behind that place,
 * + 1). Between hosts: the lock's `tail` at its home (the last place's process, + 1), and
 * messages: `ask` (a process that swapped itself into the tail tells its predecessor who it
 * is) and `grant` (the place's turn, to the process that waits for it).
 *   acquire  take the host's mutex; if the host holds a place, the lock is ours (nothing
 *            crosses the network). Else held = 1, then swap ourselves into the tail; a
 *            predecessor gets an ask, and we wait for its grant.
 *   release  if next is set, grant it the place (held = 0, next = 0), unless a process of
 *            the host waits for the mutex and the host passed it on fewer than PASSES times
 *            since the ask (a lock all processes contend for would otherwise cross between
 *            hosts at every release); else the host keeps it. Unlock, then look at next again: an ask that came while we held the
 *            mutex found it taken (below); if one is there now, take the mutex if free and
 *            grant.
 *   ask      (a handler: the progress thread, or any wait in the library) next = the asker;
 *            then take the mutex if free: if the host holds the place, grant. A mutex that is
 *            taken is someone's who will look at next after it unlocks.
 * The handler and the release each store, then load what the other stores (next; m): one
 * of the two sees the other (a Dekker pair; SPIN's interleavings are sequentially consistent,
 * the code puts a full fence between the store and the load).
 *
 * A host's handler is one process here (whichever of its processes progresses), and a grant,
 * a message nothing waits for, is its effect at once. Processes 0 and 2 acquire NACQ times,
 * 1 and 3 once: NACQ=1 searches 9.3 M states (10 s), NACQ=2 about 100 M (run.sh --full).
 *
 * Properties: mutual exclusion (an assertion on the number of owners) and SPIN's invalid end
 * states (nobody left waiting for a grant or a mutex). Probes (PROBE=n): a host's process takes
 * a place its host kept (1); a release grants an ask that came while it held the mutex (2);
 * the look after an unlock grants (3); a handler gives up a kept place (4); a release passes
 * the mutex to a process of its host although another host asked (5). Orderings that must
 * fail:
 *   NO_RECHECK     the release does not look at next after it unlocks;
 *   ASK_NO_GRANT   the handler only records next (a place kept while nobody of the host wants
 *                  the lock is never given up);
 *   NEXT_LATE      the acquire clears next after its swap, not before (an ask that comes
 *                  in between is lost);
 *   STOP_EARLY     the look after an unlock that took the mutex and found the place granted
 *                  meanwhile unlocks without looking again (an ask that came in between is
 *                  lost: the first version of the local passes).
 */

#ifndef NACQ
#define NACQ 1
#endif
#ifndef PASSES
#define PASSES 1   /* the code's CM_2L_PASSES: 16 */
#endif

/* Whether the place may go now: another host asked, and no process of this host waits for
 * the mutex, or the host passed it on inside PASSES times since the ask. */
#define MAY_GIVE(h) (held[h] && next[h] != 0 && (waiters[h] == 0 || passes[h] >= PASSES))

c_code { int cm_probe; }
#define PROBE_INIT c_code { cm_probe = getenv("PROBE") ? atoi(getenv("PROBE")) : 0; }
#define REACHED(n) if :: c_expr { cm_probe == (n) } -> assert((n) == 0) :: else -> skip fi

byte m[2], held[2], next[2];
byte waiters[2];   /* processes of the host committed to taking the mutex */
byte passes[2];    /* local passes since another host asked */
byte tail = 0;
bit qlocked[4];
byte owners = 0;
chan ask[2] = [2] of { byte };   /* to a host: whichever of its processes progresses */

inline give(h) {
    /* under the mutex, held[h] && next[h]: the place to next */
    to = next[h] - 1;
    held[h] = 0;
    next[h] = 0;
    passes[h] = 0;
    qlocked[to] = 0   /* the grant: one message, nothing to wait for */
}

/* Every unlock, the release's and the handler's: an ask that came while we held the mutex
 * found it taken and left its asker in next for us. */
inline unlock_and_look(h) {
    do
    :: m[h] = 0;
#ifndef NO_RECHECK
        if
        :: next[h] != 0 ->
            atomic { if :: m[h] == 0 -> m[h] = 1; got = 1 :: else -> got = 0 fi };
            if
            :: got ->
                if
                :: MAY_GIVE(h) -> REACHED(3); give(h)   /* the look after unlocking */
                :: !MAY_GIVE(h) && next[h] != 0 ->
                    m[h] = 0; break                     /* a waiter here looks at its release */
#ifndef STOP_EARLY
                :: else -> skip                         /* granted meanwhile: look again */
#else
                :: else -> m[h] = 0; break
#endif
                fi
            :: else -> break
            fi
        :: else -> break
        fi
#else
        break
#endif
    od;
    skip
}

proctype P(byte me)
{
    byte h = me / 2, pred, k, to;
    bit got;

    for (k : 1 .. (me % 2 == 0 -> NACQ : 1)) {
        waiters[h]++;
        atomic { m[h] == 0 -> m[h] = 1; waiters[h]-- };
        if
        :: held[h] -> REACHED(1)    /* the host kept the place: nothing crosses */
        :: else ->
            qlocked[me] = 1;
#ifndef NEXT_LATE
            next[h] = 0;
#endif
            held[h] = 1;
            atomic { pred = tail; tail = me + 1 };
#ifdef NEXT_LATE
            next[h] = 0;
#endif
            assert(pred == 0 || (pred - 1) / 2 != h);
            if
            :: pred != 0 -> ask[(pred - 1) / 2]!me; qlocked[me] == 0
            :: else -> skip
            fi
        fi;
        d_step { owners++; assert(owners == 1) };
        owners--;
        /* release */
        if
        :: MAY_GIVE(h) -> REACHED(2); give(h)   /* asked while we held it */
        :: held[h] && next[h] != 0 && !MAY_GIVE(h) -> REACHED(5); passes[h]++   /* a local pass */
        :: else -> skip
        fi;
        unlock_and_look(h);
        d_step { pred = 0; got = 0 }
    }
}

/* What runs inside each process's progress: its messages' handlers. */
proctype H(byte h)
{
    byte s, to;
    bit got;
end:
    do
    :: ask[h]?s ->
        next[h] = s + 1;
#ifndef ASK_NO_GRANT
        atomic { if :: m[h] == 0 -> m[h] = 1; got = 1 :: else -> got = 0 fi };
        if
        :: got ->
            if
            :: MAY_GIVE(h) -> REACHED(4); give(h)   /* a kept place, given up */
            :: else -> skip
            fi;
            unlock_and_look(h)
        :: else -> skip
        fi;
#endif
        d_step { s = 0; got = 0 }
    od
}

init {
    byte i;
    PROBE_INIT;
    atomic {
        for (i : 0 .. 3) {
            run P(i)
        }
        run H(0);
        run H(1)
    }
}
