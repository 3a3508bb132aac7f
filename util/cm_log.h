/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Logging: one line per message, prefixed "cashmere[rank]: ". Errors are
 * logged once, where they are found; callers up the stack only propagate the
 * status.
 */
#ifndef CM_LOG_H
#define CM_LOG_H

#include <stdarg.h>

typedef enum {
    CM_LOG_ERROR = 0,
    CM_LOG_WARN,
    CM_LOG_INFO,
    CM_LOG_DEBUG
} cm_log_level_t;

extern cm_log_level_t cm_log_level;

/* The rank shown in the prefix; before it is known, guessed from the launcher's environment. */
void cm_log_set_rank(int rank);
int cm_log_get_rank(void);

void cm_log(cm_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cm_logv(cm_log_level_t level, const char *fmt, va_list ap);
/* The last line this process logged ("" if none): async-signal-safe to read. */
const char *cm_log_last(void);
/* Error lines this process has written so far. */
unsigned cm_log_error_count(void);

#define cm_error(...) cm_log(CM_LOG_ERROR, __VA_ARGS__)
#define cm_warn(...)  cm_log(CM_LOG_WARN, __VA_ARGS__)
#define cm_info(...)  do { if (cm_log_level >= CM_LOG_INFO) cm_log(CM_LOG_INFO, __VA_ARGS__); } while (0)
#define cm_debug(...) do { if (cm_log_level >= CM_LOG_DEBUG) cm_log(CM_LOG_DEBUG, __VA_ARGS__); } while (0)

/*
 * What ends the job after a fatal error. The runtime installs one that asks the
 * process manager to kill every rank (PMIx_Abort); the default just exits.
 */
typedef void (*cm_log_abort_fn_t)(int status, const char *msg);
void cm_log_set_abort_hook(cm_log_abort_fn_t fn);

/* Logs an error line and ends the whole job with status (non-zero). */
void cm_fatal(int status, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
void cm_fatalv(int status, const char *fmt, va_list ap) __attribute__((noreturn));

#endif
