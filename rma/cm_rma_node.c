/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hosts and the memory their processes share (issue 46): which ranks share a host, as the
 * process manager says and as each process checks for itself, and node segments, memory files
 * that a host's first rank creates and its other ranks map through /proc (as UCX's own posix
 * transport does), whatever transport UCX uses between them. See cm_rma.h.
 */
#define _GNU_SOURCE
#include "config.h"
#include "rma/cm_rma_int.h"
#include "util/cm_log.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a process says of the machine it runs on: memory files of another process can be
 * opened through /proc/<pid>/fd only within one kernel (boot id) and one PID namespace (a
 * mount namespace of its own does not matter: two namespace hosts sharing a kernel, which the
 * launcher takes for one node, share memory so; tests/mp/test_onekernel.sh). */
typedef struct {
    char     boot_id[40];
    uint64_t pid_ns;
    char     hostname[64];
    int32_t  launcher_leader; /* the lowest rank the process manager put on our host */
    int32_t  pid;
} cm_rma_node_id_t;

static uint64_t cm_rma_ns_inode(const char *path)
{
    struct stat st;
    return (stat(path, &st) == 0) ? (uint64_t)st.st_ino : 0;
}

static void cm_rma_node_id_self(cm_rma_node_id_t *id)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");

    memset(id, 0, sizeof(*id));
    if (f != NULL) {
        if (fgets(id->boot_id, sizeof(id->boot_id), f) == NULL) {
            id->boot_id[0] = '\0';
        }
        id->boot_id[strcspn(id->boot_id, "\n")] = '\0';
        fclose(f);
    }
    id->pid_ns = cm_rma_ns_inode("/proc/self/ns/pid");
    if (gethostname(id->hostname, sizeof(id->hostname) - 1) != 0) {
        snprintf(id->hostname, sizeof(id->hostname), "?");
    }
    id->pid = (int32_t)getpid();
}

static bool cm_rma_node_id_same(const cm_rma_node_id_t *a, const cm_rma_node_id_t *b)
{
    return strcmp(a->boot_id, b->boot_id) == 0 && a->pid_ns == b->pid_ns;
}

void cm_rma_hosts_free(cm_rma_hosts_t *h)
{
    free(h->host_of);
    free(h->leader);
    free(h->local);
    free(h->pid);
    memset(h, 0, sizeof(*h));
}

cm_status_t cm_rma_hosts_init(cm_rma_t *rma, cm_rma_hosts_t *h)
{
    cm_rma_node_id_t me, *ids = NULL;
    int *peers = NULL, npeers = 0, lowest;
    cm_status_t status;

    memset(h, 0, sizeof(*h));
    status = cm_boot_local_peers(rma->boot, &peers, &npeers);
    if (status != CM_OK) {
        return status;
    }
    lowest = rma->rank;
    for (int i = 0; i < npeers; i++) {
        lowest = (peers[i] < lowest) ? peers[i] : lowest;
    }
    free(peers);
    cm_rma_node_id_self(&me);
    me.launcher_leader = lowest;
    status = cm_boot_put(rma->boot, "cm.node.id", &me, sizeof(me));
    if (status == CM_OK) {
        status = cm_rma_boot_sync(rma, true);
    }
    if (status != CM_OK) {
        return status;
    }
    ids        = calloc((size_t)rma->nprocs, sizeof(*ids));
    h->host_of = calloc((size_t)rma->nprocs, sizeof(*h->host_of));
    h->leader  = calloc((size_t)rma->nprocs, sizeof(*h->leader));
    h->local   = calloc((size_t)rma->nprocs, sizeof(*h->local));
    h->pid     = calloc((size_t)rma->nprocs, sizeof(*h->pid));
    if (ids == NULL || h->host_of == NULL || h->leader == NULL || h->local == NULL ||
        h->pid == NULL) {
        cm_error("rma: out of memory");
        status = CM_ERR_NO_MEMORY;
        goto err;
    }
    for (int r = 0; r < rma->nprocs; r++) {
        void *data;
        size_t len;
        status = cm_boot_get(rma->boot, r, "cm.node.id", &data, &len);
        if (status != CM_OK) {
            goto err;
        }
        if (len != sizeof(ids[r])) {
            free(data);
            cm_error("rank %d published a host identity of %zu bytes, not %zu (another "
                     "version of the library?)", r, len, sizeof(ids[r]));
            status = CM_ERR_BOOTSTRAP;
            goto err;
        }
        memcpy(&ids[r], data, sizeof(ids[r]));
        free(data);
        h->pid[r] = ids[r].pid;
    }
    /* Hosts in the order of their lowest ranks; a rank's host is its launcher leader's. */
    for (int r = 0; r < rma->nprocs; r++) {
        int l = ids[r].launcher_leader;
        if (l < 0 || l >= rma->nprocs || ids[l].launcher_leader != l) {
            cm_error("the process manager's hosts do not agree: rank %d's host starts at rank "
                     "%d, whose own starts at rank %d", r, l,
                     (l >= 0 && l < rma->nprocs) ? ids[l].launcher_leader : -1);
            status = CM_ERR_BOOTSTRAP;
            goto err;
        }
        if (l == r) {
            h->leader[h->nhosts] = r;
            h->host_of[r]        = h->nhosts++;
        } else {
            h->host_of[r] = h->host_of[l];
        }
        /* Every rank finds it; the host's leader says it, once (cm_init waits for its abort). */
        if (!cm_rma_node_id_same(&ids[r], &ids[l])) {
            cm_log((rma->rank == l) ? CM_LOG_ERROR : CM_LOG_DEBUG,"ranks %d and %d are on one host by the process manager's word, but not by "
                     "their own: %s (boot %.8s, PID namespace %" PRIu64 ") against %s (boot %.8s, "
                     "PID namespace %" PRIu64 "); they cannot share memory: launch them as "
                     "separate hosts", l, r, ids[l].hostname, ids[l].boot_id, ids[l].pid_ns,
                     ids[r].hostname, ids[r].boot_id, ids[r].pid_ns);
            status = CM_ERR_BOOTSTRAP;
            goto err;
        }
    }
    h->host = h->host_of[rma->rank];
    for (int r = 0; r < rma->nprocs; r++) {
        if (h->host_of[r] == h->host) {
            if (r == rma->rank) {
                h->local_rank = h->local_size;
            }
            h->local[h->local_size++] = r;
        }
    }
    free(ids);
    return CM_OK;

err:
    free(ids);
    cm_rma_hosts_free(h);
    return status;
}

cm_status_t cm_rma_node_map(cm_rma_t *rma, const cm_rma_hosts_t *h, void *addr, size_t len,
                            const char *name, void **map, int *fd_p)
{
    char key[64], path[64];
    int fd = -1, leader = h->leader[h->host];
    void *p;
    cm_status_t status;

    snprintf(key, sizeof(key), "cm.node.%s.fd", name);
    if (rma->rank == leader) {
        fd = memfd_create(name, MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, (off_t)len) != 0) {
            cm_error("%s: cannot create a %zu-byte memory file for this host: %s", name, len,
                     strerror(errno));
            if (fd >= 0) {
                close(fd);
            }
            return CM_ERR_NO_MEMORY;
        }
        status = cm_boot_put(rma->boot, key, &fd, sizeof(fd));
        if (status != CM_OK) {
            close(fd);
            return status;
        }
    }
    status = cm_rma_boot_sync(rma, true);
    if (status != CM_OK) {
        goto err_close;
    }
    if (rma->rank != leader) {
        void *data;
        size_t dlen;
        status = cm_boot_get(rma->boot, leader, key, &data, &dlen);
        if (status != CM_OK) {
            return status;
        }
        snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)h->pid[leader],
                 (dlen == sizeof(int)) ? *(int *)data : -1);
        free(data);
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0) {
            cm_error("%s: cannot open this host's memory file from rank %d (%s: %s)", name,
                     leader, path, strerror(errno));
            return CM_ERR_NO_MEMORY;
        }
    }
    p = mmap(addr, len, PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_NORESERVE | ((addr != NULL) ? MAP_FIXED_NOREPLACE : 0), fd, 0);
    if (p == MAP_FAILED || (addr != NULL && p != addr)) {
        cm_error("%s: cannot map %zu bytes of this host's memory file at %p: %s", name, len,
                 addr, (p == MAP_FAILED) ? strerror(errno) : "placed elsewhere");
        if (p != MAP_FAILED) {
            munmap(p, len);
        }
        status = CM_ERR_NO_MEMORY;
        goto err_close;
    }
    /* The leader may close its descriptor once every rank of its host holds one. */
    status = cm_rma_boot_sync(rma, false);
    if (status != CM_OK) {
        munmap(p, len);
        goto err_close;
    }
    *map = p;
    if (fd_p != NULL) {
        *fd_p = fd;
    } else {
        close(fd);
    }
    return CM_OK;

err_close:
    if (fd >= 0) {
        close(fd);
    }
    return status;
}

cm_status_t cm_rma_seg_map_peer_view(cm_rma_t *rma, cm_rma_seg_t *seg, int pe,
                                     const cm_rma_hosts_t *h, void *addr, int prot)
{
    char key[64], path[64];
    cm_rma_fd_info_t info;
    void *data, *p;
    size_t len;
    int index = -1, fd;
    cm_status_t status;

    for (int i = 0; i < rma->nsegs; i++) {
        index = (rma->segs[i] == seg) ? i : index;
    }
    if (index < 0 || seg->kind != CM_RMA_SEG_FD || h->host_of[pe] != h->host) {
        cm_error("%s: rank %d's memory file cannot be mapped here", seg->name, pe);
        return CM_ERR_INVALID;
    }
    snprintf(key, sizeof(key), "cm.rma.seg%d.fd", index);
    status = cm_boot_get(rma->boot, pe, key, &data, &len);
    if (status != CM_OK) {
        return status;
    }
    if (len != sizeof(info)) {
        free(data);
        cm_error("%s: rank %d published no memory file", seg->name, pe);
        return CM_ERR_BOOTSTRAP;
    }
    memcpy(&info, data, sizeof(info));
    free(data);
    snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)info.pid, (int)info.fd);
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        cm_error("%s: cannot open rank %d's memory file (%s: %s)", seg->name, pe, path,
                 strerror(errno));
        return CM_ERR_NO_MEMORY;
    }
    /* In place of the view already there: the same range, the host's copy under it. */
    p = mmap(addr, seg->len, prot, MAP_SHARED | MAP_NORESERVE | MAP_FIXED, fd, 0);
    close(fd);
    if (p != addr) {
        cm_error("%s: cannot map rank %d's memory file at %p: %s", seg->name, pe, addr,
                 (p == MAP_FAILED) ? strerror(errno) : "placed elsewhere");
        return CM_ERR_NO_MEMORY;
    }
    return CM_OK;
}
