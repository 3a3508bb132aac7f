/* SPDX-License-Identifier: BSD-3-Clause */
/* Calibration of the time-stamp counter used for the protocol's statistics. */
#define _GNU_SOURCE
#include "util/cm_time.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

double cm_ticks_ns_per_tick = 0; /* 0: ticks are nanoseconds */

#if defined(__x86_64__)
/* Only a counter that ticks at a constant rate in every power state is a clock. */
static bool cm_ticks_invariant(void)
{
    char line[4096];
    bool constant = false, nonstop = false;
    FILE *f = fopen("/proc/cpuinfo", "r");

    if (f == NULL) {
        return false;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "flags", 5) == 0) {
            constant = strstr(line, " constant_tsc") != NULL;
            nonstop  = strstr(line, " nonstop_tsc") != NULL;
            break;
        }
    }
    fclose(f);
    return constant && nonstop;
}
#endif

void cm_ticks_calibrate(void)
{
#if defined(__x86_64__)
    uint64_t n0, n1, t0, t1;

    if (cm_ticks_ns_per_tick > 0 || !cm_ticks_invariant()) {
        return;
    }
    n0 = cm_time_ns();
    t0 = __rdtsc();
    do {
        n1 = cm_time_ns();
    } while (n1 - n0 < 2000000);
    t1 = __rdtsc();
    if (t1 > t0) {
        cm_ticks_ns_per_tick = (double)(n1 - n0) / (double)(t1 - t0);
    }
#endif
}
