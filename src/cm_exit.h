/*
 * Leaving without cm_finalize: the runtime names the rank and the place, and
 * ends the job (cm_exit.c).
 */
#ifndef CM_EXIT_H
#define CM_EXIT_H

/* Called by cm_init once the process is part of the job; later calls do nothing. */
void cm_exit_guard_install(void);

#endif
