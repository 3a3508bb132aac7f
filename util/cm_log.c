/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"
#include "util/cm_log.h"
#include "util/cm_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

cm_log_level_t cm_log_level = CM_LOG_WARN;

static int cm_log_rank = -2; /* -2: not looked up yet, -1: unknown */
static char cm_log_last_line[256]; /* the last line written, for a crash report */
static cm_log_abort_fn_t cm_log_abort_hook;
static unsigned cm_log_errors; /* error lines this process wrote */

static const char *const cm_log_level_names[] = {"error", "warning", "info", "debug"};

/* Launchers export the rank before PMIx is up; good enough for early messages. */
static int cm_log_rank_from_env(void)
{
    static const char *const vars[] = {"PMIX_RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        if (v != NULL && *v != '\0') {
            return atoi(v);
        }
    }
    return -1;
}

void cm_log_set_rank(int rank)
{
    cm_log_rank = rank;
}

int cm_log_get_rank(void)
{
    if (cm_log_rank == -2) {
        cm_log_rank = cm_log_rank_from_env();
    }
    return cm_log_rank;
}

void cm_logv(cm_log_level_t level, const char *fmt, va_list ap)
{
    char line[1024];
    int rank = cm_log_get_rank();
    int n;

    if (level > cm_log_level) {
        return;
    }
    if (level == CM_LOG_ERROR) {
        __atomic_add_fetch(&cm_log_errors, 1, __ATOMIC_RELAXED);
    }
    if (rank >= 0) {
        n = snprintf(line, sizeof(line), "cashmere[%d]: %s: ", rank, cm_log_level_names[level]);
    } else {
        n = snprintf(line, sizeof(line), "cashmere: %s: ", cm_log_level_names[level]);
    }
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    /* One write(2) per line so that lines from concurrent ranks do not interleave. */
    size_t len = strlen(line);
    if (len + 1 < sizeof(line)) {
        line[len++] = '\n';
    } else {
        line[sizeof(line) - 2] = '\n';
        len = sizeof(line) - 1;
    }
    fflush(stdout);
    if (write(STDERR_FILENO, line, len) < 0) {
        /* nowhere left to report it */
    }
    /* Racy against a crash handler reading it: a torn line is still a line, and it ends
     * within the buffer. */
    len = len - 1 < sizeof(cm_log_last_line) - 1 ? len - 1 : sizeof(cm_log_last_line) - 1;
    memcpy(cm_log_last_line, line, len);
    cm_log_last_line[len] = '\0';
}

const char *cm_log_last(void)
{
    return cm_log_last_line;
}

unsigned cm_log_error_count(void)
{
    return __atomic_load_n(&cm_log_errors, __ATOMIC_RELAXED);
}

void cm_log(cm_log_level_t level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cm_logv(level, fmt, ap);
    va_end(ap);
}

void cm_log_set_abort_hook(cm_log_abort_fn_t fn)
{
    cm_log_abort_hook = fn;
}

void cm_fatalv(int status, const char *fmt, va_list ap)
{
    char msg[512];
    va_list ap2;

    va_copy(ap2, ap);
    vsnprintf(msg, sizeof(msg), fmt, ap2);
    va_end(ap2);
    cm_log(CM_LOG_ERROR, "%s", msg);
    if (status == 0) {
        status = 1;
    }
    fflush(stdout);
    fflush(stderr);
    if (cm_log_abort_hook != NULL) {
        cm_log_abort_hook(status, msg);
    }
    _exit(status);
}

void cm_fatal(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cm_fatalv(status, fmt, ap);
}

void cm_assert_fail(const char *expr, const char *file, int line, const char *func)
{
    cm_fatal(134, "internal error: assertion %s failed (%s:%d, %s)", expr, file, line, func);
}
