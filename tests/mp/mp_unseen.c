/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stores into shared memory that the store hooks do not see (CM_CHECK_STORES),
 * 2 processes, one mode per run. The page written is homed on rank 0 (it
 * touches it first after the initialization phase); the writer stores 42 into
 * its word 8, and after a barrier the reader prints what it sees.
 *
 *   mp_unseen fault    rank 1 reads the page, then stores through uninstrumented code
 *   mp_unseen opened   rank 1 makes a hooked store to the page, then an uninstrumented one
 *   mp_unseen syscall  rank 1 makes a hooked store, then a raw read(2) system call into it
 *   mp_unseen home     rank 0, the home, stores through uninstrumented code to a page that
 *                      rank 1 holds a copy of; rank 1 reads
 *   mp_unseen ok       the same stores, all seen: hooked, the interposed read(), memcpy
 *
 * Uninstrumented code stands for a library not built with cmcc: a function the compiler
 * does not instrument (no_sanitize_address).
 */
#define _GNU_SOURCE
#include "mp_common.h"

#include <sys/syscall.h>

void mp_unseen_store(volatile long *p, long v);
__attribute__((noinline, no_sanitize_address)) void mp_unseen_store(volatile long *p, long v)
{
    *p = v;
}

static volatile long *word(char *page, int i)
{
    return (volatile long *)page + i;
}

int main(int argc, char **argv)
{
    MP_CHECK(cm_init(&argc, &argv) == 0, "cm_init");
    const char *mode = argc > 1 ? argv[1] : "ok";
    int me = cm_rank();
    size_t ps = cm_rt.page_size;
    char *buf = cm_malloc(4 * ps);
    MP_CHECK(buf != NULL, "cm_malloc");
    char *a = (char *)(((uintptr_t)buf + ps - 1) & ~(uintptr_t)(ps - 1));
    char *b = a + ps;
    int reader = strcmp(mode, "home") == 0 ? 1 : 0;
    MP_CHECK(cm_nprocs() == 2, "run with 2 processes");

    cm_barrier(); /* ends the initialization phase: homes move to first touchers */
    if (me == 0) {
        *word(a, 0) = 1; /* both pages homed here */
        *word(b, 0) = 1;
    }
    cm_barrier();
    if (me == 1) {
        MP_CHECK(*word(a, 0) == 1 && *word(b, 0) == 1, "initial values"); /* copies cached here */
    }
    cm_barrier();

    if (strcmp(mode, "home") == 0) {
        if (me == 0) {
            mp_unseen_store(word(b, 8), 42);
        }
    } else if (me == 1) {
        if (strcmp(mode, "fault") == 0) {
            mp_unseen_store(word(a, 8), 42);
        } else if (strcmp(mode, "opened") == 0) {
            *word(a, 16) = 7;
            mp_unseen_store(word(a, 8), 42);
        } else if (strcmp(mode, "syscall") == 0 || strcmp(mode, "ok") == 0) {
            long v = 42;
            int fd[2];
            MP_CHECK(pipe(fd) == 0, "pipe");
            MP_CHECK(write(fd[1], &v, sizeof(v)) == (ssize_t)sizeof(v), "write");
            *word(a, 16) = 7;
            if (strcmp(mode, "ok") == 0) {
                MP_CHECK(read(fd[0], (void *)word(a, 8), sizeof(v)) == (ssize_t)sizeof(v), "read");
                memcpy((void *)word(a, 24), &v, sizeof(v));
            } else {
                MP_CHECK(syscall(SYS_read, fd[0], (void *)word(a, 8), sizeof(v)) == (long)sizeof(v),
                         "raw read: %s", strerror(errno));
            }
            close(fd[0]);
            close(fd[1]);
        } else {
            cm_abort(2, "unknown mode '%s'", mode);
        }
    }
    cm_barrier();
    if (me == reader) {
        char *page = strcmp(mode, "home") == 0 ? b : a;
        long seen = *word(page, 8);
        printf("mp_unseen %s: rank %d sees %ld%s\n", mode, me, seen, seen == 42 ? "" : " (lost)");
        if (strcmp(mode, "ok") == 0) {
            MP_CHECK(seen == 42 && *word(a, 16) == 7 && *word(a, 24) == 42,
                     "hooked, read() and memcpy stores arrive");
        }
    }
    cm_barrier();
    cm_finalize();
    return 0;
}
