/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Layout of each process's metadata segment: the RMA-visible memory where the
 * protocol's shared state lives, addressed by (rank, offset) — i.e. by the
 * same address in every process. Everything is at a fixed offset computed
 * from the job's parameters, so every process knows where everything is in
 * every other process without exchanging anything.
 */
#ifndef CM_META_H
#define CM_META_H

#include "cm.h"
#include "directory/cm_dir.h"
#include "locks/cm_barrier.h"
#include "locks/cm_sleep.h"
#include "writenotice/cm_wn.h"
#include "writenotice/cm_wn_bin.h"

#include <stddef.h>
#include <stdint.h>

/* Per lock per process: MCS queue node (next, locked). */
#define CM_META_LOCK_QNODE  16
#define CM_META_STATS_SLOT  2048
#define CM_META_SCRATCH     (64 * 1024)
/*
 * Bytes per shared page that each process keeps in private memory for the
 * protocol's page table and page lists, at most (Cashmere: an 8-byte entry and
 * three 4-byte list slots; TreadMarks: a page record of up to 48 bytes and a 4-byte
 * dirty slot). Counted with the segment when a shared size is checked against
 * the machine's memory.
 */
#define CM_META_PAGE_PRIVATE 56
/*
 * The two-level protocol (CM_PROTOCOL=twolevel): bytes per shared page in the memory its
 * host's processes share, besides the page's copy and twin: the page's record.
 */
#define CM_META_PAGE_HOST 16

typedef struct {
    uint64_t npages;         /* pages of the shared region */
    uint32_t nprocs;
    uint32_t nlocks;
    uint32_t ring_slots;     /* write-notice ring capacity (power of two) */
    uint64_t dir_per_proc;   /* directory entries each process hosts: ceil(npages / nprocs) */
    uint32_t lock_per_proc;  /* lock tails each process hosts: ceil(nlocks / nprocs) */
    /* Byte offsets from the segment's base. */
    size_t   dir_entries;    /* dir_per_proc * CM_DIR_ENTRY_BYTES; page p at home p % nprocs, index p / nprocs */
    size_t   dir_qnode;      /* this process's queue node for directory-entry locks */
    size_t   wn_ctl;         /* write-notice ring: head (high 32 bits) | tail (low 32 bits) */
    size_t   wn_slots;       /* ring_slots words: page + 1, 0 = empty */
    size_t   wn_pending;     /* one word per page: 1 while a notice for it sits in the ring */
    uint32_t bin_slots;      /* the add form's slots per sender: the ring's, shared out */
    size_t   wn_bins;        /* the add form's notice bins: one per sender, bin_slots each */
    size_t   wn_heads;       /* nprocs words: each receiver's consumed index of our bin there */
    size_t   lock_tails;     /* lock_per_proc words: MCS tail (rank + 1, 0 = free); lock l at home l % nprocs */
    size_t   lock_qnodes;    /* nlocks * CM_META_LOCK_QNODE */
    size_t   barrier_flags;  /* CM_BARRIER_WORDS words */
    size_t   wait_word;      /* through which peers wake this process from a blocked wait */
    size_t   sleep_maps;     /* this process's copy of the maps of sleepers (locks/cm_sleep.h) */
    size_t   stats;          /* nprocs * CM_META_STATS_SLOT: rank 0 gathers statistics here */
    size_t   scratch;        /* CM_META_SCRATCH bytes for tools and tests */
    size_t   total;          /* bytes needed, page aligned */
} cm_meta_layout_t;

/* Computes the layout; ring_slots is rounded up to a power of two. */
cm_status_t cm_meta_layout_compute(uint64_t npages, uint32_t nprocs, uint32_t nlocks,
                                   uint32_t ring_slots, size_t page_size, cm_meta_layout_t *out);

/* Where the directory and the write-notice ring live in a segment at base with this layout. */
cm_dir_seg_t cm_meta_dir_seg(const cm_meta_layout_t *m, char *base);
cm_wn_seg_t cm_meta_wn_seg(const cm_meta_layout_t *m, char *base);
cm_wn_bin_seg_t cm_meta_wn_bin_seg(const cm_meta_layout_t *m, char *base);

#endif
