/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Lazy diff creation with twins that span intervals, as the TreadMarks
 * baseline implements it (src/protocols/treadmarks/cm_tmk_pages.c: tm_make_diff, tm_invalidate,
 * cm_tmk_validate, cm_tmk_fault; cm_tmk_locks.c: the lock grant), checked with SPIN
 * (tests/model/run.sh).
 *
 * Three processes share one page of NW words; word l is protected by lock l
 * (the litmus test `wordlocks`, which the old rule broke, in small). Each
 * process runs NCS critical sections: pick a lock l, acquire it, read word l,
 * assert that it holds the last value written under l (the ghost), write the
 * next value, release. Writers of different words under different locks are
 * concurrent writers of one page (multiple writers, merged by diffs).
 *
 * Why two locks: with a single lock and every critical section writing its
 * word, the old rule cannot lose an update. A reader learns everything
 * through the last writer's grant, so a notice it may apply after the last
 * write is one of that writer's own later intervals, whose copy of the
 * combined diff holds the writer's latest value anyway. The lost update
 * needs a twin that spans an interval concurrent with another process's
 * write of the same word: an interval written under another lock.
 *
 * Modelled (per process): the vector timestamp (a prefix of each process's
 * intervals), the applied notices (own ones always), the page state
 * (unmapped, invalid, read-only, read-write), the copy, the twin, the dirty
 * flag of the open interval; per interval (one page: one notice each) its
 * vector time and its diff (none yet, encoded, empty). An interval ends at a
 * release, at a lock request (before the wait) and at a grant, if the page
 * was written; the page is then write-protected and the twin kept. A write
 * fault on a read-only page makes a twin only if there is none; the store is
 * a separate step after the fault. A diff is encoded (tm_make_diff) when a
 * requester needs a notice that has none, or when a foreign notice arrives
 * at an acquire: the page is write-protected, the twin compared with the
 * copy and freed, the diff attached to the oldest own notice still without
 * one, the later ones get empty diffs. An access to an invalid page
 * (cm_tmk_validate) copies the manager's page if it has none, fetches the
 * missing diffs, then applies every known, unapplied notice in an order
 * consistent with happened-before (any such order: the code's vector-time
 * sums are one; VTSUM restricts the choice to the code's order, ties free).
 *
 * Concurrency: every protocol operation that the code runs under its mutex
 * is one atomic step; stores, faults and the steps between waits are
 * separate, so a diff request (served by the progress thread) or a grant
 * can fall between any two of them, also between a write fault and its
 * store, or while the writer's interval is open. A request is modelled as
 * the creator encoding on demand, in the requester's step: the requester
 * waits for the reply, and only the creator can encode its twin. Diffs are
 * kept in the interval records, shared by everyone: whoever serves a diff
 * has it (it applied the notice before writing a newer one), so who is asked
 * does not matter, only whether the creator still has to encode. Lock
 * tokens: a free token goes to any waiting requester, granted by whoever
 * holds it with everything it knows; re-acquiring a token that is here is
 * no message and no new interval. Forwarding through the lock manager and
 * the order of requests are abstracted (any order is allowed).
 *
 * The rule checked: when a foreign notice arrives, every own notice of the
 * page still without a diff gets one: the twin's, or an empty one if there
 * is no twin (a request already encoded the twin while the interval was
 * open, so these notices' writes are in an older notice's diff). Then no
 * foreign notice falls between a diff's notice and the writes in it.
 *
 * Variants that must fail (an assertion in a critical section):
 *   OLD_RULE: the combined diff attached to every notice it covers (the
 *     code before the fix): a reader applies the older notice, another
 *     writer's diff of the same word, then the later notice, whose copy of
 *     the combined diff brings back the old value.
 *   NO_ENCODE_ON_FOREIGN: a foreign notice only invalidates the page; the
 *     twin then spans the foreign write, the writer's diff (at its older
 *     notice, concurrent with the foreign one) carries its newer value, and a
 *     reader that applies the foreign diff after it loses that value.
 *   FOREIGN_NEEDS_TWIN: src/cm_treadmarks.c before commit 47aaefd (tm_invalidate
 *     called tm_make_diff only if there was a twin). A request encodes the twin
 *     while the writer's interval is open; that interval's notice closes
 *     without a diff and without a twin, a foreign notice arrives and leaves
 *     it so, the next write makes a new twin, and its diff goes to that old
 *     notice, which is concurrent with the foreign one: the same lost update.
 *     Also fixed by giving such notices their empty diffs when a write fault
 *     makes a new twin.
 *   COLD_RAW (with TOGGLE): a cold access copies the manager's page as it is,
 *     the code before issue 14. The manager wrote a word 0 -> 1 in one interval
 *     and 1 -> 0 in the next, under one twin; the copy shows 1, the diff (twin
 *     0, copy 0) leaves the word out, and the reader keeps the 1.
 * VTSUM: apply in the code's order (vector-time sums, ties either way); the
 * variants above fail in it too.
 * TRACE: prints the protocol steps when a trail is replayed
 * (spin -DTRACE [variant] -t treadmarks.pml).
 *
 * Not modelled: barriers and garbage collection, write detection by
 * scanning, more than one page (a notice per page and interval; pages are
 * independent), the diff encoding itself (a diff is the set of words that
 * differ from the twin, with their values), message loss or reordering
 * beyond the interleavings above.
 */

#define NPROC 3        /* validate's requests and VTSUM are written out for three */
#ifndef NW
#define NW 2           /* words of the page; word l is protected by lock l */
#endif
#define NLOCK NW
/* What a critical section stores: one more than it read; with TOGGLE, 0 and 1 in turn, so that
 * a word can come back to its twin's value after another process saw it otherwise (a 4-byte
 * half of a 64-bit store going 0, -1, 0, as in tests/mp/mp_litmus.c's refill). */
#ifdef TOGGLE
#define STORED(v) (1 - (v))
#else
#define STORED(v) ((v) + 1)
#endif
#ifndef NCS
#define NCS 2          /* critical sections per process */
#endif
/* Intervals per process: one per critical section, one more when a grant
 * closes the interval between a write fault and its store, and for the
 * manager one per other process's cold copy. */
#ifdef COLD_RAW
#define MAXIV (2 * NCS)
#else
#define MAXIV (2 * NCS + NPROC - 1)
#endif
#define MGR 0          /* the page's manager: page 0 % nprocs */
#ifdef TRACE
#define TR(x) x        /* printed when a trail is replayed */
#else
#define TR(x) skip
#endif

#ifdef OLD_RULE
#define ALL_NOTICES 1
#else
#define ALL_NOTICES 0
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
#define R_SPAN     1   /* one twin encoded for two or more closed intervals */
#define R_EMPTY    2   /* an empty diff applied */
#define R_OPEN     3   /* a request encodes while the creator's open interval has written */
#define R_FOREIGN  4   /* a foreign notice makes the twin's diff */
#define R_COLD     5   /* a first access copies the manager's page */
#define R_GRANT    6   /* a grant ends the granter's interval in its critical section */
#define R_REFAULT  7   /* a store faults again: its page was protected after the fault */
#define R_COLD_ENC 8   /* a cold copy makes the manager close and encode its writes first */

#define S_UNMAPPED 0
#define S_INVALID  1
#define S_RO       2
#define S_RW       3

#define D_NONE  0
#define D_DIFF  1
#define D_EMPTY 2

#define VT(p, q)     vt[(p) * NPROC + (q)]
#define IV(q, i)     ((q) * MAXIV + (i) - 1)          /* interval i (from 1) of process q */
#define IVVT(q, i, r) ivvt[IV(q, i) * NPROC + (r)]
#define W(p, k)      w[(p) * NW + (k)]
#define TW(p, k)     twv[(p) * NW + (k)]
#define DV(q, i, k)  dval[IV(q, i) * NW + (k)]
#define APPLIED(p, q, i) applied[(p) * NPROC * MAXIV + IV(q, i)]

/* ---- per process ----------------------------------------------------------- */
byte vt[NPROC * NPROC];             /* vector timestamp: intervals of each process known */
bit applied[NPROC * NPROC * MAXIV]; /* foreign notices whose diff is in the copy */
byte st[NPROC];                     /* page state */
byte w[NPROC * NW];                 /* the copy */
bit tw[NPROC];                      /* a twin exists */
byte twv[NPROC * NW];               /* its contents */
bit dirty[NPROC];                   /* the open interval wrote the page */

/* ---- per interval (= its notice of the page) -------------------------------- */
byte ivvt[NPROC * MAXIV * NPROC];   /* vector time of the interval */
byte dst[NPROC * MAXIV];            /* D_NONE, D_DIFF, D_EMPTY */
byte dmask[NPROC * MAXIV];          /* words in the diff */
byte dval[NPROC * MAXIV * NW];      /* their values */

/* ---- locks ----------------------------------------------------------------- */
byte tok[NLOCK];                    /* where the token is */
bit held[NLOCK];
byte ghost[NW];                     /* the last value written under lock l */

/*
 * cm_tmk_new_interval for process c: if the page was written, a new interval
 * with one notice, no diff yet; the page is write-protected, the twin kept.
 */
inline new_interval(c) {
    if
    :: dirty[c] ->
        VT(c, c)++;
        assert(VT(c, c) <= MAXIV);
        xq = 0;
        do
        :: xq < NPROC -> IVVT(c, VT(c, c), xq) = VT(c, xq); xq++
        :: else -> break
        od;
        xq = 0;
        if
        :: st[c] == S_RW -> st[c] = S_RO
        :: else -> skip
        fi;
        dirty[c] = 0;
        TR(printf("P%d: interval %d closed vt=%d%d%d copy=%d%d\n", c, VT(c,c), VT(c,0), VT(c,1), VT(c,2), W(c,0), W(c,1)))
    :: else -> skip
    fi
}

/*
 * tm_make_diff for process c: one diff of the twin for every own notice still
 * without one; sets enc when a twin was encoded.
 */
inline make_diff(c) {
    xn = 0; xi = 1;
    do
    :: xi <= VT(c, c) ->
        if
        :: dst[IV(c, xi)] == D_NONE -> xn++
        :: else -> skip
        fi;
        xi++
    :: else -> break
    od;
    if
    :: xn == 0 -> skip         /* only writes of the open interval: its notice will */
    :: else ->
        xm = 0; xt = tw[c];
        if
        :: xt ->
            if
            :: st[c] == S_RW -> st[c] = S_RO        /* protected before it is encoded */
            :: else -> skip
            fi;
            xk = 0;
            do
            :: xk < NW ->
                if
                :: W(c, xk) != TW(c, xk) -> xm = xm | (1 << xk)
                :: else -> skip
                fi;
                TW(c, xk) = 0;
                xk++
            :: else -> break
            od;
            tw[c] = 0;
            enc = 1;
            TR(printf("P%d encodes (in P%d's step): mask=%d copy=%d%d undiffed=%d dirty=%d\n", c, me, xm, W(c,0), W(c,1), xn, dirty[c]));
            if
            :: xn >= 2 -> REACHED(R_SPAN)
            :: else -> skip
            fi
        :: else -> skip        /* no write since the last diff: it covered these notices */
        fi;
        xf = 1; xi = 1;
        do
        :: xi <= VT(c, c) ->
            if
            :: dst[IV(c, xi)] == D_NONE ->
                if
                :: xt && (xf || ALL_NOTICES) ->
                    dst[IV(c, xi)] = D_DIFF; dmask[IV(c, xi)] = xm;
                    xk = 0;
                    do
                    :: xk < NW ->
                        if
                        :: (xm & (1 << xk)) != 0 -> DV(c, xi, xk) = W(c, xk)
                        :: else -> skip
                        fi;
                        xk++
                    :: else -> break
                    od
                :: else -> dst[IV(c, xi)] = D_EMPTY
                fi;
                xf = 0
            :: else -> skip
            fi;
            xi++
        :: else -> break
        od
    fi;
    xi = 0; xk = 0; xn = 0; xm = 0; xf = 0; xt = 0
}

/*
 * cm_tmk_incorporate of what granter g knows, at me: every new foreign notice of
 * the page encodes our twin (tm_invalidate), then invalidates the copy.
 */
inline incorporate(g) {
    yf = 0; xq = 0;
    do
    :: xq < NPROC ->
        if
        :: xq == me -> assert(VT(g, me) <= VT(me, me))
        :: xq != me && VT(g, xq) > VT(me, xq) -> VT(me, xq) = VT(g, xq); yf = 1
        :: else -> skip
        fi;
        xq++
    :: else -> break
    od;
    xq = 0;
    if
    :: yf ->
        /* The interval ended at the request: nothing written in the open interval. */
        assert(!dirty[me]);
#ifndef NO_ENCODE_ON_FOREIGN
#ifdef FOREIGN_NEEDS_TWIN
        /* The code now: tm_invalidate calls tm_make_diff only if there is a twin. */
        if
        :: tw[me] -> make_diff(me)
        :: else -> skip
        fi;
#else
        /* Every own notice gets its diff, an empty one if there is no twin (its writes
         * went into an earlier diff): none is left for a later twin's diff. */
        make_diff(me);
#endif
        if
        :: enc -> REACHED(R_FOREIGN)
        :: else -> skip
        fi;
        assert(!tw[me]);       /* a twin always has a notice to go with (see make_diff) */
#endif
        if
        :: st[me] == S_RO || st[me] == S_RW -> st[me] = S_INVALID
        :: else -> skip
        fi
    :: else -> skip
    fi;
    yf = 0; enc = 0
}

/* A diff request served by creator c: it encodes if a notice we need has no diff yet. */
inline serve(c) {
    yf = 0; xi = 1;
    do
    :: xi <= VT(me, c) ->
        if
        :: !APPLIED(me, c, xi) && dst[IV(c, xi)] == D_NONE -> yf = 1
        :: else -> skip
        fi;
        xi++
    :: else -> break
    od;
    if
    :: yf ->
        xd = dirty[c];
        make_diff(c);
        if
        :: enc && xd -> REACHED(R_OPEN)
        :: else -> skip
        fi
    :: else -> skip
    fi;
    xi = 0; yf = 0; xd = 0; enc = 0
}

/*
 * Notice (q, lowest unapplied of q) may be applied next: no other unapplied
 * known notice precedes it (happened-before: x precedes y if x.index <=
 * y.vt[x.proc]); with VTSUM, also none has a smaller vector-time sum
 * (tm_cmp_ref_hb; the sort leaves ties in any order).
 */
inline candidates() {
    xq = 0;
    do
    :: xq < NPROC ->
        lo[xq] = 0;
        if
        :: xq != me ->
            xi = VT(me, xq);
            do
            :: xi >= 1 ->
                if
                :: !APPLIED(me, xq, xi) -> lo[xq] = xi
                :: else -> skip
                fi;
                xi--
            :: else -> break
            od
        :: else -> skip
        fi;
        xq++
    :: else -> break
    od;
    cand = 0; xq = 0;
    do
    :: xq < NPROC ->
        if
        :: lo[xq] != 0 ->
            xf = 1; xk = 0;
            do
            :: xk < NPROC ->
                if
                :: xk != xq && lo[xk] != 0 && lo[xk] <= IVVT(xq, lo[xq], xk) -> xf = 0
                :: else -> skip
                fi;
#ifdef VTSUM
                if
                :: xk != xq && lo[xk] != 0 &&
                   IVVT(xk, lo[xk], 0) + IVVT(xk, lo[xk], 1) + IVVT(xk, lo[xk], 2) <
                   IVVT(xq, lo[xq], 0) + IVVT(xq, lo[xq], 1) + IVVT(xq, lo[xq], 2) -> xf = 0
                :: else -> skip
                fi;
#endif
                xk++
            :: else -> break
            od;
            if
            :: xf -> cand = cand | (1 << xq)
            :: else -> skip
            fi
        :: else -> skip
        fi;
        xq++
    :: else -> break
    od;
    xq = 0; xi = 0; xk = 0; xf = 0
}

/* Applies notice (aq, lo[aq]) to our copy. */
inline apply_one() {
    ai = lo[aq];
    TR(printf("P%d applies (P%d,%d) dst=%d mask=%d vals=%d%d\n", me, aq, ai, dst[IV(aq,ai)], dmask[IV(aq,ai)], DV(aq,ai,0), DV(aq,ai,1)));
    assert(dst[IV(aq, ai)] != D_NONE);               /* "no diff for interval" */
    if
    :: dst[IV(aq, ai)] == D_EMPTY -> REACHED(R_EMPTY)
    :: else ->
        xk = 0;
        do
        :: xk < NW ->
            if
            :: (dmask[IV(aq, ai)] & (1 << xk)) != 0 -> W(me, xk) = DV(aq, ai, xk)
            :: else -> skip
            fi;
            xk++
        :: else -> break
        od;
        xk = 0
    fi;
    APPLIED(me, aq, ai) = 1;
    ai = 0
}

/*
 * cm_tmk_validate: the manager's page if we have none, the missing diffs (one
 * request per creator, served in any order while we wait), then every known
 * unapplied notice in happened-before order.
 */
inline validate() {
    d_step {
        cold = (st[me] == S_UNMAPPED && me != MGR);
        fetch = 0; xq = 0;
        do
        :: xq < NPROC ->
            if
            :: xq != me && VT(me, xq) > 0 -> fetch = fetch | (1 << xq)
            :: else -> skip
            fi;
            xq++
        :: else -> break
        od;
        xq = 0
    };
    do
    :: atomic { cold ->
#ifndef COLD_RAW
           /* The manager's copy may hold writes no diff has yet: they are closed in a notice
            * and encoded first (TM_PAGE_REQ), so that the copy is what its next twin holds. */
           if
           :: tw[MGR] -> new_interval(MGR); make_diff(MGR); enc = 0; REACHED(R_COLD_ENC)
           :: else -> skip
           fi;
#endif
           xk = 0;
           do
           :: xk < NW -> W(me, xk) = W(MGR, xk); xk++
           :: else -> break
           od;
           xk = 0; cold = 0;
           TR(printf("P%d cold copy %d%d\n", me, W(me,0), W(me,1)));
           REACHED(R_COLD) }
    :: atomic { (fetch & 1) != 0 -> serve(0); fetch = fetch & ~1 }
    :: atomic { (fetch & 2) != 0 -> serve(1); fetch = fetch & ~2 }
    :: atomic { (fetch & 4) != 0 -> serve(2); fetch = fetch & ~4 }
    :: else -> break
    od;
    atomic {
        do
        :: candidates();
           if
           :: cand == 0 -> break
           :: (cand & 1) != 0 -> aq = 0; apply_one()
           :: (cand & 2) != 0 -> aq = 1; apply_one()
           :: (cand & 4) != 0 -> aq = 2; apply_one()
           fi
        od;
        st[me] = S_RO;
        aq = 0; cand = 0; lo[0] = 0; lo[1] = 0; lo[2] = 0
    }
}

/* The write fault on a read-only page: a twin unless one is left from an earlier interval. */
inline write_fault() {
    d_step {
        if
        :: !tw[me] ->
            tw[me] = 1;
            xk = 0;
            do
            :: xk < NW -> TW(me, xk) = W(me, xk); xk++
            :: else -> break
            od;
            xk = 0
        :: else -> skip
        fi;
        st[me] = S_RW;
        dirty[me] = 1
    }
}

inline acquire(l) {
    if
    :: atomic { tok[l] == me -> held[l] = 1; TR(printf("P%d acquires L%d locally\n", me, l)) }     /* the token is here: no message, no interval */
    :: else ->
        d_step { new_interval(me) };                /* the request, then a new interval */
        atomic {
            !held[l] && tok[l] != me ->
            g = tok[l];
            TR(printf("P%d acquires L%d from P%d\n", me, l, g));
            /* tm_grant: the holder ends its interval (its progress thread, maybe in a
             * critical section of another lock) and sends what it knows. */
            if
            :: dirty[g] -> REACHED(R_GRANT)
            :: else -> skip
            fi;
            new_interval(g);
            incorporate(g);
            tok[l] = me; held[l] = 1; g = 0
        }
    fi
}

inline release(l) {
    d_step { new_interval(me); held[l] = 0; TR(printf("P%d releases L%d\n", me, l)) }
}

proctype P(byte me)
{
    byte L, k, val, g, xq, xi, xk, xn, xm, ai, aq, cand, fetch;
    byte lo[NPROC];
    bit xf, xt, xd, yf, enc, cold, faulted;

    do
    :: k < NCS ->
        if
        :: L = 0
        :: NLOCK > 1 -> L = 1
        fi;
        acquire(L);
        if
        :: st[me] == S_UNMAPPED || st[me] == S_INVALID -> validate()
        :: else -> skip
        fi;
        atomic { val = W(me, L); TR(printf("P%d reads w%d=%d ghost=%d\n", me, L, val, ghost[L])) };
        assert(val == ghost[L]);                      /* the last value written under L */
        do
        :: atomic { st[me] == S_RW -> W(me, L) = STORED(val); ghost[L] = STORED(val); TR(printf("P%d stores w%d=%d\n", me, L, STORED(val))) }; break
        :: st[me] == S_RO ->
            if
            :: faulted -> REACHED(R_REFAULT)
            :: else -> skip
            fi;
            write_fault(); faulted = 1
        od;
        release(L);
        d_step { L = 0; val = 0; faulted = 0; k++ }
    :: else -> break
    od
}

init {
    byte i;
    PROBE_INIT;
    atomic {
        i = 0;
        do
        :: i < NLOCK -> tok[i] = i % NPROC; i++      /* the lock's manager starts with the token */
        :: else -> break
        od;
        i = 0;
        do
        :: i < NPROC -> run P(i); i++
        :: else -> break
        od
    }
}
