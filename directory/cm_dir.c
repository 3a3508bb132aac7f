/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Directory entry updates over one-sided RMA: the MCS-locked form and the
 * single-word compare-and-swap form.
 *
 * Entry slot (CM_DIR_ENTRY_BYTES bytes at the page's directory home):
 *   MCS: word 0 lock tail, word 1 sharers, word 2 writers, word 3 home | flags << 32
 *   CAS: word 0 the packed entry (cm_dir_cas_pack)
 *   both: word 4 the page version (bumped by a leaving writer, fetch-and-add)
 */
#include "config.h"
#include "directory/cm_dir_int.h"
#include "locks/cm_mcs.h"
#include "util/cm_trace.h"
#include "util/cm_error.h"
#include "util/cm_log.h"

#include <inttypes.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

/* This process's queue node for directory-entry locks (one: updates never nest). */
typedef struct {
    cm_mcs_qnode_t q;
    uint64_t       data[3]; /* the entry, handed over by the predecessor with the lock */
} cm_dir_qnode_t;

#define CM_DIR_VERSION_WORD 4

cm_status_t cm_dir_init(cm_dir_t *dir, cm_rma_t *rma, cm_dir_impl_t impl, const cm_dir_seg_t *seg,
                        unsigned unsafe_threshold)
{
    int n = cm_rma_nprocs(rma);

    memset(dir, 0, sizeof(*dir));
    if (impl != CM_DIR_IMPL_MCS && n > CM_DIR_MAX_PROCS_CAS) {
        cm_error("CM_DIRECTORY=%s supports at most %d processes (the job has %d); use mcs",
                 (impl == CM_DIR_IMPL_CAS) ? "cas" : "add", CM_DIR_MAX_PROCS_CAS, n);
        return CM_ERR_UNSUPPORTED;
    }
    if (n > CM_DIR_MAX_PROCS_MCS) {
        cm_error("the directory supports at most %d processes (the job has %d)",
                 CM_DIR_MAX_PROCS_MCS, n);
        return CM_ERR_UNSUPPORTED;
    }
    dir->rma              = rma;
    dir->rank             = cm_rma_rank(rma);
    dir->nprocs           = n;
    dir->impl             = impl;
    dir->seg              = *seg;
    dir->unsafe_threshold = unsafe_threshold;
    if (impl != CM_DIR_IMPL_MCS) {
        /* A word per page, committed only where used. Without it every update reads first. */
        size_t words = (size_t)(seg->per_proc * (uint64_t)n);
        size_t len   = words * sizeof(uint64_t) * ((impl == CM_DIR_IMPL_ADD) ? 2 : 1);
        void *g = (len > 0) ? mmap(NULL, len, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                            : MAP_FAILED;
        if (g != MAP_FAILED) {
            dir->guess     = g;
            dir->guess_len = len;
            dir->unfenced  = (impl == CM_DIR_IMPL_ADD) ? dir->guess + words : NULL;
        }
    }
    return CM_OK;
}

void cm_dir_fini(cm_dir_t *dir)
{
    if (dir->guess != NULL) {
        munmap(dir->guess, dir->guess_len);
        dir->guess    = NULL;
        dir->unfenced = NULL;
    }
}

/*
 * The end of the initialization phase empties every entry without touching one: entries
 * written from now on carry CM_DIR_CURRENT and any other counts as empty. Clearing them
 * (64 bytes per page of the region) committed all of the directory, touched or not. The
 * page versions keep counting: they only ever need to move.
 */
void cm_dir_reset_local(cm_dir_t *dir)
{
    dir->reset = true;
    dir->zero_peeked = 0;
    if (dir->guess != NULL) {
        /* Zero again: no guesses (the marks of adds in flight after them stay). */
        madvise(dir->guess, (dir->unfenced != NULL) ? dir->guess_len / 2 : dir->guess_len,
                MADV_DONTNEED);
    }
}

/* The entry as it stands now: one left from the initialization phase is empty. */
static void cm_dir_current(const cm_dir_t *dir, cm_dir_entry_t *e)
{
    if (dir->reset && !(e->flags & CM_DIR_CURRENT)) {
        memset(e, 0, sizeof(*e));
    }
}

/* An entry about to be written: marked as written since the reset. */
static void cm_dir_mark_current(const cm_dir_t *dir, cm_dir_entry_t *e)
{
    if (dir->reset) {
        e->flags |= CM_DIR_CURRENT;
    }
}

static void cm_dir_words_to_entry(const uint64_t w[3], cm_dir_entry_t *e)
{
    e->sharers = w[0];
    e->writers = w[1];
    e->home    = (uint32_t)w[2];
    e->flags   = (uint32_t)(w[2] >> 32);
    e->leaves  = 0; /* the tag is the CAS word's */
}

static void cm_dir_entry_to_words(const cm_dir_entry_t *e, uint64_t w[3])
{
    w[0] = e->sharers;
    w[1] = e->writers;
    w[2] = (uint64_t)e->home | ((uint64_t)e->flags << 32);
}

/* ---- MCS form ------------------------------------------------------------ */

typedef struct {
    cm_dir_t       *dir;
    cm_dir_qnode_t *qnode;
    uint64_t       *words;
    int            home;
} cm_dir_handoff_t;

/* The entry travels to the successor ahead of the lock: one latency per hand-off. Our
 * write-back completes at the home first: a successor linked before our release saw no swap
 * of ours there, and its own write-back must not be overtaken by ours. */
static cm_status_t cm_dir_mcs_handoff(int succ, void *arg)
{
    cm_dir_handoff_t *h = arg;

    CM_CHECK(cm_rma_flush(h->dir->rma, h->home));
    CM_CHECK(cm_rma_put(h->dir->rma, succ, h->qnode->data, h->words, sizeof(h->qnode->data)));
    return cm_rma_fence(h->dir->rma);
}

static cm_status_t cm_dir_mcs_update(cm_dir_t *dir, uint64_t page, cm_dir_op_t op,
                                     cm_dir_held_fn_t held, void *arg, cm_dir_entry_t *after,
                                     cm_dir_effects_t *fx)
{
    int home = cm_dir_home_of(dir, page);
    uint64_t *slot = cm_dir_slot(dir, page);
    cm_dir_qnode_t *q = (cm_dir_qnode_t *)(dir->seg.base + dir->seg.qnode);
    uint64_t pred = 0, words[3], before[3];
    cm_dir_handoff_t handoff = {dir, q, words, home};
    cm_dir_entry_t e;
    cm_status_t status, wb;
    bool leaving_writer;

    /* The entry travels with its lock: fetched with it, or handed over by the predecessor. */
    status = cm_mcs_acquire_data(dir->rma, home, &slot[0], &q->q, &slot[1], q->data, words,
                                 sizeof(words), &pred);
    if (status != CM_OK) {
        return status;
    }

    memcpy(before, words, sizeof(before));
    cm_dir_words_to_entry(words, &e);
    cm_dir_current(dir, &e);
    leaving_writer = (op == CM_DIR_LEAVE) && (e.writers & (1ull << dir->rank));
    cm_dir_apply(&e, op, dir->rank, (uint32_t)home, dir->first_touch, dir->unsafe_threshold, fx);
    cm_dir_mark_current(dir, &e);
    if (cm_dir_effects_held(fx, dir->rank)) {
        /* Under the lock: notices land and the page moves before anyone sees the entry. */
        status = held(page, fx, arg);
    }
    /* Under the lock only we move the version: bump before the entry changes. A joiner of an
     * unsafe page needs the version it joined at. */
    if (status == CM_OK && leaving_writer) {
        /* Nobody reads a leave's version: an add, fenced before the write-back to the same
         * home, takes effect there first without a round trip of its own. */
        status = cm_rma_add_nbi(dir->rma, home, &slot[CM_DIR_VERSION_WORD], 1);
        if (status == CM_OK) {
            status = cm_rma_fence(dir->rma);
        }
    } else if (status == CM_OK && op == CM_DIR_JOIN && (e.flags & CM_DIR_UNSAFE)) {
        status = cm_rma_get(dir->rma, home, &fx->version, &slot[CM_DIR_VERSION_WORD],
                            sizeof(fx->version));
    }
    if (status == CM_OK) {
        cm_dir_entry_to_words(&e, words);
    } else {
        /* The update's effects did not all happen: the entry stays as it was, and the lock is
         * released all the same, or every later update of the page would wait for us. */
        memcpy(words, before, sizeof(words));
    }
    /* Write back, fenced before the release's compare-and-swap on the tail at the same home:
     * the swap's answer (free or handed on) comes after the entry is there, so whoever gets
     * the lock next, from us or from the home, finds it without a flush of its own. */
    wb = cm_rma_put(dir->rma, home, &slot[1], words, sizeof(words)); /* words: our stack */
    if (wb == CM_OK) {
        wb = cm_rma_fence(dir->rma);
    }
    if (wb == CM_OK) {
        wb = cm_mcs_release(dir->rma, home, &slot[0], &q->q, cm_dir_mcs_handoff, &handoff, NULL);
    }
    dir->updates++;
    *after = e;
    return (status != CM_OK) ? status : wb;
}

/* ---- CAS form ------------------------------------------------------------ */

/* Looks at a busy entry's word again until its updater is done (or an operation fails). */
cm_status_t cm_dir_wait_idle(cm_dir_t *dir, uint64_t page, int home, uint64_t *word, uint64_t *cur)
{
    cm_dir_entry_t e;
    cm_status_t status;

    cm_rma_why_push(dir->rma, CM_RMA_WHY("the directory entry of page %a, busy with another "
                                         "process's update or claim (its home is rank %b)", NULL, page,
                                         (uint64_t)home, -1));
    do {
        cm_rma_progress(dir->rma);
        sched_yield();
        status = cm_rma_get(dir->rma, home, cur, word, sizeof(*cur));
        cm_dir_cas_unpack(*cur, &e);
        cm_dir_current(dir, &e);
    } while (status == CM_OK && (e.flags & CM_DIR_BUSY));
    cm_rma_why_pop(dir->rma);
    return status;
}

static cm_status_t cm_dir_cas_update(cm_dir_t *dir, uint64_t page, cm_dir_op_t op,
                                     cm_dir_held_fn_t held, void *arg, uint64_t seen,
                                     cm_dir_entry_t *after, cm_dir_effects_t *fx)
{
    int home = cm_dir_home_of(dir, page);
    uint64_t *word = cm_dir_slot(dir, page);
    uint64_t cur, next, old;
    cm_dir_entry_t e;
    cm_status_t status;
    bool busy, bumped = false, first = (seen != 0);

    /*
     * A remote entry's word as we last saw it stands in for a read: right, the update is one
     * compare-and-swap; wrong, the swap fails and returns the word, as a read would have
     * (one round trip, as before). Nothing is decided on it until the swap succeeded, except
     * a leaving writer's version bump, and that the guess decides as the entry would: our
     * writer bit is set and cleared by our own updates only, each of which leaves its result
     * here (and the end of the initialization phase drops every guess). So the protocol
     * model's one atomic step for "read, then swap until it succeeds" still describes it.
     */
    if (seen != 0) {
        cur    = seen; /* the caller's word: the guess or our own slot, as it saw it */
        status = CM_OK;
    } else if (home != dir->rank && dir->guess != NULL && dir->guess[page] != 0) {
        cur    = dir->guess[page];
        status = CM_OK;
    } else {
        status = cm_rma_get(dir->rma, home, &cur, word, sizeof(cur));
    }
    for (;;) {
        if (status != CM_OK) {
            return status;
        }
        cm_dir_cas_unpack(cur, &e);
        cm_dir_current(dir, &e);
        if (op == CM_DIR_WRITE && (e.writers & (1ull << dir->rank))) {
            /* Already a writer (our bits are ours alone: the guess decides this as the entry
             * would): WRITE changes nothing and notifies nobody, so nothing is written. A
             * sharer that refetches its pages at acquire (cm_refetch.h) stays a writer, and
             * its next interval's stores would otherwise cost a swap each. */
            cm_dir_apply(&e, op, dir->rank, (uint32_t)home, dir->first_touch,
                         dir->unsafe_threshold, fx);
            *after = e;
            return CM_OK;
        }
        if (op == CM_DIR_LEAVE && (e.writers & (1ull << dir->rank)) && !bumped) {
            /* A writer leaves: the version moves first (only we can remove us, so once). Its
             * result is not needed: an add, fenced before the swap that follows to the same
             * word's home, takes effect there first without a round trip of its own. */
            CM_CHECK(cm_rma_add_nbi(dir->rma, home, &word[CM_DIR_VERSION_WORD], 1));
            CM_CHECK(cm_rma_fence(dir->rma));
            bumped = true;
            continue;
        }
        if (e.flags & CM_DIR_BUSY) {
            /* Its updater is still posting notices or copying the page in: the state it shows
             * cannot be relied on yet. Wait and look again. */
            status = cm_dir_wait_idle(dir, page, home, word, &cur);
            first  = false;
            continue;
        }
        cm_dir_apply(&e, op, dir->rank, (uint32_t)home, dir->first_touch, dir->unsafe_threshold,
                     fx);
        cm_dir_mark_current(dir, &e);
        busy = cm_dir_effects_held(fx, dir->rank);
        if (busy) {
            e.flags |= CM_DIR_BUSY;
        }
        next   = cm_dir_cas_pack(&e);
        status = cm_rma_cswap(dir->rma, home, word, cur, next, &old);
        dir->updates++;
        if (status == CM_OK && old != cur) {
            dir->retries++;
            cur   = old; /* lost a race: recompute from what is there now */
            first = false;
            continue;
        }
        break;
    }
    fx->as_seen = first && status == CM_OK;
    if (status == CM_OK && op == CM_DIR_JOIN && (e.flags & CM_DIR_UNSAFE)) {
        status = cm_rma_get(dir->rma, home, &fx->version, &word[CM_DIR_VERSION_WORD],
                            sizeof(fx->version));
    }
    if (status == CM_OK && busy) {
        cm_status_t held_status = held(page, fx, arg);

        /* Nobody changes a BUSY entry, so it still holds `next`. If the effects did not all
         * happen, the entry goes back to what it was; either way it is not left BUSY, or every
         * later update of the page would wait for it. */
        e.flags &= ~CM_DIR_BUSY;
        status = cm_rma_cswap(dir->rma, home, word, next,
                              (held_status == CM_OK) ? cm_dir_cas_pack(&e) : cur, &old);
        if (status == CM_OK && old != next) {
            cm_error("directory entry of page %" PRIu64 " changed while busy", page);
            status = CM_ERR_INVALID;
        }
        if (held_status != CM_OK) {
            status = held_status;
            cm_dir_cas_unpack(cur, &e);
        }
    }
    if (dir->guess != NULL) {
        dir->guess[page] = (status == CM_OK) ? cm_dir_cas_pack(&e) : 0;
    }
    *after = e;
    return status;
}

/* Stands in for a missing held callback: a transition that needs one is a caller's bug. */
static cm_status_t cm_dir_no_held(uint64_t page, const cm_dir_effects_t *fx, void *arg)
{
    (void)fx;
    (void)arg;
    cm_error("directory update of page %" PRIu64 " has notices to post or a page to move, "
             "but no callback to do it", page);
    return CM_ERR_INVALID;
}

cm_status_t cm_dir_update_seen(cm_dir_t *dir, uint64_t page, cm_dir_op_t op,
                               cm_dir_held_fn_t held, void *arg, uint64_t seen,
                               cm_dir_entry_t *after, cm_dir_effects_t *fx)
{
    const uint64_t t0 = cm_trace_begin();
    cm_status_t status;

    if (held == NULL) {
        held = cm_dir_no_held;
    }
    fx->as_seen = false;
    switch (dir->impl) {
    case CM_DIR_IMPL_ADD:
        status = cm_dir_add_update(dir, page, op, held, arg, seen, after, fx);
        break;
    case CM_DIR_IMPL_CAS:
        status = cm_dir_cas_update(dir, page, op, held, arg, seen, after, fx);
        break;
    default:
        status = cm_dir_mcs_update(dir, page, op, held, arg, after, fx);
        break;
    }
    if (__builtin_expect(cm_trace_on, 0) && t0 != 0) { /* the operation too: 1 + op */
        cm_trace_emit(CM_TRACE_DIR_UPDATE, t0, cm_trace_now() - t0, page,
                      (int)cm_dir_home_of(dir, page), 0, 1 + (uint32_t)op);
    }
    return status;
}

cm_status_t cm_dir_update(cm_dir_t *dir, uint64_t page, cm_dir_op_t op, cm_dir_held_fn_t held,
                          void *arg, cm_dir_entry_t *after, cm_dir_effects_t *fx)
{
    return cm_dir_update_seen(dir, page, op, held, arg, 0, after, fx);
}

cm_status_t cm_dir_peek_nbi(cm_dir_t *dir, uint64_t page, uint64_t *word)
{
    if (dir->impl == CM_DIR_IMPL_MCS) {
        cm_error("directory: a snapshot without locking needs the one-word form (cas or add)");
        return CM_ERR_INVALID;
    }
    if (dir->impl == CM_DIR_IMPL_ADD) {
        /* Our own adds not waited for (a home's join of a page held since) are in the word. */
        CM_CHECK(cm_dir_add_fence(dir, page));
    }
    return cm_rma_get_nbi(dir->rma, cm_dir_home_of(dir, page), word, cm_dir_slot(dir, page),
                          sizeof(*word));
}

void cm_dir_word_entry(const cm_dir_t *dir, uint64_t page, uint64_t w, cm_dir_entry_t *e)
{
    cm_dir_cas_unpack(w, e);
    cm_dir_current(dir, e);
    if (!(e->flags & CM_DIR_HOME_FIXED)) {
        e->home = (uint32_t)(page % (uint64_t)dir->nprocs);
    }
}

void cm_dir_peek_entry(cm_dir_t *dir, uint64_t page, uint64_t word, cm_dir_entry_t *e)
{
    cm_dir_word_entry(dir, page, word, e);
    if (dir->guess != NULL) {
        dir->guess[page] = word;
    }
}

bool cm_dir_seen_word(cm_dir_t *dir, uint64_t page, uint64_t *word)
{
    if (dir->impl == CM_DIR_IMPL_MCS) {
        return false;
    }
    if (cm_dir_home_of(dir, page) == dir->rank) {
        *word = __atomic_load_n(cm_dir_slot(dir, page), __ATOMIC_RELAXED);
        return true;
    }
    *word = (dir->guess != NULL) ? dir->guess[page] : 0;
    return *word != 0 || dir->zero_peeked == page + 1;
}

/* CAS form: page's entry as this process last saw it (the word into *w), without a round
 * trip; false where there is none. */
static bool cm_dir_last_seen(cm_dir_t *dir, uint64_t page, uint64_t *w, cm_dir_entry_t *e)
{
    if (!cm_dir_seen_word(dir, page, w)) {
        return false;
    }
    cm_dir_cas_unpack(*w, e);
    cm_dir_current(dir, e);
    return true;
}

cm_status_t cm_dir_join_nbi(cm_dir_t *dir, uint64_t page, uint64_t word, uint64_t *old,
                            cm_dir_entry_t *after, cm_dir_effects_t *fx, bool *issued)
{
    cm_dir_entry_t e;

    *issued = false;
    if (dir->impl != CM_DIR_IMPL_CAS) {
        return CM_OK;
    }
    cm_dir_cas_unpack(word, &e);
    cm_dir_current(dir, &e);
    if (e.flags & (CM_DIR_BUSY | CM_DIR_UNSAFE)) {
        return CM_OK; /* BUSY: its state cannot be relied on yet; UNSAFE: a join reads the version */
    }
    cm_dir_apply(&e, CM_DIR_JOIN, dir->rank, (uint32_t)cm_dir_home_of(dir, page), dir->first_touch,
                 dir->unsafe_threshold, fx);
    if (fx->claimed_home || cm_dir_effects_held(fx, dir->rank) || fx->became_unsafe) {
        return CM_OK; /* a first touch, or notices to post while held: the fault's own update */
    }
    cm_dir_mark_current(dir, &e);
    *after = e;
    if (!(after->flags & CM_DIR_HOME_FIXED)) {
        after->home = (uint32_t)cm_dir_home_of(dir, page);
    }
    *issued = true;
    dir->updates++;
    return cm_rma_cswap_nbi(dir->rma, cm_dir_home_of(dir, page), cm_dir_slot(dir, page), word,
                            cm_dir_cas_pack(&e), old);
}

bool cm_dir_join_done(cm_dir_t *dir, uint64_t page, uint64_t word, uint64_t old,
                      const cm_dir_entry_t *after)
{
    bool done = (old == word);

    if (!done) {
        dir->retries++;
    }
    if (dir->guess != NULL) {
        dir->guess[page] = done ? cm_dir_cas_pack(after) : old;
    }
    return done;
}

bool cm_dir_known_home(cm_dir_t *dir, uint64_t page, int *home, uint64_t *seen)
{
    cm_dir_entry_t e;

    if (!cm_dir_last_seen(dir, page, seen, &e) ||
        (e.flags & (CM_DIR_HOME_FIXED | CM_DIR_BUSY)) != CM_DIR_HOME_FIXED) {
        return false; /* BUSY: a first toucher may still be copying the page in */
    }
    *home = (int)e.home;
    return true;
}

bool cm_dir_is_writer(cm_dir_t *dir, uint64_t page)
{
    cm_dir_entry_t e;
    uint64_t w;

    return cm_dir_last_seen(dir, page, &w, &e) && (e.writers & (1ull << dir->rank)) != 0;
}

cm_status_t cm_dir_read(cm_dir_t *dir, uint64_t page, cm_dir_entry_t *e, uint64_t *version)
{
    int home = cm_dir_home_of(dir, page);
    uint64_t *slot = cm_dir_slot(dir, page);
    cm_status_t status;

    if (dir->impl != CM_DIR_IMPL_MCS) {
        uint64_t w;
        status = cm_rma_get(dir->rma, home, &w, slot, sizeof(w));
        cm_dir_cas_unpack(w, e);
        if (dir->guess != NULL) {
            dir->guess[page] = (status == CM_OK) ? w : 0;
        }
    } else {
        uint64_t words[3];
        status = cm_rma_get(dir->rma, home, words, &slot[1], sizeof(words));
        cm_dir_words_to_entry(words, e);
    }
    cm_dir_current(dir, e);
    if (!(e->flags & CM_DIR_HOME_FIXED)) {
        e->home = (uint32_t)home;
    }
    if (status == CM_OK && version != NULL && dir->impl == CM_DIR_IMPL_ADD) {
        *version = e->leaves; /* the add form's version is the word's tag */
    } else if (status == CM_OK && version != NULL) {
        /* After the entry, never before it (see cm_dir.h). */
        status = cm_rma_get(dir->rma, home, version, &slot[CM_DIR_VERSION_WORD], sizeof(*version));
    }
    return status;
}
