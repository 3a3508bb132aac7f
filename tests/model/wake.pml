/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Blocking waits (rma/cm_rma_wait.c): a sleeper is never left asleep once what
 * it waits for has happened. SPIN interleaves sequentially consistent steps;
 * the code's seq_cst fences between each side's store and load give that order.
 * A missed wake-up is a sleeper blocked forever: an invalid end state.
 *
 * FUTEX: a waiter on a word and its waker (a peer's put_u64, or the progress
 * thread after an event). Sleeper: read seq, set sleeping, look at the word,
 * futex_wait(seq) (refused if seq moved). Waker: store the word, look at
 * sleeping, bump seq, FUTEX_WAKE. -DSEQ_LATE reads seq after looking at the
 * word: the waker's bump can fall in between, and the sleeper sleeps on the
 * new value forever.
 *
 * EVENTS (-DEVENTS): a waiter on the worker's event fd, for a condition a
 * handler sets. One event arrives; whoever progresses the worker first takes
 * it: the progress thread (if it began a progress call before the waiter took
 * the worker back) or the waiter, whose arm refuses while an event is pending.
 * The thread, after its handler, wakes a sleeper through the waiter's eventfd.
 * -DNO_SELF_FD leaves that out (the first version): the event the thread took
 * raises nothing more on the worker's fd, and the waiter sleeps forever.
 *
 * BELL (-DBELL): a peer whose transport cannot raise our worker's fd (shared memory across
 * network namespaces: UCX's signal to our abstract socket fails) rings our doorbell instead
 * (rma/cm_rma_bell.c). Two messages; the sleeper (the progress thread) takes what is in its
 * FIFO, else raises `armed`, arms (refused while the FIFO holds a message or the fd is
 * raised) and sleeps on the fd. The sender writes a message into the FIFO, then looks at
 * `armed` and, if raised, bumps the bell. The bell's thread waits on the bell (a futex: it
 * sleeps only while the bell still has the value it saw), reads the bell again, then raises
 * the fd (ucp_worker_signal). -DLOOK_FIRST: the sender looks before writing; -DARM_FIRST: the
 * sleeper arms before raising `armed`; -DSEEN_LATE: the bell's thread reads the bell after
 * raising the fd, absorbing a ring that came in between. Each leaves a message unserved.
 *
 * PROGRESS (-DPROGRESS): the FUTEX sleeper, and a peer's put over TCP, which UCX runs here as an
 * event of our worker, in whichever progress call takes it: the progress thread's. Its loop
 * progresses and, if that did anything, wakes the sleeper (cm_rma_wake_self); else arms
 * (cm_rma_arm), which progresses once more after ucp_worker_arm (soft-RoCE's arm misses a
 * completion that came before it), and sleeps on the fd only if that found nothing. Found
 * something, the arm's progress is progress like any other: -DARM_NO_WAKE only loops again
 * (d9e3f75 did), and the put it ran leaves the sleeper asleep (test_wait's missed wake-up,
 * seen once in a CI rehearsal).
 *
 * SLEEP (-DSLEEP): the compat layers' waits on a word under a lock (locks/cm_sleep.c). Two
 * waiters wait for the gate under the lock to reach 2; a changer opens it in two steps, each
 * under the lock, and after each release reads the lock's map (its own copy, which the
 * waiters' adds reach) and sends each armed waiter a wake that bumps its nap count. Wakes
 * travel: a network process lands them in any order, any time later. A waiter, holding the
 * lock, looks at the gate; if shut, reads its nap count, arms (its bit in the map, complete
 * before the release: the flush) unless armed, releases, sleeps until the nap count moved,
 * and looks again. -DWAKE_FIRST: the changer reads the map before its change; -DNAP_LATE: the
 * waiter reads its nap count after the release; -DNO_FLUSH: the arm's add still travels at the
 * release. Each leaves a waiter asleep forever.
 */
bit word = 0;      /* FUTEX: the waited word; EVENTS: the handler's effect (ready) */
byte seq = 0;      /* futex word */
bit sleeping = 0;
bit asleep = 0;    /* in futex_wait / poll */
bit pending = 0;   /* EVENTS: an event not yet taken from the worker */
bit selffd = 0;    /* EVENTS: the waiter's eventfd */

#ifdef BELL
byte fifo = 0;   /* messages in the sleeper's FIFO */
byte served = 0;
bit armed = 0;   /* the sleeper's `armed` count (one sleeper) */
byte bell = 0;   /* the doorbell's futex word */
bit fd = 0;      /* the worker's event fd, raised by ucp_worker_signal */

active proctype sender()
{
    byte k;
    for (k : 1 .. 2) {
#ifdef LOOK_FIRST
        if
        :: armed -> fifo++; bell++
        :: else -> fifo++
        fi
#else
        fifo++;   /* the message is in the peer's FIFO (UCX's signal to it fails) */
        if
        :: armed -> bell++   /* FUTEX_WAKE wakes the bell's thread if it sleeps on the old value */
        :: else -> skip
        fi
#endif
    }
}

active proctype belltd()
{
    byte seen = 0;   /* read before `armed` can be raised (cm_rma_bell_plan) */
end:
    do
    :: bell != seen ->   /* futex_wait(bell, seen) returns once the bell moved */
#ifdef SEEN_LATE
        fd = 1; seen = bell
#else
        seen = bell; fd = 1
#endif
    od
}

active proctype sleeper()
{
    do
    :: served == 2 -> break
    :: fifo > 0 -> fifo--; served++   /* ucp_worker_progress */
    :: else ->
#ifdef ARM_FIRST
        if
        :: fifo > 0 || fd -> fd = 0; armed = 1   /* ucp_worker_arm refuses */
        :: else -> armed = 1; (fd == 1); fd = 0  /* epoll_wait on the worker's fd */
        fi;
#else
        armed = 1;
        if
        :: fifo > 0 || fd -> fd = 0             /* ucp_worker_arm refuses (and drains) */
        :: else -> (fd == 1); fd = 0            /* epoll_wait on the worker's fd */
        fi;
#endif
        armed = 0
    od
}
#elif defined(SLEEP)
bit lk = 0;          /* the lock */
byte gate = 0;       /* the word under it */
bit map[2];          /* the lock's map of armed waiters, at its home */
byte nap[2];         /* each waiter's nap word */
chan net = [4] of { byte, bit };   /* puts in flight: (waiter, 1 = a nap put, 0 = an arm's add) */

active proctype network()
{
    byte w;
    bit kind;
end:
    do
    :: net ? w, kind ->
        if
        :: kind -> nap[w]++   /* a fresh value: never the one a sleeper read */
        :: else -> map[w] = 1
        fi
    od
}

active proctype changer()
{
    byte k, w;
    bit snap[2];
    for (k : 1 .. 2) {
#ifdef WAKE_FIRST
        snap[0] = map[0]; snap[1] = map[1];
#endif
        atomic { lk == 0 -> lk = 1 };
        gate = k;
        lk = 0;
#ifndef WAKE_FIRST
        snap[0] = map[0]; snap[1] = map[1];   /* the get of the map, after the release */
#endif
        for (w : 0 .. 1) {
            if
            :: snap[w] -> net ! w, 1
            :: else -> skip
            fi
        }
    }
}

active [2] proctype waiter()
{
    byte me = _pid - 2, seen;
    bit armed = 0;
    do
    :: atomic { lk == 0 -> lk = 1 };
        if
        :: gate == 2 -> lk = 0; break
        :: else ->
#ifndef NAP_LATE
            seen = nap[me];
#endif
            if
            :: !armed ->
#ifdef NO_FLUSH
                net ! me, 0;
#else
                map[me] = 1;
#endif
                armed = 1
            :: else -> skip
            fi;
            lk = 0;
#ifdef NAP_LATE
            seen = nap[me];
#endif
            (nap[me] != seen)   /* cm_rma_wait_u64(nap, NE, seen) */
        fi
    od
}
#elif defined(PROGRESS)
active proctype peer()
{
    pending = 1   /* the put arrives: an event for our worker */
}

active proctype thread()
{
    do
    :: atomic { pending == 1 -> pending = 0 }; word = 1;   /* ucp_worker_progress runs the put */
        if
        :: sleeping -> seq++; asleep = 0                    /* cm_rma_wake_self */
        :: else -> skip
        fi
    :: else ->                                              /* nothing progressed: arm */
        if
        :: atomic { pending == 1 -> pending = 0 }; word = 1;  /* the arm's own progress */
#ifndef ARM_NO_WAKE
            if
            :: sleeping -> seq++; asleep = 0
            :: else -> skip
            fi
#endif
        :: else ->
end_idle:   (pending == 1)                                  /* epoll_wait on the worker's fd */
        fi
    od
}

active proctype sleeper()
{
    byte s;
    do
    :: word == 1 -> break
    :: else ->
        s = seq;
        sleeping = 1;
        if
        :: word == 1 -> sleeping = 0; break
        :: else ->
            atomic { if :: seq == s -> asleep = 1 :: else -> skip fi }  /* futex_wait */
            (asleep == 0);
            sleeping = 0
        fi
    od
}
#elif !defined(EVENTS)
active proctype waker()
{
    word = 1;
    if
    :: sleeping -> seq++; asleep = 0   /* FUTEX_WAKE wakes whoever sleeps on seq */
    :: else -> skip
    fi
}

active proctype sleeper()
{
    byte s;
    do
    :: word == 1 -> break
    :: else ->
#ifndef SEQ_LATE
        s = seq;
#endif
        sleeping = 1;
        if
        :: word == 1 -> sleeping = 0; break
        :: else ->
#ifdef SEQ_LATE
            s = seq;
#endif
            atomic { if :: seq == s -> asleep = 1 :: else -> skip fi }  /* futex_wait */
            (asleep == 0);
            sleeping = 0
        fi
    od
}
#else
active proctype peer()
{
    pending = 1   /* the answer arrives */
}

active proctype thread()
{
    /* one progress call, begun before the waiter took the worker back (or none: the waiter
       took the event itself, and the thread idles, a valid end) */
end:
    atomic { pending == 1 -> pending = 0 };
    word = 1;  /* its handler */
#ifndef NO_SELF_FD
    if
    :: sleeping -> selffd = 1; asleep = 0
    :: else -> skip
    fi
#endif
}

active proctype waiter()
{
    do
    :: word == 1 -> break
    :: atomic { pending == 1 -> pending = 0 }; word = 1   /* progresses it itself */
    :: else ->
        sleeping = 1;
        if
        :: word == 1 -> skip
        :: pending == 1 -> skip             /* ucp_worker_arm refuses: events first */
        :: else ->
            asleep = 1;
            /* poll: the worker's fd (an event arrives) or the eventfd */
            (asleep == 0 || pending == 1 || selffd == 1);
            asleep = 0
        fi;
        sleeping = 0; selffd = 0
    od
}
#endif
