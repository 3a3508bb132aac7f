/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Delay injection (CM_NET_LATENCY, CM_NET_BANDWIDTH, CM_NET_OVERHEAD) is real
 * waiting in the issuing process: operations to a peer take at least what the
 * model charges, operations to oneself are not charged. Only lower bounds
 * are checked; they hold by construction, whatever the machine's load.
 */
#include "mp_common.h"
#include "util/cm_time.h"

#define N 20

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
        MP_CHECK(s1.delay_ns > 0 || (cfg->net_latency == 0 && cfg->net_overhead == 0 &&
                                     cfg->net_bandwidth == 0), "no delay was injected at all");
        printf("mp_delay: OK (%" PRIu64 " ns injected in total)\n", s1.delay_ns);
    }
    free(buf);
    cm_finalize();
    return 0;
}
