/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit tests: CM_* configuration parsing, unknown-name detection, dump. */
#include "config.h"
#include "util/cm_variant.h"
#include "src/runtime/cm_check.h"
#include "util/cm_config.h"

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static char err[512];

static cm_status_t parse(const char *name, const char *value, void *dst)
{
    const cm_config_entry_t *e = cm_config_find(name);
    ck_assert_ptr_nonnull(e);
    err[0] = '\0';
    return cm_config_parse(e, value, dst, err, sizeof(err));
}

static size_t size_of(const char *v)
{
    size_t out = 0;
    ck_assert_msg(parse("CM_TMK_GC_BYTES", v, &out) == CM_OK, "'%s': %s", v, err); /* no least */
    return out;
}

static uint64_t time_of(const char *v)
{
    uint64_t out = 0;
    ck_assert_msg(parse("CM_NET_LATENCY", v, &out) == CM_OK, "'%s': %s", v, err);
    return out;
}

static double bw_of(const char *v)
{
    double out = -1;
    ck_assert_msg(parse("CM_NET_BANDWIDTH", v, &out) == CM_OK, "'%s': %s", v, err);
    return out;
}

START_TEST(test_sizes)
{
    size_t out;
    ck_assert_uint_eq(size_of("4096"), 4096);
    ck_assert_uint_eq(size_of("64k"), 65536);
    ck_assert_uint_eq(size_of("64K"), 65536);
    ck_assert_uint_eq(size_of("64KiB"), 65536);
    ck_assert_uint_eq(size_of("64kb"), 65536);
    ck_assert_uint_eq(size_of(" 16m "), 16u << 20);
    ck_assert_uint_eq(size_of("1g"), 1ul << 30);
    ck_assert_uint_eq(size_of("2T"), 2ul << 40);
    ck_assert_uint_eq(size_of("1.5k"), 1536);
    ck_assert_uint_eq(size_of("100b"), 100);
    ck_assert_uint_eq(size_of("0"), 0);
    static const char *const bad[] = {"", "abc", "-1", "10x", "1kk", "k", "1 g b", "+5", "99999999999t"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(parse("CM_TMK_GC_BYTES", bad[i], &out) == CM_ERR_INVALID, "'%s' accepted", bad[i]);
        ck_assert_msg(strncmp(err, "CM_TMK_GC_BYTES=", 16) == 0, "message names the setting: %s", err);
        ck_assert_ptr_null(strchr(err, '\n'));
    }
}
END_TEST

START_TEST(test_times)
{
    uint64_t out;
    ck_assert_uint_eq(time_of("10us"), 10000);
    ck_assert_uint_eq(time_of("2ms"), 2000000);
    ck_assert_uint_eq(time_of("1s"), 1000000000);
    ck_assert_uint_eq(time_of("500ns"), 500);
    ck_assert_uint_eq(time_of("1.5us"), 1500);
    ck_assert_uint_eq(time_of("2 us"), 2000);
    ck_assert_uint_eq(time_of("0"), 0);
    ck_assert_int_eq(parse("CM_NET_LATENCY", "10", &out), CM_ERR_INVALID);
    ck_assert_msg(strstr(err, "needs a time unit") != NULL, "%s", err);
    static const char *const bad[] = {"abc", "10 parsecs", "-1us", "us", "10usec", "1e30s"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(parse("CM_NET_OVERHEAD", bad[i], &out) == CM_ERR_INVALID, "'%s' accepted", bad[i]);
        ck_assert_msg(strncmp(err, "CM_NET_OVERHEAD=", 16) == 0, "%s", err);
    }
}
END_TEST

START_TEST(test_bandwidths)
{
    double out;
    ck_assert_double_eq(bw_of("400MB"), 400e6);
    ck_assert_double_eq(bw_of("400MB/s"), 400e6);
    ck_assert_double_eq(bw_of("400MBps"), 400e6);
    ck_assert_double_eq(bw_of("10Gb"), 10e9 / 8);
    ck_assert_double_eq(bw_of("256MiB"), 256.0 * 1024 * 1024);
    ck_assert_double_eq(bw_of("1.5GB/s"), 1.5e9);
    ck_assert_double_eq(bw_of("100B"), 100);
    ck_assert_double_eq(bw_of("0"), 0);
    ck_assert_double_eq(bw_of("unlimited"), 0);
    ck_assert_int_eq(parse("CM_NET_BANDWIDTH", "400", &out), CM_ERR_INVALID);
    ck_assert_msg(strstr(err, "needs a unit") != NULL, "%s", err);
    static const char *const bad[] = {"MB", "400XB", "400M", "fast", "-3MB", "4MiBb"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ck_assert_msg(parse("CM_NET_BANDWIDTH", bad[i], &out) == CM_ERR_INVALID, "'%s' accepted", bad[i]);
    }
}
END_TEST

START_TEST(test_bool_enum_addr)
{
    bool b;
    int e;
    uintptr_t a;
    ck_assert_int_eq(parse("CM_STDIN_ALL", "yes", &b), CM_OK);
    ck_assert(b);
    ck_assert_int_eq(parse("CM_STDIN_ALL", "OFF", &b), CM_OK);
    ck_assert(!b);
    ck_assert_int_eq(parse("CM_STDIN_ALL", "1", &b), CM_OK);
    ck_assert(b);
    ck_assert_int_eq(parse("CM_STDIN_ALL", "maybe", &b), CM_ERR_INVALID);

    ck_assert_int_eq(parse("CM_PROGRESS_THREAD", "on", &e), CM_OK);
    ck_assert_int_eq(e, CM_PROGRESS_ON);
    /* Keywords match exactly, with the right spelling offered: records see one name. */
    ck_assert_int_eq(parse("CM_PROGRESS_THREAD", "OFF", &e), CM_ERR_INVALID);
    ck_assert_msg(strstr(err, "did you mean CM_PROGRESS_THREAD=off?") != NULL, "%s", err);
    ck_assert_int_eq(parse("CM_VARIANT", "chsn", &e), CM_ERR_INVALID);
    ck_assert_msg(strstr(err, "CM_VARIANT='chsn'") != NULL &&
                  strstr(err, "did you mean CM_VARIANT=CHSN?") != NULL, "%s", err);
    ck_assert_int_eq(parse("CM_VARIANT", "CHSN", &e), CM_OK);
    ck_assert_int_eq(parse("CM_PROGRESS_THREAD", "off", &e), CM_OK);
    ck_assert_int_eq(e, CM_PROGRESS_OFF);
    ck_assert_int_eq(parse("CM_PROGRESS_THREAD", "sometimes", &e), CM_ERR_INVALID);
    ck_assert_msg(strstr(err, "auto|on|off") != NULL, "lists the values: %s", err);
    ck_assert_int_eq(parse("CM_LAUNCHER", "mpirun", &e), CM_OK);
    ck_assert_int_eq(e, CM_LAUNCHER_MPIRUN);
    ck_assert_int_eq(parse("CM_PROGRESS_THREAD", "o", &e), CM_ERR_INVALID); /* no prefixes */

    ck_assert_int_eq(parse("CM_SHARED_BASE", "0x1000", &a), CM_OK);
    ck_assert_uint_eq(a, 0x1000);
    ck_assert_int_eq(parse("CM_SHARED_BASE", "4096", &a), CM_OK);
    ck_assert_uint_eq(a, 4096);
    ck_assert_int_eq(parse("CM_SHARED_BASE", "zz", &a), CM_ERR_INVALID);
    ck_assert_int_eq(parse("CM_SHARED_BASE", "-5", &a), CM_ERR_INVALID);
    ck_assert_int_eq(parse("CM_SHARED_BASE", "0x1000 junk", &a), CM_ERR_INVALID);
}
END_TEST

/* The C enums and the table's value lists must agree, row by row. */
START_TEST(test_enum_order)
{
    char buf[64];
    int v = CM_PROGRESS_OFF;
    cm_config_format(cm_config_find("CM_PROGRESS_THREAD"), &v, buf, sizeof(buf));
    ck_assert_str_eq(buf, "off");
    v = CM_PROGRESS_AUTO;
    cm_config_format(cm_config_find("CM_PROGRESS_THREAD"), &v, buf, sizeof(buf));
    ck_assert_str_eq(buf, "auto");
    v = CM_LAUNCHER_PRTERUN;
    cm_config_format(cm_config_find("CM_LAUNCHER"), &v, buf, sizeof(buf));
    ck_assert_str_eq(buf, "prterun");
    v = CM_LAUNCHER_SRUN;
    cm_config_format(cm_config_find("CM_LAUNCHER"), &v, buf, sizeof(buf));
    ck_assert_str_eq(buf, "srun");
}
END_TEST

START_TEST(test_load_defaults)
{
    char *env[] = {"PATH=/bin", NULL};
    cm_config_t cfg;
    ck_assert_msg(cm_config_load(&cfg, env, err, sizeof(err)) == CM_OK, "defaults: %s", err);
    ck_assert_uint_eq(cfg.shared_base, 0x200000000000ull);
    ck_assert_uint_eq(cfg.shared_size, 64ul << 30);
    ck_assert_int_eq(cfg.progress_thread, CM_PROGRESS_AUTO);
    ck_assert_uint_eq(cfg.net_latency, 0);
    ck_assert(!cfg.stdin_all);
    ck_assert_ptr_nonnull(cfg.apps_dir);
    for (size_t i = 0; i < CM_CONFIG_NUM; i++) {
        ck_assert_ptr_null(cfg.raw[i]);
    }
    cm_config_release(&cfg);
}
END_TEST

START_TEST(test_load_env)
{
    char *env[] = {"CM_NET_LATENCY=5us", "CM_SHARED_SIZE=256m", "CM_LAUNCHER_ARGS=--foo bar",
                   "XCM_NET_OVERHEAD=zz", NULL};
    char *bad[] = {"CM_NET_LATENCY=5us", "CM_NET_OVERHEAD=lots", NULL};
    cm_config_t cfg;
    ck_assert_int_eq(cm_config_load(&cfg, env, err, sizeof(err)), CM_OK);
    ck_assert_uint_eq(cfg.net_latency, 5000);
    ck_assert_uint_eq(cfg.shared_size, 256u << 20);
    ck_assert_uint_eq(cfg.net_overhead, 0); /* XCM_ is not ours */
    ck_assert_str_eq(cfg.launcher_args, "--foo bar");
    ck_assert_str_eq(cfg.raw[CM_CONFIG_IDX_net_latency], "5us");
    cm_config_release(&cfg);

    ck_assert_int_eq(cm_config_load(&cfg, bad, err, sizeof(err)), CM_ERR_INVALID);
    ck_assert_msg(strstr(err, "CM_NET_OVERHEAD='lots'") != NULL, "%s", err);
}
END_TEST

static int nwarn;
static char warned[4][64], suggested[4][64];

static void on_unknown(const char *name, const char *suggestion, void *arg)
{
    (void)arg;
    if (nwarn < 4) {
        snprintf(warned[nwarn], sizeof(warned[0]), "%s", name);
        snprintf(suggested[nwarn], sizeof(suggested[0]), "%s", suggestion ? suggestion : "-");
    }
    nwarn++;
}

START_TEST(test_unknown)
{
    char *env[] = {"CM_NET_LATENCYY=1us", "CM_SHARED_BASE=0x1000", "CMAKE_PREFIX=/x", "CM_XYZZY_QUUX_FROB=1",
                   "cm_net_latency=1", "CM_progress_thread=on", NULL};
    nwarn = 0;
    ck_assert_int_eq(cm_config_check_unknown(env, on_unknown, NULL), 3);
    ck_assert_str_eq(warned[0], "CM_NET_LATENCYY");
    ck_assert_str_eq(suggested[0], "CM_NET_LATENCY");
    ck_assert_str_eq(warned[1], "CM_XYZZY_QUUX_FROB");
    ck_assert_str_eq(suggested[1], "-");
    ck_assert_str_eq(warned[2], "CM_progress_thread"); /* names are case-sensitive ... */
    ck_assert_str_eq(suggested[2], "CM_PROGRESS_THREAD"); /* ... but the hint is not */
    ck_assert_str_eq(cm_config_suggest("CM_SHARED_SIZ"), "CM_SHARED_SIZE");
    /* The scripts' own variables are no settings and no errors; the error is one line. */
    char *tools[] = {"CM_RESULTS_DIR=/r", "CM_VM_REPS=3", "CM_DEB_KEEP=1", "CM_BENCH=/b", NULL};
    ck_assert_int_eq(cm_config_check_unknown(tools, on_unknown, NULL), 0);
    char *two[] = {"CM_VARIENT=CHSN", "CM_XYZZY=1", "CM_VARIANT=CHSN", NULL};
    ck_assert_int_eq(cm_config_unknown_line(two, err, sizeof(err)), 2);
    ck_assert_str_eq(err, "unknown settings CM_VARIENT (did you mean CM_VARIANT?), CM_XYZZY; "
                          "`cm_info -c` lists every setting");
    ck_assert_int_eq(cm_config_unknown_line(tools, err, sizeof(err)), 0);
    ck_assert_str_eq(cm_config_suggest("CM_NET_BANDWITH"), "CM_NET_BANDWIDTH");
}
END_TEST

START_TEST(test_dump_lists_all)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    char *env[] = {"CM_NET_LATENCY=3us", NULL};
    cm_config_t cfg;

    ck_assert_int_eq(cm_config_load(&cfg, env, err, sizeof(err)), CM_OK);
    cm_config_dump(f, &cfg);
    fclose(f);
    for (size_t i = 0; i < CM_CONFIG_NUM; i++) {
        char line[128];
        snprintf(line, sizeof(line), "\n%s=", cm_config_entries[i].name);
        ck_assert_msg(strstr(text, line) != NULL, "%s missing from the dump", cm_config_entries[i].name);
        ck_assert_msg(strlen(cm_config_entries[i].doc) > 20, "%s has no real doc", cm_config_entries[i].name);
    }
    ck_assert_ptr_nonnull(strstr(text, "\nCM_NET_LATENCY=3us\n"));
    ck_assert_ptr_nonnull(strstr(text, "parsed: 3000ns"));
    free(text);
    cm_config_release(&cfg);
}
END_TEST

/* Unsigned settings with a range in the table: beyond it is a one-line error, not a later failure. */
START_TEST(test_uint_range)
{
    unsigned long v;
    ck_assert_int_eq(parse("CM_MERGE_LINES", "99999999999", &v), CM_ERR_INVALID);
    ck_assert_msg(strstr(err, "CM_MERGE_LINES='99999999999'") != NULL && strstr(err, "0..65536") != NULL,
                  "names the value and the range: %s", err);
    ck_assert_int_eq(parse("CM_MERGE_LINES", "65536", &v), CM_OK);
    ck_assert_uint_eq(v, 65536);
    ck_assert_int_eq(parse("CM_MERGE_LINES", "0", &v), CM_OK); /* CHSN has no merge buffer */
    ck_assert_int_eq(parse("CM_WN_RING", "0", &v), CM_ERR_INVALID);
    ck_assert_int_eq(parse("CM_LOCKS", "0", &v), CM_ERR_INVALID);
    ck_assert_int_eq(parse("CM_UNSAFE_THRESHOLD", "0", &v), CM_OK);
}
END_TEST

/* A size below the row's least: a bare number is a forgotten unit, and says so. */
START_TEST(test_size_least)
{
    size_t v;
    ck_assert_int_eq(parse("CM_SHARED_SIZE", "16", &v), CM_ERR_INVALID);
    ck_assert_str_eq(err, "CM_SHARED_SIZE='16' is 16 bytes, less than the least (64k): a size "
                          "without a unit is bytes; add one, e.g. CM_SHARED_SIZE=16g");
    ck_assert_int_eq(parse("CM_SHARED_SIZE", "32k", &v), CM_ERR_INVALID);
    ck_assert_str_eq(err, "CM_SHARED_SIZE='32k' is less than the least (64k)");
    ck_assert_int_eq(parse("CM_SHARED_SIZE", "64k", &v), CM_OK);
    ck_assert_int_eq(parse("CM_SHARED_SIZE", "16g", &v), CM_OK);
    ck_assert_uint_eq(v, 16ull << 30);
    ck_assert_int_eq(parse("CM_FORWARD_BATCH", "4096", &v), CM_OK); /* no least: bytes */
}
END_TEST

/* CM_STATS: empty, the keyword, or something that is recognizably a path. */
START_TEST(test_output)
{
    char *s = NULL;
    ck_assert_int_eq(parse("CM_STATS", "tabel", &s), CM_ERR_INVALID);
    ck_assert_msg(strstr(err, "CM_STATS='tabel'") != NULL && strstr(err, "did you mean table") != NULL,
                  "%s", err);
    ck_assert_ptr_null(strchr(err, '\n'));
    ck_assert_int_eq(parse("CM_STATS", "yes", &s), CM_ERR_INVALID);
    static const char *const good[] = {"", "table", "./tabel", "stats.json", "/tmp/x/s"};
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        ck_assert_msg(parse("CM_STATS", good[i], &s) == CM_OK, "'%s': %s", good[i], err);
        ck_assert_str_eq(s, good[i]);
        free(s);
    }
}
END_TEST

/* What a job can be refused for before it starts. */
START_TEST(test_check_job)
{
    char *env[] = {"CM_SHARED_SIZE=1t", NULL};
    char *nhhm[] = {"CM_VARIANT=NHHM", NULL};
    char *nhhm_delay[] = {"CM_VARIANT=NHHM", "CM_NET_LATENCY=1us", NULL};
    char *cas[] = {"CM_DIRECTORY=cas", NULL};
    cm_config_t cfg;
    cm_check_job_t job = {.nprocs = 2};
    cm_meta_layout_t meta;
    cm_layout_t layout;
    uint64_t per, fit;
    cm_check_cost_t cost;

    ck_assert_int_eq(cm_config_load(&cfg, env, err, sizeof(err)), CM_OK);
    /* The region is address space: reserved whole (two views at least), committed as touched. */
    ck_assert_int_eq(cm_check_cost(&cfg, 2, 4096, 1ull << 40, &cost), CM_OK);
    per = cost.reserved;
    ck_assert_uint_ge(per, 2ull << 40);
    ck_assert_uint_le(cost.per_page, 4096 / 8);            /* metadata per touched page */
    ck_assert_uint_lt(cost.fixed, 64ull << 20);            /* and whatever the size */
    ck_assert_int_eq(cm_check_cost(&cfg, 2, 4096, 1ull << 30, &cost), CM_OK);
    ck_assert_uint_lt(cost.reserved, per / 512);
    /* What fits in a budget fits, and is not far below it. */
    fit = cm_check_shared_fit(&cfg, 2, 4096, per);
    ck_assert_uint_ge(fit, (1ull << 40) - (1ull << 36));
    ck_assert_int_eq(cm_check_cost(&cfg, 2, 4096, fit, &cost), CM_OK);
    ck_assert_uint_le(cost.reserved, per);
    ck_assert_uint_eq(cm_check_shared_fit(&cfg, 2, 4096, 4096), 0);
    /* Refused: more address space than a process may have (ulimit -v), too many processes. */
    job.address_budget = per / 2;
    job.local_procs    = 2;
    ck_assert_int_ne(cm_check_job(&cfg, &job, 4096, &meta, &layout), CM_OK);
    job.address_budget = per;
    ck_assert_int_eq(cm_check_job(&cfg, &job, 4096, &meta, &layout), CM_OK);
    ck_assert_uint_eq(layout.shared_size, 1ull << 40);
    job.address_budget = 0; /* not checked */
    job.nprocs = 65;
    ck_assert_int_ne(cm_check_job(&cfg, &job, 4096, &meta, &layout), CM_OK);
    job.nprocs = 64;
    ck_assert_int_eq(cm_check_job(&cfg, &job, 4096, &meta, &layout), CM_OK);
    cm_config_release(&cfg);

    ck_assert_int_eq(cm_config_load(&cfg, cas, err, sizeof(err)), CM_OK);
    job.nprocs = 17;
    ck_assert_int_ne(cm_check_job(&cfg, &job, 4096, &meta, &layout), CM_OK);
    job.nprocs = 16;
    ck_assert_int_eq(cm_check_job(&cfg, &job, 4096, &meta, &layout), CM_OK);
    cm_config_release(&cfg);

    /* A variant whose mechanisms are not built is refused. */
    for (int v = 0; v < CM_VARIANT_COUNT; v++) {
        char setting[32];
        char *venv[] = {setting, NULL};
        if (cm_variant_implemented((cm_variant_t)v)) {
            continue;
        }
        snprintf(setting, sizeof(setting), "CM_VARIANT=%s", cm_variants[v].name);
        ck_assert_int_eq(cm_config_load(&cfg, venv, err, sizeof(err)), CM_OK);
        job.nprocs = 2;
        ck_assert_int_eq(cm_check_job(&cfg, &job, 4096, &meta, &layout), CM_ERR_UNSUPPORTED);
        cm_config_release(&cfg);
    }
    /* A map variant under injected delays is refused; without them it passes the check. */
    ck_assert_int_eq(cm_config_load(&cfg, nhhm, err, sizeof(err)), CM_OK);
    job.nprocs = 2;
    ck_assert_int_eq(cm_check_job(&cfg, &job, 4096, &meta, &layout),
                     cm_variant_implemented(CM_VARIANT_NHHM) ? CM_OK : CM_ERR_UNSUPPORTED);
    cm_config_release(&cfg);
    ck_assert_int_eq(cm_config_load(&cfg, nhhm_delay, err, sizeof(err)), CM_OK);
    ck_assert_int_eq(cm_check_job(&cfg, &job, 4096, &meta, &layout), CM_ERR_UNSUPPORTED);
    cm_config_release(&cfg);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("parse");
    tcase_add_test(tc, test_sizes);
    tcase_add_test(tc, test_times);
    tcase_add_test(tc, test_bandwidths);
    tcase_add_test(tc, test_bool_enum_addr);
    tcase_add_test(tc, test_enum_order);
    tcase_add_test(tc, test_load_defaults);
    tcase_add_test(tc, test_load_env);
    tcase_add_test(tc, test_unknown);
    tcase_add_test(tc, test_dump_lists_all);
    tcase_add_test(tc, test_uint_range);
    tcase_add_test(tc, test_size_least);
    tcase_add_test(tc, test_output);
    tcase_add_test(tc, test_check_job);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_suite());
    int failed;
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
