/*
 * What every application of the suite shares: --size test|paper|large and
 * explicit size flags, a timed parallel section, a verification that can
 * fail, and one result line. Same source for every protocol and variant.
 */
#ifndef CM_APP_H
#define CM_APP_H

#include <cm.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { APP_SIZE_TEST, APP_SIZE_PAPER, APP_SIZE_LARGE } app_size_t;

static inline void app_usage(const char *name, const char *flags)
{
    if (cm_rank() == 0) {
        fprintf(stderr, "usage: cmrun -n P %s [--size test|paper|large] %s\n", name, flags);
    }
    cm_finalize();
    exit(2);
}

/* splitmix64: the hash the apps derive their inputs from (a function of an index, not of P). */
static inline uint64_t app_hash64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* A uniform double in [0, 1) from the top 53 bits of r. */
static inline double app_unit(uint64_t r)
{
    return (double)(r >> 11) * 0x1p-53;
}

/* --size (default: paper). */
static inline app_size_t app_size(int argc, char **argv, const char *name, const char *flags)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
            const char *s = argv[i + 1];
            if (strcmp(s, "test") == 0) {
                return APP_SIZE_TEST;
            } else if (strcmp(s, "paper") == 0) {
                return APP_SIZE_PAPER;
            } else if (strcmp(s, "large") == 0) {
                return APP_SIZE_LARGE;
            }
            app_usage(name, flags);
        }
    }
    return APP_SIZE_PAPER;
}

/* An integer flag, or def; a malformed or non-positive value ends the program with usage. */
static inline long app_long(int argc, char **argv, const char *flag, long def, const char *name,
                            const char *flags)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], flag) == 0) {
            char *end;
            long v = (i + 1 < argc) ? strtol(argv[i + 1], &end, 10) : 0;
            if (i + 1 >= argc || *end != '\0' || v <= 0) {
                app_usage(name, flags);
            }
            return v;
        }
    }
    return def;
}

static inline bool app_flag(int argc, char **argv, const char *flag)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], flag) == 0) {
            return true;
        }
    }
    return false;
}

/* Rank 0 prints the result line and the verdict; the verdict is the exit status. */
static inline int app_report(const char *name, const char *params, double seconds, bool ok)
{
    if (cm_rank() == 0) {
        printf("%s: %s, %d processes: parallel section %.6f s\n", name, params, cm_nprocs(),
               seconds);
        printf("%s\n", ok ? "VERIFY OK" : "VERIFY FAILED");
        fflush(stdout);
    }
    return ok ? 0 : 1;
}

#endif
