/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The add form of directory entry updates (issue 45; tests/model/dir_add.pml): the CAS form's
 * word (cm_dir_cas_pack), changed by adds that never fail and never hold the entry. Only a
 * process changes its own bits, and it knows them (its own updates leave their results as the
 * word it last saw: cm_dir_seen_word), so
 *   JOIN   a fetching add of its sharer bit (one round trip; the word it returns decides the
 *          self-notice, and the version of an unsafe page: the word's tag);
 *   WRITE  a fetching add of its writer bit (the word decides whom to notify), nothing where
 *          it is a writer already;
 *   LEAVE  an add, not waited for, fenced before whatever this process issues next.
 * A compare-and-swap remains where an add cannot do: a first touch's claim of the home (held,
 * BUSY, while the page is copied in, then cleared by an add: others may add meanwhile), an
 * entry this process never saw or one left from the initialization phase (an add there would
 * land on bits that count as empty), and marking a page UNSAFE.
 */
#include "config.h"
#include "directory/cm_dir_int.h"
#include "util/cm_error.h"
#include "util/cm_log.h"
#include "util/cm_trace.h"

#include <inttypes.h>

#define CM_DIR_BUSY_WORD ((uint64_t)CM_DIR_BUSY << 32) /* the flag in the packed word */

/*
 * An add not waited for (a leave, a home's join) is fenced before the next update of its
 * entry, not at once and not before updates of other entries (tests/model/dir_add.pml lands
 * it before the next update of its page only): one fence after an acquire's leaves, paid by
 * whatever update of one of those pages comes next, and none where a fence or a flush of all
 * came since. Where the transport's fence is a flush, each one is a round trip.
 */
static void cm_dir_add_unfenced(cm_dir_t *dir, uint64_t page, bool join)
{
    dir->adds_unfenced = true;
    if (dir->unfenced != NULL) {
        dir->unfenced[page] = cm_rma_issued(dir->rma) << 1 | (join ? 1 : 0);
    }
}

/* Was the latest add of page not waited for the home's join (the one before it fenced)? */
static bool cm_dir_add_behind_join(const cm_dir_t *dir, uint64_t page)
{
    return dir->unfenced != NULL && (dir->unfenced[page] & 1);
}

cm_status_t cm_dir_add_fence(cm_dir_t *dir, uint64_t page)
{
    if (!dir->adds_unfenced ||
        (dir->unfenced != NULL && cm_rma_ordered(dir->rma, dir->unfenced[page] >> 1))) {
        return CM_OK;
    }
    dir->adds_unfenced = false; /* the fence orders every page's */
    return cm_rma_fence(dir->rma);
}

/* Whether word w's bits count: written since the reset (an add onto older bits would land on
 * bits that count as empty). */
static inline bool cm_dir_add_counts(const cm_dir_t *dir, uint64_t w)
{
    return !dir->reset || ((w >> 32) & CM_DIR_CURRENT);
}

/* The entry word this process last saw of page, where an add may go onto it: the add form's,
 * counting. */
static bool cm_dir_add_seen_entry(cm_dir_t *dir, uint64_t page, uint64_t *w, cm_dir_entry_t *e)
{
    if (dir->impl != CM_DIR_IMPL_ADD || !cm_dir_seen_word(dir, page, w) ||
        !cm_dir_add_counts(dir, *w)) {
        return false;
    }
    cm_dir_word_entry(dir, page, *w, e);
    return true;
}

static void cm_dir_add_seen(cm_dir_t *dir, uint64_t page, uint64_t w)
{
    if (dir->guess != NULL) {
        dir->guess[page] = w;
    }
}

/* Sets UNSAFE in page's word (a WRITE found too many sharers to notify again and again). */
static cm_status_t cm_dir_add_mark_unsafe(cm_dir_t *dir, uint64_t page, int home, uint64_t cur)
{
    const uint64_t flag = (uint64_t)CM_DIR_UNSAFE << 32;
    uint64_t old;

    while (!(cur & flag)) {
        CM_CHECK(cm_rma_cswap(dir->rma, home, cm_dir_slot(dir, page), cur, cur | flag, &old));
        if (old == cur) {
            cur |= flag;
            break;
        }
        dir->retries++;
        cur = old;
    }
    cm_dir_add_seen(dir, page, cur);
    return CM_OK;
}

/*
 * The compare-and-swap path: the word as known (or read), the rule applied to it, swapped in;
 * again from the word returned until it holds. A claim is held (BUSY) while `held` copies the
 * page in, and cleared by an add, since joiners add their bits to a BUSY word meanwhile.
 */
static cm_status_t cm_dir_add_cas(cm_dir_t *dir, uint64_t page, cm_dir_op_t op,
                                  cm_dir_held_fn_t held, void *arg, uint64_t cur, bool known,
                                  cm_dir_entry_t *after, cm_dir_effects_t *fx)
{
    int home = cm_dir_home_of(dir, page);
    uint64_t *word = cm_dir_slot(dir, page), next, old;
    cm_dir_entry_t e;
    bool busy;

    CM_CHECK(cm_dir_add_fence(dir, page));
    if (!known) {
        CM_CHECK(cm_rma_get(dir->rma, home, &cur, word, sizeof(cur)));
    }
    for (;;) {
        if (cur & CM_DIR_BUSY_WORD) {
            CM_CHECK(cm_dir_wait_idle(dir, page, home, word, &cur));
        }
        cm_dir_word_entry(dir, page, cur, &e);
        cm_dir_apply_add(&e, op, dir->rank, (uint32_t)home, dir->first_touch,
                         dir->unsafe_threshold, fx);
        if (dir->reset) {
            e.flags |= CM_DIR_CURRENT;
        }
        busy = fx->claimed_home && fx->old_home != (uint32_t)dir->rank;
        next = cm_dir_cas_pack(&e) | (busy ? CM_DIR_BUSY_WORD : 0);
        CM_CHECK(cm_rma_cswap(dir->rma, home, word, cur, next, &old));
        dir->updates++;
        if (old == cur) {
            break;
        }
        dir->retries++;
        cur = old;
    }
    if (op == CM_DIR_JOIN && (e.flags & CM_DIR_UNSAFE)) {
        fx->version = e.leaves;
    }
    cm_dir_add_seen(dir, page, cm_dir_cas_pack(&e));
    if (busy) {
        /* Whatever held did, the claim is not left held, or every joiner would wait for it. */
        cm_status_t held_status = held(page, fx, arg);
        CM_CHECK(cm_rma_add_nbi(dir->rma, home, word, (uint64_t)0 - CM_DIR_BUSY_WORD));
        CM_CHECK(cm_rma_flush(dir->rma, home));
        if (held_status != CM_OK) {
            return held_status;
        }
    }
    *after = e;
    return CM_OK;
}

/*
 * An add of delta (JOIN or WRITE) found `old`: the update's effects, the word's result kept as
 * seen. A copy got since `seen` holds if no writer left since (the tag); a copy got behind the
 * add (ordered) if its home is the one the data was got from.
 */
static cm_status_t cm_dir_add_landed(cm_dir_t *dir, uint64_t page, cm_dir_op_t op, uint64_t old,
                                     uint64_t delta, uint64_t seen, bool ordered,
                                     cm_dir_entry_t *after, cm_dir_effects_t *fx)
{
    int home = cm_dir_home_of(dir, page);
    uint64_t *word = cm_dir_slot(dir, page), w;
    const uint64_t bit = 1ull << dir->rank;
    cm_dir_entry_t e;
    bool as_seen = false;

    cm_assert(cm_dir_add_counts(dir, old)); /* current since seen */
    if (op == CM_DIR_WRITE && !(old & bit)) {
        /* A batched WRITE that overtook our own home's join (cm_dir_add_write_nbi): both
         * land, in either order; the rule applies to the word with both. */
        cm_assert(cm_dir_add_behind_join(dir, page));
        old += bit;
    }
    cm_dir_word_entry(dir, page, old, &e);
    cm_assert((op == CM_DIR_JOIN) ? !(e.sharers & bit) : (e.sharers & bit) && !(e.writers & bit));
    if (ordered) {
        as_seen = e.home == (uint32_t)home && !(e.flags & CM_DIR_BUSY);
    } else if (seen != 0) {
        cm_dir_entry_t s;
        cm_dir_cas_unpack(seen, &s);
        as_seen = s.leaves == e.leaves && (e.flags & CM_DIR_HOME_FIXED) && s.home == e.home &&
                  !(e.flags & CM_DIR_BUSY);
    }
    cm_dir_apply_add(&e, op, dir->rank, (uint32_t)home, dir->first_touch, dir->unsafe_threshold,
                     fx);
    fx->as_seen = as_seen; /* after the rule, which starts fx afresh */
    w = old + delta;
    if (op == CM_DIR_JOIN && (old & CM_DIR_BUSY_WORD)) {
        /* A claim in progress: in the set now, but its data is still on its way in. */
        uint64_t now;
        CM_CHECK(cm_dir_wait_idle(dir, page, home, word, &now));
        e.flags &= ~CM_DIR_BUSY;
        w &= ~CM_DIR_BUSY_WORD;
    }
    if (op == CM_DIR_JOIN && (e.flags & CM_DIR_UNSAFE)) {
        fx->version = e.leaves;
    }
    cm_dir_add_seen(dir, page, w);
    if (fx->became_unsafe) {
        CM_CHECK(cm_dir_add_mark_unsafe(dir, page, home, w));
    }
    *after = e;
    return CM_OK;
}

cm_status_t cm_dir_add_update(cm_dir_t *dir, uint64_t page, cm_dir_op_t op,
                              cm_dir_held_fn_t held, void *arg, uint64_t seen,
                              cm_dir_entry_t *after, cm_dir_effects_t *fx)
{
    int home = cm_dir_home_of(dir, page);
    uint64_t *word = cm_dir_slot(dir, page), w = seen, old, delta;
    const uint64_t bit = 1ull << dir->rank;
    bool known = (seen != 0) || cm_dir_seen_word(dir, page, &w), writer;
    cm_dir_entry_t e;

    if (known) {
        cm_dir_word_entry(dir, page, w, &e);
    }
    /* An add needs a word whose bits count (written since the reset) and, to join, a home that
     * no longer moves: else the compare-and-swap. */
    if (!known || !cm_dir_add_counts(dir, w) ||
        (op == CM_DIR_JOIN && dir->first_touch && !(e.flags & CM_DIR_HOME_FIXED))) {
        if (op != CM_DIR_LEAVE) {
            return cm_dir_add_cas(dir, page, op, held, arg, w, known, after, fx);
        }
        CM_CHECK(cm_dir_add_fence(dir, page));
        CM_CHECK(cm_rma_get(dir->rma, home, &w, word, sizeof(w)));
        cm_dir_word_entry(dir, page, w, &e);
    }
    writer = (e.writers & bit) != 0;
    if (op == CM_DIR_WRITE && writer) {
        /* A writer already: nothing changes, nobody to notify (they noticed themselves). */
        cm_dir_apply_add(&e, op, dir->rank, (uint32_t)home, dir->first_touch,
                         dir->unsafe_threshold, fx);
        *after = e;
        return CM_OK;
    }
    delta = cm_dir_add_delta(op, dir->rank, writer);
    dir->updates++;
    if (op == CM_DIR_LEAVE) {
        /* Not waited for: our next update of an entry is fenced behind it. */
        cm_assert(e.sharers & bit);
        CM_CHECK(cm_rma_add_nbi(dir->rma, home, word, delta));
        cm_dir_add_unfenced(dir, page, false);
        cm_dir_add_seen(dir, page, w + delta);
        cm_dir_apply_add(&e, op, dir->rank, (uint32_t)home, dir->first_touch,
                         dir->unsafe_threshold, fx);
        *after = e;
        return CM_OK;
    }
    CM_CHECK(cm_dir_add_fence(dir, page));
    CM_CHECK(cm_rma_fadd(dir->rma, home, word, delta, &old));
    return cm_dir_add_landed(dir, page, op, old, delta, seen, false, after, fx);
}

cm_status_t cm_dir_add_join_issue(cm_dir_t *dir, uint64_t page, cm_dir_join_t *j, int *home)
{
    int dhome = cm_dir_home_of(dir, page);
    const uint64_t bit = 1ull << dir->rank;
    cm_dir_entry_t e;
    uint64_t w;

    j->issued = false;
    if (!cm_dir_add_seen_entry(dir, page, &w, &e)) {
        return CM_OK;
    }
    *home = (int)e.home;
    /* Not a claim, no claim in progress, not in the set already (a rejoin after a leave of
     * ours is in the word), and the data where the word is: else the fault's own update. */
    if ((dir->first_touch && !(e.flags & CM_DIR_HOME_FIXED)) || (e.flags & CM_DIR_BUSY) ||
        (e.sharers & bit) || e.home != (uint32_t)dhome) {
        return CM_OK;
    }
    CM_CHECK(cm_dir_add_fence(dir, page));
    dir->updates++;
    CM_CHECK(cm_rma_fadd_fetch(dir->rma, dhome, cm_dir_slot(dir, page),
                               cm_dir_add_delta(CM_DIR_JOIN, dir->rank, false), &j->old, &j->f));
    j->issued = true;
    /* What is issued to dhome from now on takes effect there after the add. */
    return cm_rma_fence(dir->rma);
}

cm_status_t cm_dir_add_join_wait(cm_dir_t *dir, uint64_t page, cm_dir_join_t *j,
                                 cm_dir_entry_t *after, cm_dir_effects_t *fx)
{
    cm_assert(j->issued);
    j->issued = false;
    CM_CHECK(cm_rma_fetch_wait(dir->rma, &j->f));
    return cm_dir_add_landed(dir, page, CM_DIR_JOIN, j->old,
                             cm_dir_add_delta(CM_DIR_JOIN, dir->rank, false), 0, true, after, fx);
}

cm_status_t cm_dir_add_home_join(cm_dir_t *dir, uint64_t page, bool *joined,
                                 cm_dir_entry_t *after, cm_dir_effects_t *fx)
{
    const int dhome = cm_dir_home_of(dir, page);
    const uint64_t bit = 1ull << dir->rank, delta = cm_dir_add_delta(CM_DIR_JOIN, dir->rank, false);
    cm_dir_entry_t e;
    uint64_t w;

    *joined = false;
    /* The home as the word seen shows it, fixed (it never moves then), and we not in the set. */
    if (!cm_dir_add_seen_entry(dir, page, &w, &e) || e.home != (uint32_t)dir->rank ||
        (dir->first_touch && !(e.flags & CM_DIR_HOME_FIXED)) || (e.flags & CM_DIR_BUSY) ||
        (e.sharers & bit)) {
        return CM_OK;
    }
    CM_CHECK(cm_dir_add_fence(dir, page));
    dir->updates++;
    dir->home_joins++;
    CM_CHECK(cm_rma_add_nbi(dir->rma, dhome, cm_dir_slot(dir, page), delta));
    cm_dir_add_unfenced(dir, page, true);
    cm_dir_add_seen(dir, page, w + delta);
    cm_dir_apply_add(&e, CM_DIR_JOIN, dir->rank, (uint32_t)dhome, dir->first_touch,
                     dir->unsafe_threshold, fx);
    cm_assert(!fx->claimed_home);
    fx->self_notice = false; /* nothing of ours can be older than a writer's released stores */
    if (e.flags & CM_DIR_UNSAFE) {
        fx->version = e.leaves; /* as seen: an older tag makes one check leave for nothing */
    }
    *after  = e;
    *joined = true;
    return CM_OK;
}

cm_status_t cm_dir_add_peek(cm_dir_t *dir, uint64_t page)
{
    uint64_t w;

    /* Our own leaves are in the word we read. */
    CM_CHECK(cm_dir_add_fence(dir, page));
    CM_CHECK(cm_rma_get(dir->rma, cm_dir_home_of(dir, page), &w, cm_dir_slot(dir, page),
                        sizeof(w)));
    cm_dir_add_seen(dir, page, w);
    dir->zero_peeked = (w == 0) ? page + 1 : 0;
    return CM_OK;
}

cm_status_t cm_dir_add_write_nbi(cm_dir_t *dir, uint64_t page, uint64_t *old, bool *issued)
{
    int home = cm_dir_home_of(dir, page);
    const uint64_t bit = 1ull << dir->rank;
    cm_dir_entry_t e;
    uint64_t w;

    *issued = false;
    if (!cm_dir_add_seen_entry(dir, page, &w, &e)) {
        return CM_OK;
    }
    if ((e.writers & bit) || !(e.sharers & bit)) {
        return CM_OK; /* a writer already (nothing to do), or not ours to add to */
    }
    *issued = true;
    dir->updates++;
    if (__builtin_expect(cm_trace_on, 0)) { /* issued, not waited for: no duration */
        cm_trace_emit(CM_TRACE_DIR_UPDATE, cm_trace_now(), 0, page, home, 0, 1 + CM_DIR_WRITE);
    }
    /* Behind our own home's join it needs no fence (tests/model/dir_add.pml): two adds of bits
     * known clear commute, and its word is read only after the release's flush has landed
     * both. Until then others may see us a writer not yet in the set: a joiner notices
     * itself, as it should; a writer does not notify us, as for the join alone. */
    if (!cm_dir_add_behind_join(dir, page)) {
        CM_CHECK(cm_dir_add_fence(dir, page));
    }
    return cm_rma_fadd_nbi(dir->rma, home, cm_dir_slot(dir, page),
                           cm_dir_add_delta(CM_DIR_WRITE, dir->rank, false), old);
}

cm_status_t cm_dir_add_write_done(cm_dir_t *dir, uint64_t page, uint64_t old,
                                  cm_dir_entry_t *after, cm_dir_effects_t *fx)
{
    return cm_dir_add_landed(dir, page, CM_DIR_WRITE, old,
                             cm_dir_add_delta(CM_DIR_WRITE, dir->rank, false), 0, false, after, fx);
}
