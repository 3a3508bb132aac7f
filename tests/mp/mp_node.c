/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hosts and what their processes share (issue 46, rma/cm_rma_node.c): the hosts every rank
 * computes agree with the process manager's (PMIx local size and rank) and with each other's;
 * a node segment is one memory for the ranks of a host and separate between hosts; a host's
 * ranks map the leader's copy of the shared region and see its stores.
 *
 *   mp_node [--expect-hosts N]
 */
#include "mp_common.h"

#include "rma/cm_boot.h"

#include <sys/mman.h>

#define NODE_LEN (1u << 20)

int main(int argc, char **argv)
{
    cm_rma_hosts_t h;
    cm_rma_t *rma;
    int me, np, expect = -1, fd;
    uint64_t *node, *word, *first;
    char *view;
    void *map;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--expect-hosts") == 0 && i + 1 < argc) {
            expect = atoi(argv[++i]);
        } else {
            fprintf(stderr, "mp_node: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    cm_init(&argc, &argv);
    me  = cm_rank();
    np  = cm_nprocs();
    rma = cm_rt.rma;
    MP_OK(cm_rma_hosts_init(rma, &h));
    MP_CHECK(h.local_size == cm_boot_local_size(cm_rt.boot), "rank %d: %d ranks on this host, PMIx "
             "says %d", me, h.local_size, cm_boot_local_size(cm_rt.boot));
    MP_CHECK(h.local[h.local_rank] == me && h.host_of[me] == h.host && h.leader[h.host] == h.local[0],
             "rank %d: inconsistent host view", me);
    MP_CHECK(expect < 0 || h.nhosts == expect, "rank %d: %d hosts, expected %d", me, h.nhosts, expect);
    for (int r = 0, last = -1; r < np; r++) {
        MP_CHECK(h.host_of[r] >= 0 && h.host_of[r] < h.nhosts && h.host_of[r] <= last + 1,
                 "rank %d: rank %d's host %d out of order", me, r, h.host_of[r]);
        last = (h.host_of[r] > last) ? h.host_of[r] : last;
    }

    /* Each rank writes its slot of the host's node segment, then checks its host's slots:
     * exactly its host's ranks wrote there. */
    MP_OK(cm_rma_node_map(rma, &h, NULL, NODE_LEN, "mp_node", &map, &fd));
    first = map;
    node = mmap(NULL, NODE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    MP_CHECK(node != MAP_FAILED, "rank %d: cannot map the node segment again", me);
    close(fd);
    __atomic_store_n(&node[me], (uint64_t)me + 1000, __ATOMIC_RELEASE);
    __atomic_fetch_add(&node[np], 1, __ATOMIC_ACQ_REL);
    MP_OK(cm_rma_barrier(rma));
    for (int r = 0; r < np; r++) {
        uint64_t v = __atomic_load_n(&node[r], __ATOMIC_ACQUIRE);
        bool local = h.host_of[r] == h.host;
        MP_CHECK(v == (local ? (uint64_t)r + 1000 : 0), "rank %d: node slot of rank %d holds "
                 "%" PRIu64 " (%s)", me, r, v, local ? "a rank of this host" : "another host's");
    }
    MP_CHECK(node[np] == (uint64_t)h.local_size && first[np] == node[np], "rank %d: %" PRIu64
             " arrivals (%" PRIu64 " in the first mapping), %d ranks here", me, node[np], first[np],
             h.local_size);

    /* The leader's shared region under a view of our own: its store shows through. */
    view = mmap(NULL, cm_rt.shared_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                -1, 0);
    MP_CHECK(view != MAP_FAILED, "rank %d: cannot reserve a view", me);
    MP_OK(cm_rma_seg_map_peer_view(rma, cm_rt.shared_seg, h.leader[h.host], &h, view,
                                   PROT_READ | PROT_WRITE));
    word = (uint64_t *)(void *)((char *)cm_rt.shared_net + cm_rt.shared_size - 4096);
    if (me == h.leader[h.host]) {
        __atomic_store_n(word, 0xC0FFEEull + (uint64_t)h.host, __ATOMIC_RELEASE);
    }
    MP_OK(cm_rma_barrier(rma));
    MP_CHECK(*(volatile uint64_t *)(view + cm_rt.shared_size - 4096) == 0xC0FFEEull + (uint64_t)h.host,
             "rank %d: the leader's store is not in its view", me);
    MP_OK(cm_rma_barrier(rma));
    if (me == 0) {
        printf("mp_node: %d ranks on %d hosts OK\n", np, h.nhosts);
    }
    munmap(view, cm_rt.shared_size);
    munmap(node, NODE_LEN);
    munmap(first, NODE_LEN);
    cm_rma_hosts_free(&h);
    cm_finalize();
    return 0;
}
