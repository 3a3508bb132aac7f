/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Delay injection (CM_NET_*) is real waiting: operations to a peer take at least
 * what the model charges, operations to oneself are not charged, and a message's
 * round trip pays both messages' overhead and occupancy, one latency and the
 * request's interrupt, which its target counts. Only lower bounds are checked;
 * they hold by construction, whatever the machine's load.
 */
#include "mp_common.h"
#include "src/runtime/cm_check.h"
#include "util/cm_time.h"

#include <stdatomic.h>

#define N 20
#define MP_AM_PING 28 /* (free ids: see rma/cm_rma_clock.c) */
#define MP_AM_PONG 29

static atomic_uint_fast64_t pongs;

static void on_ping(void *arg, int src, const void *data, size_t len)
{
    (void)arg;
    cm_rma_am_post(cm_rt.rma, src, MP_AM_PONG, data, len);
}

static void on_pong(void *arg, int src, const void *data, size_t len)
{
    (void)arg;
    (void)src;
    (void)data;
    (void)len;
    atomic_fetch_add(&pongs, 1);
}

static bool pong_seen(void *arg)
{
    return atomic_load(&pongs) >= *(uint64_t *)arg;
}

int main(int argc, char **argv)
{
    cm_rma_t *rma;
    cm_rma_stats_t s0, s1;
    const cm_config_t *cfg;
    uint64_t t0, elapsed, v = 0, expect;
    char *buf;
    size_t big = 1u << 20;

    cm_init(&argc, &argv);
    rma = cm_rt.rma;
    cfg = &cm_rt.config;
    MP_CHECK(cm_nprocs() >= 2, "needs 2 processes");
    buf = malloc(big);
    MP_OK(cm_rma_am_set_handler(rma, MP_AM_PING, on_ping, NULL, "a ping"));
    MP_OK(cm_rma_am_set_request(rma, MP_AM_PING));
    MP_OK(cm_rma_am_set_handler(rma, MP_AM_PONG, on_pong, NULL, "a pong"));
    MP_OK(cm_rma_barrier(rma));
    cm_rma_get_stats(rma, &s0);

    if (cm_rank() == 0) {
        int peer = 1;
        uint64_t *w = (uint64_t *)cm_rt.scratch;
        char *region = cm_rt.shared_net; /* 1 MiB transfers: the shared region's network view */

        /* Latency (+ overhead): once per blocking get and per put+flush. */
        t0 = cm_time_ns();
        for (int i = 0; i < N; i++) {
            MP_OK(cm_rma_get(rma, peer, &v, w, sizeof(v)));
        }
        elapsed = cm_time_ns() - t0;
        expect  = N * (cfg->net_latency + cfg->net_overhead);
        MP_CHECK(elapsed >= expect, "%d gets took %" PRIu64 " ns, less than the injected %" PRIu64,
                 N, elapsed, expect);
        printf("mp_delay: %d gets: %" PRIu64 " ns >= %" PRIu64 " ns injected\n", N, elapsed, expect);

        t0 = cm_time_ns();
        for (int i = 0; i < N; i++) {
            MP_OK(cm_rma_put(rma, peer, w, &v, sizeof(v)));
            MP_OK(cm_rma_flush(rma, peer));
        }
        elapsed = cm_time_ns() - t0;
        MP_CHECK(elapsed >= expect, "%d put+flush took %" PRIu64 " ns, less than %" PRIu64, N,
                 elapsed, expect);

        /* Bandwidth: 1 MiB moved in 16 non-blocking pieces queues behind the link. */
        if (cfg->net_bandwidth > 0) {
            t0 = cm_time_ns();
            for (size_t off = 0; off < big; off += big / 16) {
                MP_OK(cm_rma_get_nbi(rma, peer, buf + off, region + off, big / 16));
            }
            MP_OK(cm_rma_flush_all(rma));
            elapsed = cm_time_ns() - t0;
            expect  = (uint64_t)((double)big / cfg->net_bandwidth * 1e9);
            MP_CHECK(elapsed >= expect, "1 MiB took %" PRIu64 " ns, less than the %" PRIu64
                     " ns the bandwidth cap allows", elapsed, expect);
            printf("mp_delay: 1 MiB at the cap: %" PRIu64 " ns >= %" PRIu64 " ns\n", elapsed, expect);
        }

        /* Messages: a request and its reply. Each message costs its sender the overhead and
         * its packet's occupancy, and half the latency; the request its target's interrupt. */
        {
            cm_rma_delay_t m;
            cm_rma_delay_cfg_t c = {.latency_ns = cfg->net_latency, .bandwidth = cfg->net_bandwidth,
                                    .overhead_ns = cfg->net_overhead,
                                    .occupancy_ns = cfg->net_occupancy, .packet = cfg->net_packet,
                                    .interrupt_ns = cfg->net_interrupt};
            uint64_t want;

            cm_rma_delay_init(&m, &c);
            expect = N * (2 * (cfg->net_overhead + cm_rma_delay_wire(&m, 8)) +
                          2 * (cfg->net_latency / 2) + cfg->net_interrupt);
            t0 = cm_time_ns();
            for (int i = 0; i < N; i++) {
                want = atomic_load(&pongs) + 1;
                MP_OK(cm_rma_am_send(rma, peer, MP_AM_PING, &v, 8));
                cm_rma_wait_events(rma, pong_seen, &want, NULL);
            }
            elapsed = cm_time_ns() - t0;
            MP_CHECK(elapsed >= expect, "%d message round trips took %" PRIu64 " ns, less than "
                     "the injected %" PRIu64, N, elapsed, expect);
            printf("mp_delay: %d message round trips: %" PRIu64 " ns >= %" PRIu64 " ns injected\n",
                   N, elapsed, expect);
        }

        /* Operations to oneself are local: never charged. */
        cm_rma_get_stats(rma, &s0);
        for (int i = 0; i < N; i++) {
            MP_OK(cm_rma_get(rma, 0, &v, w, sizeof(v)));
            MP_OK(cm_rma_fadd(rma, 0, w, 1, &v));
        }
        MP_OK(cm_rma_flush(rma, 0));
        cm_rma_get_stats(rma, &s1);
        MP_CHECK(s1.delay_ns == s0.delay_ns, "operations to self were charged %" PRIu64 " ns",
                 s1.delay_ns - s0.delay_ns);
        MP_CHECK(s1.delay_ns > 0 || !cm_config_net_delayed(cfg), "no delay was injected at all");
        printf("mp_delay: OK (%" PRIu64 " ns injected in total)\n", s1.delay_ns);
    }
    MP_OK(cm_rma_barrier(rma));
    if (cm_rank() == 1) {
        /* The pings were requests: each served at an interrupt here, and nothing else was. */
        cm_rma_get_stats(rma, &s1);
        MP_CHECK(s1.interrupts - s0.interrupts == (cfg->net_interrupt ? N : 0),
                 "%" PRIu64 " requests served at an interrupt, expected %d",
                 s1.interrupts - s0.interrupts, cfg->net_interrupt ? N : 0);
        printf("mp_delay: %" PRIu64 " interrupts at the target\n", s1.interrupts - s0.interrupts);
    }
    free(buf);
    cm_finalize();
    return 0;
}
