/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The memory a host's processes share besides the pages (cm_2l_int.h): laid out from the
 * job's sizes in a node segment its leader creates (rma/cm_rma_node.c), and the twins in a
 * second one, as large as the region and committed only where written. A killed job leaves
 * neither behind: they are memory files with no name, gone with their last mapping.
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/protocols/twolevel/cm_2l_int.h"
#include "util/cm_log.h"

#include <errno.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CM_2L_MAGIC 0x434d324c4e4f4445ull /* "CM2LNODE" */

static size_t cm_2l_take(size_t *cursor, size_t bytes)
{
    size_t at = *cursor;
    *cursor += (bytes + 63) & ~(size_t)63;
    return at;
}

cm_status_t cm_2l_node_init(const cm_protocol_ctx_t *ctx)
{
    size_t cursor = 0, head, ovf, log, selfq, pages, locks;
    void *map;
    cm_status_t status;

    cm_2l_take(&cursor, 4096); /* the header, on a page of its own */
    head  = cm_2l_take(&cursor, (size_t)ctx->nprocs * sizeof(uint64_t));
    ovf   = cm_2l_take(&cursor, (size_t)ctx->nprocs * sizeof(uint64_t));
    log   = cm_2l_take(&cursor, CM_2L_LOG_CAP * sizeof(uint64_t));
    selfq = cm_2l_take(&cursor, CM_2L_SELF_CAP * sizeof(uint64_t));
    pages = cm_2l_take(&cursor, ctx->npages * sizeof(cm_2l_page_t));
    locks = cm_2l_take(&cursor, (size_t)ctx->meta->nlocks * sizeof(cm_2l_lock_t));
    cm_2l.node_len = (cursor + ctx->page_size - 1) / ctx->page_size * ctx->page_size;
    status = cm_rma_node_map(ctx->rma, ctx->hosts, NULL, cm_2l.node_len, "cm twolevel host",
                             &map, NULL);
    if (status != CM_OK) {
        return status;
    }
    cm_2l.hdr      = map;
    cm_2l.bin_head = (uint64_t *)(void *)((char *)map + head);
    cm_2l.bin_ovf  = (uint64_t *)(void *)((char *)map + ovf);
    cm_2l.log      = (uint64_t *)(void *)((char *)map + log);
    cm_2l.selfq    = (uint64_t *)(void *)((char *)map + selfq);
    cm_2l.pages    = (cm_2l_page_t *)(void *)((char *)map + pages);
    cm_2l.locks    = (cm_2l_lock_t *)(void *)((char *)map + locks);
    status = cm_rma_node_map(ctx->rma, ctx->hosts, NULL, ctx->size, "cm twolevel twins", &map,
                             &cm_2l.twins_fd);
    if (status != CM_OK) {
        munmap(cm_2l.hdr, cm_2l.node_len);
        cm_2l.hdr = NULL;
        return status;
    }
    cm_2l.twins = map;
    /* A fresh file is zeros; the leader stamps it, the others check they got the same one
     * after the job's next fence (the protocol's init barrier). */
    if (ctx->rank == cm_2l.leader) {
        cm_2l.hdr->magic = CM_2L_MAGIC;
    }
    return CM_OK;
}

cm_status_t cm_2l_node_check(void)
{
    if (__atomic_load_n(&cm_2l.hdr->magic, __ATOMIC_ACQUIRE) != CM_2L_MAGIC) {
        cm_error("twolevel: this host's shared memory from rank %d is not the one it made",
                 cm_2l.leader);
        return CM_ERR_INVALID;
    }
    return CM_OK;
}

uint64_t cm_2l_node_resident(void)
{
    struct stat st;
    return (cm_2l.twins_fd >= 0 && fstat(cm_2l.twins_fd, &st) == 0) ? (uint64_t)st.st_blocks * 512
                                                                     : 0;
}

void cm_2l_node_fini(void)
{
    if (cm_2l.hdr != NULL) {
        munmap(cm_2l.hdr, cm_2l.node_len);
        cm_2l.hdr = NULL;
    }
    if (cm_2l.twins != NULL) {
        munmap(cm_2l.twins, cm_2l.npages << cm_2l.shift);
        cm_2l.twins = NULL;
    }
    if (cm_2l.twins_fd >= 0) {
        close(cm_2l.twins_fd);
        cm_2l.twins_fd = -1;
    }
}

/* ---- locks in the host's memory ------------------------------------------------------ */

static void cm_2l_futex(uint32_t *word, int op, uint32_t val)
{
    /* Not FUTEX_PRIVATE: the word is in memory several processes map. */
    syscall(SYS_futex, word, op, val, NULL, NULL, 0);
}

/* Takes `bit` in *word (other bits are the page's role): spin a little, then sleep with
 * CM_2L_WAITERS set, as a mutex does (processes may outnumber cores). */
static void cm_2l_bit_lock(uint32_t *word)
{
    uint32_t s = __atomic_load_n(word, __ATOMIC_RELAXED);

    for (int spin = 0;; spin++) {
        if (!(s & CM_2L_LOCKED)) {
            if (__atomic_compare_exchange_n(word, &s, s | CM_2L_LOCKED, true, __ATOMIC_ACQUIRE,
                                            __ATOMIC_RELAXED)) {
                return;
            }
            continue;
        }
        if (spin < 100) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
            s = __atomic_load_n(word, __ATOMIC_RELAXED);
            continue;
        }
        if (cm_2l_must_progress()) {
            cm_rma_progress(cm_2l.rma);
            sched_yield();
            s = __atomic_load_n(word, __ATOMIC_RELAXED);
            continue;
        }
        if (!(s & CM_2L_WAITERS) &&
            !__atomic_compare_exchange_n(word, &s, s | CM_2L_WAITERS, true, __ATOMIC_RELAXED,
                                         __ATOMIC_RELAXED)) {
            continue;
        }
        cm_rma_sleep_begin(cm_2l.rma);
        cm_2l_futex(word, FUTEX_WAIT, s | CM_2L_WAITERS);
        cm_rma_sleep_end(cm_2l.rma);
        s = __atomic_load_n(word, __ATOMIC_RELAXED);
    }
}

static void cm_2l_bit_unlock(uint32_t *word)
{
    uint32_t s = __atomic_fetch_and(word, ~(CM_2L_LOCKED | CM_2L_WAITERS), __ATOMIC_RELEASE);

    if (s & CM_2L_WAITERS) {
        cm_2l_futex(word, FUTEX_WAKE, INT32_MAX);
    }
}

void cm_2l_lock(uint32_t *word) { cm_2l_bit_lock(word); }
void cm_2l_unlock(uint32_t *word) { cm_2l_bit_unlock(word); }
void cm_2l_page_lock(uint64_t p) { cm_2l_bit_lock(&cm_2l.pages[p].state); }
void cm_2l_page_unlock(uint64_t p) { cm_2l_bit_unlock(&cm_2l.pages[p].state); }

void cm_2l_self_notice(uint64_t p)
{
    cm_2l_lock(&cm_2l.hdr->self_lock);
    if (cm_2l.hdr->self_n < CM_2L_SELF_CAP) {
        cm_2l.selfq[cm_2l.hdr->self_n++] = p;
    } else {
        cm_2l.hdr->self_all = 1; /* the next drain invalidates everything */
    }
    cm_2l_unlock(&cm_2l.hdr->self_lock);
    cm_2l.st.notices_self++;
}
