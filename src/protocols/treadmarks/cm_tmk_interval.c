/* SPDX-License-Identifier: BSD-3-Clause */
/* TreadMarks intervals and vector timestamps (see cm_tmk_interval.h). */
#include "src/protocols/treadmarks/cm_tmk_interval.h"

#include <stdlib.h>
#include <string.h>

bool cm_tmk_vt_leq(const uint32_t *a, const uint32_t *b, int nprocs)
{
    for (int q = 0; q < nprocs; q++) {
        if (a[q] > b[q]) {
            return false;
        }
    }
    return true;
}

bool cm_tmk_iv_precedes(const cm_tmk_interval_t *x, const cm_tmk_interval_t *y)
{
    if (x->proc == y->proc) {
        return x->index < y->index;
    }
    return x->index <= y->vt[x->proc];
}

uint64_t cm_tmk_vt_sum(const uint32_t *vt, int nprocs)
{
    uint64_t sum = 0;
    for (int q = 0; q < nprocs; q++) {
        sum += vt[q];
    }
    return sum;
}

cm_status_t cm_tmk_store_init(cm_tmk_store_t *s, int nprocs)
{
    memset(s, 0, sizeof(*s));
    s->nprocs = nprocs;
    s->vt     = calloc((size_t)nprocs, sizeof(*s->vt));
    s->base   = calloc((size_t)nprocs, sizeof(*s->base));
    s->cap    = calloc((size_t)nprocs, sizeof(*s->cap));
    s->ivs    = calloc((size_t)nprocs, sizeof(*s->ivs));
    if (s->vt == NULL || s->base == NULL || s->cap == NULL || s->ivs == NULL) {
        cm_tmk_store_fini(s);
        return CM_ERR_NO_MEMORY;
    }
    for (int q = 0; q < nprocs; q++) {
        s->base[q] = 1;
    }
    return CM_OK;
}

void cm_tmk_store_fini(cm_tmk_store_t *s)
{
    if (s->ivs != NULL) {
        cm_tmk_store_collect(s);
        for (int q = 0; q < s->nprocs; q++) {
            free(s->ivs[q]);
        }
    }
    free(s->vt);
    free(s->base);
    free(s->cap);
    free(s->ivs);
    memset(s, 0, sizeof(*s));
}

cm_tmk_interval_t *cm_tmk_iv_new(int nprocs, uint32_t proc, const uint32_t *vt,
                                 const uint32_t *pages, uint32_t npages)
{
    cm_tmk_interval_t *iv = calloc(1, sizeof(*iv));

    if (iv == NULL) {
        return NULL;
    }
    iv->proc    = proc;
    iv->index   = vt[proc];
    iv->npages  = npages;
    iv->vt      = malloc((size_t)nprocs * sizeof(*iv->vt));
    iv->notices = calloc(npages ? npages : 1, sizeof(*iv->notices));
    if (iv->vt == NULL || iv->notices == NULL) {
        cm_tmk_iv_free(iv);
        return NULL;
    }
    memcpy(iv->vt, vt, (size_t)nprocs * sizeof(*iv->vt));
    for (uint32_t i = 0; i < npages; i++) {
        iv->notices[i].page = pages[i];
    }
    return iv;
}

void cm_tmk_iv_free(cm_tmk_interval_t *iv)
{
    if (iv == NULL) {
        return;
    }
    if (iv->notices != NULL) {
        for (uint32_t i = 0; i < iv->npages; i++) {
            free(iv->notices[i].diff);
        }
    }
    free(iv->notices);
    free(iv->vt);
    free(iv);
}

static size_t cm_tmk_iv_bytes(const cm_tmk_interval_t *iv, int nprocs)
{
    return sizeof(*iv) + (size_t)nprocs * sizeof(uint32_t) + iv->npages * sizeof(cm_tmk_notice_t);
}

cm_status_t cm_tmk_store_add(cm_tmk_store_t *s, cm_tmk_interval_t *iv, bool *added)
{
    uint32_t q = iv->proc, slot;

    *added = false;
    if (q >= (uint32_t)s->nprocs || iv->index == 0 || iv->vt[q] != iv->index) {
        return CM_ERR_INVALID;
    }
    if (iv->index <= s->vt[q]) {
        cm_tmk_iv_free(iv); /* already known (e.g. a barrier arrival repeating it) */
        return CM_OK;
    }
    if (iv->index != s->vt[q] + 1) {
        return CM_ERR_INVALID; /* knowing an interval means knowing all its predecessors */
    }
    slot = iv->index - s->base[q];
    if (slot >= s->cap[q]) {
        uint32_t cap = s->cap[q] ? 2 * s->cap[q] : 64;
        cm_tmk_interval_t **n = realloc(s->ivs[q], cap * sizeof(*n));
        if (n == NULL) {
            return CM_ERR_NO_MEMORY;
        }
        memset(n + s->cap[q], 0, (cap - s->cap[q]) * sizeof(*n));
        s->ivs[q] = n;
        s->cap[q] = cap;
    }
    s->ivs[q][slot] = iv;
    s->vt[q]        = iv->index;
    s->bytes       += cm_tmk_iv_bytes(iv, s->nprocs);
    *added          = true;
    return CM_OK;
}

cm_tmk_interval_t *cm_tmk_store_get(const cm_tmk_store_t *s, uint32_t proc, uint32_t index)
{
    if (proc >= (uint32_t)s->nprocs || index < s->base[proc] || index > s->vt[proc]) {
        return NULL;
    }
    return s->ivs[proc][index - s->base[proc]];
}

cm_status_t cm_tmk_store_set_diff(cm_tmk_store_t *s, cm_tmk_interval_t *iv, uint32_t notice,
                                  const void *diff, uint32_t len)
{
    cm_tmk_notice_t *n;

    if (notice >= iv->npages) {
        return CM_ERR_INVALID;
    }
    n = &iv->notices[notice];
    if (n->diff != NULL) {
        return CM_OK;
    }
    n->diff = malloc(len ? len : 1);
    if (n->diff == NULL) {
        return CM_ERR_NO_MEMORY;
    }
    memcpy(n->diff, diff, len);
    n->diff_len = len;
    s->bytes   += len;
    return CM_OK;
}

cm_status_t cm_tmk_store_send_set(const cm_tmk_store_t *s, const uint32_t *vt_a,
                                  cm_status_t (*fn)(const cm_tmk_interval_t *iv, void *arg),
                                  void *arg)
{
    for (int q = 0; q < s->nprocs; q++) {
        uint32_t from = vt_a[q] + 1;
        if (from < s->base[q]) {
            /* Collected: the acquirer must have seen them (collection follows a global barrier). */
            return CM_ERR_INVALID;
        }
        for (uint32_t i = from; i <= s->vt[q]; i++) {
            cm_status_t status = fn(s->ivs[q][i - s->base[q]], arg);
            if (status != CM_OK) {
                return status;
            }
        }
    }
    return CM_OK;
}

void cm_tmk_store_collect(cm_tmk_store_t *s)
{
    for (int q = 0; q < s->nprocs; q++) {
        for (uint32_t i = s->base[q]; i <= s->vt[q]; i++) {
            cm_tmk_iv_free(s->ivs[q][i - s->base[q]]);
            s->ivs[q][i - s->base[q]] = NULL;
        }
        s->base[q] = s->vt[q] + 1;
    }
    s->bytes = 0;
}

size_t cm_tmk_iv_wire_size(const cm_tmk_interval_t *iv, int nprocs)
{
    return (3 + (size_t)nprocs + iv->npages) * sizeof(uint32_t);
}

/* Word i of a wire buffer, which may be unaligned (a store through a uint32_t * would not be). */
static void cm_tmk_put32(void *out, size_t i, uint32_t v)
{
    memcpy((char *)out + i * sizeof(v), &v, sizeof(v));
}

size_t cm_tmk_iv_pack(const cm_tmk_interval_t *iv, int nprocs, void *out)
{
    cm_tmk_put32(out, 0, iv->proc);
    cm_tmk_put32(out, 1, iv->index);
    cm_tmk_put32(out, 2, iv->npages);
    memcpy((char *)out + 3 * sizeof(uint32_t), iv->vt, (size_t)nprocs * sizeof(uint32_t));
    for (uint32_t i = 0; i < iv->npages; i++) {
        cm_tmk_put32(out, 3 + (size_t)nprocs + i, (uint32_t)iv->notices[i].page);
    }
    return cm_tmk_iv_wire_size(iv, nprocs);
}

cm_status_t cm_tmk_iv_unpack(const void *in, size_t len, int nprocs, cm_tmk_interval_t **iv,
                             size_t *used)
{
    uint32_t hdr[3], *vt, *pages;
    size_t need;
    cm_tmk_interval_t *n;

    if (len < sizeof(hdr)) {
        return CM_ERR_INVALID;
    }
    memcpy(hdr, in, sizeof(hdr));
    need = (3 + (size_t)nprocs + hdr[2]) * sizeof(uint32_t);
    if (hdr[0] >= (uint32_t)nprocs || hdr[1] == 0 || hdr[2] > len || len < need) {
        return CM_ERR_INVALID;
    }
    /* The wire buffer may be unaligned: copy out. */
    vt    = malloc((size_t)nprocs * sizeof(uint32_t));
    pages = malloc((hdr[2] ? hdr[2] : 1) * sizeof(uint32_t));
    if (vt == NULL || pages == NULL) {
        free(vt);
        free(pages);
        return CM_ERR_NO_MEMORY;
    }
    memcpy(vt, (const char *)in + 3 * sizeof(uint32_t), (size_t)nprocs * sizeof(uint32_t));
    memcpy(pages, (const char *)in + (3 + (size_t)nprocs) * sizeof(uint32_t), hdr[2] * sizeof(uint32_t));
    if (vt[hdr[0]] != hdr[1]) {
        free(vt);
        free(pages);
        return CM_ERR_INVALID;
    }
    n = cm_tmk_iv_new(nprocs, hdr[0], vt, pages, hdr[2]);
    free(vt);
    free(pages);
    if (n == NULL) {
        return CM_ERR_NO_MEMORY;
    }
    *iv   = n;
    *used = need;
    return CM_OK;
}
