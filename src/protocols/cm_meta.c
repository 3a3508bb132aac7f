/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"
#include "src/protocols/cm_meta.h"
#include "util/cm_log.h"

static size_t cm_meta_take(size_t *cursor, size_t bytes)
{
    size_t at = *cursor;
    *cursor += (bytes + 63) & ~(size_t)63; /* every area on its own cache lines */
    return at;
}

cm_status_t cm_meta_layout_compute(uint64_t npages, uint32_t nprocs, uint32_t nlocks,
                                   uint32_t ring_slots, size_t page_size, cm_meta_layout_t *out)
{
    size_t cursor = 0;
    uint32_t slots = 1;

    if (nprocs == 0 || npages == 0 || ring_slots == 0 || nlocks == 0) {
        cm_error("metadata layout: pages, processes, locks and ring slots must be non-zero");
        return CM_ERR_INVALID;
    }
    while (slots < ring_slots) {
        if (slots >= (1u << 30)) {
            cm_error("CM_WN_RING=%u is too large", ring_slots);
            return CM_ERR_INVALID;
        }
        slots <<= 1;
    }
    out->npages        = npages;
    out->nprocs        = nprocs;
    out->nlocks        = nlocks;
    out->ring_slots    = slots;
    out->dir_per_proc  = (npages + nprocs - 1) / nprocs;
    out->lock_per_proc = (nlocks + nprocs - 1) / nprocs;
    out->dir_entries   = cm_meta_take(&cursor, out->dir_per_proc * CM_DIR_ENTRY_BYTES);
    out->dir_qnode     = cm_meta_take(&cursor, CM_DIR_QNODE_BYTES);
    out->wn_ctl        = cm_meta_take(&cursor, sizeof(uint64_t));
    out->wn_slots      = cm_meta_take(&cursor, (size_t)slots * sizeof(uint64_t));
    out->wn_pending    = cm_meta_take(&cursor, npages * sizeof(uint64_t));
    /* The add form's bins share the ring's slots out among the senders (a power of two). */
    out->bin_slots = 1;
    while (out->bin_slots * 2 <= slots / nprocs) {
        out->bin_slots *= 2;
    }
    out->wn_bins       = cm_meta_take(&cursor, (size_t)nprocs * cm_wn_bin_bytes(out->bin_slots));
    out->wn_heads      = cm_meta_take(&cursor, (size_t)nprocs * sizeof(uint64_t));
    out->lock_tails    = cm_meta_take(&cursor, (size_t)out->lock_per_proc * sizeof(uint64_t));
    out->lock_qnodes   = cm_meta_take(&cursor, (size_t)nlocks * CM_META_LOCK_QNODE);
    out->barrier_flags = cm_meta_take(&cursor, CM_BARRIER_WORDS * sizeof(uint64_t));
    out->wait_word     = cm_meta_take(&cursor, 64); /* a line of its own: wakers poll it */
    out->sleep_maps    = cm_meta_take(&cursor, cm_sleep_map_bytes(nprocs));
    out->stats         = cm_meta_take(&cursor, (size_t)nprocs * CM_META_STATS_SLOT);
    out->scratch       = cm_meta_take(&cursor, CM_META_SCRATCH);
    out->total         = (cursor + page_size - 1) / page_size * page_size;
    return CM_OK;
}

cm_dir_seg_t cm_meta_dir_seg(const cm_meta_layout_t *m, char *base)
{
    return (cm_dir_seg_t){.base = base, .entries = m->dir_entries, .per_proc = m->dir_per_proc,
                          .qnode = m->dir_qnode};
}

cm_wn_bin_seg_t cm_meta_wn_bin_seg(const cm_meta_layout_t *m, char *base)
{
    return (cm_wn_bin_seg_t){.base = base, .bins = m->wn_bins, .heads = m->wn_heads,
                             .cap = m->bin_slots};
}

cm_wn_seg_t cm_meta_wn_seg(const cm_meta_layout_t *m, char *base)
{
    return (cm_wn_seg_t){.base = base, .ctl = m->wn_ctl, .slots = m->wn_slots,
                         .pending = m->wn_pending, .cap = m->ring_slots, .npages = m->npages};
}
