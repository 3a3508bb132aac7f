/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The directory's state machine: pure functions, no communication (unit
 * tested in tests/unit/check_directory.c).
 */
#include "config.h"
#include "directory/cm_dir.h"

#include <string.h>

cm_page_state_t cm_dir_state(uint64_t sharers, uint64_t writers)
{
    if (sharers == 0) {
        return CM_PAGE_UNCACHED;
    }
    if (writers == 0) {
        return CM_PAGE_SHARED;
    }
    if ((sharers & (sharers - 1)) == 0 && writers == sharers) {
        return CM_PAGE_DIRTY;
    }
    return CM_PAGE_WEAK;
}

const char *cm_dir_state_name(cm_page_state_t s)
{
    static const char *const names[] = {"UNCACHED", "SHARED", "DIRTY", "WEAK"};
    return ((unsigned)s < 4) ? names[s] : "?";
}

/* The sets, the home and the tag after op by me: what every form's rule starts from. */
static void cm_dir_apply_sets(cm_dir_entry_t *e, cm_dir_op_t op, int me, uint32_t home_rr,
                              bool first_touch, cm_dir_effects_t *fx)
{
    const uint64_t bit = 1ull << me;

    memset(fx, 0, sizeof(*fx));
    fx->before = cm_dir_state(e->sharers, e->writers);
    if (!(e->flags & CM_DIR_HOME_FIXED)) {
        e->home = home_rr;
    }
    switch (op) {
    case CM_DIR_JOIN:
        if (first_touch && !(e->flags & CM_DIR_HOME_FIXED)) {
            fx->claimed_home = true;
            fx->old_home     = home_rr;
            e->home          = (uint32_t)me;
            e->flags        |= CM_DIR_HOME_FIXED;
        }
        e->sharers |= bit;
        break;
    case CM_DIR_WRITE:
        e->sharers |= bit;
        e->writers |= bit;
        break;
    case CM_DIR_LEAVE:
        if (e->writers & bit) {
            e->leaves = (e->leaves + 1) & CM_DIR_LEAVES_MASK; /* the word's tag (cm_dir.h) */
        }
        e->sharers &= ~bit;
        e->writers &= ~bit;
        break;
    }
    fx->after = cm_dir_state(e->sharers, e->writers);
}

/* More remote notices than the threshold: the page turns UNSAFE (they still go out once). */
static void cm_dir_apply_threshold(cm_dir_entry_t *e, uint64_t others, unsigned unsafe_threshold,
                                   cm_dir_effects_t *fx)
{
    if ((unsigned)__builtin_popcountll(others) > unsafe_threshold) {
        e->flags |= CM_DIR_UNSAFE;
        fx->became_unsafe = true;
    }
    fx->notify = others;
}

void cm_dir_apply(cm_dir_entry_t *e, cm_dir_op_t op, int me, uint32_t home_rr, bool first_touch,
                  unsigned unsafe_threshold, cm_dir_effects_t *fx)
{
    const uint64_t bit = 1ull << me;
    const bool unsafe = (e->flags & CM_DIR_UNSAFE) != 0;

    cm_dir_apply_sets(e, op, me, home_rr, first_touch, fx);
    if (op == CM_DIR_LEAVE || fx->after != CM_PAGE_WEAK || unsafe) {
        return; /* no notices: not weak, or unsafe (sharers check the directory instead) */
    }
    if (fx->before != CM_PAGE_WEAK) {
        /* Into WEAK: every sharer, me included, must get a notice. */
        cm_dir_apply_threshold(e, e->sharers & ~bit, unsafe_threshold, fx);
        fx->self_notice = true;
    } else if (op == CM_DIR_JOIN) {
        /* Joining a page that is already WEAK: the others hold notices, I need one. */
        fx->self_notice = true;
    }
}

void cm_dir_apply_add(cm_dir_entry_t *e, cm_dir_op_t op, int me, uint32_t home_rr,
                      bool first_touch, unsigned unsafe_threshold, cm_dir_effects_t *fx)
{
    const uint64_t bit = 1ull << me;
    const bool unsafe = (e->flags & CM_DIR_UNSAFE) != 0;

    cm_dir_apply_sets(e, op, me, home_rr, first_touch, fx);
    if (unsafe) {
        return; /* sharers check the directory at acquire */
    }
    if (op == CM_DIR_JOIN) {
        /* A writer's later stores may miss our copy: noticed at our next acquire. Whom it
         * found is said, for the caller to tell them when they seem to have stopped writing. */
        fx->self_notice = (e->writers & ~bit) != 0;
        if (!fx->claimed_home) {
            fx->writers_found = e->writers & ~bit;
        }
    } else if (op == CM_DIR_WRITE) {
        cm_dir_apply_threshold(e, e->sharers & ~bit, unsafe_threshold, fx);
    }
}

uint64_t cm_dir_add_delta(cm_dir_op_t op, int me, bool writer)
{
    const uint64_t sharer = 1ull << me, wbit = 1ull << (16 + me), tag = 1ull << 40;

    switch (op) {
    case CM_DIR_JOIN:
        return sharer;
    case CM_DIR_WRITE:
        return wbit;
    case CM_DIR_LEAVE:
        return writer ? tag - wbit - sharer : (uint64_t)0 - sharer;
    }
    return 0;
}

uint64_t cm_dir_cas_pack(const cm_dir_entry_t *e)
{
    const uint64_t m16 = (1ull << 16) - 1;
    /* Bits 0-15 sharers, 16-31 writers, 32-35 flags, 36-39 the home (< 16 processes), 40-63
     * the leaves tag. */
    return (e->sharers & m16) | ((e->writers & m16) << 16) | ((uint64_t)(e->flags & 0xfu) << 32) |
           ((uint64_t)(e->home & 0xfu) << 36) | ((uint64_t)(e->leaves & CM_DIR_LEAVES_MASK) << 40);
}

void cm_dir_cas_unpack(uint64_t w, cm_dir_entry_t *e)
{
    const uint64_t m16 = (1ull << 16) - 1;
    e->sharers = w & m16;
    e->writers = (w >> 16) & m16;
    e->flags   = (uint32_t)((w >> 32) & 0xfu);
    e->home    = (uint32_t)((w >> 36) & 0xfu);
    e->leaves  = (uint32_t)(w >> 40) & CM_DIR_LEAVES_MASK;
}
