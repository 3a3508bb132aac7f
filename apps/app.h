/* SPDX-License-Identifier: BSD-3-Clause */
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

/*
 * The usage line, once (rank 0), and the end of the program on every rank. With
 * status 0 (--help) on stdout with a line per flag; else on stderr after why.
 */
static inline void app_usage_exit(const char *name, const char *flags, const char *why, int status)
{
    if (cm_rank() == 0) {
        FILE *out = (status == 0) ? stdout : stderr;
        if (why != NULL) {
            fprintf(stderr, "%s: %s\n", name, why);
        }
        fprintf(out, "usage: cmrun -n P %s [--size test|paper|large] %s [--corrupt] [--help]\n", name,
                flags);
        if (status == 0) {
            fprintf(out, "  --size test|paper|large  input preset (default paper, the paper's input); "
                         "the flags below override it\n");
            for (const char *p = strchr(flags, '['); p != NULL; p = strchr(p + 1, '[')) {
                fprintf(out, "  %.*s\n", (int)strcspn(p + 1, "]"), p + 1);
            }
            fprintf(out, "  --corrupt                alter one shared value after the timed section: "
                         "the verification must fail\n");
        }
        fflush(out);
    }
    cm_finalize();
    exit(status);
}

static inline void app_usage(const char *name, const char *flags)
{
    app_usage_exit(name, flags, NULL, 2);
}

/* Is arg one of the app's flags ("[--name VALUE]" in flags: takes a value; "[--name]": none)? */
static inline bool app_known_flag(const char *flags, const char *arg, bool *takes_value)
{
    size_t n = strlen(arg);

    for (const char *p = strstr(flags, "[--"); p != NULL; p = strstr(p + 1, "[--")) {
        size_t len = strcspn(p + 1, " ]");
        if (len == n && strncmp(p + 1, arg, n) == 0) {
            *takes_value = (p[1 + len] == ' ');
            return true;
        }
    }
    return false;
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

/*
 * --size (default: paper), after checking every argument against the app's
 * flags: an unknown one, or a flag without its value, is a usage error rather
 * than a silent run of the full paper size. --help prints the usage and ends.
 */
static inline app_size_t app_size(int argc, char **argv, const char *name, const char *flags)
{
    app_size_t size = APP_SIZE_PAPER;
    char why[160];
    bool value;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            app_usage_exit(name, flags, NULL, 0);
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--size") == 0) {
            const char *s = (i + 1 < argc) ? argv[++i] : "";
            if (strcmp(s, "test") == 0) {
                size = APP_SIZE_TEST;
            } else if (strcmp(s, "paper") == 0) {
                size = APP_SIZE_PAPER;
            } else if (strcmp(s, "large") == 0) {
                size = APP_SIZE_LARGE;
            } else {
                snprintf(why, sizeof(why), "--size needs test, paper or large%s%s%s", *s ? " (not '" : "",
                         s, *s ? "')" : "");
                app_usage_exit(name, flags, why, 2);
            }
        } else if (strcmp(a, "--corrupt") == 0) {
            continue;
        } else if (app_known_flag(flags, a, &value)) {
            if (value && i + 1 >= argc) {
                snprintf(why, sizeof(why), "%s needs a value", a);
                app_usage_exit(name, flags, why, 2);
            }
            i += value;
        } else {
            snprintf(why, sizeof(why), "unknown argument '%s'", a);
            app_usage_exit(name, flags, why, 2);
        }
    }
    return size;
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
                char why[160];
                snprintf(why, sizeof(why), "%s needs a positive integer", flag);
                app_usage_exit(name, flags, why, 2);
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

/*
 * Rank 0 prints the result line and the verdict; the verdict is the exit status. The line
 * names what ran: "sor: 64 x 64, 10 iterations, 2 processes: parallel section 0.001835 s,
 * protocol cashmere variant CHSM" (no variant under treadmarks and none).
 */
static inline int app_report(const char *name, const char *params, double seconds, bool ok)
{
    if (cm_rank() == 0) {
        const char *variant = cm_variant_name();
        printf("%s: %s, %d processes: parallel section %.6f s, protocol %s%s%s\n", name, params,
               cm_nprocs(), seconds, cm_protocol_name(), variant ? " variant " : "",
               variant ? variant : "");
        printf("%s\n", ok ? "VERIFY OK" : "VERIFY FAILED");
        fflush(stdout);
    }
    return ok ? 0 : 1;
}

#endif
