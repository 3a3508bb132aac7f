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

void cm_dir_apply(cm_dir_entry_t *e, cm_dir_op_t op, int me, uint32_t home_rr, bool first_touch,
                  unsigned unsafe_threshold, cm_dir_effects_t *fx)
{
    const uint64_t bit = 1ull << me;
    const bool unsafe = (e->flags & CM_DIR_UNSAFE) != 0;

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

    if (op == CM_DIR_LEAVE || fx->after != CM_PAGE_WEAK || unsafe) {
        return; /* no notices: not weak, or unsafe (sharers check the directory instead) */
    }
    if (fx->before != CM_PAGE_WEAK) {
        /* Into WEAK: every sharer, me included, must get a notice. */
        uint64_t others = e->sharers & ~bit;
        if ((unsigned)__builtin_popcountll(others) > unsafe_threshold) {
            e->flags |= CM_DIR_UNSAFE;
            fx->became_unsafe = true;
        }
        fx->notify      = others;
        fx->self_notice = true;
    } else if (op == CM_DIR_JOIN) {
        /* Joining a page that is already WEAK: the others hold notices, I need one. */
        fx->self_notice = true;
    }
}

uint64_t cm_dir_cas_pack(const cm_dir_entry_t *e)
{
    const uint64_t m24 = (1ull << 24) - 1;
    /* Bits 48-51 flags, 52-55 and 61-63 the leaves tag, 56-60 the home (< 24 processes). */
    return (e->sharers & m24) | ((e->writers & m24) << 24) | ((uint64_t)(e->flags & 0xfu) << 48) |
           ((uint64_t)(e->leaves & 0xfu) << 52) | ((uint64_t)(e->home & 0x1fu) << 56) |
           ((uint64_t)((e->leaves >> 4) & 0x7u) << 61);
}

void cm_dir_cas_unpack(uint64_t w, cm_dir_entry_t *e)
{
    const uint64_t m24 = (1ull << 24) - 1;
    e->sharers = w & m24;
    e->writers = (w >> 24) & m24;
    e->flags   = (uint32_t)((w >> 48) & 0xfu);
    e->leaves  = (uint32_t)(((w >> 52) & 0xfu) | (((w >> 61) & 0x7u) << 4));
    e->home    = (uint32_t)((w >> 56) & 0x1fu);
}
