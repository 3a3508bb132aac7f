/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Run-time configuration from CM_* environment variables (table in
 * cm_config_table.h). Parsing is pure: it takes an environment array so that
 * unit tests need not touch the real environment.
 */
#ifndef CM_CONFIG_H
#define CM_CONFIG_H

#include "cm.h"
#include "util/cm_config_table.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    CM_CFG_SIZE,      /* bytes: 4096, 64k, 16m, 1g, 1.5g (binary multiples) */
    CM_CFG_TIME,      /* nanoseconds: 500ns, 10us, 2ms, 1s; bare 0 */
    CM_CFG_BANDWIDTH, /* bytes per second: 400MB, 10Gb, 256MiB, optional /s; 0 = unlimited */
    CM_CFG_BOOL,
    CM_CFG_ENUM,      /* index into the row's value list */
    CM_CFG_ADDR,      /* virtual address, 0x... or decimal */
    CM_CFG_STRING,
    CM_CFG_UINT,      /* the row's values may give a range "min..max" */
    CM_CFG_OUTPUT     /* "", one of the row's keywords, or a file path (has a / or a .) */
} cm_config_type_t;

/* C types of the parsed values, by table TYPE. */
#define CM_CFG_CTYPE_SIZE      size_t
#define CM_CFG_CTYPE_TIME      uint64_t
#define CM_CFG_CTYPE_BANDWIDTH double
#define CM_CFG_CTYPE_BOOL      bool
#define CM_CFG_CTYPE_ENUM      int
#define CM_CFG_CTYPE_ADDR      uintptr_t
#define CM_CFG_CTYPE_STRING    char *
#define CM_CFG_CTYPE_UINT      unsigned long
#define CM_CFG_CTYPE_OUTPUT    char *

/* Enum settings, in the order of their value lists in the table. */
typedef enum { CM_PROGRESS_AUTO, CM_PROGRESS_ON, CM_PROGRESS_OFF } cm_progress_mode_t;
typedef enum { CM_FORWARD_AUTO, CM_FORWARD_STORE, CM_FORWARD_BATCH, CM_FORWARD_RELEASE } cm_forward_mode_t;
typedef enum { CM_REFETCH_AUTO, CM_REFETCH_PAPER, CM_REFETCH_USED } cm_refetch_mode_t;
typedef enum { CM_WAIT_AUTO, CM_WAIT_SPIN, CM_WAIT_BLOCK } cm_wait_mode_t;
typedef enum { CM_LAUNCHER_AUTO, CM_LAUNCHER_SRUN, CM_LAUNCHER_PRTERUN, CM_LAUNCHER_MPIRUN } cm_launcher_t;
typedef enum {
    CM_PROTOCOL_CASHMERE,
    CM_PROTOCOL_TREADMARKS,
    CM_PROTOCOL_NONE,
    CM_PROTOCOL_TWOLEVEL
} cm_protocol_kind_t;
typedef enum { CM_DIRECTORY_AUTO, CM_DIRECTORY_MCS, CM_DIRECTORY_CAS, CM_DIRECTORY_ADD } cm_directory_kind_t;
typedef enum { CM_TMK_DETECT_FAULT, CM_TMK_DETECT_SCAN } cm_tmk_detect_t;
/* CM_VARIANT values: cm_variant_t, from the variant table (cm_variant_table.h). */

/* Row indices, CM_CONFIG_IDX_<field>, and the row count. */
enum {
#define CM_CONFIG_INDEX(_field, _name, _type, _def, _vals, _cat, _doc) CM_CONFIG_IDX_##_field,
    CM_CONFIG_TABLE(CM_CONFIG_INDEX)
#undef CM_CONFIG_INDEX
    CM_CONFIG_NUM
};

typedef struct {
#define CM_CONFIG_FIELD(_field, _name, _type, _def, _vals, _cat, _doc) CM_CFG_CTYPE_##_type _field;
    CM_CONFIG_TABLE(CM_CONFIG_FIELD)
#undef CM_CONFIG_FIELD
    /* Strings as given (NULL where the default applies), for dumps. */
    const char *raw[CM_CONFIG_NUM];
} cm_config_t;

typedef struct {
    const char       *name;     /* full variable name, "CM_..." */
    cm_config_type_t type;
    const char       *defval;
    const char       *values;   /* ENUM: "a|b|c"; UINT: "min..max"; OUTPUT: keywords "a|b" */
    const char       *category;
    const char       *doc;
    size_t           offset;    /* of the field in cm_config_t */
} cm_config_entry_t;

extern const cm_config_entry_t cm_config_entries[CM_CONFIG_NUM];

/* Looks a setting up by its full name; NULL if there is none. */
const cm_config_entry_t *cm_config_find(const char *name);

/* Parses one value of the entry's type into dst (a pointer to the field). */
cm_status_t cm_config_parse(const cm_config_entry_t *entry, const char *str, void *dst,
                            char *err, size_t errlen);

/*
 * Fills cfg from envp (NULL-terminated "NAME=value" strings): defaults, then
 * every CM_* variable that is set. On the first bad value returns
 * CM_ERR_INVALID with a one-line message in err.
 */
cm_status_t cm_config_load(cm_config_t *cfg, char *const *envp, char *err, size_t errlen);

/* Frees what cm_config_load allocated (strings). */
void cm_config_release(cm_config_t *cfg);

/*
 * Calls warn(name, suggestion, arg) for every CM_* variable in envp that is not
 * a setting; suggestion is the nearest valid name or NULL. Returns the count.
 */
int cm_config_check_unknown(char *const *envp,
                            void (*warn)(const char *name, const char *suggestion, void *arg),
                            void *arg);

/*
 * The unknown CM_* names of envp as one error line in buf ("unknown setting
 * CM_VARIENT (did you mean CM_VARIANT?); ..."). Returns their count; 0 leaves
 * buf alone. A name is an error: a misspelled setting would run another
 * experiment than the one asked for.
 */
int cm_config_unknown_line(char *const *envp, char *buf, size_t len);

/* Whether name is read by the project's scripts (CM_RESULTS_DIR, CM_VM_*, ...). */
bool cm_config_is_tool_name(const char *name);

/* Edit distance of two short words, ignoring case ((size_t)-1 past 63 characters). */
size_t cm_config_distance(const char *a, const char *b);

/* Whether a word at this edit distance from another is a typo of it, not a different word. */
bool cm_config_near(const char *word, size_t distance);

/* The valid name nearest to name by edit distance, or NULL if none is close. */
const char *cm_config_suggest(const char *name);

/* Writes every setting with type, default, doc and current value, as an env file. */
void cm_config_dump(FILE *out, const cm_config_t *cfg);

/* Formats a value of the entry's type for display. */
void cm_config_format(const cm_config_entry_t *entry, const void *src, char *buf, size_t len);

#endif
