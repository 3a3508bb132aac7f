/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A process that leaves without cm_finalize (exit, or a return from main)
 * leaves its peers waiting for it in the next barrier or lock. The launcher
 * would only say that some process exited; here the runtime says which rank
 * left and from where in the program, and ends the job at once.
 */
#define _GNU_SOURCE
#include "config.h"
#include "src/runtime/cm_exit.h"
#include "util/cm_log.h"
#include "src/runtime/cm_runtime.h"

#include <dlfcn.h>
#include <elf.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef CM_UBSAN
#include <sanitizer/common_interface_defs.h>
#endif

/*
 * The function of file containing addr (a run-time address; base is where the
 * file is loaded), from the file's own symbol table: programs rarely export
 * main, so dladdr alone does not know it. False if the file has no symbols.
 */
static bool cm_exit_function(const char *file, uintptr_t base, uintptr_t addr, char *name,
                             size_t len)
{
    struct stat st;
    const unsigned char *img;
    const ElfW(Ehdr) *eh;
    const ElfW(Shdr) *sh;
    bool found = false;
    int fd = open(file, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        return false;
    }
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(*eh)) {
        close(fd);
        return false;
    }
    img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (img == MAP_FAILED) {
        return false;
    }
    eh = (const ElfW(Ehdr) *)img;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_shentsize != sizeof(*sh) ||
        eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(*sh) > (uint64_t)st.st_size) {
        goto out_unmap;
    }
    /* Symbol values are link-time addresses: offsets from the load base, except in a
     * non-PIE executable, where they are the addresses themselves. */
    if (eh->e_type != ET_EXEC) {
        addr -= base;
    }
    sh = (const ElfW(Shdr) *)(img + eh->e_shoff);
    for (unsigned i = 0; i < eh->e_shnum && !found; i++) {
        const ElfW(Sym) *sym;
        const ElfW(Shdr) *strs;
        size_t n;

        if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum ||
            sh[i].sh_offset + sh[i].sh_size > (uint64_t)st.st_size) {
            continue;
        }
        strs = &sh[sh[i].sh_link];
        if (strs->sh_offset + strs->sh_size > (uint64_t)st.st_size) {
            continue;
        }
        sym = (const ElfW(Sym) *)(img + sh[i].sh_offset);
        n   = sh[i].sh_size / sizeof(*sym);
        for (size_t k = 0; k < n; k++) {
            if (ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC && sym[k].st_name < strs->sh_size &&
                addr >= sym[k].st_value && addr < sym[k].st_value + sym[k].st_size) {
                snprintf(name, len, "%.*s", (int)(strs->sh_size - sym[k].st_name),
                         (const char *)img + strs->sh_offset + sym[k].st_name);
                found = true;
                break;
            }
        }
    }
out_unmap:
    munmap((void *)img, (size_t)st.st_size);
    return found;
}

typedef enum { CM_EXIT_UNKNOWN, CM_EXIT_RETURNED, CM_EXIT_CALLED } cm_exit_how_t;

/*
 * How the process is leaving: main returned, or exit() was called, from where
 * (" in main (prog+0x1234)", or " at prog+0x1234" without symbols).
 */
static cm_exit_how_t cm_exit_caller(char *where, size_t len)
{
    void *frames[32];
    int n = backtrace(frames, 32);
    Dl_info libc, info;
    char fn[128], exe[512];
    const char *file;
    uintptr_t addr, off;
    ssize_t m;
    int i;

    if (dladdr((void *)exit, &libc) == 0) {
        return CM_EXIT_UNKNOWN;
    }
    /* This handler, libc's exit machinery and exit(), then exit's caller; or, when main
     * returned, libc's start code down to __libc_start_main. */
    for (i = 0; i < n; i++) {
        if (dladdr(frames[i], &info) != 0 && info.dli_fbase == libc.dli_fbase) {
            break;
        }
    }
    for (; i < n; i++) {
        if (dladdr(frames[i], &info) == 0 || info.dli_fbase != libc.dli_fbase) {
            break;
        }
        if (info.dli_sname != NULL && strcmp(info.dli_sname, "__libc_start_main") == 0) {
            return CM_EXIT_RETURNED;
        }
    }
    /* A return address: the call itself is just before it (exit does not return, so the
     * call may be the function's last instruction). */
    if (i >= n || dladdr((char *)frames[i] - 1, &info) == 0 || info.dli_fname == NULL) {
        return CM_EXIT_UNKNOWN;
    }
    addr = (uintptr_t)frames[i] - 1;
    off  = addr - (uintptr_t)info.dli_fbase;
    file = strrchr(info.dli_fname, '/') ? strrchr(info.dli_fname, '/') + 1 : info.dli_fname;
    /* The program may be named relative to a directory it has left: its own link then. */
    m = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[m > 0 ? m : 0] = '\0';
    if (cm_exit_function(info.dli_fname, (uintptr_t)info.dli_fbase, addr, fn, sizeof(fn)) ||
        (strrchr(exe, '/') && strcmp(strrchr(exe, '/') + 1, file) == 0 &&
         cm_exit_function(exe, (uintptr_t)info.dli_fbase, addr, fn, sizeof(fn)))) {
        snprintf(where, len, " in %s (%s+0x%lx)", fn, file, (unsigned long)off);
    } else {
        snprintf(where, len, " at %s+0x%lx", file, (unsigned long)off);
    }
    return CM_EXIT_CALLED;
}

static void cm_exit_handler(int status, void *arg)
{
    char where[256];

    (void)arg;
    if (!cm_rt.initialized) {
        return; /* finished properly, or never started */
    }
    /* The peers would wait for it forever: the job ends here, and not with status 0. */
    switch (cm_exit_caller(where, sizeof(where))) {
    case CM_EXIT_CALLED:
        cm_fatal(status ? status : 1, "rank %d called exit(%d)%s without cm_finalize: ending the "
                 "job", cm_rt.rank, status, where);
    case CM_EXIT_RETURNED:
        cm_fatal(status ? status : 1, "rank %d returned %d from main without cm_finalize: ending "
                 "the job", cm_rt.rank, status);
    default:
        cm_fatal(status ? status : 1, "rank %d exited (status %d) without cm_finalize: ending the "
                 "job", cm_rt.rank, status);
    }
}

static char cm_exit_done_path[512], cm_exit_error_path[512], cm_exit_term_path[512],
    cm_exit_signal_path[512];

static void cm_exit_touch(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

    if (fd >= 0) {
        if (write(fd, text, strlen(text)) < 0) {
            /* cmrun then sees no pid: the rank is merely not watched */
        }
        close(fd);
    }
}

/*
 * SIGTERM is how a launcher ends the other ranks once one has failed: recorded,
 * so that cmrun does not take them for ranks that died on their own.
 */
static void cm_exit_on_term(int sig)
{
    cm_exit_touch(cm_exit_term_path, "");
    signal(sig, SIG_DFL);
    raise(sig);
}

/*
 * A fatal signal (glibc's abort after heap corruption, a failed assert(), a segmentation
 * fault outside the shared region): recorded in signal.R with the process's last words, for
 * cmrun to say how the rank died instead of "without a word". The last words: glibc's own
 * message (its abort and assert messages are kept in __abort_msg, a GLIBC_PRIVATE symbol that
 * core-dump tools read too), else the library's last logged line. Then whatever handled the
 * signal before (UCX prints a backtrace for SIGSEGV, SIGBUS, SIGILL and SIGFPE), else the
 * default action, so the exit status and any core file are what they would have been.
 */
struct cm_exit_abort_msg {
    unsigned int size;
    char         msg[];
};
static struct cm_exit_abort_msg **cm_exit_glibc_msg;
static const int cm_exit_crash_signals[] = {SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGSEGV, SIGSYS,
                                            SIGTRAP};
#define CM_EXIT_NCRASH (sizeof(cm_exit_crash_signals) / sizeof(cm_exit_crash_signals[0]))
static struct sigaction cm_exit_crash_before[CM_EXIT_NCRASH];

/* Writes one line of at most len bytes of s (up to its first newline). */
static void cm_exit_write_line(int fd, const char *s, size_t len)
{
    size_t n = 0;

    while (n < len && s[n] != '\0' && s[n] != '\n') {
        n++;
    }
    if (write(fd, s, n) < 0 || write(fd, "\n", 1) < 0) {
        /* cmrun then has the signal alone */
    }
}

static void cm_exit_on_crash(int sig, siginfo_t *si, void *uctx)
{
    int fd = open(cm_exit_signal_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const struct sigaction *before = NULL;

    if (fd >= 0) {
        char num[4] = {(char)('0' + sig / 10), (char)('0' + sig % 10), '\n'};
        struct cm_exit_abort_msg *m = cm_exit_glibc_msg ? *cm_exit_glibc_msg : NULL;
        const char *last = cm_log_last();

        if (write(fd, sig < 10 ? num + 1 : num, sig < 10 ? 2 : 3) < 0) {
            /* nothing more to do */
        }
        if (m != NULL && m->size > sizeof(*m)) {
            if (write(fd, "glibc: ", 7) >= 0) {
                cm_exit_write_line(fd, m->msg, m->size - sizeof(*m));
            }
        } else if (last[0] != '\0') {
            cm_exit_write_line(fd, last, 255);
        }
        close(fd);
    }
    for (size_t i = 0; i < CM_EXIT_NCRASH; i++) {
        if (cm_exit_crash_signals[i] == sig) {
            before = &cm_exit_crash_before[i];
        }
    }
    if (before != NULL && (before->sa_flags & SA_SIGINFO) && before->sa_sigaction != NULL) {
        before->sa_sigaction(sig, si, uctx);
        return;
    }
    if (before != NULL && before->sa_handler != SIG_DFL && before->sa_handler != SIG_IGN &&
        before->sa_handler != NULL) {
        before->sa_handler(sig);
        return;
    }
    signal(sig, SIG_DFL);
    raise(sig); /* pending until we return: then the default action, where it happened */
}

void cm_exit_crash_watch(void)
{
    struct sigaction sa;

    if (cm_exit_signal_path[0] == '\0') {
        return; /* no run directory: nobody would read the record */
    }
    cm_exit_glibc_msg = dlvsym(RTLD_DEFAULT, "__abort_msg", "GLIBC_PRIVATE");
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = cm_exit_on_crash;
    sa.sa_flags     = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < CM_EXIT_NCRASH; i++) {
        if (sigaction(cm_exit_crash_signals[i], &sa, &cm_exit_crash_before[i]) != 0) {
            cm_exit_crash_before[i].sa_handler = SIG_DFL;
        }
    }
}

#ifdef CM_UBSAN
/* A sanitizer report ends the process with _exit after printing why: the rank said why
 * itself, which cmrun must not take for a rank that died without a word. */
static void cm_exit_on_sanitizer_death(void)
{
    cm_exit_touch(cm_exit_error_path, "");
}
#endif

void cm_exit_record_start(const char *dir, int rank)
{
    char path[512], pid[32];
    struct sigaction sa, old;

    /* The paths now: at the end there may be no time (a signal) for more than writing. */
    if (snprintf(path, sizeof(path), "%s/rank.%d", dir, rank) >= (int)sizeof(path) ||
        snprintf(cm_exit_done_path, sizeof(cm_exit_done_path), "%s/done.%d", dir, rank) >=
            (int)sizeof(cm_exit_done_path) ||
        snprintf(cm_exit_error_path, sizeof(cm_exit_error_path), "%s/error.%d", dir, rank) >=
            (int)sizeof(cm_exit_error_path) ||
        snprintf(cm_exit_term_path, sizeof(cm_exit_term_path), "%s/term.%d", dir, rank) >=
            (int)sizeof(cm_exit_term_path) ||
        snprintf(cm_exit_signal_path, sizeof(cm_exit_signal_path), "%s/signal.%d", dir, rank) >=
            (int)sizeof(cm_exit_signal_path)) {
        cm_exit_done_path[0] = cm_exit_error_path[0] = cm_exit_signal_path[0] = '\0';
        return;
    }
    /* Only where the program has no SIGTERM handler of its own. */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = cm_exit_on_term;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, NULL, &old) == 0 && old.sa_handler == SIG_DFL) {
        sigaction(SIGTERM, &sa, NULL);
    }
#ifdef CM_UBSAN
    __sanitizer_set_death_callback(cm_exit_on_sanitizer_death);
#endif
    snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    cm_exit_touch(path, pid);
}

void cm_exit_record_end(bool error)
{
    const char *path = error ? cm_exit_error_path : cm_exit_done_path;

    if (path[0] != '\0') {
        cm_exit_touch(path, "");
    }
}

void cm_exit_guard_install(void)
{
    static bool installed;

    if (!installed && on_exit(cm_exit_handler, NULL) == 0) {
        installed = true;
    }
}
