/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer: the CM_* value parsers and the environment scan. The first byte picks a setting
 * (every type's parser: sizes, times, bandwidths, enums with their suggestions, addresses,
 * ranges, output keywords); the rest is its value, parsed and formatted back. Where the first
 * byte's top bit is set, the rest is also taken as lines of NAME=value, loaded as cm_init
 * loads its environment, dumped, and checked for unknown names as cmrun does. Any input: a
 * value or an error saying why, no crash, no read or write out of bounds.
 */
#include "config.h"
#include "util/cm_config.h"
#include "util/cm_log.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    cm_log_level = CM_LOG_ERROR; /* warnings of odd input are expected */
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const cm_config_entry_t *e;
    char *text, *envp[65], err[512], line[1024];
    size_t n = 0;
    cm_config_t cfg;
    union {
        uint64_t u;
        double d;
        char *s;
        char bytes[64];
    } dst;

    if (size < 1) {
        return 0;
    }
    e    = &cm_config_entries[data[0] % CM_CONFIG_NUM];
    text = malloc(size);
    if (text == NULL) {
        return 0;
    }
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    memset(&dst, 0, sizeof(dst));
    err[0] = '\0';
    if (cm_config_parse(e, text, &dst, err, sizeof(err)) == CM_OK) {
        cm_config_format(e, &dst, line, sizeof(line));
        if (e->type == CM_CFG_STRING || e->type == CM_CFG_OUTPUT) {
            free(dst.s);
        }
    } else if (err[0] == '\0') {
        abort(); /* a refusal says why */
    }
    if (data[0] & 0x80) {
        for (char *p = text, *nl; p != NULL && n < 64; p = nl) {
            nl = strchr(p, '\n');
            if (nl != NULL) {
                *nl++ = '\0';
            }
            envp[n++] = p;
        }
        envp[n] = NULL;
        if (cm_config_load(&cfg, envp, err, sizeof(err)) == CM_OK) {
            FILE *null = fopen("/dev/null", "w");
            if (null != NULL) {
                cm_config_dump(null, &cfg);
                fclose(null);
            }
        }
        cm_config_release(&cfg);
        (void)cm_config_unknown_line(envp, line, sizeof(line));
    }
    free(text);
    return 0;
}
