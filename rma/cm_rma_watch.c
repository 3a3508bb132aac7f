/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Stuck waits say what they wait for (CM_STUCK_REPORT), and every rank says it on request
 * (cmrun --timeout sends SIGUSR2 through the launcher).
 *
 * A thread that waits in the library keeps a small stack of frames: what it waits for and
 * from which rank. The API pushes the outer ones (a lock acquire, a barrier, a page fault),
 * the waits of this layer and the ones below it the inner ones (the hand-off from a
 * predecessor, a request's completion, a fence of the whole job). Pushing copies a constant
 * description and two numbers and counts the outermost frames: no clock is read and nothing
 * is formatted until a report is printed (a push and pop cost a few nanoseconds, on every
 * lock acquire). A thread of its own looks at the stacks once a second and stamps a wait the
 * first time it sees it, so an age is the time since that look: at most one look short. A
 * wait that has lasted the setting gets one line, naming the innermost frame (what is missing
 * now), the rank that would end it, the last active message that rank sent here and its last
 * heartbeat, and the outer frames; again at twice the time, four times, ...; the job goes on.
 * The watcher reads the stacks under a sequence count: the waiters take no lock for it.
 */
#define _GNU_SOURCE
#include "config.h"
#include "rma/cm_rma_int.h"
#include "util/cm_log.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The thread's stack (one process, one rma: the thread-local pointer names it). */
static __thread cm_rma_waiter_t *cm_rma_my_waiter;
/* For the signal handler: the watcher's eventfd (one rma per process), and a request that came
 * before there was one (the watcher answers it when it starts). */
static volatile int cm_rma_watch_report_fd = -1;
static volatile sig_atomic_t cm_rma_watch_asked;

static cm_rma_waiter_t *cm_rma_waiter_of_thread(cm_rma_t *rma)
{
    cm_rma_waiter_t *w = cm_rma_my_waiter;
    unsigned i;

    if (w != NULL && w->rma == rma) {
        return w;
    }
    i = atomic_fetch_add_explicit(&rma->nwaiters, 1, memory_order_relaxed);
    if (i >= CM_RMA_WAITERS) {
        return NULL; /* more threads wait in the library than are watched */
    }
    w = &rma->waiters[i];
    w->rma = rma;
    w->tid = (int)syscall(SYS_gettid);
    w->app = w->tid == rma->app_tid;
    cm_rma_my_waiter = w;
    return w;
}

void cm_rma_why_push(cm_rma_t *rma, const cm_rma_why_t *why)
{
    cm_rma_waiter_t *w;
    unsigned d;

    if (rma == NULL || (w = cm_rma_waiter_of_thread(rma)) == NULL) {
        return;
    }
    d = w->depth;
    if (d < CM_RMA_WHY_DEPTH) {
        __atomic_store_n(&w->seq, w->seq + 1, __ATOMIC_RELAXED); /* odd: being written */
        __atomic_thread_fence(__ATOMIC_RELEASE);
        w->frames[d] = *why;
        if (d == 0) {
            w->gen++; /* a new wait */
        }
        __atomic_store_n(&w->seq, w->seq + 1, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&w->depth, d + 1, __ATOMIC_RELEASE);
}

void cm_rma_why_pop(cm_rma_t *rma)
{
    cm_rma_waiter_t *w = cm_rma_my_waiter;

    if (w == NULL || w->rma != rma || w->depth == 0) {
        return;
    }
    __atomic_store_n(&w->depth, w->depth - 1, __ATOMIC_RELEASE);
}

/* A frame's description: "%s" takes `name`, "%a" and "%b" the numbers, "%x" the first in
 * hexadecimal; nothing else is a conversion (descriptions are constants of the code). */
static void cm_rma_why_format(const cm_rma_why_t *why, char *buf, size_t len)
{
    size_t n = 0;

    for (const char *p = why->what; *p != '\0' && n + 1 < len; p++) {
        if (p[0] == '%' && (p[1] == 's' || p[1] == 'a' || p[1] == 'b' || p[1] == 'x')) {
            int k = p[1] == 's'   ? snprintf(buf + n, len - n, "%s", why->name ? why->name : "?")
                    : p[1] == 'x' ? snprintf(buf + n, len - n, "%#" PRIx64, why->a)
                                  : snprintf(buf + n, len - n, "%" PRIu64,
                                             p[1] == 'a' ? why->a : why->b);
            n += (k > 0) ? (size_t)k : 0;
            p++;
            continue;
        }
        buf[n++] = *p;
    }
    buf[n < len ? n : len - 1] = '\0';
}

/* A consistent copy of w's frames and its wait's number; the number of frames (0: not
 * waiting, or no consistent copy in 100 tries). */
static unsigned cm_rma_waiter_snapshot(cm_rma_waiter_t *w, cm_rma_why_t *frames, uint64_t *gen)
{
    for (int tries = 0; tries < 100; tries++) {
        uint32_t s = __atomic_load_n(&w->seq, __ATOMIC_ACQUIRE);
        unsigned d = __atomic_load_n(&w->depth, __ATOMIC_ACQUIRE);

        if (s & 1) {
            continue;
        }
        if (d > CM_RMA_WHY_DEPTH) {
            d = CM_RMA_WHY_DEPTH;
        }
        memcpy(frames, w->frames, d * sizeof(*frames));
        *gen = w->gen;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        if (__atomic_load_n(&w->seq, __ATOMIC_RELAXED) == s &&
            __atomic_load_n(&w->depth, __ATOMIC_RELAXED) >= d) {
            return d;
        }
    }
    return 0;
}

/* "14:03:22": wall-clock time of a cm_time_ns instant. */
static void cm_rma_clock_of(uint64_t t, uint64_t now, char *buf, size_t len)
{
    struct timespec ts;
    time_t wall;
    struct tm tm;

    clock_gettime(CLOCK_REALTIME, &ts);
    wall = (time_t)(((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec - (now - t)) /
                    1000000000u);
    localtime_r(&wall, &tm);
    strftime(buf, len, "%H:%M:%S", &tm);
}

/* "; last from rank 1: a lock grant 2.3 s ago, a heartbeat 0.4 s ago". */
static void cm_rma_peer_news(cm_rma_t *rma, int pe, uint64_t now, char *buf, size_t len)
{
    uint64_t am = atomic_load_explicit(&rma->am_last_ns[pe], memory_order_relaxed);
    unsigned id = atomic_load_explicit(&rma->am_last_id[pe], memory_order_relaxed);
    uint64_t hb = cm_heartbeat_heard_ns(rma->heartbeat, pe);
    size_t n;

    n = (size_t)snprintf(buf, len, "; last from rank %d: ", pe);
    if (am != 0 && n < len) {
        const char *name = id < CM_RMA_AM_MAX_ID && rma->am[id].name ? rma->am[id].name
                                                                    : "a message";
        n += (size_t)snprintf(buf + n, len - n, "%s %.1f s ago", name, (now - am) / 1e9);
    } else if (n < len) {
        n += (size_t)snprintf(buf + n, len - n, "no message");
    }
    if (n < len) {
        if (hb != 0) {
            snprintf(buf + n, len - n, ", a heartbeat %.1f s ago", (now - hb) / 1e9);
        } else if (rma->heartbeat != NULL) {
            snprintf(buf + n, len - n, ", no heartbeat yet");
        }
    }
}

/* One line about w's wait: how long, for what (the innermost frame), from whom, inside what. */
static void cm_rma_wait_line(cm_rma_t *rma, const cm_rma_waiter_t *w, const cm_rma_why_t *f,
                             unsigned d, uint64_t now, char *buf, size_t len)
{
    char what[160], when[16], from[32] = "", news[160] = "", outer[200] = "";
    int peer = -1;
    size_t n = 0;

    cm_rma_why_format(&f[d - 1], what, sizeof(what));
    for (int i = (int)d - 1; i >= 0 && peer < 0; i--) {
        peer = f[i].peer;
    }
    for (unsigned i = 0; i + 1 < d && n < sizeof(outer); i++) {
        char part[128];
        cm_rma_why_format(&f[i], part, sizeof(part));
        n += (size_t)snprintf(outer + n, sizeof(outer) - n, "%s%s", i ? " < " : "; in ", part);
    }
    if (peer >= 0 && peer < rma->nprocs && peer != rma->rank) {
        if (strstr(what, "rank") == NULL) {
            snprintf(from, sizeof(from), " from rank %d", peer);
        }
        cm_rma_peer_news(rma, peer, now, news, sizeof(news));
    }
    cm_rma_clock_of(w->seen_at, now, when, sizeof(when));
    snprintf(buf, len, "%swaiting %" PRIu64 " s (since %s) for %s%s%s%s",
             w->app ? "" : "a helper thread is ", (now - w->seen_at) / 1000000000u, when, what,
             from, outer, news);
}

static void cm_rma_watch_look(cm_rma_t *rma, bool report)
{
    unsigned nw = atomic_load_explicit(&rma->nwaiters, memory_order_acquire);
    uint64_t now = cm_time_ns();
    bool said = false;

    if (nw > CM_RMA_WAITERS) {
        nw = CM_RMA_WAITERS;
    }
    for (unsigned i = 0; i < nw; i++) {
        cm_rma_waiter_t *w = &rma->waiters[i];
        cm_rma_why_t f[CM_RMA_WHY_DEPTH];
        uint64_t gen = 0;
        unsigned d = cm_rma_waiter_snapshot(w, f, &gen);
        char line[640];

        if (gen != w->seen_gen) {
            /* A wait this watcher has not seen: it began since the last look (or ended). */
            w->seen_gen   = gen;
            w->seen_at    = now;
            w->busy_at    = now;
            w->stuck_next = rma->stuck_ns;
        } else if (d > 0) {
            w->busy_at = now;
        }
        if (d == 0) {
            continue;
        }
        if (report) {
            cm_rma_wait_line(rma, w, f, d, now, line, sizeof(line));
            cm_error("at the job's time limit: %s", line);
            said = true;
            continue;
        }
        if (rma->stuck_ns == 0 || now - w->seen_at < w->stuck_next) {
            continue;
        }
        cm_rma_wait_line(rma, w, f, d, now, line, sizeof(line));
        cm_warn("%s (CM_STUCK_REPORT: again after %.0f s)", line, 2 * w->stuck_next / 1e9);
        w->stuck_next *= 2;
    }
    if (report && !said) {
        uint64_t busy = nw > 0 ? rma->waiters[0].busy_at : 0;

        if (busy != 0) {
            cm_error("at the job's time limit: not waiting in the library (computing, or "
                     "between library calls); last seen in a wait %.0f s ago",
                     (now - busy) / 1e9);
        } else {
            cm_error("at the job's time limit: not waiting in the library");
        }
    }
}

static void *cm_rma_watch_main(void *arg)
{
    cm_rma_t *rma = arg;
    struct pollfd pfd = {.fd = rma->watch_fd, .events = POLLIN};
    int tick_ms = 1000;

    if (rma->stuck_ns != 0 && rma->stuck_ns / 4000000 < (uint64_t)tick_ms) {
        tick_ms = (int)(rma->stuck_ns / 4000000) + 1;
    }
    for (;;) {
        uint64_t v = 0;
        int n = poll(&pfd, 1, rma->stuck_ns ? tick_ms : -1);

        if (n < 0 && errno != EINTR) {
            cm_warn("stuck-wait watch: poll: %s; stuck waits are no longer reported",
                    strerror(errno));
            return NULL;
        }
        if (n > 0 && read(rma->watch_fd, &v, sizeof(v)) == sizeof(v) &&
            v >= CM_RMA_WATCH_STOP) {
            return NULL;
        }
        cm_rma_watch_look(rma, v != 0);
    }
}

static void cm_rma_watch_on_signal(int sig)
{
    uint64_t one = 1;
    int saved = errno;

    (void)sig;
    cm_rma_watch_asked = 1;
    if (cm_rma_watch_report_fd >= 0 && write(cm_rma_watch_report_fd, &one, sizeof(one)) < 0) {
        /* the report is lost; the job ends anyway */
    }
    errno = saved;
}

void cm_rma_watch_signal(void)
{
    struct sigaction sa, old;

    /* cmrun --timeout asks every rank for its report with SIGUSR2, where the program does not
     * use the signal itself: from the start of cm_init on, so a rank still starting is not
     * killed by the signal's default action. */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = cm_rma_watch_on_signal;
    sa.sa_flags   = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(CM_RMA_REPORT_SIGNAL, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
        sigaction(CM_RMA_REPORT_SIGNAL, &sa, NULL);
    }
}

cm_status_t cm_rma_watch_start(cm_rma_t *rma, uint64_t stuck_ns)
{
    uint64_t one = 1;
    int rc;

    rma->stuck_ns = stuck_ns;
    if (rma->nprocs < 2) {
        return CM_OK; /* nobody to wait for */
    }
    rma->watch_fd = eventfd(0, EFD_CLOEXEC);
    if (rma->watch_fd < 0) {
        cm_error("stuck-wait watch: eventfd: %s", strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    rc = pthread_create(&rma->watch_thread, NULL, cm_rma_watch_main, rma);
    if (rc != 0) {
        cm_error("cannot start the stuck-wait watch: %s", strerror(rc));
        close(rma->watch_fd);
        rma->watch_fd = -1;
        return CM_ERR_NO_MEMORY;
    }
    rma->watch_running = true;
    cm_rma_watch_signal();
    cm_rma_watch_report_fd = rma->watch_fd;
    if (cm_rma_watch_asked && write(rma->watch_fd, &one, sizeof(one)) < 0) {
        /* asked before the watcher was there: it answers now (the job is ending anyway) */
    }
    return CM_OK;
}

void cm_rma_watch_stop(cm_rma_t *rma)
{
    uint64_t stop = CM_RMA_WATCH_STOP;

    cm_rma_my_waiter = NULL; /* the records go with rma */
    if (!rma->watch_running) {
        return;
    }
    cm_rma_watch_report_fd = -1;
    if (write(rma->watch_fd, &stop, sizeof(stop)) == sizeof(stop)) {
        pthread_join(rma->watch_thread, NULL);
    } else {
        pthread_detach(rma->watch_thread); /* it sleeps in poll: harmless at exit */
    }
    close(rma->watch_fd);
    rma->watch_fd      = -1;
    rma->watch_running = false;
}
