/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the statistics' exclusive phase timers (util/cm_stats.h): a nested phase stops
 * its parent's clock, so that the breakdown of experiments/paper (Fig. 2) can add timers up.
 * The checks are inequalities between a phase's charge and spans the test measures itself on
 * the same clock, inside or around the phase: no timing threshold. Then the JSON of the
 * statistics (schema cashmere-stats/1, docs/STATS.md), parsed back, and the table's units.
 */
#include "config.h"
#include "util/cm_stats.h"
#include "util/cm_json.h"
#include "util/cm_time.h"

#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static volatile uint64_t sink;

static void busy(void)
{
    for (int i = 0; i < 200000; i++) {
        sink += (uint64_t)i;
    }
}

START_TEST(test_phase_charges_its_span)
{
    uint64_t a = 0, t0, t1, *outer;

    ck_assert_ptr_null(cm_stats_phase_acc);
    t0    = cm_ticks();
    outer = cm_stats_phase_enter(&a);
    busy();
    cm_stats_phase_leave(outer);
    t1 = cm_ticks();
    ck_assert_ptr_null(outer);
    ck_assert_ptr_null(cm_stats_phase_acc); /* nothing left open */
    ck_assert_uint_gt(a, 0);
    ck_assert_uint_le(a, cm_ticks_to_ns(t1 - t0) + 1);
}
END_TEST

START_TEST(test_phase_nested_is_exclusive)
{
    uint64_t a = 0, b = 0, t0, t1, s0, s1, s2, s3, i0, i1, *outer, *inner;

    t0    = cm_ticks();
    outer = cm_stats_phase_enter(&a);
    s0    = cm_ticks();
    busy();
    s1    = cm_ticks();
    inner = cm_stats_phase_enter(&b);
    ck_assert_ptr_eq(inner, &a);
    i0 = cm_ticks();
    busy();
    busy();
    i1 = cm_ticks();
    cm_stats_phase_leave(inner);
    ck_assert_ptr_eq(cm_stats_phase_acc, &a);
    s2 = cm_ticks();
    busy();
    s3 = cm_ticks();
    cm_stats_phase_leave(outer);
    t1 = cm_ticks();
    /* Together no more than the whole; each at least what ran only inside it. */
    ck_assert_uint_le(a + b, cm_ticks_to_ns(t1 - t0) + 2);
    ck_assert_uint_ge(b + 1, cm_ticks_to_ns(i1 - i0));
    ck_assert_uint_ge(a + 2, cm_ticks_to_ns(s1 - s0) + cm_ticks_to_ns(s3 - s2));
    /* The parent was not charged for the child: a is at most the whole less the inner span. */
    ck_assert_uint_le(a, cm_ticks_to_ns(t1 - t0) - cm_ticks_to_ns(i1 - i0) + 2);
}
END_TEST

static int busy_value(int v)
{
    busy();
    return v;
}

START_TEST(test_in_phase_gives_the_value)
{
    uint64_t a = 0, t0, t1;
    int v;

    t0 = cm_ticks();
    v  = CM_STATS_IN_PHASE(&a, busy_value(7));
    t1 = cm_ticks();
    ck_assert_int_eq(v, 7);
    ck_assert_uint_gt(a, 0);
    ck_assert_uint_le(a, cm_ticks_to_ns(t1 - t0) + 1);
    ck_assert_ptr_null(cm_stats_phase_acc);
}
END_TEST

static uint64_t thread_acc;
static void *thread_main(void *arg)
{
    uint64_t **outer_seen = arg;
    uint64_t *outer       = cm_stats_phase_enter(&thread_acc);

    *outer_seen = outer;
    busy();
    cm_stats_phase_leave(outer);
    return NULL;
}

START_TEST(test_phase_per_thread)
{
    uint64_t a = 0, *outer, *seen = (uint64_t *)1;
    pthread_t t;

    outer = cm_stats_phase_enter(&a);
    ck_assert_int_eq(pthread_create(&t, NULL, thread_main, &seen), 0);
    ck_assert_int_eq(pthread_join(t, NULL), 0);
    /* The other thread started with no phase: our open one is not its parent. */
    ck_assert_ptr_null(seen);
    ck_assert_uint_gt(thread_acc, 0);
    ck_assert_ptr_eq(cm_stats_phase_acc, &a);
    cm_stats_phase_leave(outer);
}
END_TEST

START_TEST(test_total_sums_and_takes_the_longest_run)
{
    cm_stats_t per[3] = {{0}}, tot;

    per[0].total_ns = 10; per[1].total_ns = 30; per[2].total_ns = 20;
    per[0].fault_ns = 1;  per[1].fault_ns = 2;  per[2].fault_ns = 3;
    per[2].page_copy_ns = 7;
    cm_stats_total(per, 3, &tot);
    ck_assert_uint_eq(tot.total_ns, 30);
    ck_assert_uint_eq(tot.fault_ns, 6);
    ck_assert_uint_eq(tot.page_copy_ns, 7);
}
END_TEST

/* What f wrote, in a malloc'ed buffer. */
static char *captured(void (*fn)(FILE *, void *), void *arg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    ck_assert_ptr_nonnull(f);
    fn(f, arg);
    fclose(f);
    return buf;
}

#define COUNT_ONE(_name, _doc) +1
#define N_TIMERS (0 CM_STATS_TIMERS(COUNT_ONE))
#define N_COUNTERS (0 CM_STATS_COUNTERS(COUNT_ONE))

typedef struct {
    cm_stats_run_t   run;
    cm_stats_where_t where[2];
    cm_stats_t       per[2];
} json_case_t;

static void write_case(FILE *f, void *arg)
{
    json_case_t *c = arg;
    cm_stats_write_json(f, &c->run, c->where, c->per, 2);
}

static cm_json_t *parse_case(json_case_t *c)
{
    char *text = captured(write_case, c), err[160];
    cm_json_t *v;

    ck_assert_msg(cm_json_parse(text, strlen(text), &v, err, sizeof(err)) == CM_OK, "%s\n%s", err,
                  text);
    free(text);
    return v;
}

static const char *str(const cm_json_t *obj, const char *key)
{
    const cm_json_t *m = cm_json_get(obj, key);
    ck_assert_msg(m != NULL && (m->type == CM_JSON_STRING || m->type == CM_JSON_NUMBER),
                  "no scalar %s", key);
    return m->text;
}

static void json_case_init(json_case_t *c)
{
    static const char *const args[] = {"--name", "a \"quoted\" \\ arg", "tab\there"};

    memset(c, 0, sizeof(*c));
    c->run.program     = "we\"ird\\prog";
    c->run.binary      = "we\"ird\\prog.hooks";
    c->run.args        = args;
    c->run.nargs       = 3;
    c->run.protocol    = "cashmere";
    c->run.variant     = "CHSM";
    c->run.fill        = "page";
    c->run.write       = "hooks";
    c->run.merge       = "buffer";
    c->run.build       = "stores";
    c->run.fabric      = "any";
    c->run.description = "line one\nline \"two\"\x01";
    c->run.nprocs      = 2;
    c->run.nodes       = 1;
    c->run.procs_per_node = 2;
    c->run.version     = "0.1.0";
    c->run.commit      = "abc1234-dirty";
    c->run.hostname    = "node\\1";
    c->run.cores       = 8;
    c->run.kernel      = "Linux 6.1.0 x86_64";
    c->run.ucx_version = "1.13.1";
    c->run.ucx_tls     = NULL;
    c->run.transports  = "sysv/memory+posix/memory";
    c->run.start       = 1700000000.25;
    c->run.end         = 1700000001.5;
    snprintf(c->where[0].host, sizeof(c->where[0].host), "node\\1");
    snprintf(c->where[1].host, sizeof(c->where[1].host), "node\\1");
    c->where[0].local_procs = c->where[1].local_procs = 2;
    c->where[0].pid = 10;
    c->where[1].pid = 11;
    c->per[0].total_ns = 3000000; c->per[1].total_ns = 5000000;
    c->per[0].fault_ns = 1000;    c->per[1].fault_ns = 2000;
    c->per[0].read_faults = 7;    c->per[1].read_faults = 18446744073709551600ull;
}

START_TEST(test_json_schema_and_strings)
{
    json_case_t c;
    cm_json_t *v;
    const cm_json_t *m, *args, *procs, *total;

    json_case_init(&c);
    v = parse_case(&c);
    ck_assert_str_eq(str(v, "schema"), "cashmere-stats/1");
    /* every string comes back as it was given */
    ck_assert_str_eq(str(v, "program"), c.run.program);
    ck_assert_str_eq(str(v, "binary"), c.run.binary);
    ck_assert_str_eq(str(v, "description"), c.run.description);
    args = cm_json_get(v, "args");
    ck_assert_int_eq(args->type, CM_JSON_ARRAY);
    ck_assert_str_eq(args->child->next->text, "a \"quoted\" \\ arg");
    ck_assert_str_eq(args->child->next->next->text, "tab\there");
    ck_assert_str_eq(str(v, "protocol"), "cashmere");
    ck_assert_str_eq(str(v, "variant"), "CHSM");
    m = cm_json_get(v, "mechanisms");
    ck_assert_str_eq(str(m, "fill"), "page");
    ck_assert_str_eq(str(m, "write"), "hooks");
    ck_assert_str_eq(str(m, "merge"), "buffer");
    ck_assert_str_eq(str(cm_json_get(v, "job"), "nprocs"), "2");
    ck_assert_str_eq(str(cm_json_get(v, "job"), "procs_per_node"), "2");
    ck_assert_str_eq(str(cm_json_get(v, "library"), "commit"), "abc1234-dirty");
    ck_assert_str_eq(str(cm_json_get(v, "machine"), "hostname"), "node\\1");
    ck_assert_str_eq(str(cm_json_get(v, "machine"), "cores"), "8");
    ck_assert_int_eq(cm_json_get(cm_json_get(v, "ucx"), "tls")->type, CM_JSON_NULL);
    ck_assert_str_eq(str(cm_json_get(v, "time"), "start"), "2023-11-14T22:13:20.250Z");
    ck_assert_str_eq(str(cm_json_get(v, "time"), "end"), "2023-11-14T22:13:21.500Z");
    /* per process: where, then timers (ns) and counters; 64-bit counts exact */
    procs = cm_json_get(v, "processes");
    ck_assert_str_eq(str(procs->child, "rank"), "0");
    ck_assert_str_eq(str(procs->child->next, "rank"), "1");
    ck_assert_ptr_null(procs->child->next->next);
    ck_assert_str_eq(str(procs->child->next, "pid"), "11");
    ck_assert_str_eq(str(cm_json_get(procs->child, "timers"), "fault_ns"), "1000");
    ck_assert_str_eq(str(cm_json_get(procs->child->next, "counters"), "read_faults"),
                     "18446744073709551600");
    /* the total: sums, but the job's wall time is its longest process's */
    total = cm_json_get(v, "total");
    ck_assert_str_eq(str(cm_json_get(total, "timers"), "total_ns"), "5000000");
    ck_assert_str_eq(str(cm_json_get(total, "timers"), "fault_ns"), "3000");
    ck_assert_str_eq(str(cm_json_get(total, "counters"), "read_faults"), "18446744073709551607");
    cm_json_free(v);
}
END_TEST

START_TEST(test_json_timers_are_ns_counters_are_not)
{
    json_case_t c;
    cm_json_t *v;
    const cm_json_t *timers, *counters;
    size_t n = 0, k = 0;

    json_case_init(&c);
    v = parse_case(&c);
    timers   = cm_json_get(cm_json_get(v, "total"), "timers");
    counters = cm_json_get(cm_json_get(v, "total"), "counters");
    for (const cm_json_t *t = timers->child; t != NULL; t = t->next, n++) {
        size_t l = strlen(t->key);
        ck_assert_msg(l > 3 && strcmp(t->key + l - 3, "_ns") == 0, "timer %s is not NAME_ns", t->key);
    }
    for (const cm_json_t *t = counters->child; t != NULL; t = t->next, k++) {
        ck_assert_msg(strstr(t->key, "_ns") == NULL, "counter %s named like a timer", t->key);
    }
    ck_assert_uint_eq(n, N_TIMERS);
    ck_assert_uint_eq(n + k, sizeof(cm_stats_t) / sizeof(uint64_t));
    cm_json_free(v);
}
END_TEST

START_TEST(test_json_treadmarks_has_no_variant)
{
    json_case_t c;
    cm_json_t *v;

    json_case_init(&c);
    c.run.protocol = "treadmarks";
    c.run.variant  = NULL;
    c.run.nodes    = 0; /* not known */
    v = parse_case(&c);
    ck_assert_str_eq(str(v, "protocol"), "treadmarks");
    ck_assert_int_eq(cm_json_get(v, "variant")->type, CM_JSON_NULL);
    ck_assert_int_eq(cm_json_get(v, "mechanisms")->type, CM_JSON_NULL);
    ck_assert_int_eq(cm_json_get(cm_json_get(v, "job"), "nodes")->type, CM_JSON_NULL);
    cm_json_free(v);
}
END_TEST

static void write_table(FILE *f, void *arg)
{
    json_case_t *c = arg;
    cm_stats_print_table(f, c->per, 2, "a header");
}

START_TEST(test_table_units)
{
    json_case_t c;
    char *text, *line, *save = NULL;
    int timers = 0;

    json_case_init(&c);
    text = captured(write_table, &c);
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char name[64];
        if (sscanf(line, "%63s", name) != 1 || name[0] == '#') {
            continue;
        }
        ck_assert_msg(strstr(name, "_ns") == NULL, "a row named in ns: %s", line);
        if (strstr(name, "_ms") != NULL) {
            timers++;
        }
        if (strcmp(name, "total_ms") == 0) {
            ck_assert_msg(strstr(line, " 3.000 ") && strstr(line, " 5.000"), "%s", line);
        }
        if (strcmp(name, "fault_ms") == 0) {
            ck_assert_msg(strstr(line, " 0.001 ") && strstr(line, " 0.003"), "%s", line);
        }
    }
    /* Only total_ms and fault_ms are non-zero in the case: the others are counted, not shown. */
    ck_assert_int_eq(timers, 2);
    free(text);
    text = captured(write_table, &c); /* strtok_r cut the first copy */
    ck_assert_msg(strstr(text, "# total: the sum over the processes, except total_ms: the longest") != NULL,
                  "the total column is not explained");
    {
        char want[128];
        snprintf(want, sizeof(want), "\n# %d rows zero in every process not shown",
                 (int)(N_TIMERS - 2 + N_COUNTERS - 1));
        ck_assert_msg(strstr(text, want) != NULL, "no '%s' in:\n%s", want + 1, text);
    }
    ck_assert_ptr_nonnull(strstr(text, "\nread_faults "));
    ck_assert_ptr_null(strstr(text, "\nwrite_faults "));
    free(text);
}
END_TEST

int main(void)
{
    Suite *s   = suite_create("stats");
    TCase *tc  = tcase_create("phases");
    SRunner *r;
    int failed;

    cm_ticks_calibrate();
    tcase_add_test(tc, test_phase_charges_its_span);
    tcase_add_test(tc, test_phase_nested_is_exclusive);
    tcase_add_test(tc, test_phase_per_thread);
    tcase_add_test(tc, test_in_phase_gives_the_value);
    tcase_add_test(tc, test_total_sums_and_takes_the_longest_run);
    tcase_add_test(tc, test_json_schema_and_strings);
    tcase_add_test(tc, test_json_timers_are_ns_counters_are_not);
    tcase_add_test(tc, test_json_treadmarks_has_no_variant);
    tcase_add_test(tc, test_table_units);
    suite_add_tcase(s, tc);
    r = srunner_create(s);
    srunner_set_fork_status(r, CK_NOFORK);
    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
