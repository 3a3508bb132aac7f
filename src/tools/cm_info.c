/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cm_info: what this installation is and what it can use.
 *
 *   cm_info            version, libraries, UCX transports and the one-sided
 *                      mechanisms they give
 *   cm_info -c         every CM_* setting with type, default, doc, current value
 *   cm_info --check [-n N] [--local L]
 *                      check the CM_* environment and a job of N processes, L of
 *                      them on this machine (default N; 0: do not check this
 *                      machine), as cmrun does once before launching; prints
 *                      what cmrun needs to know as NAME=value lines
 *   cm_info --build PROG
 *                      the build PROG records (plain, stores, accesses): cmrun
 *                      picks and refuses binaries by it
 *   cm_info --variants the variant table, one line per variant: whether this
 *                      machine can run it and the mechanism behind each letter
 *   cm_info --version  "cm_info (Cashmere-RMA) VERSION"
 */
#define _GNU_SOURCE /* memmem */
#include "config.h"
#include "src/runtime/cm_check.h"
#include "util/cm_build.h"
#include "util/cm_config.h"
#include "util/cm_log.h"
#include "util/cm_split.h"
#include "util/cm_variant.h"

#include <pmix.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <ucp/api/ucp.h>
#include <unistd.h>
#include <uct/api/uct.h>

extern char **environ;

static void cm_info_usage(FILE *out)
{
    fprintf(out,
            "usage: cm_info [-c | --config | --check [-n N] [--local L] | --memory [-n N] | "
            "--build PROG | --split-args S | --variants | -h | --version]\n"
            "  (no option)   version, libraries, transports and one-sided mechanisms\n"
            "  -c, --config  every CM_* setting: type, default, documentation, current value\n"
            "  --check       check the CM_* environment for a job of N processes (default 1), L of\n"
            "                them on this machine (default N; 0: not this machine's memory and\n"
            "                files); exit 1 with one line on a problem, else print protocol=,\n"
            "                variant=, build= and suffix= lines (cmrun reads them)\n"
            "  --build PROG  the build PROG records: plain (cc), stores (cmcc) or accesses\n"
            "                (cmcc --accesses); unknown for a script\n"
            "  --split-args S  S split into words as a shell splits a command line, nothing\n"
            "                expanded, each word ended by a NUL (cmrun's CM_LAUNCHER_ARGS); exit\n"
            "                1 with the reason for an unbalanced quote or a final backslash\n"
            "  --memory      what the shared region (CM_SHARED_SIZE) costs each of N processes\n"
            "                (default 1): address space reserved, memory per page touched\n"
            "  --variants    the variant table, one line per variant:\n"
            "                NAME available|unavailable|not-implemented build=B fill=F write=W\n"
            "                merge=M fabric=any|map [why=... | note=...: the rest of the line]\n"
            "  -h, --help    this help\n"
            "  --version     cm_info (Cashmere-RMA) VERSION\n");
}

/* A bad option: one line, exit status 2. */
static int cm_info_bad(const char *what, const char *arg)
{
    fprintf(stderr, "cm_info: %s '%s' (see cm_info --help)\n", what, arg);
    return 2;
}

/* Loads the environment's settings; a bad value or an unknown CM_* name is a one-line error
 * and exit 1. */
static void cm_info_load(cm_config_t *cfg)
{
    char err[512];

    if (cm_config_load(cfg, environ, err, sizeof(err)) != CM_OK ||
        cm_config_unknown_line(environ, err, sizeof(err)) > 0) {
        cm_fatal(1, "%s", err);
    }
}

/* The listing the unknown-name error points at: it lists, and warns. */
static void cm_info_load_listing(cm_config_t *cfg)
{
    char err[512];

    if (cm_config_load(cfg, environ, err, sizeof(err)) != CM_OK) {
        cm_fatal(1, "%s", err);
    }
    if (cm_config_unknown_line(environ, err, sizeof(err)) > 0) {
        cm_warn("%s", err);
    }
}

typedef struct {
    int  shm_mapped;   /* an MD that allocates memory peers can map (rkey_ptr) */
    int  net_rdma;     /* InfiniBand/RoCE transports */
    int  tcp;
    char shm_names[128];
    char rdma_names[256];
    char all_names[512]; /* every transport UCX offers here */
} cm_info_caps_t;

static void cm_info_append(char *buf, size_t len, const char *name)
{
    if (strstr(buf, name) == NULL && strlen(buf) + strlen(name) + 3 < len) {
        if (buf[0] != '\0') {
            strcat(buf, ", ");
        }
        strcat(buf, name);
    }
}

/* Finds what UCX offers here; prints one line per transport when print. */
static void cm_info_transports(cm_info_caps_t *caps, bool print)
{
    uct_component_h *components;
    unsigned ncomponents;
    ucs_status_t st;

    st = uct_query_components(&components, &ncomponents);
    if (st != UCS_OK) {
        if (print) {
            printf("  (cannot query UCX components: %s)\n", ucs_status_string(st));
        }
        return;
    }
    for (unsigned c = 0; c < ncomponents; c++) {
        uct_component_attr_t cattr = {.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                                                    UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT};
        if (uct_component_query(components[c], &cattr) != UCS_OK) {
            continue;
        }
        uct_md_resource_desc_t mds[cattr.md_resource_count ? cattr.md_resource_count : 1];
        cattr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        cattr.md_resources = mds;
        if (uct_component_query(components[c], &cattr) != UCS_OK) {
            continue;
        }
        for (unsigned m = 0; m < cattr.md_resource_count; m++) {
            uct_md_config_t *md_config;
            uct_md_h md;
            uct_md_attr_t md_attr;
            uct_tl_resource_desc_t *tls;
            unsigned ntls;

            if (uct_md_config_read(components[c], NULL, NULL, &md_config) != UCS_OK) {
                continue;
            }
            st = uct_md_open(components[c], mds[m].md_name, md_config, &md);
            uct_config_release(md_config);
            if (st != UCS_OK) {
                continue;
            }
            if (uct_md_query(md, &md_attr) != UCS_OK ||
                uct_md_query_tl_resources(md, &tls, &ntls) != UCS_OK) {
                uct_md_close(md);
                continue;
            }
            for (unsigned t = 0; t < ntls; t++) {
                const char *name = tls[t].tl_name;
                const char *kind;

                cm_info_append(caps->all_names, sizeof(caps->all_names), name);
                if ((md_attr.cap.flags & UCT_MD_FLAG_RKEY_PTR) &&
                    (md_attr.cap.flags & UCT_MD_FLAG_ALLOC)) {
                    kind = "shared memory, peers' memory directly mappable";
                    caps->shm_mapped = 1;
                    cm_info_append(caps->shm_names, sizeof(caps->shm_names), name);
                } else if (strcmp(name, "tcp") == 0) {
                    kind = "network, RMA and atomics emulated in software by the target";
                    caps->tcp = 1;
                } else if (strncmp(name, "rc", 2) == 0 || strncmp(name, "dc", 2) == 0 ||
                           strncmp(name, "ud", 2) == 0) {
                    kind = "network, hardware RMA (InfiniBand/RoCE)";
                    caps->net_rdma = 1;
                    cm_info_append(caps->rdma_names, sizeof(caps->rdma_names), name);
                } else if (strcmp(name, "self") == 0) {
                    kind = "loopback";
                } else {
                    kind = "shared memory, copy only";
                }
                if (print) {
                    printf("  %-10s %-14s md %-8s %s\n", name, tls[t].dev_name, mds[m].md_name,
                           kind);
                }
            }
            uct_release_tl_resource_list(tls);
            uct_md_close(md);
        }
    }
    uct_release_component_list(components);
}

/* Whether this machine can run variant v; if not, why (one phrase). A variant needing a
 * direct mapping runs where every peer is mapped: the processes of one node here. */
static const char *cm_info_variant_status(cm_variant_t v, const cm_info_caps_t *caps,
                                          const char **why)
{
    const cm_variant_info_t *r = &cm_variants[v];

    *why = NULL;
    if (!cm_variant_implemented(v)) {
        *why = !cm_fill_mechanisms[r->fill].implemented
                   ? "its fill mechanism is not implemented yet"
                   : !cm_write_mechanisms[r->write].implemented
                         ? "its write mechanism is not implemented yet"
                         : "its merge mechanism is not implemented yet";
        return "not-implemented";
    }
    if (r->fabric == CM_FABRIC_MAP && !caps->shm_mapped) {
        *why = "no transport here maps peers' memory for direct loads and stores";
        return "unavailable";
    }
    if (r->fabric == CM_FABRIC_MAP && !cm_check_tls_maps()) {
        *why = "UCX_TLS leaves out the shared-memory transports (posix, sysv) that map peers' "
               "memory";
        return "unavailable";
    }
    if (r->fabric == CM_FABRIC_MAP) {
        *why = "between the processes of one node only (peers' memory mapped); refused where "
               "a peer is reached over a network";
    }
    return "available";
}

static void cm_info_variants(void)
{
    cm_info_caps_t caps = {0};

    cm_info_transports(&caps, false);
    for (int v = 0; v < CM_VARIANT_COUNT; v++) {
        const cm_variant_info_t *r = &cm_variants[v];
        const char *why, *status = cm_info_variant_status((cm_variant_t)v, &caps, &why);
        printf("%s %s build=%s fill=%s write=%s merge=%s fabric=%s", r->name, status,
               cm_build_name(r->build), cm_fill_mechanisms[r->fill].name,
               cm_write_mechanisms[r->write].name, cm_merge_mechanisms[r->merge].name,
               (r->fabric == CM_FABRIC_MAP) ? "map" : "any");
        if (why != NULL && strcmp(status, "available") != 0) {
            printf(" why=%s", why);
        } else if (why != NULL || r->note[0] != '\0') {
            printf(" note=%s%s%s", why ? why : "", (why && r->note[0]) ? "; " : "", r->note);
        }
        printf("\n");
    }
}

static void cm_info_summary(void)
{
    cm_info_caps_t caps = {0};
    unsigned major, minor, release;
    const char *tls = getenv("UCX_TLS");

    ucp_get_version(&major, &minor, &release);
    printf("Cashmere-RMA %s (commit %s)\n", PACKAGE_VERSION, cm_build_commit());
    printf("  UCX %u.%u.%u (%s), PMIx %s\n", major, minor, release, ucp_get_version_string(),
           PMIx_Get_version());
    printf("\nTransports UCX sees on this machine%s%s%s:\n", tls ? " (UCX_TLS=" : "",
           tls ? tls : "", tls ? " restricts which are used)" : "");
    cm_info_transports(&caps, true);

    printf("\nOne-sided mechanisms (rma/):\n");
    printf("  put/get/atomics/flush via UCX ........ yes\n");
    printf("  direct load/store of peers' memory .... %s%s%s\n",
           caps.shm_mapped ? "yes, between processes on one node (" : "no",
           caps.shm_mapped ? caps.shm_names : "", caps.shm_mapped ? ")" : "");
    printf("  hardware RMA between nodes ........... %s%s%s\n",
           caps.net_rdma ? "yes (" : "no (no InfiniBand/RoCE device)",
           caps.net_rdma ? caps.rdma_names : "", caps.net_rdma ? ")" : "");
    printf("  software-emulated RMA over TCP ....... %s\n",
           caps.tcp ? "yes (the progress thread serves peers; CM_PROGRESS_THREAD)" : "no");
    printf("  delay injection ...................... CM_NET_LATENCY, CM_NET_BANDWIDTH, "
           "CM_NET_OVERHEAD\n");
    printf("  active messages (TreadMarks) ......... yes (UCX AM, served by the progress thread)\n");
    printf("\nProtocols (CM_PROTOCOL):\n");
    printf("  cashmere    directory, write notices, write-through to homes, all one-sided; "
           "variant below\n");
    printf("  treadmarks  lazy release consistency: intervals, twins, lazy diffs, messages; "
           "plain or cmcc binaries\n");
    printf("  twolevel    one copy of each page per host; between hosts a directory bit per "
           "host, twins, two-way diffs; plain or cmcc binaries\n");
    printf("\nCashmere variants (CM_VARIANT; letters: copy, read misses, writes, merge buffer):\n");
    for (int v = 0; v < CM_VARIANT_COUNT; v++) {
        const cm_variant_info_t *r = &cm_variants[v];
        const char *why, *status = cm_info_variant_status((cm_variant_t)v, &caps, &why);
        printf("  %s  %s%s%s%s\n", r->name, status, why ? " (" : "", why ? why : "", why ? ")" : "");
        printf("        %.2s: %s\n        %c: %s\n        %c: %s\n", r->name,
               cm_variant_mechanism((cm_variant_t)v, 0), r->name[2],
               cm_variant_mechanism((cm_variant_t)v, 2), r->name[3],
               cm_variant_mechanism((cm_variant_t)v, 3));
        if (r->note[0] != '\0') {
            printf("        note: %s\n", r->note);
        }
        if (r->build != CM_BUILD_PLAIN) {
            printf("        build: cmcc (%s checks; cmrun runs PROG%s)\n",
                   (r->build == CM_BUILD_STORES) ? "store" : "load and store",
                   cm_build_suffix(r->build));
        }
    }
    printf("\n`cm_info -c` lists every CM_* setting.\n");
}

/*
 * UCX's transport names and its aliases for groups of them (ucp_context.c's
 * table, UCX 1.10 to 1.17), with the members an alias stands for. A list may
 * name transports this machine lacks when the job runs on other hosts; a name
 * in none of these is a typo UCX would answer only after launch, with its raw
 * "no usable transports" errors from every rank.
 */
static const struct {
    const char *name;
    const char *members; /* NULL: the name is a transport itself */
} cm_info_ucx_names[] = {
    {"all", ""},          {"self", NULL},       {"tcp", NULL},        {"posix", NULL},
    {"sysv", NULL},       {"xpmem", NULL},      {"knem", NULL},       {"cma", NULL},
    {"rc_verbs", NULL},   {"rc_mlx5", NULL},    {"ud_verbs", NULL},   {"ud_mlx5", NULL},
    {"dc_mlx5", NULL},    {"rdmacm", NULL},     {"sockcm", NULL},     {"tcp_sockcm", NULL},
    {"cuda_copy", NULL},  {"cuda_ipc", NULL},   {"gdr_copy", NULL},   {"rocm_copy", NULL},
    {"rocm_ipc", NULL},   {"rocm_gdr", NULL},   {"ugni_rdma", NULL},  {"ugni_udt", NULL},
    {"ugni_smsg", NULL},  {"ze_copy", NULL},    {"srd", NULL},
    {"mm", "posix,sysv,xpmem"},
    {"sm", "posix,sysv,xpmem,knem,cma"},
    {"shm", "posix,sysv,xpmem,knem,cma"},
    {"ib", "rc_verbs,rc_mlx5,ud_verbs,ud_mlx5,dc_mlx5"},
    {"rc", "rc_verbs,rc_mlx5"},  {"rc_v", "rc_verbs"}, {"rc_x", "rc_mlx5"},
    {"ud", "ud_verbs,ud_mlx5"},  {"ud_v", "ud_verbs"}, {"ud_x", "ud_mlx5"},
    {"dc", "dc_mlx5"},           {"dc_x", "dc_mlx5"},
    {"ugni", "ugni_smsg,ugni_udt,ugni_rdma"}, {"cuda", "cuda_copy,cuda_ipc,gdr_copy"},
    {"rocm", "rocm_copy,rocm_ipc,rocm_gdr"},
};

/* Whether word is one of the comma-separated items of list. */
static bool cm_info_in_list(const char *list, const char *word)
{
    size_t n = strlen(word);

    for (const char *p = list; (p = strstr(p, word)) != NULL; p += n) {
        if ((p == list || p[-1] == ',' || p[-1] == ' ') &&
            (p[n] == '\0' || p[n] == ',')) {
            return true;
        }
    }
    return false;
}

/*
 * UCX_TLS as UCX will read it: every item a transport or alias UCX knows, and,
 * where ranks run on this machine, at least one item usable here. Returns NULL
 * or a one-line reason into err.
 */
static const char *cm_info_check_tls(const cm_info_caps_t *caps, bool here, char *err,
                                     size_t len)
{
    const char *tls = getenv("UCX_TLS");
    char buf[256], *tok, *save = NULL;
    bool exclude, usable = false;
    char here_names[512];

    if (tls == NULL || *tls == '\0') {
        return NULL;
    }
    snprintf(here_names, sizeof(here_names), "%s", caps->all_names);
    exclude = (tls[0] == '^');
    snprintf(buf, sizeof(buf), "%s", tls + (exclude ? 1 : 0));
    for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        char *aux = strstr(tok, ":aux");
        const char *members = NULL, *best = NULL;
        size_t best_d = (size_t)-1;
        bool known = false;

        if (aux != NULL && aux[4] == '\0') {
            *aux = '\0';
        }
        for (size_t i = 0; i < sizeof(cm_info_ucx_names) / sizeof(cm_info_ucx_names[0]); i++) {
            size_t d = cm_config_distance(tok, cm_info_ucx_names[i].name);
            if (strcmp(tok, cm_info_ucx_names[i].name) == 0) {
                known   = true;
                members = cm_info_ucx_names[i].members;
                break;
            }
            if (d < best_d) {
                best_d = d;
                best   = cm_info_ucx_names[i].name;
            }
        }
        known = known || cm_info_in_list(here_names, tok); /* a newer UCX's own names */
        if (!known) {
            bool near = cm_config_near(tok, best_d);
            snprintf(err, len, "UCX_TLS=%s: UCX has no transport '%s'%s%s%s; this machine "
                     "offers %s (`cm_info` describes them)", tls, tok, near ? " (did you mean " : "",
                     near ? best : "", near ? "?)" : "", here_names);
            return err;
        }
        if (members == NULL) {
            usable = usable || cm_info_in_list(here_names, tok);
        } else if (members[0] == '\0') {
            usable = true; /* all */
        } else {
            char m[128], *mt, *msave = NULL;
            snprintf(m, sizeof(m), "%s", members);
            for (mt = strtok_r(m, ",", &msave); mt != NULL; mt = strtok_r(NULL, ",", &msave)) {
                usable = usable || cm_info_in_list(here_names, mt);
            }
        }
    }
    if (here && !exclude && !usable) {
        snprintf(err, len, "UCX_TLS=%s: none of these transports is available on this machine, "
                 "which offers %s (`cm_info` describes them)", tls, here_names);
        return err;
    }
    return NULL;
}

/* A count argument: a non-negative decimal. */
static bool cm_info_count(const char *s, int *out)
{
    char *end;
    long v = strtol(s, &end, 10);

    if (*s == '\0' || *end != '\0' || v < 0 || v > 1000000) {
        return false;
    }
    *out = (int)v;
    return true;
}

/* What cmrun needs before launching: the job is possible here, and which binary it runs. */
static int cm_info_check(int nprocs, int local)
{
    cm_config_t cfg;
    cm_check_job_t job = {.nprocs = nprocs, .local_procs = local, .files = local > 0};
    bool cashmere;
    cm_build_kind_t build;
    cm_info_caps_t caps = {0};
    char err[768];
    size_t page;

    cm_info_load(&cfg);
    cm_info_transports(&caps, false);
    if (cm_info_check_tls(&caps, local > 0, err, sizeof(err)) != NULL) {
        cm_error("%s", err);
        cm_config_release(&cfg);
        return 1;
    }
    job.address_budget = (local > 0) ? cm_check_address_budget() : 0;
    page = cm_config_page_size(&cfg); /* a bad one: cm_check_job says so */
    if (cm_check_job(&cfg, &job, page ? page : (size_t)sysconf(_SC_PAGESIZE), NULL, NULL) != CM_OK) {
        cm_config_release(&cfg);
        return 1;
    }
    cashmere = (cfg.protocol == CM_PROTOCOL_CASHMERE);
    build = cashmere ? cm_variants[cfg.variant].build : CM_BUILD_PLAIN;
    printf("protocol=%s\nvariant=%s\nbuild=%s\nsuffix=%s\n",
           cashmere ? "cashmere" : (cfg.protocol == CM_PROTOCOL_NONE) ? "none"
                                 : (cfg.protocol == CM_PROTOCOL_TWOLEVEL) ? "twolevel" : "treadmarks",
           cm_variants[cfg.variant].name, cm_build_name(build), cm_build_suffix(build));
    cm_config_release(&cfg);
    return 0;
}

/*
 * The build a binary records: cmcc links a marker string into it (src/access/cm_hooks.c,
 * src/access/cm_hooks_loads.c), read here from the file, so neither a missing instrumented
 * store nor a stripped symbol table changes the answer. 1 for a file that is no ELF
 * binary (a wrapper script: the process checks its own build), -1 if it cannot be read.
 */
static int cm_info_binary_build(const char *path, cm_build_kind_t *build)
{
    static const char tag[] = "CASHMERE_BUILD=";
    struct stat st;
    const char *p, *end;
    void *map;
    int fd = open(path, O_RDONLY);

    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) {
        return -1;
    }
    end = (const char *)map + st.st_size;
    if (st.st_size < 4 || memcmp(map, "\177ELF", 4) != 0) {
        munmap(map, (size_t)st.st_size);
        return 1; /* a script: what it runs is not known here */
    }
    *build = CM_BUILD_PLAIN;
    for (p = map; (p = memmem(p, (size_t)(end - p), tag, sizeof(tag) - 1)) != NULL;
         p += sizeof(tag) - 1) {
        const char *v = p + sizeof(tag) - 1;
        if ((size_t)(end - v) >= sizeof("accesses") && memcmp(v, "accesses", 9) == 0) {
            *build = CM_BUILD_ACCESSES;
        } else if ((size_t)(end - v) >= sizeof("stores") && memcmp(v, "stores", 7) == 0 &&
                   *build == CM_BUILD_PLAIN) {
            *build = CM_BUILD_STORES;
        }
    }
    munmap(map, (size_t)st.st_size);
    return 0;
}

/* A program in a build tree is libtool's wrapper script; the binary is in .libs beside it. */
static const char *cm_info_real_program(const char *given, char *buf, size_t len)
{
    char head[512], resolved[PATH_MAX];
    const char *path = (realpath(given, resolved) != NULL) ? resolved : given; /* links */
    const char *slash = strrchr(path, '/');
    FILE *f = fopen(path, "r");
    size_t n;

    if (f == NULL) {
        return given;
    }
    n = fread(head, 1, sizeof(head) - 1, f);
    fclose(f);
    head[n] = '\0';
    if (n < 2 || memcmp(head, "#!", 2) != 0 || strstr(head, "Generated by libtool") == NULL) {
        return given;
    }
    if ((size_t)snprintf(buf, len, "%.*s.libs/%s", slash ? (int)(slash - path + 1) : 0, path,
                         slash ? slash + 1 : path) >= len) {
        return given;
    }
    return buf;
}

/* "1.5 GiB" */
static void cm_info_human(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
    double v = (double)bytes;
    int u = 0;

    while (v >= 1024 && u < 5) {
        v /= 1024;
        u++;
    }
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

/* What a shared size costs: the region is address space, memory follows the pages touched. */
static int cm_info_memory(int nprocs)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const char *given;
    cm_check_cost_t c;
    cm_config_t cfg;
    char size[32], res[32], fixed[32], all[32], limit[32];
    uint64_t budget;

    cm_info_load(&cfg);
    if (cm_config_page_size(&cfg) != 0) {
        page = cm_config_page_size(&cfg);
    }
    given = cfg.raw[CM_CONFIG_IDX_shared_size];
    if (cm_check_cost(&cfg, nprocs, page, cfg.shared_size, &c) != CM_OK) {
        fprintf(stderr, "cm_info: cannot lay out CM_SHARED_SIZE=%s for %d processes\n",
                given ? given : "(default)", nprocs);
        cm_config_release(&cfg);
        return 1;
    }
    cm_info_human(c.npages * page, size, sizeof(size));
    cm_info_human(c.reserved, res, sizeof(res));
    cm_info_human(c.fixed, fixed, sizeof(fixed));
    cm_info_human(c.npages * (page + c.per_page) + c.fixed, all, sizeof(all));
    printf("shared region: CM_SHARED_SIZE=%s%s, %s (%" PRIu64 " pages of %zu bytes), %d "
           "process%s, %s\n", given ? given : "64g", given ? "" : " (the default)", size, c.npages,
           page, nprocs, (nprocs == 1) ? "" : "es", (cfg.protocol == CM_PROTOCOL_TREADMARKS) ? "treadmarks"
           : (cfg.protocol == CM_PROTOCOL_NONE) ? "none"
           : (cfg.protocol == CM_PROTOCOL_TWOLEVEL) ? "twolevel" : cm_variants[cfg.variant].name);
    printf("address space per process: %s reserved (%s, the metadata segment, page tables); "
           "nothing committed yet\n", res,
           c.host_per_page ? "the region's views: the application's, the network's, the host's "
                             "copy and its twins"
                           : "both views of the region");
    if (c.host_per_page != 0) {
        char host_all[32], copy[32];
        cm_info_human(c.npages * c.host_per_page, host_all, sizeof(host_all));
        cm_info_human(c.npages * page, copy, sizeof(copy));
        printf("memory per host, whatever its number of processes: one copy of each page they "
               "touch, a twin of each page they write whose home is another host, %d bytes of "
               "record per touched page\n", CM_META_PAGE_HOST);
        printf("memory per host if every page is touched: %s at most (the copy: %s)\n",
               host_all, copy);
        /* A process's own: its metadata only (the pages are its host's). */
        cm_info_human(c.npages * c.per_page + c.fixed, all, sizeof(all));
    }
    printf("memory per process%s at most %" PRIu64 " bytes of metadata per touched page "
           "(committed %zu bytes at a time) and %s whatever the size\n",
           c.host_per_page ? " besides:" : ": the pages it touches, plus", c.per_page, page, fixed);
    printf("memory per process if every page is touched: %s%s\n", all,
           c.host_per_page ? " besides its host's" : "");
    budget = cm_check_address_budget();
    if (budget != 0) {
        cm_info_human(budget, limit, sizeof(limit));
        printf("address space a process may have here (ulimit -v): %s: %s\n", limit,
               (c.reserved <= budget) ? "fits" : "does not fit");
    }
    cm_config_release(&cfg);
    return (budget != 0 && c.reserved > budget) ? 1 : 0;
}

int main(int argc, char **argv)
{
    cm_config_t cfg;
    int mode = 0; /* 0 summary, 1 config dump, 2 check, 3 variants, 4 memory */
    int nprocs = 1, local = -1;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-c") == 0 || strcmp(argv[i], "--config") == 0) {
            mode = 1;
        } else if (strcmp(argv[i], "--check") == 0) {
            mode = 2;
        } else if (strcmp(argv[i], "--variants") == 0) {
            mode = 3;
        } else if (strcmp(argv[i], "--memory") == 0) {
            mode = 4;
        } else if (strcmp(argv[i], "--build") == 0) {
            cm_build_kind_t build;
            char path[4096];
            if (i + 1 >= argc) {
                return cm_info_bad("a program must follow", argv[i]);
            }
            switch (cm_info_binary_build(cm_info_real_program(argv[i + 1], path, sizeof(path)),
                                         &build)) {
            case 0:
                printf("%s\n", cm_build_name(build));
                return 0;
            case 1:
                printf("unknown\n");
                return 0;
            default:
                fprintf(stderr, "cm_info: cannot read '%s'\n", argv[i + 1]);
                return 1;
            }
        } else if (strcmp(argv[i], "--split-args") == 0) {
            /* cmrun's CM_LAUNCHER_ARGS: the words, each ended by a NUL (bash: readarray -d ''). */
            char **words, err[128];
            size_t n;
            if (i + 1 >= argc) {
                return cm_info_bad("a string must follow", argv[i]);
            }
            if (cm_split_words(argv[i + 1], &words, &n, err, sizeof(err)) != CM_OK) {
                fprintf(stderr, "%s\n", err);
                return 1;
            }
            for (size_t w = 0; w < n; w++) {
                fwrite(words[w], 1, strlen(words[w]) + 1, stdout);
            }
            cm_split_free(words, n);
            return 0;
        } else if (strcmp(argv[i], "-n") == 0 || strcmp(argv[i], "--local") == 0) {
            if (i + 1 >= argc) {
                return cm_info_bad("a count must follow", argv[i]);
            }
            if (!cm_info_count(argv[i + 1], argv[i][1] == 'n' ? &nprocs : &local)) {
                return cm_info_bad(argv[i][1] == 'n' ? "-n needs a count (0..1000000), not"
                                                     : "--local needs a count (0..1000000), not",
                                   argv[i + 1]);
            }
            i++;
        } else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            cm_info_usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("cm_info (Cashmere-RMA) %s\n", PACKAGE_VERSION);
            return 0;
        } else {
            return cm_info_bad("unknown option", argv[i]);
        }
    }

    switch (mode) {
    case 1:
        cm_info_load_listing(&cfg);
        cm_config_dump(stdout, &cfg);
        cm_config_release(&cfg);
        return 0;
    case 2:
        return cm_info_check(nprocs, (local < 0) ? nprocs : local);
    case 3:
        cm_info_variants();
        return 0;
    case 4:
        return cm_info_memory(nprocs);
    default:
        cm_info_summary();
        return 0;
    }
}
