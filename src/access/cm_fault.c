/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Access detection: a SIGSEGV on the application view of the shared region is
 * a protocol event; anything else is a real crash and gets the previous
 * disposition.
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/access/cm_fault.h"
#include "src/access/cm_replica_heap.h"
#include "util/cm_log.h"
#include "src/access/cm_shadow.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

static struct sigaction cm_fault_previous;
static volatile sig_atomic_t cm_fault_depth;
static uintptr_t cm_fault_lo, cm_fault_span;
static cm_status_t (*cm_fault_fn)(void *addr, bool write);
static uintptr_t cm_fault_ip; /* the faulting instruction, while its fault is handled */

static uintptr_t cm_fault_insn(void *uctx)
{
#if defined(__x86_64__)
    return (uintptr_t)((ucontext_t *)uctx)->uc_mcontext.gregs[REG_RIP];
#else
    (void)uctx;
    return 0;
#endif
}

uintptr_t cm_fault_pc(void)
{
    return cm_fault_ip;
}

static bool cm_fault_is_write(void *uctx)
{
#if defined(__x86_64__)
    /* Page-fault error code, bit 1: the access was a write. */
    return (((ucontext_t *)uctx)->uc_mcontext.gregs[REG_ERR] & 0x2) != 0;
#else
    (void)uctx;
    return false; /* unknown: counted as a read fault */
#endif
}

static void cm_fault_handler(int sig, siginfo_t *si, void *uctx)
{
    uintptr_t addr = (uintptr_t)si->si_addr;
    int saved_errno = errno;
    cm_status_t status;

    if (cm_shadow_fault(addr)) {
        /* First use of a page of the inline checks' shadow: filled, the check runs again. */
        errno = saved_errno;
        return;
    }
    if (addr - cm_fault_lo >= cm_fault_span || cm_fault_fn == NULL) {
        /* Not ours: let the previous handler (or the default crash) have it. */
        if ((cm_fault_previous.sa_flags & SA_SIGINFO) && cm_fault_previous.sa_sigaction != NULL) {
            cm_fault_previous.sa_sigaction(sig, si, uctx);
        } else if (cm_fault_previous.sa_handler != SIG_IGN &&
                   cm_fault_previous.sa_handler != SIG_DFL && cm_fault_previous.sa_handler != NULL) {
            cm_fault_previous.sa_handler(sig);
        } else {
            signal(sig, SIG_DFL); /* returning re-executes the access: a normal crash */
        }
        errno = saved_errno;
        return;
    }
    if (cm_fault_depth++ > 0) {
        cm_fatal(1, "page fault at %p while handling another one (inside the protocol)",
                 (void *)addr);
    }
    CM_RT_ENTER();
    cm_fault_ip = cm_fault_insn(uctx);
    status = cm_fault_fn((void *)addr, cm_fault_is_write(uctx));
    cm_fault_ip = 0;
    CM_RT_LEAVE();
    if (status != CM_OK) {
        cm_fatal(1, "cannot service the page fault at %p: %s", (void *)addr,
                 cm_status_string(status));
    }
    cm_fault_depth--;
    errno = saved_errno;
}

cm_status_t cm_fault_install(void *lo, size_t span, cm_status_t (*fn)(void *addr, bool write))
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = cm_fault_handler;
    sa.sa_flags     = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    cm_fault_lo   = (uintptr_t)lo;
    cm_fault_span = span;
    cm_fault_fn   = fn;
    if (sigaction(SIGSEGV, &sa, &cm_fault_previous) != 0) {
        cm_error("cannot install the SIGSEGV handler: %s", strerror(errno));
        return CM_ERR_INVALID;
    }
    return CM_OK;
}

void cm_fault_uninstall(void)
{
    sigaction(SIGSEGV, &cm_fault_previous, NULL);
    cm_fault_fn   = NULL;
    cm_fault_span = 0;
}
