/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Leaving without cm_finalize: the runtime names the rank and the place, and
 * ends the job (cm_exit.c).
 */
#ifndef CM_EXIT_H
#define CM_EXIT_H

#include <stdbool.h>

/* Called by cm_init once the process is part of the job; later calls do nothing. */
void cm_exit_guard_install(void);

/*
 * cmrun's run directory (CM_RUN_DIR): the rank records its pid there at start
 * (rank.R), and at the end that it finished (done.R), reported its own error
 * (error.R) or was ended by SIGTERM, the launcher's way of ending the others
 * (term.R), or was killed by a fatal signal (signal.R: its number, and its last
 * words: glibc's abort or assert message, else the library's last line). A rank
 * that disappears with none of them died without a word: cmrun names it. Failures to write are ignored: the directory may not exist on
 * another host. cm_exit_record_end is async-signal-safe.
 */
void cm_exit_record_start(const char *dir, int rank);
/* After UCX (whose handlers it keeps) and before the page-fault handler (which passes the
 * faults outside the shared region on to it): records a fatal signal in signal.R. */
void cm_exit_crash_watch(void);
void cm_exit_record_end(bool error);

#endif
