/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The event trace's buffers and file (util/cm_trace.h). A thread's first event gives it a
 * buffer of its own, so recording takes no lock; a full buffer is written out under the
 * file's mutex and starts again, which is the only time a thread waits for another.
 */
#define _GNU_SOURCE
#include "util/cm_trace.h"
#include "util/cm_log.h"
#include "util/cm_stats.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define CM_TRACE_MAX_THREADS 16

int cm_trace_on;
__thread cm_trace_buf_t *cm_trace_mine __attribute__((tls_model("initial-exec")));

static struct {
    int             fd;
    char            path[4096];
    size_t          cap;      /* records per buffer */
    pthread_mutex_t mutex;    /* the file, and the list of buffers */
    cm_trace_buf_t  *bufs[CM_TRACE_MAX_THREADS];
    int             nbufs;
    bool            full_warned;
    bool            write_failed;
} cm_tr = {.fd = -1, .mutex = PTHREAD_MUTEX_INITIALIZER};

/* All of len bytes to the file; a failure is said once and ends the trace (not the job). */
static void cm_trace_write(const void *data, size_t len)
{
    const char *p = data;

    while (len > 0 && !cm_tr.write_failed) {
        ssize_t n = write(cm_tr.fd, p, len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            cm_error("CM_TRACE: writing %s: %s; the trace stops here", cm_tr.path,
                     (n < 0) ? strerror(errno) : "nothing written");
            cm_tr.write_failed = true;
            cm_trace_on        = 0;
            return;
        }
        p += n;
        len -= (size_t)n;
    }
}

/* Called with the mutex held (or, failing, by the last thread standing). The time goes to the
 * statistics' trace_ns as a phase of its own, entered by hand: entering it the usual way would
 * record an event into the buffer being written. */
static void cm_trace_spill(cm_trace_buf_t *b)
{
    uint64_t *outer = cm_stats_phase_acc;

    if (cm_stats_phase_stats != NULL) {
        cm_stats_phase_charge(cm_ticks());
        cm_stats_phase_acc = &cm_stats_phase_stats->trace_ns;
    }
    cm_trace_write(b->rec, b->used * sizeof(*b->rec));
    b->used = 0;
    if (cm_stats_phase_stats != NULL) {
        cm_stats_phase_charge(cm_ticks());
        cm_stats_phase_acc = outer;
    }
}

/* PREFIX.RANK.objects: each loaded object's load address and file, one per line, so that
 * cm_trace can name an allocation's caller (addr2line, on the address less its object's). */
static int cm_trace_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    FILE *f = arg;
    char exe[4096];
    const char *name = info->dlpi_name;
    ssize_t n;

    (void)size;
    if (name == NULL || name[0] == '\0') { /* the executable */
        n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        if (n <= 0) {
            return 0;
        }
        exe[n] = '\0';
        name   = exe;
    }
    if (name[0] == '/') {
        fprintf(f, "0x%" PRIxPTR " %s\n", (uintptr_t)info->dlpi_addr, name);
    }
    return 0;
}

static void cm_trace_objects(const char *prefix, int rank)
{
    char path[4096];
    FILE *f;

    if ((size_t)snprintf(path, sizeof(path), "%s.%d.objects", prefix, rank) >= sizeof(path) ||
        (f = fopen(path, "w")) == NULL) {
        cm_warn("CM_TRACE: cannot write %s.%d.objects: allocations will not be named", prefix, rank);
        return;
    }
    dl_iterate_phdr(cm_trace_object, f);
    fclose(f);
}

cm_status_t cm_trace_open(const char *prefix, int rank, int nprocs, size_t buffer_events,
                          size_t page_size, const void *shared_base, const char *protocol)
{
    cm_trace_header_t h;

    if (cm_tr.fd >= 0) {
        return CM_OK;
    }
    if ((size_t)snprintf(cm_tr.path, sizeof(cm_tr.path), "%s.%d.cmtrace", prefix, rank) >=
        sizeof(cm_tr.path)) {
        cm_error("CM_TRACE=%s: the path is too long", prefix);
        return CM_ERR_INVALID;
    }
    cm_tr.fd = open(cm_tr.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (cm_tr.fd < 0) {
        cm_error("CM_TRACE: cannot create %s: %s", cm_tr.path, strerror(errno));
        return CM_ERR_IO;
    }
    memset(&h, 0, sizeof(h));
    memcpy(h.magic, CM_TRACE_MAGIC, sizeof(h.magic));
    h.version     = CM_TRACE_VERSION;
    h.rec_size    = sizeof(cm_trace_rec_t);
    h.rank        = rank;
    h.nprocs      = nprocs;
    h.pid         = (uint64_t)getpid();
    h.page_size   = page_size;
    h.shared_base = (uint64_t)(uintptr_t)shared_base;
    h.ns_per_tick = cm_ticks_ns_per_tick;
    gethostname(h.host, sizeof(h.host) - 1);
    cm_trace_objects(prefix, rank);
    snprintf(h.protocol, sizeof(h.protocol), "%s", protocol);
    cm_trace_write(&h, sizeof(h));
    if (cm_tr.write_failed) {
        close(cm_tr.fd);
        cm_tr.fd = -1;
        return CM_ERR_IO;
    }
    if (cm_tr.cap == 0) { /* buffers made by an earlier open keep their size */
        cm_tr.cap = (buffer_events > 0) ? buffer_events : 1;
    }
    cm_tr.write_failed = false;
    cm_trace_on        = 1;
    cm_trace_ticks();
    return CM_OK;
}

static cm_trace_buf_t *cm_trace_buf_new(void)
{
    cm_trace_buf_t *b = NULL;

    pthread_mutex_lock(&cm_tr.mutex);
    if (cm_tr.nbufs == CM_TRACE_MAX_THREADS) {
        if (!cm_tr.full_warned) {
            cm_warn("CM_TRACE: more than %d threads record events; those of the others are "
                    "left out", CM_TRACE_MAX_THREADS);
            cm_tr.full_warned = true;
        }
        goto out;
    }
    b = calloc(1, sizeof(*b));
    if (b != NULL) {
        /* The first buffer, the opener's (the application thread's: most of the records),
         * is populated now, at cm_init, in one call (3 ms for 10 MiB here): each page first
         * written in the parallel section would cost a page fault there. Another thread's
         * is made at its first event, perhaps in the parallel section, where populating it
         * whole would cost more than the faults its records bring. */
        void *rec = mmap(NULL, cm_tr.cap * sizeof(*b->rec), PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | ((cm_tr.nbufs == 0) ? MAP_POPULATE : 0),
                         -1, 0);
        b->rec = (rec == MAP_FAILED) ? NULL : rec;
    }
    if (b == NULL || b->rec == NULL) {
        free(b);
        b = NULL;
        cm_error("CM_TRACE: no memory for a buffer of %zu events; the trace stops here",
                 cm_tr.cap);
        cm_trace_on = 0;
        goto out;
    }
    b->cap                  = cm_tr.cap;
    b->tid                  = (uint16_t)cm_tr.nbufs;
    cm_tr.bufs[cm_tr.nbufs++] = b;
out:
    pthread_mutex_unlock(&cm_tr.mutex);
    return b;
}

/* The record path's slow half: a thread's first event, or its buffer full. */
void cm_trace_emit_slow(cm_trace_kind_t kind, uint64_t t, uint64_t dur, uint64_t obj, int peer,
                        uint32_t bytes, uint32_t seq)
{
    cm_trace_buf_t *b = cm_trace_mine;

    if (b == NULL) {
        b = cm_trace_mine = cm_trace_buf_new();
        if (b == NULL) {
            return;
        }
    }
    if (b->used == b->cap) {
        pthread_mutex_lock(&cm_tr.mutex);
        cm_trace_spill(b);
        pthread_mutex_unlock(&cm_tr.mutex);
    }
    cm_trace_emit(kind, t, dur, obj, peer, bytes, seq);
}

void cm_trace_close(bool failed)
{
    if (cm_tr.fd < 0) {
        return;
    }
    if (!failed) {
        cm_trace_ticks(); /* the second pair: cm_trace follows the counter's rate between them */
    }
    cm_trace_on = 0;
    /* Failing, a thread that crashed may hold the mutex: write without it (the others are
     * being ended with the job). */
    if (!failed) {
        pthread_mutex_lock(&cm_tr.mutex);
    }
    for (int i = 0; i < cm_tr.nbufs; i++) {
        cm_trace_spill(cm_tr.bufs[i]);
    }
    close(cm_tr.fd);
    cm_tr.fd = -1;
    /* The buffers stay: each thread still points at its own (a later cm_init traces on). */
    if (!failed) {
        pthread_mutex_unlock(&cm_tr.mutex);
    }
}

void cm_trace_ticks(void)
{
    uint64_t t = cm_trace_now(), ns = cm_time_ns(), t2 = cm_trace_now();

    cm_trace_emit(CM_TRACE_TICKS, t + (t2 - t) / 2, 0, ns, -1, 0, 0);
}

