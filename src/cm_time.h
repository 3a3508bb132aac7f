/* Monotonic clock helpers shared by the runtime, rma/ and the tools. */
#ifndef CM_TIME_H
#define CM_TIME_H

#include <stdint.h>
#include <time.h>

static inline uint64_t cm_time_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double cm_time_sec(void)
{
    return (double)cm_time_ns() * 1e-9;
}

#endif
