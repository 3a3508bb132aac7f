/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Start-up, shutdown and failure behaviour, one mode per run:
 *
 *   mp_init info         ranks, sizes, the shared region at one address everywhere
 *   mp_init premap       something is mapped inside the shared range before cm_init
 *   mp_init die-abort    rank 1 calls abort() while the others wait in a barrier
 *   mp_init die-exit0    rank 1 exits 0 without cm_finalize while the others wait
 *   mp_init die-kill     rank 1 is killed (SIGKILL) while the others spin in a wait
 *   mp_init die-kill-barrier  ... while the others wait in cm_barrier
 *   mp_init die-kill-lock     ... holding lock 0, which the others wait for
 *   mp_init die-return   rank 1 returns 0 from main without cm_finalize
 *   mp_init die-MODE stop-launcher  rank 1 first stops its parent (the launcher) with
 *                        SIGSTOP: a launcher that never reacts, as an mpirun stuck in
 *                        "abort is already in progress"
 *   mp_init stdin        every rank prints the size and a checksum of its stdin
 *   mp_init args A B...  every rank prints its arguments
 *   mp_init oom          every rank asks cm_malloc for more than the shared region holds
 *   mp_init badlock      every rank acquires a lock id beyond CM_LOCKS
 */
#define _GNU_SOURCE
#include "mp_common.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

static void mode_info(void)
{
    cm_rma_t *rma = cm_rt.rma;
    int me = cm_rank(), np = cm_nprocs();
    uint64_t mine[2] = {(uint64_t)(uintptr_t)cm_rt.shared_base, (uint64_t)(uintptr_t)cm_rt.meta_base};
    uint64_t *table = (uint64_t *)cm_rt.scratch;

    MP_CHECK(me >= 0 && me < np, "rank %d of %d", me, np);
    /* Fresh shared memory reads as zero and is writable (each rank its own byte of the last page). */
    volatile char *mine_byte = (volatile char *)cm_rt.shared_base + cm_rt.shared_size - 1 - me;
    MP_CHECK(*mine_byte == 0, "not zeroed");
    *mine_byte = 1;
    /* Everyone sends rank 0 the addresses it mapped; rank 0 checks they are all the same. */
    MP_OK(cm_rma_put(rma, 0, table + 2 * me, mine, sizeof(mine)));
    MP_OK(cm_rma_barrier(rma));
    if (me == 0) {
        for (int r = 0; r < np; r++) {
            MP_CHECK(table[2 * r] == mine[0] && table[2 * r + 1] == mine[1],
                     "rank %d mapped the shared region at 0x%" PRIx64, r, table[2 * r]);
        }
    }
    char netns[64] = "?";
    ssize_t n = readlink("/proc/self/ns/net", netns, sizeof(netns) - 1);
    netns[n > 0 ? n : 1] = '\0';
    printf("rank %d of %d: shared %p+%zu meta %p+%zu mapped=%d thread=%d netns=%s\n", me, np,
           cm_rt.shared_base, cm_rt.shared_size, cm_rt.meta_base, cm_rt.meta_size,
           (int)cm_rma_all_mapped(rma), (int)cm_rma_progress_thread_running(rma), netns);
}

static void mode_stdin(void)
{
    unsigned long sum = 0, len = 0;
    int c;

    while ((c = getchar()) != EOF) {
        sum = sum * 31 + (unsigned char)c;
        len++;
    }
    printf("stdin rank %d: %lu bytes checksum %lu\n", cm_rank(), len, sum);
}

int main(int argc, char **argv)
{
    const char *mode = (argc > 1) ? argv[1] : "info";

    if (strcmp(mode, "premap") == 0) {
        /* Occupy one page inside where the shared region will go. */
        const char *base = getenv("CM_SHARED_BASE");
        uintptr_t addr = (base ? strtoull(base, NULL, 0) : 0x200000000000ull) + 7 * 4096;
        void *p = mmap((void *)addr, 4096, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
        if (p != (void *)addr) {
            fprintf(stderr, "mp_init: cannot pre-map %p\n", (void *)addr);
            return 3;
        }
        *(volatile int *)p = 42;
        cm_init(&argc, &argv);
        /* Not reached if cm_init refuses; if it clobbered our page, say so. */
        fprintf(stderr, "mp_init: cm_init accepted a taken range (page now %d)\n", *(volatile int *)p);
        cm_finalize();
        return 4;
    }

    cm_init(&argc, &argv);
    if (strcmp(mode, "info") == 0) {
        mode_info();
    } else if (strcmp(mode, "stdin") == 0) {
        mode_stdin();
    } else if (strcmp(mode, "args") == 0) {
        printf("args rank %d:", cm_rank());
        for (int i = 2; i < argc; i++) {
            printf(" [%s]", argv[i]);
        }
        printf("\n");
    } else if (strcmp(mode, "oom") == 0) {
        void *p = cm_malloc(1000);
        MP_CHECK(p != NULL, "a small block");
        p = cm_malloc(cm_rt.shared_size);
        fprintf(stderr, "mp_init: rank %d got %p beyond the shared region\n", cm_rank(), p);
        return 5;
    } else if (strcmp(mode, "badlock") == 0) {
        cm_lock_acquire((int)cm_rt.config.locks);
        fprintf(stderr, "mp_init: rank %d acquired a lock that does not exist\n", cm_rank());
        return 5;
    } else if (strcmp(mode, "stall") == 0 || strcmp(mode, "stop") == 0) {
        /* stall S: rank 1 computes S seconds outside the library while the others wait in a
         * barrier (its heartbeats must go on). stop: rank 1 stops (SIGSTOP), the way a process
         * of a frozen host falls silent; the others must end the job. */
        double secs = argc > 2 ? atof(argv[2]) : 3.0;
        MP_CHECK(cm_nprocs() >= 2, "needs 2 processes");
        MP_OK(cm_rma_barrier(cm_rt.rma));
        if (cm_rank() == 1 && strcmp(mode, "stop") == 0) {
            raise(SIGSTOP);
        } else if (cm_rank() == 1) {
            double end = cm_wtime() + secs;
            volatile unsigned long spins = 0;
            while (cm_wtime() < end) {
                spins++;
            }
        }
        cm_barrier();
        printf("%s rank %d: passed the barrier\n", mode, cm_rank());
    } else if (strncmp(mode, "die-", 4) == 0) {
        bool stop = argc > 2 && strcmp(argv[2], "stop-launcher") == 0;
        MP_CHECK(cm_nprocs() >= 2, "needs 2 processes");
        if (strcmp(mode, "die-kill-lock") == 0) {
            /* Rank 1 holds the lock before anyone else asks for it. */
            if (cm_rank() == 1) {
                cm_lock_acquire(0);
            }
            MP_OK(cm_rma_barrier(cm_rt.rma));
        }
        if (cm_rank() == 1) {
            if (stop) {
                kill(getppid(), SIGSTOP);
            }
            if (strcmp(mode, "die-abort") == 0) {
                abort();
            } else if (strcmp(mode, "die-exit0") == 0) {
                exit(0);
            } else if (strcmp(mode, "die-return") == 0) {
                return 0;
            } else {
                raise(SIGKILL);
            }
        }
        if (strcmp(mode, "die-kill") == 0) {
            /* A wait that nobody will ever satisfy: only the launcher can end it. */
            cm_rma_wait_u64(cm_rt.rma, (uint64_t *)cm_rt.scratch, CM_CMP_EQ, 12345, NULL);
        } else if (strcmp(mode, "die-kill-barrier") == 0) {
            cm_barrier();
        } else if (strcmp(mode, "die-kill-lock") == 0) {
            cm_lock_acquire(0);
            fprintf(stderr, "mp_init: rank %d acquired a lock its dead holder never released\n",
                    cm_rank());
            return 5;
        }
        MP_OK(cm_rma_barrier(cm_rt.rma));
        fprintf(stderr, "mp_init: rank %d passed a barrier its peer never reached\n", cm_rank());
        return 5;
    } else {
        cm_abort(2, "unknown mode %s", mode);
    }
    cm_finalize();
    return 0;
}
