/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * PARMACS flag and condition macros: a relay of PAUSE flags through every
 * worker (`SETPAUSE' / `WAITPAUSE' / `CLEARPAUSE'), a bounded producer/consumer on
 * a condition variable (`CONDVARWAIT' / SIGNAL / BCAST), a flag handed over
 * with fences (`RELEASE_FENCE' / `ACQUIRE_FENCE' / `FULL_FENCE'), and
 * self-scheduled loop indices (`GSDEC' / `GSINIT' / `GETSUB': as in the ANL
 * macros, the first worker to run past the end resets the counter, so an
 * index may be handed out again to a worker still in the loop).
 *
 * With `sleep', only two long waits: worker 0 computes (sleeps) 0.3 s before it sets a
 * PAUSE flag the others wait for, and again before it broadcasts a condition they wait on.
 * A waiter that polls its word under the lock acquires the lock thousands of times meanwhile;
 * one that sleeps until woken, a few (tests/mp/test_compat.sh counts them).
 *
 *   cmrun -n P p_sync P [sleep]
 */
#include <string.h>
#include <unistd.h>
MAIN_ENV

#define ITEMS  200
#define TASKS  1000

struct global {
    PAUSEDEC(stage[65])
    CONDVARDEC(cv)
    LOCKDEC(qlock)
    LOCKDEC(idlock)
    BARDEC(bar)
    GSDEC(gs)
    long id;
    long relay;             /* passed along the relay */
    long queue, produced, consumed, consumed_sum;
    long fence_data, fence_flag;
    PAUSEDEC(go)
    long ready;
    long done[TASKS];
};

struct global *Global;
long P;
int sleep_only;

static void Sleepers(long me)
{
    if (me == 0) {
        usleep(300000);
        SETPAUSE(Global->go)
        usleep(300000);
        LOCK(Global->qlock)
        Global->ready = 1;
        CONDVARBCAST(Global->cv)
        UNLOCK(Global->qlock)
    } else {
        WAITPAUSE(Global->go)
        LOCK(Global->qlock)
        while (!Global->ready) {
            CONDVARWAIT(Global->cv, Global->qlock)
        }
        UNLOCK(Global->qlock)
        Global->done[me] = 1;
    }
    BARRIER(Global->bar, P)
}

static void Work(void)
{
    long me, t;

    LOCK(Global->idlock)
    me = Global->id++;
    UNLOCK(Global->idlock)
    BARRIER(Global->bar, P)
    if (sleep_only) {
        Sleepers(me);
        return;
    }

    /* Relay: worker k waits for stage k, adds k, opens stage k+1. */
    WAITPAUSE(Global->stage[me])
    CLEARPAUSE(Global->stage[me])
    Global->relay += me;
    SETPAUSE(Global->stage[me + 1])

    /* Producer/consumer: worker 0 produces ITEMS, the others consume them. */
    if (P > 1) {
        if (me == 0) {
            for (long i = 1; i <= ITEMS; i++) {
                LOCK(Global->qlock)
                while (Global->queue >= 4) {
                    CONDVARWAIT(Global->cv, Global->qlock)
                }
                Global->queue++;
                Global->produced += i;
                CONDVARBCAST(Global->cv)
                UNLOCK(Global->qlock)
            }
        } else {
            for (;;) {
                LOCK(Global->qlock)
                while (Global->queue == 0 && Global->consumed < ITEMS) {
                    CONDVARWAIT(Global->cv, Global->qlock)
                }
                if (Global->consumed == ITEMS) {
                    UNLOCK(Global->qlock)
                    break;
                }
                Global->queue--;
                Global->consumed++;
                Global->consumed_sum += Global->consumed;
                if (Global->consumed == ITEMS) {
                    CONDVARBCAST(Global->cv)
                } else {
                    CONDVARSIGNAL(Global->cv)
                }
                UNLOCK(Global->qlock)
            }
        }
    }

    /* Fences: the last worker publishes data then a flag; the others spin with a fence inside. */
    if (me == P - 1) {
        Global->fence_data = 4242;
        RELEASE_FENCE
        Global->fence_flag = 1;
        FULL_FENCE
    } else {
        long seen;
        do {
            ACQUIRE_FENCE
            seen = Global->fence_flag;
        } while (!seen);
        if (Global->fence_data != 4242) {
            Global->relay = -1000000; /* fails the check */
        }
    }

    /* Self-scheduled tasks: every index handed out at least once. */
    for (;;) {
        GETSUB(Global->gs, t, TASKS - 1)
        if (t < 0) {
            break;
        }
        Global->done[t] += 1;
    }
    BARRIER(Global->bar, P)
}

int main(int argc, char **argv)
{
    long bad = 0, relay_expect = 0;

    MAIN_INITENV()
    P = (argc > 1) ? atol(argv[1]) : 1;
    sleep_only = argc > 2 && strcmp(argv[2], "sleep") == 0;
    Global = (struct global *) G_MALLOC(sizeof(struct global));
    for (int k = 0; k <= 64; k++) {
        PAUSEINIT(Global->stage[k])
    }
    PAUSEINIT(Global->go)
    Global->ready = 0;
    CONDVARINIT(Global->cv)
    LOCKINIT(Global->qlock)
    LOCKINIT(Global->idlock)
    BARINIT(Global->bar, P)
    GSINIT(Global->gs)
    SETPAUSE(Global->stage[0])
    CREATE(Work, P)
    WAIT_FOR_END(P)
    if (sleep_only) {
        for (long k = 1; k < P; k++) {
            bad += Global->done[k] != 1;
        }
        printf("p_sync: %ld waiters woken, %ld not: %s\n", P - 1 - bad, bad, bad ? "FAILED" : "OK");
        if (bad != 0) {
            exit(1);
        }
        MAIN_END
        return 0;
    }

    for (long k = 0; k < P; k++) {
        relay_expect += k;
    }
    for (long t = 0; t < TASKS; t++) {
        bad += Global->done[t] < 1 || Global->done[t] > P;
    }
    if (P > 1 && (Global->produced != ITEMS * (ITEMS + 1) / 2 ||
                  Global->consumed_sum != ITEMS * (ITEMS + 1) / 2 || Global->queue != 0)) {
        bad++;
    }
    printf("p_sync: relay %ld (expected %ld), %ld bad tasks/queue: %s\n", Global->relay,
           relay_expect, bad, (bad == 0 && Global->relay == relay_expect) ? "OK" : "FAILED");
    if (bad != 0 || Global->relay != relay_expect) {
        exit(1);
    }
    MAIN_END
}
