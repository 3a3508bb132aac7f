/* SPDX-License-Identifier: BSD-3-Clause */
#include "config.h"
#include "util/cm_variant.h"

#include <stdio.h>
#include <string.h>

const cm_variant_info_t cm_variants[CM_VARIANT_COUNT] = {
#define CM_VARIANT_ROW_(name, fill, write, merge, build, fabric, note) \
    [CM_VARIANT_##name] = {#name, CM_FILL_##fill, CM_WRITE_##write, CM_MERGE_##merge, \
                           CM_BUILD_##build, CM_FABRIC_##fabric, note},
    CM_VARIANT_TABLE(CM_VARIANT_ROW_)
#undef CM_VARIANT_ROW_
};

const cm_mechanism_info_t cm_fill_mechanisms[CM_FILL_COUNT] = {
    [CM_FILL_PAGE] = {"page", "a fault copies the whole page from its home (RMA get); reads then "
                              "hit the local copy", true},
    [CM_FILL_MAP]  = {"map", "the page is mapped onto the home's memory (node-local peers): loads "
                             "reach it directly, nothing is copied", true},
    [CM_FILL_LINE] = {"line", "load and store checks fill lines (CM_LINE_SIZE, 64 B) from the "
                              "home with one RMA get on a miss; invalidation re-arms the lines",
                      true},
};

const cm_mechanism_info_t cm_write_mechanisms[CM_WRITE_COUNT] = {
    [CM_WRITE_HOOKS]   = {"hooks", "compiler store checks forward each store to the home", true},
    [CM_WRITE_MAPPED]  = {"mapped", "stores land in the home's memory through the mapping; a "
                                    "write fault marks the page dirty", true},
    [CM_WRITE_OFFLOAD] = {"offload", "emulated by offload thread: page protection and twins find "
                                     "written words, a protocol thread forwards them to the home "
                                     "continuously and a release drains them", true},
};

const cm_mechanism_info_t cm_merge_mechanisms[CM_MERGE_COUNT] = {
    [CM_MERGE_NONE]   = {"none", "no merge buffer: one transfer per store", true},
    [CM_MERGE_BUFFER] = {"buffer", "merge buffer (CM_MERGE_LINES lines of 64 B, byte masks)", true},
};

bool cm_variant_implemented(cm_variant_t v)
{
    const cm_variant_info_t *r = &cm_variants[v];
    return cm_fill_mechanisms[r->fill].implemented && cm_write_mechanisms[r->write].implemented &&
           cm_merge_mechanisms[r->merge].implemented;
}

const char *cm_build_name(cm_build_kind_t b)
{
#define CM_BUILD_NAME_(kind, name, suffix) name,
    static const char *const names[CM_BUILD_COUNT] = {CM_BUILD_TABLE(CM_BUILD_NAME_)};
#undef CM_BUILD_NAME_
    return names[b];
}

const char *cm_build_suffix(cm_build_kind_t b)
{
#define CM_BUILD_SUFFIX_(kind, name, suffix) suffix,
    static const char *const suffixes[CM_BUILD_COUNT] = {CM_BUILD_TABLE(CM_BUILD_SUFFIX_)};
#undef CM_BUILD_SUFFIX_
    return suffixes[b];
}

const char *cm_variant_mechanism(cm_variant_t v, int pos)
{
    const cm_variant_info_t *r = &cm_variants[v];

    switch (pos) {
    case 0:
    case 1:
        return cm_fill_mechanisms[r->fill].doc;
    case 2:
        return cm_write_mechanisms[r->write].doc;
    default:
        /* NHHM: the letter asks for a merge buffer, the mapping leaves nothing to merge. */
        if (r->name[3] == 'M' && r->merge == CM_MERGE_NONE) {
            return "no merge buffer in use: stores reach the home through the mapping, "
                   "nothing is forwarded to merge (the same as N here)";
        }
        return cm_merge_mechanisms[r->merge].doc;
    }
}

void cm_variant_list_implemented(char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int v = 0; v < CM_VARIANT_COUNT; v++) {
        if (cm_variant_implemented((cm_variant_t)v) && used < len) {
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? ", " : "",
                                     cm_variants[v].name);
        }
    }
}
