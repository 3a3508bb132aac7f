/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The two-level protocol (CM_PROTOCOL=twolevel; issue 46, after Cashmere-2L, SOSP'97): the
 * processes of a host share one copy of each page and the protocol runs between hosts.
 * docs/ARCHITECTURE.md, "Two levels", says how; tests/model/twolevel.pml is the model its
 * orderings follow (each rule below names the mutation that breaks it).
 *
 * A page's home is a host (round robin), whose copy is the master; its processes work on it
 * directly. Another host's processes share that host's copy: a fault that finds it stale (a
 * notice drained since it was brought in) or the host not a sharer gets the master and
 * applies it as an incoming diff against the host's twin, so that the host's processes'
 * own writes stay. A release puts what its host wrote (the copy against the twin) to the
 * home, makes the host a writer if it is not one, and posts the notices its WRITE calls for.
 * An acquire drains its host's notices: each drained page is stale for the host, the host
 * leaves it, and the page goes to the host's log, from which every process drops its own
 * mapping at its own next acquire.
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/protocols/twolevel/cm_2l_int.h"
#include "util/cm_error.h"
#include "util/cm_log.h"
#include "util/cm_mem.h"
#include "util/cm_time.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

cm_2l_t cm_2l;
static char cm_2l_describe_buf[384];

static cm_status_t cm_2l_protect(uint64_t p, unsigned prot)
{
    static const int mode[] = {PROT_NONE, PROT_READ, PROT_READ | PROT_WRITE};

    if (mprotect(cm_2l.app + (p << cm_2l.shift), cm_2l.page_size, mode[prot]) != 0) {
        cm_error("twolevel: mprotect of shared page %" PRIu64 " failed: %s", p, strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    cm_2l.pte[p] = (uint8_t)((cm_2l.pte[p] & ~CM_2L_PROT) | prot);
    return CM_OK;
}

/* Posts a notice of p to every host in mask (a host's bin at its leader, ours as sender). */
static cm_status_t cm_2l_notify(uint64_t mask, uint64_t p)
{
    for (int h = 0; h < cm_2l.nhosts; h++) {
        if ((mask >> h) & 1) {
            CM_CHECK(cm_wn_bin_post(&cm_2l.bins, cm_2l.hosts->leader[h], p));
        }
    }
    return CM_OK;
}

/* ---- faults --------------------------------------------------------------------------- */

/* The host's JOIN (page lock held): a fetching add of its sharer bit, waited for. A join that
 * finds another writer notices itself (NO_SELF), unless the page is homed here (our copy is
 * the master); at the second such join in a row it tells those writers, so that one that has
 * stopped writing leaves and stops making every join notice itself (cm_cm_join_tell). */
static cm_status_t cm_2l_join(uint64_t p)
{
    uint64_t old, me = 1ull << cm_2l.host, writers;
    cm_dir_entry_t e;

    CM_CHECK(cm_2l_home_join(p, &old));
    cm_dir_cas_unpack(old, &e);
    cm_assert(!(e.sharers & me));
    cm_2l_state_set(p, CM_2L_SHARER, 0);
    writers = e.writers & ~me;
    if (writers == 0 || cm_2l_home(p) == cm_2l.host) {
        cm_2l_state_set(p, 0, CM_2L_FOUND);
        return CM_OK;
    }
    cm_2l_self_notice(p);
    if (cm_2l_state(p) & CM_2L_FOUND) {
        CM_CHECK(cm_2l_notify(writers, p));
    }
    cm_2l_state_set(p, CM_2L_FOUND, 0);
    return CM_OK;
}

static void cm_2l_wl_add(uint64_t p)
{
    if (!(cm_2l.pte[p] & CM_2L_WL)) {
        cm_2l.pte[p] |= CM_2L_WL;
        cm_2l.wl[cm_2l.nwl++] = (uint32_t)p;
    }
}

static cm_status_t cm_2l_fault_in(uint64_t p, bool write)
{
    const size_t off = p << cm_2l.shift;
    cm_2l_page_t *pg = &cm_2l.pages[p];
    bool joined = false;
    uint32_t s;

    cm_2l_page_lock(p);
    s = cm_2l_state(p);
    if (!(s & CM_2L_SHARER)) {
        CM_CHECK(cm_2l_join(p)); /* (first, as it may claim the home) */
        joined = true;
    }
    if (cm_2l.init_phase) {
        cm_2l.pte[p] |= CM_2L_SEEN;
    }
    const bool home = cm_2l_home(p) == cm_2l.host;
    if (!home && (joined || pg->upd != pg->wn)) {
        uint64_t t0;
        uint32_t seen;
        size_t changed;

        /* The notices drained so far, before the get (IGNORE_WN: a copy mapped while noticed
         * is stale; a notice drained during the get is not covered by it). */
        seen = pg->wn;
        t0   = cm_trace_begin();
        CM_CHECK(CM_STATS_IN_PHASE(&cm_2l.st.page_copy_ns,
                                   cm_rma_get(cm_2l.rma, cm_2l_home_rank(p), cm_2l.fetch,
                                              cm_2l.net + off, cm_2l.page_size)));
        cm_trace_end(CM_TRACE_FETCH, t0, p, cm_2l_home_rank(p), (uint32_t)cm_2l.page_size);
        /* Into the copy and the twin alike (INCOMING_COPY, INCOMING_KEEP_TWIN). */
        t0      = cm_trace_begin();
        changed = cm_2l_diff_in(cm_2l.node + off, cm_2l.twins + off, cm_2l.fetch,
                                cm_2l.page_size, (s & CM_2L_TWIN) != 0);
        cm_trace_end(CM_TRACE_DIFF_IN, t0, p, cm_2l_home_rank(p), (uint32_t)changed);
        if (s & CM_2L_TWIN) {
            cm_2l.st.diffs_in += (changed > 0);
            cm_2l.st.diff_bytes_in += changed;
        }
        pg->upd = seen;
        cm_2l.st.pages_fetched++;
    } else {
        cm_2l.st.local_maps++;
    }
    if (write) {
        if (!home && !(cm_2l_state(p) & CM_2L_TWIN)) {
            /* Nobody here has it writable yet: the copy is what the home had. */
            memcpy(cm_2l.twins + off, cm_2l.node + off, cm_2l.page_size);
            cm_2l_state_set(p, CM_2L_TWIN, 0);
            cm_2l.st.twins++;
        }
        cm_2l_wl_add(p);
    }
    CM_CHECK(cm_2l_protect(p, write ? CM_2L_RW : CM_2L_RO));
    cm_2l_page_unlock(p);
    return CM_OK;
}

static cm_status_t cm_2l_fault(void *addr, bool write)
{
    uint64_t p = cm_2l_page((uintptr_t)addr);

    if (p >= cm_2l.npages) {
        return CM_ERR_INVALID;
    }
    if (write) {
        cm_2l.st.write_faults++;
        return CM_RMA_COUNT_WAITS(&cm_2l.st.waits_write_fault,
                                  CM_STATS_IN_PHASE(&cm_2l.st.fault_ns, cm_2l_fault_in(p, true)));
    }
    cm_2l.st.read_faults++;
    return CM_RMA_COUNT_WAITS(&cm_2l.st.waits_read_fault,
                              CM_STATS_IN_PHASE(&cm_2l.st.fault_ns, cm_2l_fault_in(p, false)));
}

/* ---- release -------------------------------------------------------------------------- */

typedef struct {
    int      rank;
    uint64_t page_off;
} cm_2l_put_t;

static cm_status_t cm_2l_put_run(size_t off, size_t len, void *arg)
{
    const cm_2l_put_t *at = arg;

    cm_2l.st.forwarded_puts++;
    if (cm_2l_batched(at->rank)) {
        return cm_2l_batch_append(at->rank, at->page_off + off, cm_2l.twins + at->page_off + off,
                                  len);
    }
    /* From the twin, which holds these bytes until the flush (the page's lock is ours). */
    return cm_rma_put_nbi(cm_2l.rma, at->rank, cm_2l.net + at->page_off + off,
                          cm_2l.twins + at->page_off + off, len);
}

static int cm_2l_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* Bits of cm_2l.wflag[i] for the write list's page i during a release. */
#define CM_2L_R_LOCKED  1u
#define CM_2L_R_WRITE   2u
#define CM_2L_R_CHANGED 4u
#define CM_2L_R_JOINED  8u

static cm_status_t cm_2l_release_in(void)
{
    uint8_t *flag = (uint8_t *)cm_2l.drained; /* scratch, free during a release */
    bool notices = false;
    uint64_t kept = 0;

    cm_2l.st.releases++;
    if (cm_2l.nwl == 0) {
        return CM_OK;
    }
    /* Page locks in page order: a drain and other releases take them in the same order. */
    qsort(cm_2l.wl, cm_2l.nwl, sizeof(*cm_2l.wl), cm_2l_cmp_u32);
    for (uint64_t i = 0; i < cm_2l.nwl; i++) {
        uint64_t p = cm_2l.wl[i];
        const bool home = cm_2l_home(p) == cm_2l.host;
        uint32_t s = cm_2l_state(p);

        flag[i] = 0;
        /* A writer, and no release of the page under way here (whose notices may still be on
         * their way: EARLY_UNLOCK): nothing to say; the home's copy has our stores. */
        if (home && (s & (CM_2L_WRITER | CM_2L_LOCKED)) == CM_2L_WRITER) {
            continue;
        }
        cm_2l_page_lock(p);
        flag[i] = CM_2L_R_LOCKED;
        if (!home) {
            cm_2l_put_t at = {cm_2l_home_rank(p), p << cm_2l.shift};
            const uint64_t t0 = cm_trace_begin();
            size_t changed;
            /* The host's stores, whoever made them, into the twin and out (OUTGOING_KEEP_TWIN). */
            CM_CHECK(cm_2l_diff_out(cm_2l.node + at.page_off, cm_2l.twins + at.page_off,
                                    cm_2l.page_size, cm_2l_put_run, &at, &changed));
            cm_trace_end(CM_TRACE_DIFF_OUT, t0, p, at.rank, (uint32_t)changed);
            if (changed > 0) {
                flag[i] |= CM_2L_R_CHANGED;
                cm_2l.st.diffs_out++;
                cm_2l.st.diff_bytes_out += changed;
            }
        }
        s = cm_2l_state(p);
        if (!(s & CM_2L_WRITER)) {
            /* Not a writer (never, or the host left since: DROP_WRITES keeps the page listed
             * for this): the WRITE, and the JOIN with it where the host is not a sharer. */
            uint64_t delta = cm_dir_add_delta(CM_DIR_WRITE, cm_2l.host, false);
            if (!(s & CM_2L_SHARER)) {
                delta += cm_dir_add_delta(CM_DIR_JOIN, cm_2l.host, false);
                flag[i] |= CM_2L_R_JOINED;
            }
            CM_CHECK(cm_rma_fadd_nbi(cm_2l.rma, cm_2l_dir_rank(p), cm_2l_dir_word(p), delta,
                                     &cm_2l.wold[i]));
            cm_2l.st.dir_updates++;
            flag[i] |= CM_2L_R_WRITE;
        }
    }
    /* One wait: the diffs at the homes (puts, or batches acknowledged), the WRITEs' words. */
    CM_CHECK(cm_2l_batch_complete());
    CM_CHECK(cm_rma_flush_all(cm_2l.rma));
    for (uint64_t i = 0; i < cm_2l.nwl; i++) {
        uint64_t p = cm_2l.wl[i], me = 1ull << cm_2l.host;
        cm_dir_entry_t e;

        if (!(flag[i] & CM_2L_R_WRITE)) {
            continue;
        }
        cm_dir_cas_unpack(cm_2l.wold[i], &e);
        cm_assert(!(e.writers & me) && !(e.sharers & me) == !!(flag[i] & CM_2L_R_JOINED));
        if ((e.sharers & ~me) != 0) {
            CM_CHECK(cm_2l_notify(e.sharers & ~me, p));
            notices = true;
        }
        if ((flag[i] & CM_2L_R_JOINED) && (e.writers & ~me) && cm_2l_home(p) != cm_2l.host) {
            cm_2l_self_notice(p); /* joined with the WRITE: as a JOIN would (NO_SELF) */
        }
    }
    CM_CHECK(cm_wn_bin_commit(&cm_2l.bins));
    if (notices) {
        /* The notices in their bins before anyone can see the host a writer or the release. */
        CM_CHECK(cm_rma_flush_all(cm_2l.rma));
    }
    for (uint64_t i = 0; i < cm_2l.nwl; i++) {
        uint64_t p = cm_2l.wl[i];
        unsigned prot = cm_2l.pte[p] & CM_2L_PROT;

        if (flag[i] & CM_2L_R_WRITE) {
            cm_2l_state_set(p, CM_2L_SHARER | CM_2L_WRITER, 0);
        }
        if (flag[i] & CM_2L_R_LOCKED) {
            cm_2l_page_unlock(p); /* only now (EARLY_UNLOCK) */
        }
        /* Stays listed while writable here and still written (a copy homed elsewhere that did
         * not change at CM_2L_IDLE_MAX releases in a row is protected again, so that its next
         * store faults). */
        if (flag[i] & CM_2L_R_CHANGED) {
            cm_2l.pte[p] &= (uint8_t)~CM_2L_IDLE;
        } else if (prot == CM_2L_RW && cm_2l_home(p) != cm_2l.host &&
                   ((cm_2l.pte[p] & CM_2L_IDLE) >> 3) + 1 < CM_2L_IDLE_MAX) {
            cm_2l.pte[p] = (uint8_t)(cm_2l.pte[p] + CM_2L_IDLE1);
            cm_2l.wl[kept++] = (uint32_t)p;
            continue;
        }
        if (prot == CM_2L_RW && (cm_2l_home(p) == cm_2l.host || (flag[i] & CM_2L_R_CHANGED))) {
            cm_2l.wl[kept++] = (uint32_t)p;
            continue;
        }
        cm_2l.pte[p] &= (uint8_t)~CM_2L_IDLE;
        if (prot == CM_2L_RW) {
            CM_CHECK(cm_2l_protect(p, CM_2L_RO));
        }
        cm_2l.pte[p] &= (uint8_t)~CM_2L_WL;
    }
    cm_2l.nwl = kept;
    return CM_OK;
}

/* ---- acquire -------------------------------------------------------------------------- */

/* Reads sender s's bin at our host's leader: the notices since the host's consumed index. */
static cm_status_t cm_2l_drain_bin(int s, uint64_t *n, bool *all)
{
    const size_t bin_bytes = cm_wn_bin_bytes(cm_2l.bins.cap);
    uint64_t *bin = (uint64_t *)(void *)(cm_2l.meta_base + cm_2l.meta->wn_bins +
                                         (size_t)s * bin_bytes);
    uint64_t hdr[2], head = cm_2l.bin_head[s];

    /* The tail first: the slots before it landed ahead of it (the sender's fence). */
    CM_CHECK(cm_rma_get(cm_2l.rma, cm_2l.leader, hdr, bin, sizeof(hdr)));
    if (hdr[0] == head && hdr[1] == cm_2l.bin_ovf[s]) {
        return CM_OK;
    }
    cm_assert(hdr[0] - head <= cm_2l.bins.cap);
    while (head != hdr[0]) {
        uint64_t at = head & (cm_2l.bins.cap - 1);
        uint64_t k = hdr[0] - head;
        uint64_t slots[64];
        k = (k > cm_2l.bins.cap - at) ? cm_2l.bins.cap - at : k;
        k = (k > 64) ? 64 : k;
        CM_CHECK(cm_rma_get(cm_2l.rma, cm_2l.leader, slots, &bin[2 + at], k * sizeof(uint64_t)));
        for (uint64_t j = 0; j < k; j++) {
            cm_assert(slots[j] != 0);
            cm_2l.drained[(*n)++] = slots[j] - 1;
        }
        cm_2l.st.notices_drained += k;
        head += k;
    }
    if (hdr[1] != cm_2l.bin_ovf[s]) {
        cm_2l.bin_ovf[s] = hdr[1];
        *all = true;
    }
    cm_2l.bin_head[s] = hdr[0];
    /* The room back to the sender, after the slots were read. */
    return cm_rma_put_u64_nbi(cm_2l.rma, s, &cm_2l.bins.heads[cm_2l.leader], hdr[0]);
}

cm_status_t cm_2l_discard_notices(void)
{
    for (int s = 0; s < cm_2l.nprocs; s++) {
        uint64_t n = 0;
        bool all = false;
        if (cm_2l.hosts->host_of[s] != cm_2l.host) {
            CM_CHECK(cm_2l_drain_bin(s, &n, &all));
        }
    }
    return CM_OK;
}

static int cm_2l_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The host's drain (its drain lock held): notices and self-notices make their pages stale
 * here; the host leaves each (NO_LEAVE), the LEAVEs landed before the pages' locks go (another
 * process of the host may update the word next), and the pages go to the host's log. */
static cm_status_t cm_2l_drain(void)
{
    uint64_t n = 0, m = 0;
    bool all = false, leaves = false;

    for (int s = 0; s < cm_2l.nprocs; s++) {
        if (cm_2l.hosts->host_of[s] != cm_2l.host) {
            CM_CHECK(cm_2l_drain_bin(s, &n, &all));
        }
    }
    cm_2l_lock(&cm_2l.hdr->self_lock);
    for (uint64_t i = 0; i < cm_2l.hdr->self_n; i++) {
        cm_2l.drained[n++] = cm_2l.selfq[i];
    }
    all |= cm_2l.hdr->self_all != 0;
    cm_2l.hdr->self_n   = 0;
    cm_2l.hdr->self_all = 0;
    cm_2l_unlock(&cm_2l.hdr->self_lock);
    if (all) {
        cm_2l.st.ring_overflows++;
        n = 0;
        for (uint64_t p = 0; p < cm_2l.npages; p++) {
            if (cm_2l_state(p) & CM_2L_SHARER) {
                cm_2l.drained[n++] = p;
            }
        }
    }
    if (n == 0) {
        return CM_OK;
    }
    qsort(cm_2l.drained, n, sizeof(*cm_2l.drained), cm_2l_cmp_u64);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t p = cm_2l.drained[i];
        uint32_t s;
        if (m > 0 && cm_2l.drained[m - 1] == p) {
            continue;
        }
        cm_2l.drained[m++] = p;
        cm_2l_page_lock(p);
        cm_2l.pages[p].wn++;
        s = cm_2l_state(p);
        if (s & CM_2L_SHARER) {
            CM_CHECK(cm_rma_add_nbi(cm_2l.rma, cm_2l_dir_rank(p), cm_2l_dir_word(p),
                                    cm_dir_add_delta(CM_DIR_LEAVE, cm_2l.host,
                                                     (s & CM_2L_WRITER) != 0)));
            cm_2l.st.dir_updates++;
            cm_2l_state_set(p, 0, CM_2L_SHARER | CM_2L_WRITER);
            leaves = true;
        }
    }
    if (leaves) {
        CM_CHECK(cm_rma_flush_all(cm_2l.rma));
    }
    for (uint64_t i = 0; i < m; i++) {
        cm_2l_page_unlock(cm_2l.drained[i]);
    }
    if (all) {
        cm_2l.log[cm_2l.hdr->log_tail++ % CM_2L_LOG_CAP] = CM_2L_LOG_ALL;
    } else {
        for (uint64_t i = 0; i < m; i++) {
            cm_2l.log[cm_2l.hdr->log_tail++ % CM_2L_LOG_CAP] = cm_2l.drained[i];
        }
    }
    return CM_OK;
}

static cm_status_t cm_2l_drop_all(void)
{
    for (uint64_t p = 0; p < cm_2l.npages; p++) {
        if ((cm_2l.pte[p] & CM_2L_PROT) != CM_2L_NONE) {
            cm_2l.pte[p] &= (uint8_t)~CM_2L_PROT;
            cm_2l.st.invalidations++;
        }
    }
    if (mprotect(cm_2l.app, cm_2l.npages << cm_2l.shift, PROT_NONE) != 0) {
        cm_error("twolevel: mprotect of the shared region failed: %s", strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    return CM_OK;
}

static cm_status_t cm_2l_acquire_in(void)
{
    uint64_t n = 0;
    bool all = false;

    cm_2l.st.acquires++;
    if (cm_2l.nhosts == 1) {
        return CM_OK; /* the host's copy is every page's master: nothing is ever stale */
    }
    /* Wait for a drain in progress here (NO_DRAIN_WAIT): it may hold notices we must see. */
    cm_2l_lock(&cm_2l.hdr->drain_lock);
    CM_CHECK(cm_2l_drain());
    /* Our pending list: the host's log since our place. */
    if (cm_2l.hdr->log_tail - cm_2l.log_cur > CM_2L_LOG_CAP) {
        all = true;
    } else {
        for (; cm_2l.log_cur != cm_2l.hdr->log_tail; cm_2l.log_cur++) {
            uint64_t p = cm_2l.log[cm_2l.log_cur % CM_2L_LOG_CAP];
            all |= (p == CM_2L_LOG_ALL);
            if (!all) {
                cm_2l.drained[n++] = p;
            }
        }
    }
    cm_2l.log_cur = cm_2l.hdr->log_tail;
    cm_2l_unlock(&cm_2l.hdr->drain_lock);
    /* Only our own mappings; pages we wrote stay in our write list (DROP_WRITES). */
    if (all) {
        CM_CHECK(cm_2l_drop_all());
    } else {
        for (uint64_t i = 0; i < n; i++) {
            uint64_t p = cm_2l.drained[i];
            if ((cm_2l.pte[p] & CM_2L_PROT) != CM_2L_NONE) {
                CM_CHECK(cm_2l_protect(p, CM_2L_NONE));
                cm_2l.st.invalidations++;
            }
        }
    }
    /* Notices to writers our joins told: out by our next release's flush. */
    return cm_wn_bin_commit(&cm_2l.bins);
}

static cm_status_t cm_2l_release(void)
{
    return cm_protocol_event(cm_2l.rma, cm_2l_release_in, &cm_2l.st.waits_release, &cm_2l.st.release_ns);
}

static cm_status_t cm_2l_acquire(void)
{
    return cm_protocol_event(cm_2l.rma, cm_2l_acquire_in, &cm_2l.st.waits_acquire, &cm_2l.st.acquire_ns);
}

/* ---- locks and barriers (cm_2l_sync.c: inside the host, then between hosts) ---- */

static cm_status_t cm_2l_lock_acquire(unsigned id)
{
    /* A host alone: the host's mutex is the whole lock, and an acquire has nothing to do;
     * neither is timed where nothing was waited for (BARNES: a million locks per process). */
    if (cm_2l.nhosts == 1 && cm_2l_mutex_trylock(&cm_2l.locks[id])) {
        cm_2l.st.lock_acquires_local++;
        cm_2l.st.acquires++;
        return CM_OK;
    }
    CM_CHECK(CM_RMA_COUNT_WAITS(&cm_2l.st.waits_lock,
                                CM_STATS_IN_PHASE(&cm_2l.st.lock_wait_ns, cm_2l_lock_take(id))));
    return cm_2l_acquire();
}

static cm_status_t cm_2l_lock_release(unsigned id)
{
    if (cm_2l.nhosts == 1) {
        cm_2l.st.releases++;
        cm_2l_mutex_unlock(&cm_2l.locks[id]);
        return CM_OK;
    }
    CM_CHECK(cm_2l_release());
    return CM_RMA_COUNT_WAITS(&cm_2l.st.waits_lock, cm_2l_lock_give(id));
}

static cm_status_t cm_2l_barrier(void)
{
    CM_CHECK(cm_2l_release());
    CM_CHECK(CM_RMA_COUNT_WAITS(&cm_2l.st.waits_barrier,
                                CM_STATS_IN_PHASE(&cm_2l.st.barrier_ns, cm_2l_barrier_wait())));
    cm_2l.st.barriers++;
    if (cm_2l.init_phase) {
        return cm_2l_init_end(); /* homes are claimed from now on (cm_2l_home.c) */
    }
    return cm_2l_acquire();
}

static cm_status_t cm_2l_init_done(void)
{
    return cm_2l.init_phase ? cm_2l_barrier() : CM_OK;
}

/* ---- statistics ----------------------------------------------------------------------- */

static void cm_2l_stats(cm_stats_t *s)
{
    cm_rma_stats_t r;

    *s = cm_2l.st;
    cm_protocol_stats_rma(cm_2l.rma, &cm_2l.rma_base, s, &r);
    s->total_ns       = cm_time_ns() - cm_2l.t_start;
    s->notices_posted = cm_2l.bins.posted;
    s->ring_overflows += cm_2l.bins.overflows;
    s->msgs           = r.am_sent;
    s->msg_bytes      = r.am_bytes_sent;
    if (cm_2l.rank == cm_2l.leader) {
        s->shared_resident_bytes = cm_2l_node_resident(); /* the twins (the copy: the runtime) */
    }
}

static void cm_2l_stats_reset(void)
{
    memset(&cm_2l.st, 0, sizeof(cm_2l.st));
    cm_2l.bins.posted = cm_2l.bins.drained = cm_2l.bins.overflows = 0;
    cm_rma_get_stats(cm_2l.rma, &cm_2l.rma_base);
    cm_2l.t_start = cm_time_ns();
}

static const char *cm_2l_describe(void)
{
    return cm_2l_describe_buf;
}

static cm_status_t cm_2l_page_home(const void *addr, int *home)
{
    uintptr_t a = (uintptr_t)addr;

    if (a - (uintptr_t)cm_2l.app >= (cm_2l.npages << cm_2l.shift)) {
        return CM_ERR_INVALID;
    }
    /* (A page whose home is yet to be claimed: its directory host's leader, which has it.) */
    *home = cm_2l_home_rank(cm_2l_page(a));
    return CM_OK;
}

/* ---- init / fini ---------------------------------------------------------------------- */

/* Our view of the shared region onto the host's copy (the leader's file), every page with
 * the protection a process starts with: all writable on a host alone (no other host can
 * make it stale), else none (the first access faults). */
static cm_status_t cm_2l_map_views(const cm_protocol_ctx_t *ctx)
{
    const int prot = (cm_2l.nhosts == 1) ? PROT_READ | PROT_WRITE : PROT_NONE;

    if (ctx->rank != cm_2l.leader) {
        void *p = mmap(NULL, ctx->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (p == MAP_FAILED) {
            cm_error("twolevel: cannot reserve %zu bytes for the host's copy: %s", ctx->size,
                     strerror(errno));
            return CM_ERR_NO_MEMORY;
        }
        cm_2l.node = p;
        CM_CHECK(cm_rma_seg_map_peer_view(ctx->rma, ctx->shared_seg, cm_2l.leader, ctx->hosts,
                                          cm_2l.node, PROT_READ | PROT_WRITE));
        return cm_rma_seg_map_peer_view(ctx->rma, ctx->shared_seg, cm_2l.leader, ctx->hosts,
                                        ctx->app, prot);
    }
    cm_2l.node = ctx->net;
    if (mprotect(ctx->app, ctx->size, prot) != 0) {
        cm_error("twolevel: mprotect of the shared region failed: %s", strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    return CM_OK;
}

static cm_status_t cm_2l_restore_view(void)
{
    const int prot = (cm_2l.nhosts == 1) ? PROT_READ | PROT_WRITE : PROT_NONE;

    if (cm_2l.rank != cm_2l.leader) {
        return cm_rma_seg_map_peer_view(cm_2l.rma, cm_2l.shared_seg, cm_2l.leader, cm_2l.hosts,
                                        cm_2l.app, prot);
    }
    if (munmap(cm_2l.app, cm_2l.npages << cm_2l.shift) != 0) {
        cm_error("twolevel: cannot unmap the stand-in of the shared region: %s", strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    return cm_rma_seg_map_view(cm_2l.shared_seg, cm_2l.app, prot, "shared region");
}

static cm_status_t cm_2l_init(const cm_protocol_ctx_t *ctx)
{
    cm_wn_bin_seg_t bseg;

    memset(&cm_2l, 0, sizeof(cm_2l));
    cm_2l.twins_fd   = -1;
    cm_stats_phase_base(&cm_2l.st);
    cm_2l.rank       = ctx->rank;
    cm_2l.nprocs     = ctx->nprocs;
    cm_2l.rma        = ctx->rma;
    cm_2l.hosts      = ctx->hosts;
    cm_2l.shared_seg = ctx->shared_seg;
    cm_2l.host       = ctx->hosts->host;
    cm_2l.nhosts     = ctx->hosts->nhosts;
    cm_2l.leader     = ctx->hosts->leader[cm_2l.host];
    cm_2l.app        = ctx->app;
    cm_2l.net        = ctx->net;
    cm_2l.page_size  = ctx->page_size;
    cm_2l.shift      = (unsigned)__builtin_ctzl(ctx->page_size);
    cm_2l.npages     = ctx->npages;
    cm_2l.meta_base  = ctx->meta_base;
    cm_2l.meta       = ctx->meta;
    /* A host alone is every page's home: nothing to claim. */
    cm_2l.first_touch = ctx->config->first_touch && cm_2l.nhosts > 1;
    cm_2l.init_phase  = cm_2l.first_touch;
    if (cm_2l.nhosts > CM_DIR_MAX_PROCS_CAS) {
        if (ctx->rank == 0) {
            cm_error("CM_PROTOCOL=twolevel runs on at most %d hosts (a directory word holds %d); "
                     "this job has %d", CM_DIR_MAX_PROCS_CAS, CM_DIR_MAX_PROCS_CAS, cm_2l.nhosts);
        }
        return CM_ERR_INVALID;
    }
    CM_CHECK(cm_2l_map_views(ctx));
    CM_CHECK(cm_2l_node_init(ctx));
    CM_CHECK(cm_2l_batch_init());
    CM_CHECK(cm_2l_sync_init());
    bseg = cm_meta_wn_bin_seg(ctx->meta, ctx->meta_base);
    CM_CHECK(cm_wn_bin_init(&cm_2l.bins, cm_2l.rma, &bseg));
    cm_barrier_init_group(&cm_2l.barrier, cm_2l.rma,
                          (uint64_t *)(void *)(cm_2l.meta_base + ctx->meta->barrier_flags),
                          ctx->hosts->leader, cm_2l.nhosts, cm_2l.host);
    /* Per page, reserved: committed where used. */
    cm_2l.pte     = cm_mem_reserve(cm_2l.npages * sizeof(*cm_2l.pte));
    cm_2l.wl      = cm_mem_reserve(cm_2l.npages * sizeof(*cm_2l.wl));
    cm_2l.wold    = cm_mem_reserve(cm_2l.npages * sizeof(*cm_2l.wold));
    cm_2l.drained = cm_mem_reserve(cm_2l.npages * sizeof(*cm_2l.drained));
    cm_2l.fetch   = aligned_alloc(64, cm_2l.page_size);
    if (cm_2l.pte == NULL || cm_2l.wl == NULL || cm_2l.wold == NULL || cm_2l.drained == NULL ||
        cm_2l.fetch == NULL) {
        cm_error("twolevel: out of memory for the state of %" PRIu64 " pages", cm_2l.npages);
        return CM_ERR_NO_MEMORY;
    }
    /* (A host alone maps every page writable and never faults: its page table stays
     * untouched, not a byte per page of the region.) */
    /* Every process of the host has mapped the host's memory: check it is the leader's. */
    CM_CHECK(cm_rma_barrier(cm_2l.rma));
    CM_CHECK(cm_2l_node_check());
    snprintf(cm_2l_describe_buf, sizeof(cm_2l_describe_buf),
             "twolevel: %d host%s (this one: %d process%s, one copy of each page); homes: %s; "
             "between hosts: twins and two-way diffs, a directory word per page with a bit per "
             "host (fetching adds), notices per host in per-sender bins",
             cm_2l.nhosts, (cm_2l.nhosts == 1) ? "" : "s", ctx->hosts->local_size,
             (ctx->hosts->local_size == 1) ? "" : "es",
             cm_2l.first_touch ? "the host of the first touch after initialization"
                               : "round robin over the hosts");
    cm_2l_stats_reset();
    return CM_OK;
}

static void cm_2l_fini(void)
{
    cm_wn_bin_fini(&cm_2l.bins);
    cm_2l_batch_fini();
    cm_2l_node_fini();
    if (cm_2l.rank != cm_2l.leader && cm_2l.node != NULL) {
        munmap(cm_2l.node, cm_2l.npages << cm_2l.shift);
    }
    cm_mem_release(cm_2l.pte, cm_2l.npages * sizeof(*cm_2l.pte));
    cm_mem_release(cm_2l.wl, cm_2l.npages * sizeof(*cm_2l.wl));
    cm_mem_release(cm_2l.wold, cm_2l.npages * sizeof(*cm_2l.wold));
    cm_mem_release(cm_2l.drained, cm_2l.npages * sizeof(*cm_2l.drained));
    free(cm_2l.fetch);
    memset(&cm_2l, 0, sizeof(cm_2l));
}

const cm_protocol_t cm_protocol_twolevel = {
    .name         = "twolevel",
    .max_procs    = 0,
    .init         = cm_2l_init,
    .fini         = cm_2l_fini,
    .fault        = cm_2l_fault,
    .lock_acquire = cm_2l_lock_acquire,
    .lock_release = cm_2l_lock_release,
    .barrier      = cm_2l_barrier,
    .init_done    = cm_2l_init_done,
    .stats        = cm_2l_stats,
    .stats_reset  = cm_2l_stats_reset,
    .describe     = cm_2l_describe,
    .page_home    = cm_2l_page_home,
    .restore_view = cm_2l_restore_view,
};
