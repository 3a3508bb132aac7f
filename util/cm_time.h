/* SPDX-License-Identifier: BSD-3-Clause */
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

/* Wall-clock time, seconds since the epoch (dates in records, not durations). */
static inline double cm_wall_time(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Cheap timestamps for the protocol's statistics, which time every lock,
 * acquire and release: clock_gettime costs 25 ns under kvm-clock, the
 * time-stamp counter 10 ns (the approach of UCX's ucs_get_time). Ticks are
 * converted with a rate calibrated once against CLOCK_MONOTONIC
 * (cm_ticks_calibrate); without a usable counter ticks are nanoseconds.
 */
extern double cm_ticks_ns_per_tick;

#if defined(__x86_64__)
#include <x86intrin.h>
static inline uint64_t cm_ticks(void)
{
    return (cm_ticks_ns_per_tick > 0) ? __rdtsc() : cm_time_ns();
}
#else
static inline uint64_t cm_ticks(void)
{
    return cm_time_ns();
}
#endif

static inline uint64_t cm_ticks_to_ns(uint64_t ticks)
{
    return (cm_ticks_ns_per_tick > 0) ? (uint64_t)((double)ticks * cm_ticks_ns_per_tick) : ticks;
}

/* Measures the counter's rate (about 2 ms); idempotent. */
void cm_ticks_calibrate(void);

#endif
