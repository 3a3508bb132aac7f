/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The two-level protocol (issue 46; src/protocols/twolevel/, docs/ARCHITECTURE.md, "Two
 * levels"), checked with SPIN (tests/model/run.sh): two hosts of two processes each, one page
 * of two words whose home is host 0; under FIRST_TOUCH, the first host to join it after the
 * initialization phase (host 0, its round-robin home then, holds the data; host 1's copy holds
 * whatever it held before).
 *
 * The processes of a host share one copy of the page (the node copy) and keep their own
 * protections on it. Host 0's copy is the master. Host 1 brings its copy up to date from the
 * master and keeps a twin: the master's words as host 1 last knew them.
 *   incoming  (a fault that needs the page, under the page's node lock): the host joins if it
 *             is not a sharer; the notices drained so far are noted (s = wn); the master is
 *             got word by word (host 0's processes may be writing it meanwhile); each word the
 *             master has that differs from the twin is written to the copy and to the twin
 *             alike, so words written here since (copy != twin) stay; then upd = s.
 *   outgoing  (a release, under the page's node lock, held until the release's flush and its
 *             notices are out): each word where copy != twin is put to the master and written
 *             to the twin; whatever process wrote it (a diff carries the other local
 *             processes' writes too).
 * A host is a member of the directory: one sharer and one writer bit each, changed by adds
 * (the add form of issue 45, dir_add.pml) made under the page's node lock, so that a host's
 * processes never add the same bit twice. Its rules, a host for a process:
 *   a JOIN that finds another writer notices itself (the self-notice, drained at the host's
 *   next acquire); a WRITE posts a notice to every other sharer its word shows, before the
 *   release's end; once a writer, a host posts nothing more until it leaves.
 * A notice is for a host: any of its processes drains it at an acquire, under the host's
 * drain lock: the page's notice count goes up (wn), the host leaves the page (both bits) and
 * an entry goes to the host's log. Each process keeps its own place in that log (its pending
 * list) and at its acquire, after draining, drops its own mapping of every page logged since:
 * nobody else's mapping is touched (no shootdown). A process keeps the pages it wrote in its
 * write list past a dropped mapping: its next release still diffs them and makes the host a
 * writer again if it left meanwhile (the host's processes may have gone on writing through
 * their mappings after the leave).
 * The home host never fetches: its copy is the master. It joins and writes like any host, so
 * that others see it as a writer, and skips the self-notice (its data is never stale).
 * First touch: the first join claims the home in the directory word (a compare-and-swap)
 * with BUSY set while the claimer, its page lock held, copies the page in from the old home;
 * every other join waits for BUSY to clear before it gets the page from the new home.
 *
 * The programs (PROG, below) increment counters under locks (lock k guards word k) and read
 * them back; process 3 may also write word 1 outside any lock (it alone writes it then).
 *   stale read:   a counter read under its lock is not the last one released (v==ghost);
 *   own write:    a process reads back a value other than the one it wrote (v==ghost after
 *                 its write, v==mine);
 *   lost update:  at the end the master lacks a released write (home[k]==...).
 *
 * Its orderings that must fail:
 *   INCOMING_COPY   the fetched page replaces the copy (a local write is lost);
 *   INCOMING_KEEP_TWIN  the incoming diff writes the copy, not the twin (the remote words
 *                   then look like local writes: the next outgoing diff puts them back, old);
 *   OUTGOING_KEEP_TWIN  the outgoing diff does not write the twin (the next incoming diff takes
 *                   our own put-back words for remote ones and overwrites later local writes);
 *   EARLY_UNLOCK    the release unlocks the page before its flush (a second local release of the
 *                   page puts a newer word that the first's late put overwrites);
 *   NO_LEAVE        a drained notice leaves the host a sharer and a writer (its next fault does
 *                   not join again, so it misses a writer that posts nothing more);
 *   DROP_WRITES     an acquire drops a page from the write list with the mapping;
 *   NO_DRAIN_WAIT   an acquire reads the log without waiting for a drain in progress;
 *   NO_SELF         a join that finds another writer does not notice itself;
 *   IGNORE_WN       a fault maps the copy while the host is a sharer, noticed or not;
 *   FT_NO_COPY      a claimer does not copy the page in from the old home;
 *   FT_NO_WAIT      a join that finds the claim BUSY gets the page at once.
 */

#define NONE 0
#define RO   1
#define RW   2

byte cp[4];                   /* host h's copy of word k: cp[h * 2 + k]; the home's: the master */
byte tw[4];                   /* host h's twin */
bit  has_twin[2];
byte hm = 0;                  /* the home host (host 0 is the round-robin one, the old home) */
bit  fixed;                   /* the home is fixed: claimed (FIRST_TOUCH), or from the start */
bit  busy;                    /* a claimer is copying the page in from the old home */

bit  dsh[2], dwr[2];          /* the directory word: sharer and writer bit per host */

byte rlk[2];                  /* per host: the page's node lock (process + 1, 0 free) */
bit  rsh[2], rwr[2];          /* the host's bits as its processes set them */
byte wn[2], upd[2];           /* notices drained; the value of wn the copy is current for */
byte dlk[2];                  /* the drain lock */
byte inbox[2], selfn[2];      /* notices posted to the host (committed), self-notices */
byte logn[2];                 /* entries of the host's log */
bit  fetching;                /* host 1 is getting the master (probe 6) */
byte lastw[4];                /* a host's last writer of each word (probe 7) */

byte prot[4];
bit  wl[4];                   /* the page is in the process's write list */
byte cur[4];                  /* the process's place in its host's log */
bit  dropped[4];              /* its acquire dropped a mapping in its write list (probe 8) */
byte pendv[8];                /* puts in flight: value per process and word */
bit  pendf[8];

byte L[2];                    /* the application locks: lock k guards word k's counter */
byte ghost[2];                /* each counter as last written under its lock */
byte mine = 0;                /* PRIV: word 1 as process 3 last wrote it (it alone writes it) */
byte done = 0;

c_code { int cm_probe; }
#define PROBE_INIT c_code { cm_probe = getenv("PROBE") ? atoi(getenv("PROBE")) : 0; }
#define REACHED(n) if :: c_expr { cm_probe == (n) } -> assert((n) == 0) :: else -> skip fi

#ifdef IGNORE_WN
#define STALE(h) 0
#else
#define STALE(h) (upd[h] != wn[h])
#endif

inline lock_page(h) { atomic { rlk[h] == 0 -> rlk[h] = id + 1 } }
inline unlock_page(h) { rlk[h] = 0 }

/* One word of the fetched master into host h's copy: the incoming diff. */
inline incoming(h, k, t) {
    atomic {
#ifdef INCOMING_COPY
        cp[h * 2 + k] = t;
        if :: has_twin[h] -> tw[h * 2 + k] = t :: else -> skip fi
#else
        if
        :: has_twin[h] && t != tw[h * 2 + k] ->
            if :: cp[h * 2 + k] != tw[h * 2 + k] -> REACHED(1) :: else -> skip fi;
            cp[h * 2 + k] = t;
#ifndef INCOMING_KEEP_TWIN
            tw[h * 2 + k] = t
#endif
        :: has_twin[h] && t == tw[h * 2 + k] ->
            if :: cp[h * 2 + k] != tw[h * 2 + k] -> REACHED(1) :: else -> skip fi /* kept */
        :: !has_twin[h] -> cp[h * 2 + k] = t
        fi
#endif
    }
}

/* One word of host h's outgoing diff, into process id's puts in flight. */
inline outgoing(h, k) {
    atomic {
        if
        :: cp[h * 2 + k] != tw[h * 2 + k] ->
            if :: lastw[h * 2 + k] != id -> REACHED(7) :: else -> skip fi; /* another's write */
            pendv[id * 2 + k] = cp[h * 2 + k];
            pendf[id * 2 + k] = 1;
#ifndef OUTGOING_KEEP_TWIN
            tw[h * 2 + k] = cp[h * 2 + k]
#endif
        :: else -> skip
        fi
    }
}

/* The release's flush: every put of process id lands in the master. */
inline flush() {
    atomic {
        if :: pendf[id * 2] -> cp[hm * 2] = pendv[id * 2]; pendf[id * 2] = 0 :: else -> skip fi;
        if :: pendf[id * 2 + 1] -> cp[hm * 2 + 1] = pendv[id * 2 + 1]; pendf[id * 2 + 1] = 0
           :: else -> skip fi
    }
}

/* The host's JOIN (a fetching add, waited for), under the page's node lock. Under
 * FIRST_TOUCH the first join claims the home (a compare-and-swap that fixes it, BUSY while
 * the claimer copies the page in from the old home, host 0); a later join waits for BUSY to
 * clear before it gets the page from its new home. */
inline join(h) {
    atomic {
        if
        :: !fixed ->
            fixed = 1; hm = h;
            if :: h != 0 -> busy = 1; f = 3 :: else -> skip fi
        :: else ->
            if :: busy -> REACHED(10) :: else -> skip fi
        fi;
        dsh[h] = 1;
        rsh[h] = 1;
#ifndef NO_SELF
        if :: h != hm && dwr[1 - h] -> selfn[h]++ :: else -> skip fi
#endif
    }
    if
    :: f == 3 ->   /* claimed from another host: its copy in, then the claim is no longer held */
        REACHED(9);
#ifndef FT_NO_COPY
        cp[h * 2] = cp[0];
        cp[h * 2 + 1] = cp[1];
#endif
        busy = 0
    :: else ->
#ifndef FT_NO_WAIT
        busy == 0
#else
        skip
#endif
    fi
}

inline fault(h, write) {
    lock_page(h);
    f = 0;
    if
    :: !rsh[h] -> join(h); f = 1
    :: rsh[h] && STALE(h) -> f = 2
    :: else -> skip
    fi;
    if
    :: h != hm && f != 0 ->
        if :: f == 2 -> REACHED(2) :: else -> skip fi;   /* a refetch of a page still shared */
        s = wn[h];
        fetching = 1;
        t0 = cp[hm * 2];
        t1 = cp[hm * 2 + 1];
        fetching = 0;
        incoming(h, 0, t0);
        incoming(h, 1, t1);
        upd[h] = s
    :: else ->
        if :: h != hm && cur[id] != 0 -> REACHED(3) :: else -> skip fi /* refetched by another */
    fi;
    if
    :: write ->
        atomic {
            if :: h != hm && !has_twin[h] ->
                  tw[h * 2] = cp[h * 2]; tw[h * 2 + 1] = cp[h * 2 + 1]; has_twin[h] = 1
               :: else -> skip fi;
            prot[id] = RW;
            wl[id] = 1
        }
    :: else -> prot[id] = RO
    fi;
    unlock_page(h)
}

inline read_word(h, k, v) {
    if :: prot[id] == NONE -> fault(h, 0) :: else -> skip fi;
    v = cp[h * 2 + k]
}

inline write_word(h, k, v) {
    if :: prot[id] != RW -> fault(h, 1) :: else -> skip fi;
    atomic {
        if :: h == hm && fetching -> REACHED(6) :: else -> skip fi;
        cp[h * 2 + k] = v;
        lastw[h * 2 + k] = id
    }
}

inline release(h) {
    if
    :: wl[id] ->
        lock_page(h);
        if :: dropped[id] -> REACHED(8); dropped[id] = 0 :: else -> skip fi;
        if :: h != hm -> outgoing(h, 0); outgoing(h, 1) :: else -> skip fi;
        need = 0;
        if
        :: !rwr[h] ->
            if :: !rsh[h] -> REACHED(4) :: else -> skip fi;   /* the host left since our write */
            atomic {   /* the WRITE's add (a JOIN too where the host left) */
#ifndef NO_SELF
                if :: h != hm && !rsh[h] && dwr[1 - h] -> selfn[h]++ :: else -> skip fi;
#endif
                dsh[h] = 1; dwr[h] = 1; rsh[h] = 1; rwr[h] = 1;
                need = dsh[1 - h]
            }
        :: else -> skip
        fi;
#ifdef EARLY_UNLOCK
        unlock_page(h);
#endif
        flush();
        if :: need -> inbox[1 - h]++ :: else -> skip fi;  /* posted, committed, flushed */
#ifndef EARLY_UNLOCK
        unlock_page(h);
#endif
        if
        :: prot[id] == NONE -> wl[id] = 0
        :: prot[id] == RW && h != hm && pendf[id * 2] == 0 ->
            /* no put: the code may write-protect the page again and forget it, or not */
            if :: prot[id] = RO; wl[id] = 0 :: skip fi
        :: else -> skip
        fi
    :: else -> skip
    fi
}

inline drain_locked(h) {
    atomic { n = inbox[h] + selfn[h]; if :: selfn[h] != 0 -> REACHED(5) :: else -> skip fi;
             inbox[h] = 0; selfn[h] = 0 };
    if
    :: n > 0 ->
        lock_page(h);
        wn[h]++;
#ifndef NO_LEAVE
        atomic { dsh[h] = 0; dwr[h] = 0; rsh[h] = 0; rwr[h] = 0 };   /* the LEAVE, waited for */
#endif
        unlock_page(h);
        logn[h]++
    :: else -> skip
    fi;
    dlk[h] = 0
}

inline drain(h) {
#ifdef NO_DRAIN_WAIT
    if
    :: atomic { dlk[h] == 0 -> dlk[h] = id + 1 }; drain_locked(h)
    :: dlk[h] != 0 -> skip   /* somebody drains: read the log at once */
    fi
#else
    atomic { dlk[h] == 0 -> dlk[h] = id + 1 };
    drain_locked(h)
#endif
}

inline acquire(h, k) {
    atomic { L[k] == 0 -> L[k] = id + 1 };
    drain(h);
    atomic {   /* this process's pending list: the log since its place */
        if
        :: logn[h] != cur[id] ->
            if :: wl[id] -> dropped[id] = 1 :: else -> skip fi;
            prot[id] = NONE;
#ifdef DROP_WRITES
            wl[id] = 0;
#endif
            cur[id] = logn[h]
        :: else -> skip
        fi
    }
}

/* Increments word k's counter under lock k, then reads it back. */
inline csw(h, k) {
    acquire(h, k);
    read_word(h, k, v);
    assert(v == ghost[k]);
    write_word(h, k, v + 1);
    ghost[k] = v + 1;
    read_word(h, k, v);
    assert(v == ghost[k]);   /* own write */
    release(h);
    L[k] = 0
}

/* Reads word k's counter under lock k. */
inline csr(h, k) {
    acquire(h, k);
    read_word(h, k, v);
    assert(v == ghost[k]);
    release(h);
    L[k] = 0
}

/* Process 3 writes word 1 outside any lock (it alone writes it), reads it back. */
inline private_write(h, val) {
    write_word(h, 1, val);
    mine = val;
    read_word(h, 1, v);
    assert(v == mine)
}

/*
 * The programs (-DPROG=n):
 *   0  counters: both words incremented, host 0's processes on a lock each, host 1's on both
 *      (two drains at once on host 1; host 1 refetching while process 3 writes; host 0
 *      writing the master while host 1 gets it);
 *   1  reader: host 0 writes word 0 three times and stays a writer; host 1 only reads it;
 *   2  private: process 3 writes word 1 outside any lock, then acquires and releases lock 0;
 *      its release must still carry that write after its acquire dropped the mapping;
 *   3  both hosts at once (for FIRST_TOUCH): host 0 increments word 0 and reads word 1, host 1
 *      increments word 1 and reads word 0, so that either host may claim while the other joins.
 */
#ifndef PROG
#define PROG 0
#endif
#if PROG == 0
#define SCRIPT0 csw(h, 0)
#define SCRIPT1 csw(h, 1)
#define SCRIPT2 csw(h, 0); csw(h, 0)
#define SCRIPT3 csw(h, 1); csw(h, 0)
#define FINAL   (cp[hm * 2] == ghost[0] && cp[hm * 2 + 1] == ghost[1])
#elif PROG == 1
#define SCRIPT0 csw(h, 0); csw(h, 0)
#define SCRIPT1 csw(h, 0)
#define SCRIPT2 csr(h, 0); csr(h, 0); csr(h, 0)
#define SCRIPT3 skip
#define FINAL   (cp[hm * 2] == ghost[0])
#elif PROG == 3
#define SCRIPT0 csw(h, 0)
#define SCRIPT1 csr(h, 1)
#define SCRIPT2 csw(h, 1)
#define SCRIPT3 csr(h, 0)
#define FINAL   (cp[hm * 2] == ghost[0] && cp[hm * 2 + 1] == ghost[1])
#else
#define SCRIPT0 csw(h, 0)
#define SCRIPT1 skip
#define SCRIPT2 csw(h, 0)
#define SCRIPT3 csr(h, 0); private_write(h, 1); csw(h, 0); private_write(h, 2); csr(h, 0)
#define FINAL   (cp[hm * 2] == ghost[0] && cp[hm * 2 + 1] == mine)
#endif

proctype P(byte id) {
    byte h = id / 2, v, s, t0, t1, n, f;
    bit need;

    if
    :: id == 0 -> SCRIPT0
    :: id == 1 -> SCRIPT1
    :: id == 2 -> SCRIPT2
    :: id == 3 -> SCRIPT3
    fi;
    done++
}

init {
    PROBE_INIT;
    atomic {
        cp[2] = 7; cp[3] = 7;   /* host 1's copy: whatever it held before */
#ifndef FIRST_TOUCH
        fixed = 1;
#endif
        run P(0); run P(1); run P(2); run P(3)
    }
    done == 4;
    assert(FINAL)   /* lost update */
}
