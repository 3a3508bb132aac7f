/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unit tests of the JSON string writer and parser (util/cm_json.h): whatever a string
 * holds (quotes, backslashes, control characters, bytes that are not UTF-8), the writer's
 * output parses back, to the same string where it was valid UTF-8; the parser refuses
 * malformed text with the line of the fault.
 */
#include "config.h"
#include "util/cm_json.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

/* s written by cm_json_string, into a malloc'ed buffer. */
static char *written(const char *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);

    ck_assert_ptr_nonnull(f);
    cm_json_string(f, s);
    fclose(f);
    return buf;
}

/* s written, then parsed back: the string the parser found. */
static char *round_trip(const char *s)
{
    char *text = written(s), err[128], *back;
    cm_json_t *v;

    ck_assert_msg(cm_json_parse(text, strlen(text), &v, err, sizeof(err)) == CM_OK, "%s: %s",
                  text, err);
    ck_assert_int_eq(v->type, CM_JSON_STRING);
    back = strdup(v->text);
    cm_json_free(v);
    free(text);
    return back;
}

START_TEST(test_escapes)
{
    char *w;

    w = written("a\"b\\c/d");
    ck_assert_str_eq(w, "\"a\\\"b\\\\c/d\"");
    free(w);
    w = written("\n\t\r\b\f\x01\x1f\x7f");
    ck_assert_str_eq(w, "\"\\n\\t\\r\\b\\f\\u0001\\u001f\\u007f\"");
    free(w);
    w = written(NULL);
    ck_assert_str_eq(w, "null");
    free(w);
    w = written("");
    ck_assert_str_eq(w, "\"\"");
    free(w);
}
END_TEST

START_TEST(test_utf8_kept_invalid_replaced)
{
    char *w;

    /* é, €, 𝄞 pass through as they are */
    w = written("\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e");
    ck_assert_str_eq(w, "\"\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e\"");
    free(w);
    /* a lone continuation byte, a truncated sequence, an overlong '/', a surrogate, 0xff */
    w = written("a\x80" "b\xc3" "c\xc0\xaf" "d\xed\xa0\x80" "e\xff");
    ck_assert_str_eq(w, "\"a\\ufffdb\\ufffdc\\ufffd\\ufffdd\\ufffd\\ufffd\\ufffde\\ufffd\"");
    free(w);
}
END_TEST

START_TEST(test_round_trip)
{
    static const char *const cases[] = {
        "plain", "quote \" and backslash \\", "tab\there\nnew line", "\x01\x02\x1b[0m",
        "\xc3\xa9t\xc3\xa9", "host\"name\\with}{[],:", "\xf0\x9d\x84\x9e clef",
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *back = round_trip(cases[i]);
        ck_assert_str_eq(back, cases[i]);
        free(back);
    }
    /* not UTF-8: still valid JSON, the bad byte replaced */
    char *back = round_trip("x\xffy");
    ck_assert_str_eq(back, "x\xef\xbf\xbdy");
    free(back);
}
END_TEST

START_TEST(test_parse_tree)
{
    const char *text = "{\"schema\": \"cashmere-stats/1\", \"n\": 18446744073709551615,\n"
                       " \"v\": null, \"ok\": true, \"no\": false, \"x\": -1.5e+3,\n"
                       " \"a\": [1, \"two\", {\"k\": []}], \"u\": \"\\u00e9\\ud834\\udd1e\"}";
    char err[128];
    cm_json_t *v;
    const cm_json_t *a;

    ck_assert_int_eq(cm_json_parse(text, strlen(text), &v, err, sizeof(err)), CM_OK);
    ck_assert_str_eq(cm_json_get(v, "schema")->text, "cashmere-stats/1");
    /* numbers as written: a 64-bit counter is exact */
    ck_assert_str_eq(cm_json_get(v, "n")->text, "18446744073709551615");
    ck_assert_str_eq(cm_json_get(v, "x")->text, "-1.5e+3");
    ck_assert_int_eq(cm_json_get(v, "v")->type, CM_JSON_NULL);
    ck_assert_int_eq(cm_json_get(v, "ok")->type, CM_JSON_TRUE);
    ck_assert_int_eq(cm_json_get(v, "no")->type, CM_JSON_FALSE);
    ck_assert_str_eq(cm_json_get(v, "u")->text, "\xc3\xa9\xf0\x9d\x84\x9e");
    a = cm_json_get(v, "a");
    ck_assert_int_eq(a->type, CM_JSON_ARRAY);
    ck_assert_str_eq(a->child->text, "1");
    ck_assert_str_eq(a->child->next->text, "two");
    ck_assert_int_eq(cm_json_get(a->child->next->next, "k")->type, CM_JSON_ARRAY);
    ck_assert_ptr_null(cm_json_get(v, "missing"));
    ck_assert_ptr_null(cm_json_get(a, "k")); /* not an object */
    cm_json_free(v);
}
END_TEST

START_TEST(test_parse_refuses)
{
    static const struct { const char *text, *why; } cases[] = {
        {"", "line 1: expected a value, found the end"},
        {"{\"a\": 1,\n \"b\" 2}", "line 2: expected ':' after the member name \"b\""},
        {"{\"a\": 1 \"b\": 2}", "line 1: expected ',' or '}'"},
        {"[1, 2", "line 1: expected ',' or ']'"},
        {"{\"a\": \"x", "line 1: a string does not end"},
        {"\"a\tb\"", "line 1: a control character inside a string (escape it)"},
        {"\"\\x\"", "line 1: an unknown escape \\x"},
        {"\"\\ud800\"", "line 1: an unpaired UTF-16 surrogate"},
        {"\"\\u0000\"", "line 1: \\u0000 inside a string"},
        {"01", "line 1: text after the end of the value"},
        {"1.", "line 1: a number needs digits after its '.'"},
        {"1e", "line 1: a number needs digits in its exponent"},
        {"tru", "line 1: expected a value"},
        {"{} {}", "line 1: text after the end of the value"},
        {"\"\xff\"", "line 1: not UTF-8 text (byte 0xff at offset 1)"},
        {"{1: 2}", "line 1: expected a member name in quotes"},
    };
    char err[128];
    cm_json_t *v;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ck_assert_int_eq(cm_json_parse(cases[i].text, strlen(cases[i].text), &v, err, sizeof(err)),
                         CM_ERR_INVALID);
        ck_assert_ptr_null(v);
        ck_assert_str_eq(err, cases[i].why);
    }
}
END_TEST

START_TEST(test_parse_depth)
{
    char deep[200], err[128];
    cm_json_t *v;

    memset(deep, '[', 100);
    memset(deep + 100, ']', 100);
    ck_assert_int_eq(cm_json_parse(deep, sizeof(deep), &v, err, sizeof(err)), CM_ERR_INVALID);
    ck_assert_str_eq(err, "line 1: nested deeper than 64 levels");
    ck_assert_int_eq(cm_json_parse(deep + 40, 120, &v, err, sizeof(err)), CM_OK);
    cm_json_free(v);
}
END_TEST

int main(void)
{
    Suite *s  = suite_create("json");
    TCase *tc = tcase_create("json");
    SRunner *r;
    int failed;

    tcase_add_test(tc, test_escapes);
    tcase_add_test(tc, test_utf8_kept_invalid_replaced);
    tcase_add_test(tc, test_round_trip);
    tcase_add_test(tc, test_parse_tree);
    tcase_add_test(tc, test_parse_refuses);
    tcase_add_test(tc, test_parse_depth);
    suite_add_tcase(s, tc);
    r = srunner_create(s);
    srunner_run_all(r, CK_NORMAL);
    failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
