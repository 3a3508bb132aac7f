/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What must happen before the program's main runs, in every process of a job
 * (a constructor of the library):
 *
 * 1. The same address-space layout everywhere (CM_ASLR=no, the default). A
 *    process re-executes itself once with randomization off, so the program's
 *    code, globals and constants, the libraries and the heap sit at the same
 *    addresses in every process. SPMD initialization (PARMACS: every process
 *    computes main up to CREATE) then yields the same private pointers in every
 *    process, and a function or global address that process 0 stores in shared
 *    memory means the same thing to every worker, as under the ANL macros'
 *    fork or in one threaded address space.
 * 2. `cmrun --stdin FILE` (CM_STDIN_ALL): every rank reads the same stdin from
 *    its first byte. Rank 0 got FILE from the launcher; it reads it whole and
 *    the bytes reach every rank through the process manager before main, so a
 *    program may read its input before calling into the library at all.
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/runtime/cm_preinit.h"
#include "util/cm_log.h"
#include "src/runtime/cm_runtime.h"
#include "src/access/cm_shadow.h"

#include <dlfcn.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <unistd.h>

extern char **environ;

cm_preinit_t cm_preinit = {.rank = -1};

/* A rank of a job started by a PMIx launcher (mpirun, prterun, srun --mpi=pmix). */
static int cm_pre_launched_rank(void)
{
    const char *r = getenv("PMIX_RANK");
    return (r != NULL && r[0] != '\0') ? atoi(r) : -1;
}

static int cm_pre_randomizing(void)
{
    char c = '0';
    FILE *f = fopen("/proc/sys/kernel/randomize_va_space", "r");

    if (f != NULL) {
        if (fread(&c, 1, 1, f) != 1) {
            c = '2';
        }
        fclose(f);
    }
    return c != '0';
}

/* Returns only if the layout is fixed already or cannot be (then says so once, on rank 0). */
static void cm_pre_fixed_layout(char **argv, int rank)
{
    int cur = personality(0xffffffff);

    if (cur < 0 || (cur & ADDR_NO_RANDOMIZE) || !cm_pre_randomizing()) {
        cm_preinit.same_layout = (cur >= 0);
        return;
    }
    if (personality((unsigned long)cur | ADDR_NO_RANDOMIZE) < 0) {
        if (rank == 0) {
            cm_warn("cannot turn address-space randomization off (personality: %s): private "
                    "addresses (functions, globals, heap) differ between processes; PARMACS "
                    "programs that pass them through shared memory need -no-pie, or run where "
                    "personality(2) is allowed (CM_ASLR=yes silences this)", strerror(errno));
        }
        return;
    }
    execve("/proc/self/exe", argv, environ);
    /* Still here: run with randomization as it was. */
    personality((unsigned long)cur);
    if (rank == 0) {
        cm_warn("cannot re-execute with address-space randomization off (execve /proc/self/exe: "
                "%s): private addresses differ between processes (CM_ASLR=yes silences this)",
                strerror(errno));
    }
}

/* Rank 0 reads its stdin to the end; every rank then reads those bytes from an in-memory file. */
static cm_status_t cm_pre_stdin_broadcast(cm_boot_t *boot)
{
    char *data = NULL;
    size_t len = 0;
    cm_status_t status;
    int fd;

    if (cm_boot_rank(boot) == 0) {
        size_t cap = 0;
        ssize_t n;
        do {
            if (len == cap) {
                char *p;
                cap = cap ? 2 * cap : 65536;
                p = realloc(data, cap);
                if (p == NULL) {
                    free(data);
                    cm_error("stdin: out of memory");
                    return CM_ERR_NO_MEMORY;
                }
                data = p;
            }
            n = read(STDIN_FILENO, data + len, cap - len);
            if (n > 0) {
                len += (size_t)n;
            }
        } while (n > 0 || (n < 0 && errno == EINTR));
        if (n < 0) {
            cm_error("stdin: read failed: %s", strerror(errno));
            free(data);
            return CM_ERR_IO;
        }
        status = cm_boot_put(boot, "cm.stdin", data ? data : "", len);
        free(data);
        data = NULL;
        if (status != CM_OK) {
            return status;
        }
    }
    status = cm_boot_exchange(boot, NULL, NULL);
    if (status != CM_OK) {
        return status;
    }
    status = cm_boot_get(boot, 0, "cm.stdin", (void **)&data, &len);
    if (status != CM_OK) {
        return status;
    }
    fd = memfd_create("cashmere-stdin", MFD_CLOEXEC);
    if (fd < 0 || (len > 0 && write(fd, data, len) != (ssize_t)len) ||
        lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, STDIN_FILENO) < 0) {
        cm_error("stdin: cannot provide the input to this process: %s", strerror(errno));
        free(data);
        if (fd >= 0) {
            close(fd);
        }
        return CM_ERR_IO;
    }
    close(fd);
    clearerr(stdin);
    free(data);
    return CM_OK;
}

__attribute__((constructor)) static void cm_preinit_run(int argc, char **argv, char **envp)
{
    cm_config_t cfg;
    char err[512];
    int rank = cm_pre_launched_rank();
    cm_status_t status;

    (void)argc;
    (void)envp;
    cm_preinit.rank = rank;
    if (rank >= 0) {
        cm_rma_watch_signal(); /* cmrun --timeout's request must not kill a rank still starting */
    }
    /* A program built with inline checks reads their shadow from its first instrumented store
     * on (its own constructors run after this one): map it before anything else. */
    if (dlsym(RTLD_DEFAULT, "cm_hooks_inline") != NULL && cm_shadow_map() != CM_OK) {
        _exit(1); /* logged */
    }
    /* A bad setting is reported once, by cm_init; nothing here depends on it then. */
    if (cm_config_load(&cfg, environ, err, sizeof(err)) != CM_OK) {
        return;
    }
    cm_log_level = (cm_log_level_t)cfg.log_level;
    if (rank >= 0 && !cfg.aslr && argv != NULL) {
        cm_pre_fixed_layout(argv, rank);
    }
    /* Only in a launched job: a tool started with the variable set (cm_info) keeps its stdin. */
    if (cfg.stdin_all && rank >= 0) {
        status = cm_boot_init(&cm_preinit.boot);
        if (status == CM_OK) {
            cm_log_set_rank(cm_boot_rank(cm_preinit.boot));
            status = cm_pre_stdin_broadcast(cm_preinit.boot);
        }
        if (status != CM_OK) {
            /* Logged where found; the job cannot run without its input. */
            if (cm_preinit.boot != NULL) {
                cm_boot_abort(cm_preinit.boot, 1, cm_status_string(status));
            }
            _exit(1);
        }
        cm_preinit.stdin_done = true;
    }
    cm_config_release(&cfg);
}
