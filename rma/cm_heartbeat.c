/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Heartbeats between every pair of processes, so that a lost peer
 * ends the job within CM_PEER_TIMEOUT instead of leaving its peers waiting in
 * a barrier or a lock forever.
 *
 * Why our own heartbeat and not UCX's peer failure detection: over TCP, UCX
 * learns of a lost peer only from its socket. A killed process's kernel resets
 * the connection at once, but a host that lost power or whose link went down
 * says nothing: the kernel retransmits unacknowledged data for about 15
 * minutes (tcp_retries2) before the socket fails, and keepalive probes
 * (UCX_TCP_KEEPIDLE) start only on a connection with nothing in flight. A rank
 * blocked in a wait cannot tell a slow peer from a lost one; silence measured
 * by a thread that the application's computing never delays can. The same
 * holds for every transport, so one mechanism serves them all.
 *
 * Each process sends a datagram to every peer every interval (a tenth of the
 * timeout, at most 0.5 s) from a thread of its own, over UDP: a heartbeat
 * never queues behind a page transfer, and a lost datagram is harmless (it
 * takes ten in a row to lose a peer). A peer silent for the whole timeout is
 * lost. The heartbeats travel over every IPv4 interface the peer has, so a
 * host whose data network alone fails is not detected here (UCX's own errors
 * report that over InfiniBand; over TCP it is a known gap, docs/CLUSTER.md).
 * At the end each process says goodbye, so that one leaving first is not
 * taken for lost by one still finishing.
 */
#define _GNU_SOURCE
#include "config.h"
#include "rma/cm_heartbeat.h"
#include "util/cm_log.h"
#include "util/cm_time.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define CM_HB_MAGIC       0x434d5731u /* "CMW1" */
#define CM_HB_MAX_ADDRS   8
#define CM_HB_INTERVAL_NS 500000000ull
#define CM_HB_BYES        3 /* goodbyes sent: datagrams may be lost */

enum { CM_HB_BEAT = 1, CM_HB_BYE = 2 };

/* What each process publishes: where its heartbeats come from and go to. */
typedef struct {
    uint32_t magic;
    uint16_t port;  /* network order */
    uint8_t  naddr;
    uint8_t  pad;
    uint32_t addr[CM_HB_MAX_ADDRS]; /* IPv4, network order */
    char     host[64];
} cm_heartbeat_card_t;

/* One heartbeat or goodbye. */
typedef struct {
    uint32_t magic;
    uint32_t kind;
    uint32_t rank;
    uint32_t pad;
    uint64_t job; /* hash of the job's id: a stray from another job on a reused port is ignored */
} cm_heartbeat_beat_t;

struct cm_heartbeat {
    cm_boot_t              *boot;
    int                    rank, nprocs;
    uint64_t               timeout_ns, interval_ns;
    cm_heartbeat_lost_fn_t lost;
    void                   *arg;
    uint64_t               job;
    int                    sock, stop_fd;
    pthread_t              thread;
    bool                   running;
    cm_heartbeat_card_t    *cards; /* per rank */
    uint64_t               *heard; /* per rank: when a datagram last came (cm_time_ns) */
    bool                   *ever;  /* per rank: one ever came */
    bool                   *gone;  /* per rank: said goodbye */
};

static uint64_t cm_heartbeat_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

    for (; *s != '\0'; s++) {
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    }
    return h;
}

/* This host's IPv4 addresses that are up, loopback only if it has no other. */
static void cm_heartbeat_own_addrs(cm_heartbeat_card_t *card)
{
    struct ifaddrs *ifs, *i;

    card->naddr = 0;
    if (getifaddrs(&ifs) == 0) {
        for (i = ifs; i != NULL && card->naddr < CM_HB_MAX_ADDRS; i = i->ifa_next) {
            if (i->ifa_addr == NULL || i->ifa_addr->sa_family != AF_INET ||
                !(i->ifa_flags & IFF_UP) || (i->ifa_flags & IFF_LOOPBACK)) {
                continue;
            }
            card->addr[card->naddr++] = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
        }
        freeifaddrs(ifs);
    }
    if (card->naddr == 0) {
        card->addr[card->naddr++] = htonl(INADDR_LOOPBACK);
    }
}

cm_status_t cm_heartbeat_publish(cm_boot_t *boot, const cm_heartbeat_params_t *params,
                                 cm_heartbeat_t **w_p)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    socklen_t sa_len = sizeof(sa);
    cm_heartbeat_card_t card = {.magic = CM_HB_MAGIC};
    cm_heartbeat_t *w;
    cm_status_t status;

    *w_p = NULL;
    if (cm_boot_size(boot) < 2) {
        return CM_OK;
    }
    w = calloc(1, sizeof(*w));
    if (w == NULL) {
        cm_error("heartbeats: out of memory");
        return CM_ERR_NO_MEMORY;
    }
    w->boot        = boot;
    w->rank        = cm_boot_rank(boot);
    w->nprocs      = cm_boot_size(boot);
    w->timeout_ns  = params->timeout_ns;
    w->interval_ns = params->timeout_ns / 10;
    if (w->interval_ns > CM_HB_INTERVAL_NS) {
        w->interval_ns = CM_HB_INTERVAL_NS;
    }
    if (w->interval_ns < 1000000) {
        w->interval_ns = 1000000;
    }
    w->lost    = params->lost;
    w->arg     = params->arg;
    w->job     = cm_heartbeat_hash(cm_boot_job_id(boot));
    w->stop_fd = -1;
    w->sock    = -1;
    /* Without heartbeats (a timeout of 0) the card still says where each peer lives, for the
     * line that names a peer the transport lost (cm_heartbeat_lost_peer). */
    if (w->timeout_ns != 0) {
        w->sock = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (w->sock < 0 || bind(w->sock, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
            getsockname(w->sock, (struct sockaddr *)&sa, &sa_len) != 0) {
            cm_error("heartbeats (CM_PEER_TIMEOUT): cannot open a UDP socket: %s",
                     strerror(errno));
            status = CM_ERR_TRANSPORT;
            goto err_free;
        }
        card.port = sa.sin_port;
    }
    cm_heartbeat_own_addrs(&card);
    if (gethostname(card.host, sizeof(card.host) - 1) != 0) {
        snprintf(card.host, sizeof(card.host), "unknown");
    }
    status = cm_boot_put(boot, "cm.heartbeat", &card, sizeof(card));
    if (status != CM_OK) {
        goto err_free;
    }
    *w_p = w;
    return CM_OK;

err_free:
    if (w->sock >= 0) {
        close(w->sock);
    }
    free(w);
    return status;
}

uint64_t cm_heartbeat_heard_ns(const cm_heartbeat_t *w, int rank)
{
    if (w == NULL || w->heard == NULL || rank < 0 || rank >= w->nprocs ||
        !__atomic_load_n(&w->ever[rank], __ATOMIC_RELAXED)) {
        return 0;
    }
    return __atomic_load_n(&w->heard[rank], __ATOMIC_RELAXED);
}

/* "rank 3", "ranks 2-5, 9": the ranks of host among the lost, in w's order. */
static void cm_heartbeat_ranks_on(const cm_heartbeat_t *w, const bool *lost, const char *host,
                                  char *buf, size_t len)
{
    size_t used = 0;
    int n = 0, count = 0;

    for (int r = 0; r < w->nprocs; r++) {
        count += lost[r] && strcmp(w->cards[r].host, host) == 0;
    }
    used += (size_t)snprintf(buf, len, count == 1 ? "rank " : "ranks ");
    for (int r = 0; r < w->nprocs && used < len; r++) {
        int end = r;

        if (!lost[r] || strcmp(w->cards[r].host, host) != 0) {
            continue;
        }
        while (end + 1 < w->nprocs && lost[end + 1] &&
               strcmp(w->cards[end + 1].host, host) == 0) {
            end++;
        }
        used += (size_t)snprintf(buf + used, len - used, end > r ? "%s%d-%d" : "%s%d",
                                 n++ ? ", " : "", r, end);
        r = end;
    }
}

/* The one line that names the lost peers, host by host, and what may have happened. */
static void cm_heartbeat_describe(const cm_heartbeat_t *w, const bool *lost, bool never,
                                  char *msg, size_t len)
{
    size_t used;
    int hosts = 0;

    used = (size_t)snprintf(msg, len, "%s ", never ? "never heard from" : "lost");
    for (int r = 0; r < w->nprocs && used < len; r++) {
        char ranks[160];
        bool first = true;

        if (!lost[r]) {
            continue;
        }
        for (int q = 0; q < r; q++) { /* a host already named */
            first &= !(lost[q] && strcmp(w->cards[q].host, w->cards[r].host) == 0);
        }
        if (!first) {
            continue;
        }
        cm_heartbeat_ranks_on(w, lost, w->cards[r].host, ranks, sizeof(ranks));
        used += (size_t)snprintf(msg + used, len - used, "%s%s on host %s", hosts++ ? " and " : "",
                                 ranks, w->cards[r].host);
    }
    if (used >= len) {
        return;
    }
    if (never) {
        char ip[INET_ADDRSTRLEN] = "?";
        int r = 0;

        while (!lost[r]) {
            r++;
        }
        inet_ntop(AF_INET, &w->cards[r].addr[0], ip, sizeof(ip));
        snprintf(msg + used, len - used, ": no heartbeat came in %.3g s (CM_PEER_TIMEOUT; UDP to "
                 "%s port %u): does a firewall drop UDP between the hosts? CM_PEER_TIMEOUT=0 "
                 "turns the heartbeats off; ending the job", (double)w->timeout_ns * 1e-9, ip,
                 ntohs(w->cards[r].port));
    } else {
        bool one = hosts == 1 && strstr(msg, "ranks") == NULL;

        snprintf(msg + used, len - used, ": nothing heard from %s for %.3g s (CM_PEER_TIMEOUT): "
                 "%s, or %s stopped or killed; ending the job", one ? "it" : "them",
                 (double)w->timeout_ns * 1e-9,
                 hosts == 1 ? "the host or the network to it is down"
                            : "the hosts or the network to them are down",
                 one ? "the process was" : "the processes were");
    }
}

static void cm_heartbeat_send(cm_heartbeat_t *w, uint32_t kind)
{
    cm_heartbeat_beat_t beat = {.magic = CM_HB_MAGIC, .kind = kind, .rank = (uint32_t)w->rank,
                                .job = w->job};

    for (int r = 0; r < w->nprocs; r++) {
        struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = w->cards[r].port};

        if (r == w->rank || w->gone[r]) {
            continue;
        }
        for (int i = 0; i < w->cards[r].naddr; i++) {
            to.sin_addr.s_addr = w->cards[r].addr[i];
            /* Errors (no route while a link is down, a full socket buffer) are silence, which
             * is what the receiver measures. */
            (void)sendto(w->sock, &beat, sizeof(beat), MSG_DONTWAIT, (struct sockaddr *)&to,
                         sizeof(to));
        }
    }
}

static void cm_heartbeat_receive(cm_heartbeat_t *w, uint64_t now)
{
    cm_heartbeat_beat_t beat;

    for (int n = 0; n < 4 * w->nprocs + 64; n++) {
        ssize_t got = recv(w->sock, &beat, sizeof(beat), MSG_DONTWAIT);

        if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;
        }
        if (got != (ssize_t)sizeof(beat) || beat.magic != CM_HB_MAGIC || beat.job != w->job ||
            beat.rank >= (uint32_t)w->nprocs || (int)beat.rank == w->rank) {
            continue; /* an error, a stray, or another job's */
        }
        w->heard[beat.rank] = now;
        w->ever[beat.rank]  = true;
        if (beat.kind == CM_HB_BYE) {
            w->gone[beat.rank] = true;
        }
    }
}

/* Prints msg (or, if !report, leaves it to this host's reporter), records the failure, exits. */
static __attribute__((noreturn)) void cm_heartbeat_end(cm_heartbeat_t *w, const char *msg,
                                                       bool report)
{
    if (report) {
        cm_error("%s", msg);
    } else {
        cm_debug("%s", msg);
        sleep(1); /* the reporter speaks first; a launcher that ends the job then ends us */
    }
    if (w != NULL && w->lost != NULL) {
        w->lost(w->arg);
    }
    _exit(1);
}

/* Ends the job if some peer has been silent for the timeout. */
static void cm_heartbeat_check(cm_heartbeat_t *w, uint64_t now)
{
    bool *lost = calloc((size_t)w->nprocs, sizeof(*lost));
    bool any = false, never = true, report = false;
    char msg[1024];

    if (lost == NULL) {
        return; /* look again at the next beat */
    }
    for (int r = 0; r < w->nprocs; r++) {
        any |= r != w->rank && !w->gone[r] && now - w->heard[r] > w->timeout_ns;
    }
    if (!any) {
        free(lost);
        return;
    }
    /* Also those going silent with it: a host's ranks fall silent within one interval of each
     * other, and the line should name them all. */
    for (int r = 0; r < w->nprocs; r++) {
        if (r != w->rank && !w->gone[r] && now - w->heard[r] > w->timeout_ns / 2) {
            lost[r] = true;
            never &= !w->ever[r];
        }
    }
    /* One line per surviving host: from its lowest rank still heard. */
    for (int r = 0; r < w->nprocs; r++) {
        if (!lost[r] && strcmp(w->cards[r].host, w->cards[w->rank].host) == 0) {
            report = (r == w->rank);
            break;
        }
    }
    cm_heartbeat_describe(w, lost, never, msg, sizeof(msg));
    free(lost);
    cm_heartbeat_end(w, msg, report);
}

void cm_heartbeat_lost_peer(cm_heartbeat_t *w, int rank, const char *what)
{
    char msg[768];

    snprintf(msg, sizeof(msg), "lost rank %d on host %s: %s: its process died, or its host or "
             "the network to it failed; ending the job", rank,
             (w != NULL && w->cards != NULL) ? w->cards[rank].host : "(unknown)", what);
    cm_heartbeat_end(w, msg, true);
}

static void *cm_heartbeat_main(void *arg)
{
    cm_heartbeat_t *w = arg;
    uint64_t now = cm_time_ns(), next_beat = now, last_turn = now;

    for (;;) {
        struct pollfd fds[2] = {{.fd = w->sock, .events = POLLIN},
                                {.fd = w->stop_fd, .events = POLLIN}};
        int wait_ms;

        now = cm_time_ns();
        /* This thread itself did not run for a while (the process was stopped, the machine
         * was suspended): the silence was ours; hear the peers out afresh. */
        if (now - last_turn > w->timeout_ns / 2) {
            for (int r = 0; r < w->nprocs; r++) {
                w->heard[r] = now;
            }
        }
        last_turn = now;
        if (now >= next_beat) {
            cm_heartbeat_send(w, CM_HB_BEAT);
            next_beat = now + w->interval_ns;
        }
        cm_heartbeat_check(w, now);
        wait_ms = (int)((next_beat - now + 999999) / 1000000);
        if (poll(fds, 2, wait_ms) < 0 && errno != EINTR) {
            cm_warn("heartbeats: poll: %s; lost peers are no longer detected", strerror(errno));
            return NULL;
        }
        if (fds[1].revents != 0) {
            return NULL;
        }
        if (fds[0].revents != 0) {
            cm_heartbeat_receive(w, cm_time_ns());
        }
    }
}

cm_status_t cm_heartbeat_start(cm_heartbeat_t *w)
{
    cm_status_t status;
    uint64_t now = cm_time_ns();
    int rc;

    if (w == NULL) {
        return CM_OK;
    }
    w->cards = calloc((size_t)w->nprocs, sizeof(*w->cards));
    w->heard = calloc((size_t)w->nprocs, sizeof(*w->heard));
    w->ever  = calloc((size_t)w->nprocs, sizeof(*w->ever));
    w->gone  = calloc((size_t)w->nprocs, sizeof(*w->gone));
    if (w->cards == NULL || w->heard == NULL || w->ever == NULL || w->gone == NULL) {
        cm_error("heartbeats: out of memory");
        return CM_ERR_NO_MEMORY;
    }
    for (int r = 0; r < w->nprocs; r++) {
        void *data;
        size_t len;

        status = cm_boot_get(w->boot, r, "cm.heartbeat", &data, &len);
        if (status != CM_OK) {
            return status;
        }
        if (len != sizeof(w->cards[r]) || ((cm_heartbeat_card_t *)data)->magic != CM_HB_MAGIC) {
            free(data);
            cm_error("heartbeats: rank %d published no heartbeat address (a different build "
                     "of the library?)", r);
            return CM_ERR_INVALID;
        }
        memcpy(&w->cards[r], data, sizeof(w->cards[r]));
        w->cards[r].host[sizeof(w->cards[r].host) - 1] = '\0';
        if (w->cards[r].naddr > CM_HB_MAX_ADDRS) {
            w->cards[r].naddr = CM_HB_MAX_ADDRS;
        }
        free(data);
        w->heard[r] = now;
    }
    if (w->timeout_ns == 0) {
        return CM_OK;
    }
    w->stop_fd = eventfd(0, EFD_CLOEXEC);
    if (w->stop_fd < 0) {
        cm_error("heartbeats: eventfd: %s", strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    rc = pthread_create(&w->thread, NULL, cm_heartbeat_main, w);
    if (rc != 0) {
        cm_error("heartbeats: cannot start its thread: %s", strerror(rc));
        return CM_ERR_NO_MEMORY;
    }
    w->running = true;
    cm_debug("heartbeats: every %.3g s to the %d other processes; one silent for %.3g s is lost",
             (double)w->interval_ns * 1e-9, w->nprocs - 1, (double)w->timeout_ns * 1e-9);
    return CM_OK;
}

void cm_heartbeat_stop(cm_heartbeat_t *w)
{
    uint64_t one = 1;

    if (w == NULL) {
        return;
    }
    if (w->running) {
        if (write(w->stop_fd, &one, sizeof(one)) != sizeof(one)) {
            pthread_cancel(w->thread); /* cannot happen on a fresh eventfd; never hang here */
        }
        pthread_join(w->thread, NULL);
        for (int i = 0; i < CM_HB_BYES; i++) {
            cm_heartbeat_send(w, CM_HB_BYE);
        }
    }
    if (w->stop_fd >= 0) {
        close(w->stop_fd);
    }
    if (w->sock >= 0) {
        close(w->sock);
    }
    free(w->gone);
    free(w->ever);
    free(w->heard);
    free(w->cards);
    free(w);
}
