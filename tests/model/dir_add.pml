/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The directory as fetching adds and write notices in per-sender bins (issue 45), included by
 * cashmere.pml with -DCM_DIR_ADD; the rest of the protocol (faults, acquire, release, the
 * mechanisms) is cashmere.pml's.
 *
 * The entry is one word as in the CAS form (sharers, writers, flags, home, a tag counting the
 * writers that left). A process only ever changes its own bits, and it knows them exactly, so
 * JOIN, WRITE and LEAVE are adds that never fail and never hold the entry: no BUSY section,
 * no retry. Only a first touch's claim of the home is a compare-and-swap, and it holds the
 * entry (BUSY) while it copies the page in; a joiner whose add finds BUSY waits for it to
 * clear before it copies.
 *
 * The notice rule that needs no held entry. Whoever joins a page with another writer in the
 * word its add returns notices itself. Whoever becomes a writer posts a notice to every other
 * sharer in the word its WRITE returns, at its own release, before the release's flush (a
 * writer relies on nobody else's notices: with no held section another writer's may still be
 * on its way, OLD_RELY below). Adds at one home are serialized, so of a joiner and a writer
 * one sees the other. Once a writer, a process posts nothing more while it stays mapped:
 * every sharer that joined since has noticed itself, and each notice consumed leads to a leave
 * and a rejoin (or, REFETCH, a snapshot) that notices itself again while that writer stays.
 * A page made UNSAFE: the notices go out that once, then sharers check the word (its tag is
 * the version) at acquire.
 *
 * A joiner that notices itself may also post a notice to each writer it found (R_JOIN_NOTIFY),
 * as the other forms' transition into WEAK does: a writer that has stopped writing then leaves
 * at its next acquire, and its bit stops making every later join notice itself. Without it a
 * writer that no longer writes keeps every reader invalidating the page at each of its
 * acquires (SPLASH-3 BARNES, 2 processes, one host: 16.4 s against 0.9 s). With it at every
 * such join, a producer drops its page at each consumer's read (fft across two hosts 1.5x
 * slower), so the code tells them at the second join in a row that found writers
 * (cm_cm_join_tell). A notice more is never a stale read: the model lets every such join tell
 * them or not (cashmere.pml's dir_update; run.sh --full searches that exhaustively without
 * first touch, 335 M states, 16 GB), tells them at every one with JOIN_TELL_ALWAYS (make
 * check's safe search), and never with NO_JOIN_NOTIFY: each passes.
 *
 * A LEAVE is fire-and-forget: in flight until the process's next flush, and fenced before its
 * next update of that page. Until it lands the leaver is still in the word: writers notify it
 * and joiners notice themselves for nothing, which is safe.
 *
 * Bins: t's bin of notices from s (bin[t * NPROC + s]) is written by s alone: slot puts, then,
 * fenced behind them, its tail; all in flight until s's flush. t consumes at acquire: reads
 * its tail, visits the slots before it, then returns its head to s (a put s reads to know the
 * room left). A full bin: s counts an overflow there instead (a word only s writes), and t
 * invalidates everything when the count moved. No pending word, no control word, no atomic.
 * No suppression across releases either: a sender's view of the head can be old, and a
 * notice it believed unconsumed may have been consumed before the receiver rejoined (the
 * receiver then misses the new writes); within a release each page is posted once anyway.
 *
 * Its orderings that must fail (stale read under a lock unless said):
 *   OLD_RELY        a writer whose WRITE finds another writer posts nothing (the CAS and MCS
 *                   forms' rule, sound there only because the entry is held until the first
 *                   writer's notices are in);
 *   NO_SELF_JOIN    a joiner does not notice itself when another writer is there;
 *   TAIL_FIRST      the tail's put is not fenced behind the slots' (fails the bin's own
 *                   assertion: a slot read before its notice landed);
 *   LEAVE_UNFENCED  an add not waited for (a leave, the home's join) may land after the same
 *                   process's next update (fails that add's own assertion: a JOIN adding our
 *                   bit while still set, a carry into the next process's, or a WRITE of a
 *                   process not yet in the set);
 *   EARLY_ANY       (cashmere.pml) a fault's early copy kept whatever the word its add
 *                   returns: the tag is what proves it (no writer left in between);
 *   HOME_JOIN_ANY   (cashmere.pml) a fault on any page with a fixed home joins as the home
 *                   does below: a joiner elsewhere then misses a writer that was there;
 *   HOME_JOIN_UNFENCED  the home's join lands at once, before the same process's leave still
 *                   in flight (fails the add's own assertion).
 *
 * The home's join. A fault on a page whose data lives here (the word this process saw shows
 * the home fixed here; a fixed home never moves) needs nothing the add returns: no copy (ours
 * is the master, where every released write has landed), no self-notice (nothing of ours can
 * be stale), no claim. Its JOIN is an add like a leave, in flight until the next flush and
 * fenced before the page's next update but our WRITE: zero round trips. Until it lands,
 * writers do not notify us (we need no notice). Our WRITE is not fenced behind it
 * (R_WRITE_BEHIND_JOIN): two adds of bits known clear commute, and until both land others
 * may see us a writer not yet in the set (a joiner notices itself, as it should; a writer
 * does not notify us, as for the join alone); the WRITE's rule takes the word as if with our
 * join. A WRITE never follows our own leave in flight (asserted: a rejoin lands it first).
 * An UNSAFE page goes on the local list with the seen word's tag: an older tag only makes
 * the acquire's check leave once for nothing.
 *
 * A fault whose page lives at its directory home issues the copy after its add, fenced behind
 * it (cm_dir_add_join_issue): the home carries out the get after the add, so that copy is the
 * model's join-then-copy path below, not an early one, and needs no tag. That order is the
 * transport's (a fence), not the protocol's: tests/mp/mp_rma.c checks it, and fails without
 * the fence where UCX emulates atomics with messages.
 */

/* The bins: bin[t * NPROC + s] in t's memory, written by s. */
typedef bin_t { byte tail; byte ovf; byte slot[CAP] };
bin_t bin[NPROC * NPROC];
byte bhead[NPROC * NPROC];    /* t's consumed count of bin[t * NPROC + s], as s reads it back */

#define R_LEAVE_LATE  21   /* a fire-and-forget leave lands at a flush, after other steps */
#define R_BUSY_JOIN   22   /* a joiner's add found a claim in progress, and waited it out */
#define R_BIN_WAIT    23   /* a notice consumed from a bin */
#define R_HOME_JOIN   24   /* a fault on a page homed here joins by an add not waited for */
#define R_WRITE_BEHIND_JOIN 25   /* a WRITE issued while the same page's home join is in flight */
#define R_JOIN_NOTIFY 26   /* a joiner that found another writer tells it (cashmere.pml) */

/* The word's effects for op by me, as cm_dir_apply computes them in the add form. */
inline dir_apply_add(pg, op) {
    d_step {
        fx_notify = 0; fx_self = 0; fx_claim = 0; fx_oldhome = 0;
        if
        :: (e_fl & F_FIXED) == 0 -> e_home = pg % NPROC
        :: else -> skip
        fi;
        if
        :: op == OP_JOIN ->
            if
            :: FIRST_TOUCH && (e_fl & F_FIXED) == 0 ->
                fx_claim = 1; fx_oldhome = pg % NPROC; e_home = me; e_fl = e_fl | F_FIXED
            :: else -> skip
            fi;
            if
            :: fx_claim -> e_sh = e_sh | BIT(me)     /* the claim's compare-and-swap */
            :: else ->                               /* an add of our bit, known clear */
                assert((e_sh & BIT(me)) == 0); e_sh = e_sh + BIT(me)
            fi;
#ifndef NO_SELF_JOIN
            fx_self = (e_fl & F_UNSAFE) == 0 && (e_wr & ~BIT(me)) != 0;
#endif
#ifndef NO_JOIN_NOTIFY
            if                                       /* and the writers it found are told */
            :: (e_fl & F_UNSAFE) == 0 && (e_wr & ~BIT(me)) != 0 && !fx_claim ->
                fx_notify = e_wr & ~BIT(me)
            :: else -> skip
            fi
#else
            skip
#endif
        :: op == OP_WRITE ->
            /* joined (or our home's join in flight, never our leave), not a writer */
            assert(((e_sh & BIT(me)) != 0 || lvpend[pg] == 2) && lvpend[pg] != 1 &&
                   (e_wr & BIT(me)) == 0);
            e_wr = e_wr + BIT(me);
            if
            :: (e_fl & F_UNSAFE) != 0 -> skip                  /* sharers check at acquire */
#ifdef OLD_RELY
            :: (e_fl & F_UNSAFE) == 0 && (e_wr & ~BIT(me)) != 0 -> skip
            :: (e_fl & F_UNSAFE) == 0 && (e_wr & ~BIT(me)) == 0 ->
#else
            :: else ->
#endif
                fx_notify = e_sh & ~BIT(me);
                popcount(fx_notify, cnt);
                if
                :: cnt > THRESH -> e_fl = e_fl | F_UNSAFE; REACHED(R_UNSAFE)
                :: else -> skip
                fi
            fi
        :: op == OP_LEAVE ->                         /* one add: our bits off, the tag on */
            assert((e_sh & BIT(me)) != 0);
            if
            :: (e_wr & BIT(me)) != 0 -> e_wr = e_wr - BIT(me); dlv[pg]++; REACHED(R_VERSION)
            :: else -> skip
            fi;
            e_sh = e_sh - BIT(me)
        fi;
        cnt = 0
    }
}

/* An add of pg in flight lands (at a flush, or fenced before this process's next update):
 * a leave (lvpend 1) or the home's join (2). */
inline leave_land(pg) {
    if
    :: lvpend[pg] != 0 ->
        atomic {
            e_sh = dsh[pg]; e_wr = dwr[pg]; e_fl = dfl[pg]; e_home = dhome[pg];
            dir_apply_add(pg, (lvpend[pg] == 1 -> OP_LEAVE : OP_JOIN));
            dsh[pg] = e_sh; dwr[pg] = e_wr;
            lvpend[pg] = 0;
            e_sh = 0; e_wr = 0; e_fl = 0; e_home = 0; fx_self = 0
        }
    :: else -> skip
    fi
}

/* The fault's join on a page homed here: an add, not waited for, fenced behind our leave. */
inline home_join(pg) {
#ifndef HOME_JOIN_UNFENCED
    leave_land(pg);
#endif
    d_step {
        e_sh = dsh[pg]; e_wr = dwr[pg]; e_fl = dfl[pg]; e_home = dhome[pg];   /* as seen */
        fx_notify = 0; fx_self = 0; fx_claim = 0; fx_oldhome = 0;
        if
        :: (e_fl & F_UNSAFE) != 0 -> fx_version = dlv[pg]
        :: else -> skip
        fi;
        REACHED(R_HOME_JOIN)
    };
#ifdef HOME_JOIN_UNFENCED
    atomic { assert((dsh[pg] & BIT(me)) == 0); dsh[pg] = dsh[pg] + BIT(me) }   /* lands now */
#else
    d_step { assert(lvpend[pg] == 0); lvpend[pg] = 2 }                          /* in flight */
#endif
}

/* Every leave in flight lands: the flush. */
inline leaves_land() {
    lp = 0;
    do
    :: lp < NPAGE ->
        if
        :: lvpend[lp] != 0 -> REACHED(R_LEAVE_LATE); leave_land(lp)
        :: else -> skip
        fi;
        lp++
    :: else -> break
    od;
    lp = 0
}

/* cm_wn_post to t's bin from me: the slot's put, then (fenced) the tail's, or an overflow. */
inline bin_post(t, pg) {
    d_step {
        if
        :: mytail[t] - bhead[t * NPROC + me] < CAP ->
#ifndef TAIL_FIRST
            /* The slot may land at once: nobody reads it before the tail that lands behind it. */
            assert(bin[t * NPROC + me].slot[mytail[t] % CAP] == 0);   /* no notice overwritten */
            bin[t * NPROC + me].slot[mytail[t] % CAP] = pg + 1;
            mytail[t]++;
#else
            myslot[t * CAP + mytail[t] % CAP] = pg + 1;  /* the slot lands at our flush ... */
            mytail[t]++;
            bin[t * NPROC + me].tail = mytail[t];    /* ... its tail at once */
#endif
            REACHED(R_POSTED)
        :: else -> myovf[t]++; REACHED(R_OVERFLOW)
        fi
    }
}

/* Our notices in flight land: the slots, then the tails fenced behind them; overflow counts. */
inline bins_land() {
    ti = 0;
    do
    :: ti < NPROC ->
#ifdef TAIL_FIRST
        do
        :: mylanded[ti] != mytail[ti] ->
            assert(bin[ti * NPROC + me].slot[mylanded[ti] % CAP] == 0);   /* no notice overwritten */
            bin[ti * NPROC + me].slot[mylanded[ti] % CAP] = myslot[ti * CAP + mylanded[ti] % CAP];
            mylanded[ti]++
        :: else -> break
        od;
#endif
        bin[ti * NPROC + me].tail = mytail[ti];
        bin[ti * NPROC + me].ovf = myovf[ti];
        ti++
    :: else -> break
    od;
    ti = 0
}
