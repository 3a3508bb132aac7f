/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A model of the Cashmere protocol as src/protocols/cashmere/cm_cashmere.c, directory/ and
 * writenotice/ implement it, checked with SPIN (tests/model/run.sh).
 *
 * Process 0 runs NCS0 critical sections, the others NCS each. A critical
 * section picks a lock L and a page p (BOTH_PAGES: every page, in turn),
 * acquires L, reads word L of page p, checks that it holds the last value
 * written under L (the ghost), writes value + 1 and releases L: the
 * release-consistency guarantee that the litmus test `wordlocks` checks. Every protocol step that is one remote operation in the
 * code (a get, a put that lands, an atomic) is one atomic step here, so every
 * interleaving of them is explored. That rests on two guarantees of the
 * one-sided layer (rma/cm_rma.h, checked by tests/mp/mp_rma.c): a put lands
 * once, as one write of each word, and a get fenced behind an atomic reads
 * after the atomic took effect. The implementation once broke each (memcpy
 * storing an MCS link twice; UCX holding a swap that a direct get overtook),
 * which no search of this model could show: tests/README.md, "The rare MCS-form hang".
 *
 * The add form (CM_DIR_ADD: adds that never hold the entry, per-sender notice bins, leaves
 * that are not waited for) is in dir_add.pml, included below; its notice rule differs.
 *
 * Modelled: directory entries in both forms (CM_DIR_CAS: one compare-and-swap
 * word with the BUSY flag; else the MCS form, an MCS entry lock held across
 * the read-modify-write, each process with one queue node for every entry as
 * in directory/cm_dir.c), the transition function
 * (cm_dir_apply), write-notice rings with their control word, reserved slots,
 * pending-word suppression and overflow, delayed write notices with the
 * processed bit, self-notices, unsafe pages with the version word, first-touch
 * home migration, write-through of stores to the home (puts in flight until a
 * flush, or landing earlier), MCS application locks with their hand-off,
 * release = transitions + flush, acquire = drain + invalidate + self-notices +
 * unsafe checks + overflow.
 *
 * The mechanisms of the variants (src/protocols/cashmere/cm_fill_*.c, cm_write_*.c), one macro
 * per dimension; none: page fill and store hooks (CHS*):
 *   FILL_LINE      software line fills (NS**): the join copies nothing; a read of a
 *                  page whose line is not valid gets it from the home (one line per
 *                  page here: the words of both locks share it, as false sharing does);
 *                  the join and the drop make the line invalid, home pages stay valid;
 *   WRITE_MAPPED   NH**: the page is the home's memory (loads and stores reach it
 *                  directly, nothing is copied or forwarded);
 *   WRITE_OFFLOAD  CHH*, NSH*: a store changes the local copy only; the offload
 *                  engine forwards what differs from the twin, at the latest when the
 *                  page is settled (before its write transition and before it is
 *                  dropped), and a line fill installs the fetched words in the twin too.
 *   REFETCH        CM_REFETCH=used (src/protocols/cashmere/cm_refetch.h; page copies, CAS or add form): an
 *                  acquire's invalidation keeps the page in the sharing set ("pending"),
 *                  and the acquire's end reads a snapshot of its entry, then gets the
 *                  page from its home, each one step; a snapshot that shows the
 *                  page WEAK, BUSY or UNSAFE self-notices it. The page is then "held":
 *                  its next access maps it without a join or a copy; invalidated
 *                  unused, it is refetched once more, and the second time it leaves; any
 *                  page may leave instead of being held (CM_REFETCH=auto holding nothing).
 *                  A writer's WRITE when its writer bit is set writes nothing (the
 *                  entry's UNSAFE flag then as a stale guess may show it).
 * Their orderings that must fail: LINE_KEEP (a line stays valid across a drop and a
 * join), OFFLOAD_LATE (a release settles its pages after its transitions and flush),
 * FILL_NO_TWIN (a line fill leaves the twin as it was: the fetched words look written
 * and go back to the home, over newer ones), REFETCH_NO_SELF (a held page is never
 * self-noticed: writes to a page already WEAK post no notices, and its copy stays old),
 * REFETCH_SNAP_LATE (the snapshot read with the copy, either order: a writer can leave
 * between them, and the snapshot then shows none).
 *
 * The ordering that must fail: OLD_ORDER, notices posted after the entry is
 * released (the lost update; a counterexample in both forms). The old
 * pending-word rule is checked by ring.pml, where posters run concurrently.
 *
 * Properties: the assertion in the critical section (no stale read under a
 * lock), an assertion that a slot is empty when a notice is written into it
 * (no ring slot lost), and SPIN's invalid end states (no deadlock: every
 * process finishes, also while an owner waits for a reserved slot whose put
 * lands only at the poster's next flush).
 */

#ifndef NPROC
#define NPROC 3
#endif
#ifndef NPAGE
#define NPAGE 2
#endif
#ifndef NLOCK
#define NLOCK 2
#endif
#ifndef NCS0
#define NCS0 2         /* critical sections of process 0 */
#endif
#ifndef NCS
#define NCS 1          /* critical sections of every other process */
#endif
#ifndef CAP
#define CAP 2          /* write-notice ring slots per process */
#endif
#ifndef THRESH
#define THRESH 2       /* CM_UNSAFE_THRESHOLD: more remote notices than this make a page unsafe */
#endif
#ifndef FIRST_TOUCH
#define FIRST_TOUCH 0  /* homes move to the first toucher (pages start with data at round-robin homes) */
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
#define R_POSTED       1   /* a notice written into a ring slot */
#define R_SUPPRESSED   2   /* a notice suppressed by the pending word */
#define R_OVERFLOW     3   /* a full ring: overflow bit set */
#define R_UNSAFE       4   /* a page marked unsafe */
#define R_CLAIM        5   /* first touch copies a page from its old home */
#define R_VERSION      6   /* a leaving writer moves the version */
#define R_WAIT_ENTRY   7   /* an update waits for an entry held by another (BUSY / entry lock) */
#define R_HANDOFF      8   /* an MCS lock handed to a queued successor */
#define R_WAIT_SLOT    9   /* an owner waits for a reserved slot whose put has not landed */
#define R_INV_NOTICE  11   /* a mapped page invalidated by a drained notice */
#define R_INV_SELF    12   /* ... by a self-notice */
#define R_INV_UNSAFE  13   /* ... by the check of an unsafe page */
#define R_INV_ALL     14   /* ... because the ring overflowed */
#define R_LINE_FILL   15   /* FILL_LINE: a line got from another home after its page was joined */
#define R_FORWARD     16   /* WRITE_OFFLOAD: a settle forwards words that differ from the twin */
#define R_WRITE_SKIP  17   /* REFETCH: a WRITE by a writer writes nothing */
#define R_HELD_LEAVE  18   /* REFETCH: a held page invalidated unused leaves */
#define R_REFETCH     19   /* REFETCH: a page refetched at the end of an acquire */
#define R_EARLY       20   /* CAS form, page copies: a fault's copy got before its join */

#define F_UNSAFE 1
#define F_FIXED  2
#define F_BUSY   4

#define S_UNCACHED 0
#define S_SHARED   1
#define S_DIRTY    2
#define S_WEAK     3

#define OP_JOIN  0
#define OP_WRITE 1
#define OP_LEAVE 2

#define BIT(i) (1 << (i))

/* ---- shared state ---------------------------------------------------------- */

/* Memory: mem[i].w[p*NLOCK+l] is process i's copy of word l of page p; at the home it is the master. */
typedef mem_t { byte w[NPAGE * NLOCK] };
mem_t mem[NPROC];
byte ghost[NPAGE * NLOCK];          /* the last value written under its lock */

/* Directory entry per page, and its version word. */
byte dsh[NPAGE], dwr[NPAGE], dfl[NPAGE], dhome[NPAGE], dver[NPAGE];
/* CAS form: the entry word's tag, writers that left (cm_dir.h: 24 bits; it never wraps here). */
byte dlv[NPAGE];
/* MCS form: entry lock tail (rank + 1) per page; one queue node per process for all entries. */
byte etail[NPAGE];
byte eq_next[NPROC];
bit eq_locked[NPROC];

/* Write-notice ring per process. */
typedef ring_t { byte head; byte tail; bit ovf; byte slot[CAP]; bit pending[NPAGE] };
ring_t ring[NPROC];

/* MCS application locks. */
byte ltail[NLOCK];
typedef qnode_t { byte next[NLOCK]; bit locked[NLOCK] };
qnode_t q[NPROC];

/* A process's local page table (declared in the process: private state). */
typedef pte_t {
    bit mapped[NPAGE]; bit dirty[NPAGE]; bit processed[NPAGE]; bit unsafe[NPAGE]; bit self[NPAGE];
#ifdef REFETCH
    bit pend[NPAGE]; bit kept[NPAGE]; bit missed[NPAGE];  /* cm_refetch.c's per-page state */
#endif
    byte home[NPAGE]; byte ver[NPAGE];
    bit inflight[NPAGE * NLOCK];    /* a forwarded store on its way to home[p] */
#ifdef FILL_LINE
    bit valid[NPAGE];               /* the page's line is current */
#endif
#ifdef WRITE_OFFLOAD
    byte twin[NPAGE * NLOCK];       /* the words as last forwarded or fetched */
#endif
};

/* ---- helpers ------------------------------------------------------------------ */

inline state_of(sh, wr, out) {
    if
    :: sh == 0 -> out = S_UNCACHED
    :: sh != 0 && wr == 0 -> out = S_SHARED
    :: sh != 0 && wr != 0 && (sh == 1 || sh == 2 || sh == 4 || sh == 8) && wr == sh -> out = S_DIRTY
    :: else -> out = S_WEAK
    fi
}

inline popcount(m, out) {
    out = ((m & 1) != 0) + ((m & 2) != 0) + ((m & 4) != 0) + ((m & 8) != 0)
}

#ifdef CM_DIR_ADD
#include "dir_add.pml"
#endif

/*
 * Every put this process has in flight lands (cm_rma_flush_all). Forwarded
 * stores land only here, the latest moment the code allows: landing earlier
 * only makes newer data visible sooner. So do the puts of posted notices: the
 * pending word, then (fenced) the slot; the owner may be waiting for it.
 */
inline flush_all() {
#ifdef CM_DIR_ADD
    bins_land();
    leaves_land();
#endif
    d_step {
        xi = 0;
        do
        :: xi < NPROC * NPAGE ->
            if
            :: rput[xi] != 0 ->
                ring[xi / NPAGE].pending[xi % NPAGE] = 1;
                assert(ring[xi / NPAGE].slot[rput[xi] - 1] == 0);      /* no notice overwritten */
                ring[xi / NPAGE].slot[rput[xi] - 1] = xi % NPAGE + 1;
                REACHED(R_POSTED);
                rput[xi] = 0
            :: else -> skip
            fi;
            xi++
        :: else -> break
        od;
        xi = 0;
        do
        :: xi < NPAGE * NLOCK ->
            if
            :: pt.inflight[xi] ->
                mem[pt.home[xi / NLOCK]].w[xi] = mem[me].w[xi];
                pt.inflight[xi] = 0
            :: else -> skip
            fi;
            xi++
        :: else -> break
        od;
        xi = 0
    }
}

/*
 * cm_wn_post(target, page): read the pending word (a 1: a notice there is
 * still to be visited, suppressed), else reserve a slot of target's ring (or
 * set its overflow bit), put the pending word, then, fenced behind it, the
 * page into the slot. The compare-and-swap loop on the control word is one
 * atomic step: the step at which its last, successful swap happens. (The old
 * pending rule is checked by ring.pml, where posters run concurrently.)
 */
inline wn_post(t, pg) {
#ifdef CM_DIR_ADD
    bin_post(t, pg)
#else
    /* Our own earlier post of it, fenced before this get: its pending word is there. */
    d_step {
        if
        :: rput[t * NPAGE + pg] != 0 -> ring[t].pending[pg] = 1
        :: else -> skip
        fi
    };
    pv = ring[t].pending[pg];                        /* get */
    if
    :: pv -> REACHED(R_SUPPRESSED)                   /* suppressed */
    :: else ->
        atomic {                                     /* compare-and-swap on the control word */
            if
            :: ring[t].tail - ring[t].head < CAP ->
                widx = ring[t].tail % CAP; ring[t].tail++; reserved = 1
            :: else -> REACHED(R_OVERFLOW); ring[t].ovf = 1; reserved = 0
            fi
        };
        if
        :: reserved ->
            /* The pending word's put, then (fenced) the slot's: in flight until our flush. */
            d_step { assert(rput[t * NPAGE + pg] == 0); rput[t * NPAGE + pg] = widx + 1 }
        :: else -> skip
        fi
    fi;
    d_step { pv = 0; widx = 0; reserved = 0 }
#endif
}

/* The notices of a transition (cm_cm_held's loop), then flush. */
inline post_notices(pg) {
    ti = 0;
    do
    :: ti < NPROC ->
        if
        :: (fx_notify & BIT(ti)) != 0 -> wn_post(ti, pg)
        :: else -> skip
        fi;
        ti++
    :: else -> break
    od;
    ti = 0
}

/* cm_cm_held: run while the entry is held. */
inline held(pg) {
    if
    :: fx_claim && fx_oldhome != me ->
        d_step {                                     /* get of the page from the old home */
            REACHED(R_CLAIM);
            xi = 0;
            do
            :: xi < NLOCK -> mem[me].w[pg * NLOCK + xi] = mem[fx_oldhome].w[pg * NLOCK + xi]; xi++
            :: else -> break
            od;
            xi = 0
        }
    :: else -> skip
    fi;
#ifndef OLD_ORDER
    if
    :: fx_notify != 0 -> post_notices(pg)
    :: else -> skip
    fi
#endif
}

/* cm_dir_apply on (e_sh, e_wr, e_fl, e_home): the new entry and the effects. */
inline dir_apply(pg, op) {
    d_step {
        state_of(e_sh, e_wr, st_before);
        was_unsafe = (e_fl & F_UNSAFE) != 0;
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
            e_sh = e_sh | BIT(me)
        :: op == OP_WRITE -> e_sh = e_sh | BIT(me); e_wr = e_wr | BIT(me)
        :: op == OP_LEAVE -> e_sh = e_sh & ~BIT(me); e_wr = e_wr & ~BIT(me)
        fi;
        state_of(e_sh, e_wr, st_after);
        if
        :: op == OP_LEAVE || st_after != S_WEAK || was_unsafe -> skip
        :: else ->
            if
            :: st_before != S_WEAK ->
                popcount(e_sh & ~BIT(me), cnt);
                if
                :: cnt > THRESH -> e_fl = e_fl | F_UNSAFE; REACHED(R_UNSAFE)
                :: else -> skip
                fi;
                fx_notify = e_sh & ~BIT(me);
                fx_self = 1
            :: else ->
                if
                :: op == OP_JOIN -> fx_self = 1
                :: else -> skip
                fi
            fi
        fi;
        st_before = 0; st_after = 0; was_unsafe = 0; cnt = 0
    }
}

/* cm_dir_update in the add form. */
inline dir_update_add(pg, op) {
#ifndef LEAVE_UNFENCED
    if
    :: op == OP_WRITE && lvpend[pg] == 2 ->          /* our join in flight: the adds commute */
        REACHED(R_WRITE_BEHIND_JOIN)
    :: else -> leave_land(pg)                        /* fenced before this update */
    fi;
#endif
    if
    :: op == OP_LEAVE ->
        d_step { assert(lvpend[pg] == 0); lvpend[pg] = 1 }  /* issued, not waited for */
    :: else ->
#ifdef REFETCH
        if
        :: op == OP_WRITE && (dwr[pg] & BIT(me)) != 0 ->   /* already a writer: nothing */
            atomic {
                e_sh = dsh[pg]; e_wr = dwr[pg]; e_home = dhome[pg]; e_fl = dfl[pg] & ~F_BUSY;
                fx_notify = 0; fx_self = 0; fx_claim = 0; fx_oldhome = 0;
                REACHED(R_WRITE_SKIP)
            }
        :: else ->
#endif
        atomic {            /* the add (a claim: the compare-and-swap, once it succeeds) */
#ifndef EARLY_ANY
            /* The early copy holds if no writer left since the word it was got after. */
            seen_ok = early && dlv[pg] == s_lv && (dfl[pg] & F_FIXED) != 0 && dhome[pg] == s_home;
#else
            seen_ok = early;
#endif
            e_sh = dsh[pg]; e_wr = dwr[pg]; e_fl = dfl[pg]; e_home = dhome[pg];
            busy_join = (e_fl & F_BUSY) != 0;
            dir_apply_add(pg, op);
            busy = fx_claim && fx_oldhome != me;
            dsh[pg] = e_sh; dwr[pg] = e_wr; dhome[pg] = e_home;
            dfl[pg] = e_fl | (busy -> F_BUSY : 0);
            if
            :: op == OP_JOIN && (e_fl & F_UNSAFE) != 0 -> fx_version = dlv[pg]   /* in the word */
            :: else -> skip
            fi
        };
#ifndef NO_JOIN_NOTIFY
        if                                           /* the writers a join found: told or not */
        :: op == OP_JOIN && fx_notify != 0 ->
#ifdef JOIN_TELL_ALWAYS
            REACHED(R_JOIN_NOTIFY)
#else
            if :: skip; REACHED(R_JOIN_NOTIFY) :: fx_notify = 0 fi
#endif
        :: else -> skip
        fi;
#endif
        if
        :: busy ->
            held(pg);                                /* the claim copies the page in */
            atomic { assert((dfl[pg] & F_BUSY) != 0); dfl[pg] = dfl[pg] & ~F_BUSY }  /* an add */
        :: else -> skip
        fi;
        if
        :: busy_join ->                              /* a claim in progress: wait it out */
            REACHED(R_BUSY_JOIN);
            (dfl[pg] & F_BUSY) == 0;
            busy_join = 0
        :: else -> skip
        fi;
        if
        :: fx_notify != 0 -> post_notices(pg)        /* puts in flight until our flush */
        :: else -> skip
        fi
#ifdef REFETCH
        fi
#endif
    fi;
    busy = 0
}


/* cm_dir_update: the read-modify-write of page pg's entry, in any form. */
inline dir_update(pg, op) {
#if defined(CM_DIR_ADD)
    dir_update_add(pg, op);
#elif defined(CM_DIR_CAS)
    /* A leaving writer moves the version first. */
    if
    :: op == OP_LEAVE && (dwr[pg] & BIT(me)) != 0 -> atomic { dver[pg]++; REACHED(R_VERSION) }
    :: else -> skip
    fi;
#ifdef REFETCH
    /* Already a writer: nothing written, no wait (decided on our own bit, exact in the guess). */
    if
    :: op == OP_WRITE && (dwr[pg] & BIT(me)) != 0 ->
        atomic {
            e_sh = dsh[pg]; e_wr = dwr[pg]; e_home = dhome[pg];
            if
            :: e_fl = dfl[pg] & ~F_BUSY
            :: e_fl = dfl[pg] & ~(F_BUSY | F_UNSAFE)        /* a guess from before it was unsafe */
            fi;
            dir_apply(pg, op);
            REACHED(R_WRITE_SKIP)
        }
    :: else ->
#endif
    /* get + compare-and-swap until it succeeds, never on a BUSY entry: one atomic step. */
#ifdef WAIT_PROBES   /* a separate step: compiled only for its probe run */
    if
    :: (dfl[pg] & F_BUSY) != 0 -> REACHED(R_WAIT_ENTRY)
    :: else -> skip
    fi;
#endif
    atomic {
        (dfl[pg] & F_BUSY) == 0;
        /* The first swap compares the word seen before an early copy (tag included): it
         * counts only if that swap succeeds (cm_dir_update_seen). */
#ifndef EARLY_ANY
        seen_ok = early && dsh[pg] == s_sh && dwr[pg] == s_wr && dfl[pg] == s_fl && dlv[pg] == s_lv;
#else
        seen_ok = early;
#endif
        if
        :: op == OP_LEAVE && (dwr[pg] & BIT(me)) != 0 -> dlv[pg]++
        :: else -> skip
        fi;
        e_sh = dsh[pg]; e_wr = dwr[pg]; e_fl = dfl[pg]; e_home = dhome[pg];
        dir_apply(pg, op);
#ifdef OLD_ORDER
        busy = fx_claim && fx_oldhome != me;         /* old: only a migration held the entry */
#else
        busy = fx_notify != 0 || (fx_claim && fx_oldhome != me);
#endif
        dsh[pg] = e_sh; dwr[pg] = e_wr; dhome[pg] = e_home;
        dfl[pg] = e_fl | (busy -> F_BUSY : 0)
    };
    if
    :: op == OP_JOIN && (e_fl & F_UNSAFE) != 0 -> fx_version = dver[pg]   /* get, after the CAS */
    :: else -> skip
    fi;
    if
    :: busy ->
        held(pg);
        atomic { assert((dfl[pg] & F_BUSY) != 0); dfl[pg] = e_fl }   /* nobody changed it */
    :: else -> skip
    fi;
#ifdef REFETCH
    fi;
#endif
#else
    /* MCS form: the entry lock is held from the read to the write-back. Queue node set up
     * and fetch-and-store in one step: nobody can reach the node before the swap. */
    atomic {
        eq_next[me] = 0; eq_locked[me] = 1; pred = etail[pg]; etail[pg] = me + 1;
        if   /* free: ours, and nobody else changes it (the get fenced behind the swap) */
        :: pred == 0 -> e_sh = dsh[pg]; e_wr = dwr[pg]; e_fl = dfl[pg]; e_home = dhome[pg]
        :: else -> skip
        fi
    };
    if
    :: pred != 0 ->
        eq_next[pred - 1] = me + 1;                           /* put: link behind it */
#ifdef WAIT_PROBES   /* a separate step: compiled only for its probe run */
        if
        :: eq_locked[me] != 0 -> REACHED(R_WAIT_ENTRY)
        :: else -> skip
        fi;
#endif
        /* The entry comes with the lock; only a holder changes it, so reading it in the
         * same step loses no interleaving. */
        atomic { eq_locked[me] == 0 -> e_sh = dsh[pg]; e_wr = dwr[pg]; e_fl = dfl[pg]; e_home = dhome[pg]; pred = 0 }
    :: else -> skip
    fi;
    leaving_writer = (op == OP_LEAVE && (e_wr & BIT(me)) != 0);
    dir_apply(pg, op);
    held(pg);
    if
    :: leaving_writer -> atomic { dver[pg]++; REACHED(R_VERSION) }  /* before the entry changes */
    :: op == OP_JOIN && (e_fl & F_UNSAFE) != 0 -> fx_version = dver[pg]
    :: else -> skip
    fi;
    d_step { dsh[pg] = e_sh; dwr[pg] = e_wr; dfl[pg] = e_fl; dhome[pg] = e_home; leaving_writer = 0 };
    /* cm_mcs_release with the entry's queue. Reading next and the compare-and-swap in one
     * step: a swap between them is the case of a successor that swapped before the read
     * and has not linked yet, which stays. */
    atomic {
        if
        :: eq_next[me] == 0 && etail[pg] == me + 1 -> etail[pg] = 0
        :: else -> handoff = 1
        fi
    };
    if
    :: handoff ->    /* wait for the successor's link, then hand the entry and the lock on */
        atomic { eq_next[me] != 0 -> eq_locked[eq_next[me] - 1] = 0; handoff = 0; REACHED(R_HANDOFF) }
    :: else -> skip
    fi
#endif
#ifdef OLD_ORDER
    /* Old: the notices went out after the entry was released. */
    if
    :: fx_notify != 0 -> post_notices(pg)
    :: else -> skip
    fi;
#endif
    busy = 0
}

/* cm_cm_effects: the local part (self-notices, unsafe list). */
inline effects(pg) {
    d_step {
        if
        :: fx_self -> pt.self[pg] = 1
        :: else -> skip
        fi;
        if
        :: (e_fl & F_UNSAFE) != 0 && pt.mapped[pg] && !pt.unsafe[pg] ->
            pt.unsafe[pg] = 1; pt.ver[pg] = fx_version
        :: else -> skip
        fi;
        e_sh = 0; e_wr = 0; e_fl = 0; e_home = 0;
        fx_notify = 0; fx_self = 0; fx_claim = 0; fx_oldhome = 0; fx_version = 0
    }
}

/* cm_cm_write_transition: a delayed write notice. */
inline write_transition(pg) {
    dir_update(pg, OP_WRITE);
    pt.processed[pg] = 1;
    effects(pg)
}

/* cm_cm_fault: join, copy the page from its home, map it read-write. CAS form, page copies:
 * a page whose home is fixed (the word last seen says so; a fixed home never moves) is got
 * at the same time as the join (cm_fill_page.c): the copy before or after the swap. Not
 * while BUSY: a first toucher that just claimed the home is still copying the data in
 * (EARLY_BUSY does it anyway, and reads the old data). */
inline fault(pg) {
#ifdef CM_DIR_ADD
    if
#ifdef HOME_JOIN_ANY
    :: (dfl[pg] & F_FIXED) != 0 ->
#else
    :: (dfl[pg] & F_FIXED) != 0 && dhome[pg] == me ->
#endif
        home_join(pg);
        if
        :: e_home != me ->                           /* HOME_JOIN_ANY: the page's get */
            d_step {
                xi = 0;
                do
                :: xi < NLOCK -> mem[me].w[pg * NLOCK + xi] = mem[e_home].w[pg * NLOCK + xi]; xi++
                :: else -> break
                od;
                xi = 0
            }
        :: else -> skip                              /* the master copy: nothing to get */
        fi
    :: else ->
#endif
#if (defined(CM_DIR_CAS) || defined(CM_DIR_ADD)) && !defined(FILL_LINE) && !defined(WRITE_MAPPED) && !defined(JOIN_FIRST)
    atomic { s_sh = dsh[pg]; s_wr = dwr[pg]; s_fl = dfl[pg]; s_lv = dlv[pg]; s_home = dhome[pg] };
    if                                               /* decided on the word seen */
#ifdef EARLY_BUSY
    :: (s_fl & F_FIXED) != 0 && s_home != me ->
#else
    :: (s_fl & F_FIXED) != 0 && (s_fl & F_BUSY) == 0 && s_home != me ->
#endif
        d_step {                                     /* the early get, issued after the word was seen */
            xi = 0;
            do
            :: xi < NLOCK -> mem[me].w[pg * NLOCK + xi] = mem[s_home].w[pg * NLOCK + xi]; xi++
            :: else -> break
            od;
            xi = 0;
            early = 1
        }
    :: else -> skip
    fi;
#endif
    dir_update(pg, OP_JOIN);
    d_step { early = early && seen_ok; seen_ok = 0; s_sh = 0; s_wr = 0; s_fl = 0; s_lv = 0; s_home = 0 };
    if
#if defined(FILL_LINE) || defined(WRITE_MAPPED)
    :: false ->                                      /* nothing copied at the join */
#else
    :: early -> early = 0; REACHED(R_EARLY)         /* it got there with the join */
    :: !early && !fx_claim && e_home != me ->
#endif
        d_step {                                     /* get of the whole page */
            xi = 0;
            do
            :: xi < NLOCK -> mem[me].w[pg * NLOCK + xi] = mem[e_home].w[pg * NLOCK + xi]; xi++
            :: else -> break
            od;
            xi = 0
        }
    :: else -> skip
    fi;
#ifdef CM_DIR_ADD
    fi;
#endif
    d_step {
        pt.mapped[pg] = 1; pt.home[pg] = e_home;
        pt.processed[pg] = 0; pt.unsafe[pg] = 0; pt.self[pg] = 0;
#if defined(FILL_LINE) && !defined(LINE_KEEP)
        pt.valid[pg] = (e_home == me);               /* homed here: the master copy */
#endif
#ifdef WRITE_OFFLOAD
        xi = 0;                                      /* the twin: the page as it is now */
        do
        :: xi < NLOCK -> pt.twin[pg * NLOCK + xi] = mem[me].w[pg * NLOCK + xi]; xi++
        :: else -> break
        od;
        xi = 0
#else
        skip
#endif
    };
    effects(pg)
}

#ifdef FILL_LINE
/* cm_fl_fill: one get of the line from the home, installed (offload: in the twin too). */
inline line_fill(pg) {
    d_step {
        xi = 0;
        do
        :: xi < NLOCK ->
            mem[me].w[pg * NLOCK + xi] = mem[pt.home[pg]].w[pg * NLOCK + xi];
#if defined(WRITE_OFFLOAD) && !defined(FILL_NO_TWIN)
            pt.twin[pg * NLOCK + xi] = mem[me].w[pg * NLOCK + xi];
#endif
            xi++
        :: else -> break
        od;
        xi = 0;
        pt.valid[pg] = 1;
        REACHED(R_LINE_FILL)
    }
}
#endif

/* write->settle: the offload engine forwards what differs from the twin (puts in flight
 * until the next flush). Else nothing: stores were forwarded as they happened. */
inline settle(pg) {
#ifdef WRITE_OFFLOAD
    d_step {
        if
        :: pt.mapped[pg] && pt.home[pg] != me ->
            xi = 0;
            do
            :: xi < NLOCK ->
                if
                :: mem[me].w[pg * NLOCK + xi] != pt.twin[pg * NLOCK + xi] ->
                    pt.inflight[pg * NLOCK + xi] = 1;
                    pt.twin[pg * NLOCK + xi] = mem[me].w[pg * NLOCK + xi];
                    REACHED(R_FORWARD)
                :: else -> skip
                fi;
                xi++
            :: else -> break
            od;
            xi = 0
        :: else -> skip
        fi
    }
#else
    skip
#endif
}

/* cm_cm_invalidate. */
inline invalidate(pg) {
    if
    :: pt.mapped[pg] ->
        settle(pg);
        if
        :: pt.dirty[pg] && !pt.processed[pg] -> write_transition(pg)
        :: else -> skip
        fi;
        d_step {                                     /* fill->drop */
            pt.mapped[pg] = 0;
#if defined(FILL_LINE) && !defined(LINE_KEEP)
            pt.valid[pg] = 0;
#endif
            if
            :: why == 1 -> REACHED(R_INV_NOTICE)
            :: why == 2 -> REACHED(R_INV_SELF)
            :: why == 3 -> REACHED(R_INV_UNSAFE)
            :: why == 4 -> REACHED(R_INV_ALL)
            :: else -> skip
            fi
        };
#ifdef REFETCH
        if
        :: !pt.unsafe[pg] && (pt.processed[pg] || (dwr[pg] & BIT(me)) == 0) ->
            /* used since its copy (and written, if a writer): refetched, stays */
            d_step {
                pt.pend[pg] = 1; pt.missed[pg] = 0;
                pt.dirty[pg] = 0; pt.processed[pg] = 0; pt.self[pg] = 0; pt.ver[pg] = 0
            }
        :: true ->    /* unsafe, a writer that did not write, or CM_REFETCH=auto holding nothing */
#endif
        dir_update(pg, OP_LEAVE);
#ifdef CM_DIR_ADD
        if                                           /* fire-and-forget: now, or at a flush */
        :: leave_land(pg)
        :: skip
        fi;
#endif
        d_step {
            pt.dirty[pg] = 0; pt.processed[pg] = 0; pt.unsafe[pg] = 0;
            pt.self[pg] = 0; pt.ver[pg] = 0;
            e_sh = 0; e_wr = 0; e_fl = 0; e_home = 0; fx_notify = 0; fx_self = 0;
            fx_claim = 0; fx_oldhome = 0; fx_version = 0
        }
#ifdef REFETCH
        fi
    :: !pt.mapped[pg] && pt.kept[pg] && !pt.missed[pg] ->   /* unused once: refetched again */
        d_step { pt.kept[pg] = 0; pt.pend[pg] = 1; pt.missed[pg] = 1 }
    :: !pt.mapped[pg] && pt.kept[pg] ->    /* unused twice (or auto holding nothing): it leaves */
        d_step { pt.kept[pg] = 0; pt.missed[pg] = 0 };
        dir_update(pg, OP_LEAVE);
        d_step {
            e_sh = 0; e_wr = 0; e_fl = 0; e_home = 0; fx_notify = 0; fx_self = 0;
            fx_claim = 0; fx_oldhome = 0; fx_version = 0;
            REACHED(R_HELD_LEAVE)
        }
#endif
    :: else -> skip
    fi;
    why = 0
}

#ifdef REFETCH
/* cm_refetch_complete, page pg: its copy from its home. */
inline refetch_copy(pg) {
    d_step {
        if
        :: pt.home[pg] != me ->
            xi = 0;
            do
            :: xi < NLOCK -> mem[me].w[pg * NLOCK + xi] = mem[pt.home[pg]].w[pg * NLOCK + xi]; xi++
            :: else -> break
            od;
            xi = 0
        :: else -> skip
        fi
    }
}

/*
 * cm_refetch_complete: first the entries of the pages held (all in flight together), then
 * their copies. A snapshot that shows the page WEAK, BUSY or UNSAFE self-notices it.
 * REFETCH_SNAP_LATE: each entry and its copy in flight together (the code before issue 30),
 * so the snapshot may be read after the copy: a writer present when the copy was read may
 * write, release and leave before the snapshot, which then shows no writer, and the writes
 * it released after the copy are never noticed (a lost update, found under loss over TCP).
 */
inline refetch_snap(pg) {
    atomic { e_sh = dsh[pg]; e_wr = dwr[pg]; e_fl = dfl[pg] };
    d_step {
        assert((e_sh & BIT(me)) != 0);       /* we never left */
        state_of(e_sh, e_wr, cst);
#ifndef REFETCH_NO_SELF
        if
        :: (e_fl & (F_BUSY | F_UNSAFE)) != 0 || cst == S_WEAK -> pt.self[pg] = 1
        :: else -> skip
        fi;
#endif
        e_sh = 0; e_wr = 0; e_fl = 0; cst = 0
    }
}

inline refetch_complete() {
    ap = 0;
    do
    :: ap < NPAGE ->
        if
        :: pt.pend[ap] ->
#ifdef REFETCH_SNAP_LATE
            if
            :: refetch_copy(ap); refetch_snap(ap)
            :: refetch_snap(ap); refetch_copy(ap)
            fi;
#else
            refetch_snap(ap);
#endif
            skip
        :: else -> skip
        fi;
        ap++
    :: else -> break
    od;
    ap = 0;
    do
    :: ap < NPAGE ->
        if
        :: pt.pend[ap] ->
#ifndef REFETCH_SNAP_LATE
            refetch_copy(ap);
#endif
            d_step { pt.pend[ap] = 0; pt.kept[ap] = 1; REACHED(R_REFETCH) }
        :: else -> skip
        fi;
        ap++
    :: else -> break
    od;
    ap = 0
}
#endif

/* cm_wn_drain: this process's bins, sender by sender. */
inline bins_drain() {
    bs = 0;
    do
    :: bs < NPROC ->
        atomic { dn = bin[me * NPROC + bs].tail; dh = bhead[me * NPROC + bs];
                 dov = bin[me * NPROC + bs].ovf != bseen[bs]; bseen[bs] = bin[me * NPROC + bs].ovf };
        do
        :: dh != dn ->
            d_step {
                assert(bin[me * NPROC + bs].slot[dh % CAP] != 0);   /* landed before its tail */
                dp = bin[me * NPROC + bs].slot[dh % CAP] - 1;
                bin[me * NPROC + bs].slot[dh % CAP] = 0;
                why = 1;
                REACHED(R_BIN_WAIT)
            };
            invalidate(dp);
            dp = 0;
            dh++
        :: else -> break
        od;
        bhead[me * NPROC + bs] = dn;                 /* the head back to the sender: a put */
        if
        :: dov ->
            ap = 0;
            do
            :: ap < NPAGE -> why = 4; invalidate(ap); ap++
            :: else -> break
            od;
            ap = 0
        :: else -> skip
        fi;
        d_step { dn = 0; dh = 0; dov = 0 };
        bs++
    :: else -> break
    od;
    bs = 0
}

/* cm_wn_drain + visits: consume this process's ring. */
inline drain() {
#ifdef CM_DIR_ADD
    bins_drain()
#else
    atomic { dn = ring[me].tail - ring[me].head; dh = ring[me].head; dov = ring[me].ovf };
    if
    :: dn == 0 && !dov -> skip
    :: else ->
        di = 0;
        do
        :: di < dn ->
#ifdef WAIT_PROBES   /* a separate step: compiled only for its probe run */
            if
            :: ring[me].slot[(dh + di) % CAP] == 0 -> REACHED(R_WAIT_SLOT)
            :: else -> skip
            fi;
#endif
            /* Reserved before we looked: wait for its put. */
            atomic { ring[me].slot[(dh + di) % CAP] != 0 ->
                     dp = ring[me].slot[(dh + di) % CAP] - 1; ring[me].slot[(dh + di) % CAP] = 0 };
            d_step { ring[me].pending[dp] = 0; why = 1 }  /* clear, then visit (cm_wn.h) */
            invalidate(dp);
            dp = 0;
            di++
        :: else -> break
        od;
        atomic {                                     /* compare-and-swap loop: consume dn slots */
            ring[me].head = ring[me].head + dn; dov = ring[me].ovf; ring[me].ovf = 0
        };
        if
        :: dov ->
            ap = 0;
            do
            :: ap < NPAGE -> why = 4; invalidate(ap); ap++
            :: else -> break
            od;
            ap = 0
        :: else -> skip
        fi
    fi;
    d_step { dn = 0; dh = 0; di = 0; dov = 0 }
#endif
}

/* cm_cm_acquire, after the lock is held. */
inline acquire_coherence() {
    flush_all();
    drain();
    ap = 0;
    do
    :: ap < NPAGE ->
        if
        :: pt.self[ap] -> d_step { pt.self[ap] = 0; why = 2 }; invalidate(ap)
        :: else -> skip
        fi;
        ap++
    :: else -> break
    od;
    ap = 0;
    do
    :: ap < NPAGE ->
        if
        :: pt.mapped[ap] && pt.unsafe[ap] ->
#ifdef CM_DIR_ADD
            atomic { e_sh = dsh[ap]; e_wr = dwr[ap]; cv = dlv[ap] };   /* one word, its tag */
            d_step { state_of(e_sh, e_wr, cst) };
#else
            atomic { e_sh = dsh[ap]; e_wr = dwr[ap] };    /* cm_dir_read: entry, then version */
            d_step { cv = dver[ap]; state_of(e_sh, e_wr, cst) };
#endif
            if
            :: cst == S_WEAK || cv != pt.ver[ap] -> d_step { e_sh = 0; e_wr = 0; cst = 0; cv = 0; why = 3 }; invalidate(ap)
            :: else -> d_step { e_sh = 0; e_wr = 0; cst = 0; cv = 0 }
            fi
        :: else -> skip
        fi;
        ap++
    :: else -> break
    od;
    ap = 0;
#ifdef REFETCH
    refetch_complete();
#endif
    skip
}

/* cm_cm_release, before the lock is handed on. */
inline release_coherence() {
    rp = 0;
    do
    :: rp < NPAGE ->
#ifndef OFFLOAD_LATE
        settle(rp);
#endif
        if
        :: pt.mapped[rp] && pt.dirty[rp] && !pt.processed[rp] -> write_transition(rp)
        :: else -> skip
        fi;
        pt.dirty[rp] = 0;
        rp++
    :: else -> break
    od;
    rp = 0;
    flush_all();
#ifdef OFFLOAD_LATE
    do                                               /* forwarded after the release is seen */
    :: rp < NPAGE -> settle(rp); rp++
    :: else -> break
    od;
    rp = 0
#endif
}

inline mcs_acquire(l) {
    d_step { q[me].next[l] = 0; q[me].locked[l] = 1 };
    atomic { pred = ltail[l]; ltail[l] = me + 1 };           /* fetch-and-store */
    if
    :: pred != 0 ->
        q[pred - 1].next[l] = me + 1;                         /* put: link behind it */
        q[me].locked[l] == 0                                  /* spin locally */
    :: else -> skip
    fi;
    pred = 0
}

inline mcs_release(l) {
    if
    :: q[me].next[l] == 0 ->
        atomic {                                              /* compare-and-swap tail me -> 0 */
            if
            :: ltail[l] == me + 1 -> ltail[l] = 0; freed = 1
            :: else -> freed = 0
            fi
        }
    :: else -> freed = 0
    fi;
    if
    :: !freed ->
        q[me].next[l] != 0;                                   /* the successor links itself */
        atomic { q[q[me].next[l] - 1].locked[l] = 0; REACHED(R_HANDOFF) }  /* put: hand off */
    :: else -> skip
    fi;
    freed = 0
}

/* A store hook + the store + its write-through (in flight until a flush). */
inline store(pg, l, v) {
    d_step {
        pt.dirty[pg] = 1;
#if defined(WRITE_MAPPED)
        mem[pt.home[pg]].w[pg * NLOCK + l] = v       /* through the mapping, at the home */
#elif defined(WRITE_OFFLOAD)
        mem[me].w[pg * NLOCK + l] = v                /* the engine finds it by the twin */
#else
        mem[me].w[pg * NLOCK + l] = v;
        if
        :: pt.home[pg] != me -> pt.inflight[pg * NLOCK + l] = 1
        :: else -> skip
        fi
#endif
    }
}

proctype P(byte me; byte ncs)
{
    pte_t pt;
    byte L, pg, k;
    byte e_sh, e_wr, e_fl, e_home, st_before, st_after, cnt, fx_notify, fx_oldhome, fx_version;
    bit was_unsafe, fx_self, fx_claim, busy, leaving_writer, pv, reserved, freed, dov, handoff, early;
    bit seen_ok;                /* the join's first swap found the word seen before the early copy */
    byte s_sh, s_wr, s_fl, s_lv, s_home;   /* that word */
    byte widx, ti, xi, dn, dh, di, dp, ap, rp, cv, cst, pred, val, why;
    byte rput[NPROC * NPAGE];   /* a posted notice's puts in flight to ring t, page p: slot + 1 */
#ifdef CM_DIR_ADD
    byte mytail[NPROC], myovf[NPROC];                /* our side of the bins we post to */
#ifdef TAIL_FIRST
    byte mylanded[NPROC], myslot[NPROC * CAP];       /* slots in flight */
#endif
    byte bseen[NPROC];          /* the overflow count of each of our bins, as last drained */
    byte lvpend[NPAGE];         /* an add of the page in flight: 1 a leave, 2 the home's join */
    bit busy_join;
    byte lp, bs;
#endif

    do
    :: k < ncs ->
        if
        :: L = 0
        :: NLOCK > 1 -> L = 1
        fi;
#ifdef BOTH_PAGES
        pg = 0;
#else
        if
        :: pg = 0
        :: NPAGE > 1 -> pg = 1
        fi;
#endif
        mcs_acquire(L);
        acquire_coherence();
again:
        if
#ifdef REFETCH
        :: !pt.mapped[pg] && pt.kept[pg] ->          /* refetched: mapped, no join, no copy */
            d_step { pt.kept[pg] = 0; pt.missed[pg] = 0; pt.mapped[pg] = 1; pt.processed[pg] = 0; pt.unsafe[pg] = 0 }
        :: !pt.mapped[pg] && !pt.kept[pg] -> fault(pg)
#else
        :: !pt.mapped[pg] -> fault(pg)
#endif
        :: else -> skip
        fi;
#ifdef FILL_LINE
        if
        :: !pt.valid[pg] -> line_fill(pg)            /* the load check misses */
        :: else -> skip
        fi;
#endif
#ifdef WRITE_MAPPED
        val = mem[pt.home[pg]].w[pg * NLOCK + L];
#else
        val = mem[me].w[pg * NLOCK + L];
#endif
        assert(val == ghost[pg * NLOCK + L]);                 /* the last value written under L */
        d_step { ghost[pg * NLOCK + L] = val + 1 };
        store(pg, L, val + 1);
        val = 0;
#ifdef BOTH_PAGES
        if
        :: pg + 1 < NPAGE -> pg++; goto again
        :: else -> skip
        fi;
#endif
        release_coherence();
        mcs_release(L);
        d_step { L = 0; pg = 0; k++ }
    :: else -> break
    od
}

init {
    byte i;
    PROBE_INIT;
    atomic {
#if FIRST_TOUCH
        /* Data before the protocol starts, at each page's round-robin home: a first toucher
         * that did not copy it in would lose it. */
        i = 0;
        do
        :: i < NPAGE * NLOCK -> mem[(i / NLOCK) % NPROC].w[i] = 1; ghost[i] = 1; i++
        :: else -> break
        od;
#endif
        i = 0;
        do
        :: i < NPAGE -> dhome[i] = i % NPROC; dfl[i] = (FIRST_TOUCH -> 0 : F_FIXED); i++
        :: else -> break
        od;
        i = 0;
        do
        :: i < NPROC -> run P(i, (i == 0 -> NCS0 : NCS)); i++
        :: else -> break
        od
    }
}
