/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers for the multi-process tests: a failed check ends the whole job non-zero. */
#ifndef MP_COMMON_H
#define MP_COMMON_H

#include "cm.h"
#include "src/runtime/cm_runtime.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MP_CHECK(cond, ...) \
    do { \
        if (!(cond)) { \
            char mp_msg_[1024]; \
            snprintf(mp_msg_, sizeof(mp_msg_), __VA_ARGS__); \
            cm_abort(1, "FAIL %s:%d: %s (%s)", __FILE__, __LINE__, mp_msg_, #cond); \
        } \
    } while (0)

#define MP_OK(call) \
    do { \
        cm_status_t mp_st_ = (call); \
        MP_CHECK(mp_st_ == CM_OK, "%s returned %s", #call, cm_status_string(mp_st_)); \
    } while (0)

/*
 * Every sleep of a blocking wait was woken (CM_WAIT): a word a peer waits on that is written
 * by anything but cm_rma_put_u64_nbi wakes nobody, and the wait sleeps to its backstop.
 */
static inline void mp_check_no_missed_wakes(cm_rma_t *rma)
{
    cm_rma_stats_t st;

    cm_rma_get_stats(rma, &st);
    MP_CHECK(st.wait_missed == 0, "%" PRIu64 " blocked waits were not woken", st.wait_missed);
}

/*
 * A rendezvous that blocks a process outside the library: rank 0 makes one
 * FIFO per other rank, each of which then blocks in open()/read() of its own
 * until rank 0 writes to it. Nothing in the blocked process serves peers but
 * the progress thread, so a test built on it deadlocks (and times out) without
 * one: no timing in the verdict.
 */
static inline void mp_fifo_name(char *buf, size_t len, const char *base, int pe)
{
    snprintf(buf, len, "%s.%d", base, pe);
}

static inline void mp_fifo_make(const char *base, int np)
{
    char path[256];
    for (int pe = 1; pe < np; pe++) {
        mp_fifo_name(path, sizeof(path), base, pe);
        if (mkfifo(path, 0600) != 0 && errno != EEXIST) {
            cm_abort(1, "mkfifo %s: %s", path, strerror(errno));
        }
    }
}

/* Rank 0: lets every other rank out of mp_fifo_block, in rank order. */
static inline void mp_fifo_release(const char *base, int np)
{
    char path[256];
    for (int pe = 1; pe < np; pe++) {
        mp_fifo_name(path, sizeof(path), base, pe);
        int fd = open(path, O_WRONLY);
        MP_CHECK(fd >= 0, "open %s for writing: %s", path, strerror(errno));
        MP_CHECK(write(fd, "x", 1) == 1, "write to fifo");
        close(fd);
    }
}

/* Any other rank: blocks until rank 0 releases it. */
static inline void mp_fifo_block(const char *base, int me)
{
    char path[256], c;
    mp_fifo_name(path, sizeof(path), base, me);
    int fd = open(path, O_RDONLY); /* blocks until rank 0 opens it for writing */
    MP_CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
    MP_CHECK(read(fd, &c, 1) == 1, "read from fifo");
    close(fd);
}

static inline void mp_fifo_remove(const char *base, int np)
{
    char path[256];
    for (int pe = 1; pe < np; pe++) {
        mp_fifo_name(path, sizeof(path), base, pe);
        unlink(path);
    }
}

#endif
