/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Homes per host (CM_FIRST_TOUCH; tests/model/twolevel.pml, FIRST_TOUCH). During the
 * initialization phase a page's home is its directory host (round robin over the hosts). The
 * first barrier (or cm_init_done) ends the phase: every host forgets its role in each page it
 * touched, and each page's next join claims its home for the joining host. The claim is a
 * compare-and-swap of the page's directory word that fixes the home, with BUSY set while the
 * claimer, its page lock held, copies the page in from the old home (FT_NO_COPY); a later join
 * waits for BUSY to clear before it gets the page from its new home (FT_NO_WAIT). A home never
 * moves again. The host records the home it learnt in the page's record.
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/protocols/twolevel/cm_2l_int.h"
#include "util/cm_error.h"
#include "util/cm_log.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

/* The directory word's BUSY flag, as a number to add (independent of the word's layout). */
static uint64_t cm_2l_busy_word(void)
{
    cm_dir_entry_t e = {0};
    e.flags = CM_DIR_BUSY;
    return cm_dir_cas_pack(&e);
}

/* Looks at the word again until the claimer is done (or an operation fails). */
static cm_status_t cm_2l_wait_claimed(uint64_t p)
{
    cm_status_t status;
    uint64_t w;

    cm_rma_why_push(cm_2l.rma, CM_RMA_WHY("the directory word of page %a, busy with another host's "
                                          "claim of its home (the word is at rank %b)",
                                          NULL, p, (uint64_t)cm_2l_dir_rank(p), -1));
    do {
        cm_rma_progress(cm_2l.rma);
        sched_yield();
        status = cm_rma_get(cm_2l.rma, cm_2l_dir_rank(p), &w, cm_2l_dir_word(p), sizeof(w));
    } while (status == CM_OK && (w & cm_2l_busy_word()));
    cm_rma_why_pop(cm_2l.rma);
    return status;
}

/* The claimer's copy of the page from the old home, the page's directory host. */
static cm_status_t cm_2l_copy_in(uint64_t p)
{
    const size_t off = p << cm_2l.shift;
    uint64_t t0      = cm_trace_begin();

    CM_CHECK(CM_STATS_IN_PHASE(&cm_2l.st.page_copy_ns,
                               cm_rma_get(cm_2l.rma, cm_2l_dir_rank(p), cm_2l.fetch,
                                          cm_2l.net + off, cm_2l.page_size)));
    cm_trace_end(CM_TRACE_FETCH, t0, p, cm_2l_dir_rank(p), (uint32_t)cm_2l.page_size);
    memcpy(cm_2l.node + off, cm_2l.fetch, cm_2l.page_size);
    cm_2l.st.pages_fetched++;
    return CM_OK;
}

cm_status_t cm_2l_home_join(uint64_t p, uint64_t *old)
{
    const uint64_t join = cm_dir_add_delta(CM_DIR_JOIN, cm_2l.host, false);
    const int drank = cm_2l_dir_rank(p);
    uint64_t *word = cm_2l_dir_word(p);
    cm_2l_page_t *pg = &cm_2l.pages[p];
    uint64_t cur;

    /* Claims start when initialization ends; a host that learnt the home just joins. */
    if (!cm_2l.first_touch || cm_2l.init_phase || pg->home != 0) {
        cm_2l.st.dir_updates++;
        return cm_rma_fadd(cm_2l.rma, drank, word, join, old);
    }
    CM_CHECK(cm_rma_get(cm_2l.rma, drank, &cur, word, sizeof(cur)));
    for (;;) {
        cm_dir_entry_t e;
        uint64_t next, got;
        bool moves;

        cm_dir_cas_unpack(cur, &e);
        if (e.flags & CM_DIR_HOME_FIXED) {
            /* Claimed by another host: join it, after its copy is in (FT_NO_WAIT). */
            cm_2l.st.dir_updates++;
            CM_CHECK(cm_rma_fadd(cm_2l.rma, drank, word, join, old));
            cm_dir_cas_unpack(*old, &e);
            if (e.flags & CM_DIR_BUSY) {
                CM_CHECK(cm_2l_wait_claimed(p));
            }
            pg->home = e.home + 1;
            return CM_OK;
        }
        /* Ours: the home fixed here, held while the page comes in from the old one. */
        moves = cm_2l_dir_host(p) != cm_2l.host;
        e.sharers |= 1ull << cm_2l.host;
        e.flags |= CM_DIR_HOME_FIXED | (moves ? CM_DIR_BUSY : 0);
        e.home = (uint32_t)cm_2l.host;
        next   = cm_dir_cas_pack(&e);
        cm_2l.st.dir_updates++;
        CM_CHECK(cm_rma_cswap(cm_2l.rma, drank, word, cur, next, &got));
        if (got != cur) {
            cur = got; /* another host's join or claim first: look again */
            continue;
        }
        *old     = cur;
        pg->home = (uint32_t)cm_2l.host + 1;
        if (!moves) {
            return CM_OK;
        }
        cm_2l.st.home_migrations++;
        /* Whatever the copy did, the claim is not left held, or every joiner would wait. */
        {
            cm_status_t status = cm_2l_copy_in(p);
            CM_CHECK(cm_rma_add_nbi(cm_2l.rma, drank, word, (uint64_t)0 - cm_2l_busy_word()));
            CM_CHECK(cm_rma_flush(cm_2l.rma, drank));
            return status;
        }
    }
}

/*
 * The end of the initialization phase (the first barrier or cm_init_done, after its release and
 * the hosts' barrier: every diff is at its round-robin home, every notice in its bin): each
 * process forgets the pages it touched (its mappings, the host's record of each, the page's
 * directory word), the leader the host's notices; a second barrier, and the next join of each
 * page claims its home.
 */
cm_status_t cm_2l_init_end(void)
{
    const uint64_t zero = 0;

    for (uint64_t p = 0; p < cm_2l.npages; p++) {
        if (!(cm_2l.pte[p] & CM_2L_SEEN)) {
            continue;
        }
        cm_2l.pte[p] = 0;
        memset(&cm_2l.pages[p], 0, sizeof(cm_2l.pages[p]));
        if (cm_2l_dir_rank(p) == cm_2l.rank) {
            __atomic_store_n(cm_2l_dir_word(p), zero, __ATOMIC_RELAXED);
        } else {
            CM_CHECK(cm_rma_put_u64_nbi(cm_2l.rma, cm_2l_dir_rank(p), cm_2l_dir_word(p), zero));
        }
    }
    cm_2l.nwl = 0;
    if (mprotect(cm_2l.app, cm_2l.npages << cm_2l.shift, PROT_NONE) != 0) {
        cm_error("twolevel: mprotect of the shared region failed: %s", strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    if (cm_2l.rank == cm_2l.leader) {
        CM_CHECK(cm_2l_discard_notices());
        cm_2l.hdr->self_n   = 0;
        cm_2l.hdr->self_all = 0;
    }
    cm_2l.log_cur = cm_2l.hdr->log_tail;
    CM_CHECK(cm_rma_flush_all(cm_2l.rma));
    CM_CHECK(cm_2l_barrier_wait());
    cm_2l.init_phase = false;
    return CM_OK;
}
