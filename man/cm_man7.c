/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Writes cashmere(7), the manual page of every CM_* setting, from the
 * configuration table itself (util/cm_config_table.h), so the page and
 * `cm_info -c` cannot disagree. Run at build time: cm_man7 VERSION > cashmere.7
 */
#include "config.h"
#include "util/cm_config_table.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name, *type, *def, *values, *category, *doc;
} cm_man_row_t;

#define CM_MAN_ROW(field, NAME, TYPE, def, values, category, doc) \
    {#NAME, #TYPE, def, values, category, doc},
static const cm_man_row_t cm_man_rows[] = {CM_CONFIG_TABLE(CM_MAN_ROW)};
#define CM_MAN_NROWS (sizeof(cm_man_rows) / sizeof(cm_man_rows[0]))

/* Text for roff: backslashes doubled, hyphens kept as hyphens (\-) so they copy and search
 * as typed, a leading dot or quote guarded, `code` spans in bold. */
static void cm_man_text(const char *s)
{
    int code = 0;
    if (*s == '.' || *s == '\'') {
        fputs("\\&", stdout);
    }
    for (; *s != '\0'; s++) {
        switch (*s) {
        case '\\': fputs("\\e", stdout); break;
        case '-':  fputs("\\-", stdout); break;
        case '`':  fputs(code ? "\\fR" : "\\fB", stdout); code = !code; break;
        default:   putchar(*s); break;
        }
    }
    if (code) {
        fputs("\\fR", stdout);
    }
}

static const char *cm_man_type_hint(const char *type)
{
    static const struct { const char *type, *hint; } hints[] = {
        {"SIZE", "a size: bytes, or with k, m, g, t (powers of 1024)"},
        {"TIME", "a time: a number with ns, us, ms or s"},
        {"BANDWIDTH", "a rate: 400MB (bytes/s), 10Gb (bits/s), 256MiB"},
        {"BOOL", "yes or no"},
        {"ADDR", "an address, hexadecimal with 0x"},
        {"STRING", "text"},
        {"UINT", "an unsigned integer"},
    };
    for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]); i++) {
        if (strcmp(hints[i].type, type) == 0) {
            return hints[i].hint;
        }
    }
    return "";
}

/* "a|b|c" as "One of: a, b, c" with the values in bold (empty entries, as the variant
 * table's trailing separator, skipped). */
static void cm_man_list(const char *lead, const char *values)
{
    char buf[512];
    int first = 1;
    snprintf(buf, sizeof(buf), "%s", values != NULL ? values : "");
    printf("%s: ", lead);
    for (char *save = NULL, *v = strtok_r(buf, "|", &save); v != NULL; v = strtok_r(NULL, "|", &save)) {
        fputs(first ? "\\fB" : ", \\fB", stdout);
        cm_man_text(v);
        fputs("\\fR", stdout);
        first = 0;
    }
}

/* What the table's one-line documentation leaves out and a reader of this page needs: set
 * apart here so that `cm_info -c` stays short. Printed after the setting's default. */
static const struct {
    const char *name, *note;
} cm_man_notes[] = {
    {"PROTOCOL", "Under `none` a job of more than one process is refused."},
    {"PREFETCH", "Measured across two hosts on five applications, it was slower than refetch at "
                 "acquire (`CM_REFETCH`) on each: \"Prefetch on a miss\" in docs/ARCHITECTURE.md "
                 "of the source tree."},
    {"SHARED_SIZE", "Memory: the pages a process touches, plus metadata per touched 4 KiB page: "
                    "at most 96 bytes at 2 processes, 68 at 16, 65 at 64 under Cashmere, 80 under "
                    "TreadMarks (`cm_info --memory -n N` gives a job's figure). A quarter of the "
                    "region goes to cm_malloc_local (CM_LOCAL_HEAP); cm_malloc has the rest, and "
                    "when it runs out the error names a CM_SHARED_SIZE that fits. A size is "
                    "refused before the job starts where a process may not reserve that much "
                    "address space (`ulimit -v`), with a size that would fit."},
    {"STATS", "The table's times are in milliseconds, the JSON's in nanoseconds (schema "
              "cashmere-stats/1). A bare word other than `table` is refused as a likely typo "
              "(`tabel`); `./tabel` is a file. See STATISTICS below."},
};

static void cm_man_note(const char *name)
{
    for (size_t i = 0; i < sizeof(cm_man_notes) / sizeof(cm_man_notes[0]); i++) {
        if (strcmp(cm_man_notes[i].name, name) == 0) {
            fputs(".br\n", stdout);
            cm_man_text(cm_man_notes[i].note);
            putchar('\n');
        }
    }
}

static void cm_man_section(const char *category, const char *title, const char *intro)
{
    printf(".SS %s\n", title);
    cm_man_text(intro);
    putchar('\n');
    for (size_t i = 0; i < CM_MAN_NROWS; i++) {
        const cm_man_row_t *r = &cm_man_rows[i];
        if (strcmp(r->category, category) != 0) {
            continue;
        }
        printf(".TP\n.B CM_%s\n", r->name);
        cm_man_text(r->doc);
        fputs("\n.br\n", stdout);
        if (strcmp(r->type, "ENUM") == 0 || strcmp(r->type, "OUTPUT") == 0) {
            cm_man_list(strcmp(r->type, "ENUM") == 0 ? "One of" : "Empty, a file path, or",
                        r->values);
        } else {
            printf("Type: ");
            cm_man_text(cm_man_type_hint(r->type));
            if (r->values != NULL) {
                fputs(", range ", stdout);
                cm_man_text(r->values);
            }
        }
        fputs(". Default: ", stdout);
        if (r->def[0] == '\0') {
            fputs("empty", stdout);
        } else {
            fputs("\\fB", stdout);
            cm_man_text(r->def);
            fputs("\\fR", stdout);
        }
        fputs(".\n", stdout);
        cm_man_note(r->name);
    }
}

int main(int argc, char **argv)
{
    const char *version = argc > 1 ? argv[1] : PACKAGE_VERSION;

    printf(".\\\" Generated by man/cm_man7.c from util/cm_config_table.h: edit those.\n");
    printf(".TH CASHMERE 7 \"\" \"Cashmere-RMA %s\" \"Cashmere-RMA\"\n", version);
    puts(".SH NAME\ncashmere \\- Cashmere-RMA settings: the CM_* environment variables");
    puts(".SH DESCRIPTION");
    puts("Cashmere-RMA is a software distributed shared memory over one-sided RDMA "
         "(UCX and PMIx): the Cashmere protocol (Kontothanassis and Scott, HPCA 1996) in its "
         "ten hardware-support variants, and a TreadMarks baseline that runs the same binaries.");
    puts(".PP\nEvery setting is an environment variable read once by each process at "
         "\\fBcm_init\\fR. \\fBcmrun\\fR(1) forwards every \\fBCM_*\\fR and \\fBUCX_*\\fR variable "
         "to all ranks and checks the values once before the job starts. A value that does not "
         "parse, an unsigned value outside the range given below, or a \\fBCM_\\fR name that "
         "is not below, is an error of one line and a non-zero exit before any work: once from "
         "\\fBcmrun\\fR, or on every rank where the launcher is used directly. For a name, "
         "the line names the nearest setting. Names the project's scripts read "
         "(\\fBCM_RESULTS_DIR\\fR, \\fBCM_BENCH\\fR, \\fBCM_VM_*\\fR, \\fBCM_DEB_*\\fR) are "
         "not settings and no error. Keywords match exactly (\\fBCM_VARIANT=CHSN\\fR, not "
         "chsn). \\fBcm_info \\-c\\fR prints this table with the values in effect, and "
         "warns of unknown names.");
    puts(".SH VALUES");
    puts(".TP\nSizes\nBytes, or a number with \\fBk\\fR, \\fBm\\fR, \\fBg\\fR or \\fBt\\fR "
         "(powers of 1024): \\fB64k\\fR, \\fB1g\\fR. A number without a unit is bytes: a size "
         "below a setting's least (\\fBCM_SHARED_SIZE=16\\fR) is refused, naming the unit.");
    puts(".TP\nTimes\nA number and a unit, \\fBns\\fR, \\fBus\\fR, \\fBms\\fR or \\fBs\\fR: "
         "\\fB2us\\fR. Zero needs no unit.");
    puts(".TP\nRates\nA number and \\fBB\\fR (bytes per second) or \\fBb\\fR (bits), "
         "optionally after \\fBk\\fR, \\fBM\\fR, \\fBG\\fR, \\fBT\\fR (powers of 1000) or "
         "\\fBKi\\fR, \\fBMi\\fR, \\fBGi\\fR, \\fBTi\\fR (powers of 1024) and before an "
         "optional \\fB/s\\fR: \\fB400MB\\fR, \\fB10Gb\\fR, \\fB256MiB/s\\fR. Zero (or "
         "\\fBunlimited\\fR) needs no unit.");
    puts(".TP\nBooleans\n\\fByes\\fR or \\fBno\\fR (also y/n, on/off, 1/0, true/false).");
    puts(".SH SETTINGS");
    cm_man_section("protocol", "Protocol", "The coherence protocol, its variant and its parameters.");
    cm_man_section("network", "Network model",
                   "Delays injected into every remote operation, to study latency and bandwidth.");
    cm_man_section("runtime", "Runtime", "The shared region, waiting, progress and start-up.");
    cm_man_section("cmrun", "Launcher", "Read by `cmrun`, or set by it for the ranks.");
    puts(".SH STATISTICS");
    puts("With \\fBCM_STATS=table\\fR each process counts, and rank 0 prints on stderr per "
         "process and in total (the sum, except for total_ms: the longest process; rows zero in "
         "every process left out); with a file, it writes every row there as JSON and prints no "
         "table. They count the time in page faults, lock waits, barriers, releases and acquires, page "
         "copying, write-through completion, software line fills, TreadMarks's waits for replies, "
         "twins and diffs, and requests served by its progress thread. Times are exclusive: a "
         "thread's nanosecond is charged to the innermost phase it is in (a page copy inside a "
         "fault counts as page copying, not as fault time), so they add up. Then the counts of "
         "faults, pages fetched, home migrations, directory updates and retries, notices "
         "posted, suppressed and drained, invalidations, unsafe pages and checks, ring overflows, "
         "doubled stores, forwarded puts, merge flushes, lock acquires (local and remote), "
         "barriers, and the one-sided operations and bytes behind them.");
    puts(".PP\nThe JSON file names what ran (program and arguments, protocol, variant and its "
         "mechanisms, job size, the library's version and commit, machine, UCX transports, dates) "
         "beside every process's and the total's timers and counters. docs/STATS.md in the source "
         "tree documents every member; \\fBcm_stats\\fR(1) turns such files into CSV. A program "
         "restricts the counting to its timed section with \\fBcm_stats_reset\\fR and "
         "\\fBcm_stats_stop\\fR (\\fIcm.h\\fR).");
    puts(".SH UCX");
    puts("Transports are UCX's: \\fBUCX_TLS\\fR (for example \\fBrc,ud,sm,self\\fR on InfiniBand, "
         "\\fBtcp\\fR, \\fBposix,sysv,self\\fR on one machine) and \\fBUCX_NET_DEVICES\\fR "
         "(for example \\fBmlx5_0:1\\fR) choose them; \\fBucx_info \\-d\\fR lists what this "
         "machine has.");
    puts(".SH SEE ALSO\n\\fBcmrun\\fR(1), \\fBcmcc\\fR(1), \\fBcm_info\\fR(1), \\fBcm_bench\\fR(1), \\fBcm_stats\\fR(1), "
         "\\fBucx_info\\fR(1)");
    return 0;
}
