/* SPDX-License-Identifier: BSD-3-Clause */
/* What cm_dir.c and cm_dir_add.c share inside directory/: not the layer's interface. */
#ifndef CM_DIR_INT_H
#define CM_DIR_INT_H

#include "directory/cm_dir.h"

/* Page p's entry slot, at its directory home (page % nprocs, index page / nprocs). */
static inline uint64_t *cm_dir_slot(cm_dir_t *dir, uint64_t page)
{
    return (uint64_t *)(dir->seg.base + dir->seg.entries +
                        (page / (uint64_t)dir->nprocs) * CM_DIR_ENTRY_BYTES);
}

static inline int cm_dir_home_of(cm_dir_t *dir, uint64_t page)
{
    return (int)(page % (uint64_t)dir->nprocs);
}

/* A one-word entry as it stands in word w: one left from the initialization phase is empty,
 * an unfixed home the round-robin one. */
void cm_dir_word_entry(const cm_dir_t *dir, uint64_t page, uint64_t w, cm_dir_entry_t *e);

/* Reads page's entry word (at word, on home) into *cur until it is not BUSY (both one-word
 * forms: a claim, or the CAS form's held section). */
cm_status_t cm_dir_wait_idle(cm_dir_t *dir, uint64_t page, int home, uint64_t *word, uint64_t *cur);

/* The add form's update (cm_dir_update_seen calls it). Its held callback runs only for a claim
 * that copies the page in: notices are the caller's to post, at its release (fx->notify), and
 * LEAVE is not waited for. */
cm_status_t cm_dir_add_update(cm_dir_t *dir, uint64_t page, cm_dir_op_t op,
                              cm_dir_held_fn_t held, void *arg, uint64_t seen,
                              cm_dir_entry_t *after, cm_dir_effects_t *fx);

/* Orders this process's adds of page not waited for before what it issues next to its home
 * (one fence for all pages, none where a fence or flush came since). */
cm_status_t cm_dir_add_fence(cm_dir_t *dir, uint64_t page);

#endif
