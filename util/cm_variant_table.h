/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The paper's protocol variants (HPCA'96 section 2.3), declared once. Each row:
 *
 *   _(NAME, FILL, WRITE, MERGE, BUILD, FABRIC, "note")
 *
 * NAME is the four letters: C copy a page on a fault / N no copy; read misses
 * served by H hardware / S software; writes forwarded to the home by H
 * hardware / S software; M merge buffer / N none. The other columns say what
 * realizes them here (docs/VARIANTS.md; docs/ARCHITECTURE.md, "Variants"):
 *
 *   FILL   how a page's data reaches this process (letters 1 and 2)
 *          PAGE  a fault copies the whole page from its home (RMA get)
 *          MAP   the page is mapped onto the home's memory: loads and stores reach it directly
 *          LINE  instrumented accesses fill 64-byte lines from the home on a miss
 *   WRITE  how stores reach the home (letter 3)
 *          HOOKS    compiler store checks double each store to the home
 *          MAPPED   nothing to do: stores land in the home's memory through the mapping
 *          OFFLOAD  a protocol thread finds written bytes (protection, twins) and forwards them
 *   MERGE  how forwarded stores are combined (letter 4)
 *          NONE    one transfer per store (or per changed word)
 *          BUFFER  a merge buffer of lines with byte masks, flushed on eviction and at release
 *   BUILD  the binary the variant needs: PLAIN, STORES (store checks: PROG.hooks) or ACCESSES
 *          (load and store checks)
 *   FABRIC what every peer's path must offer: ANY, or MAP (a direct load/store mapping of
 *          the peer's memory)
 *   note   where two letters collapse into one mechanism, why; else ""
 *
 * The CM_VARIANT enum and values, `cm_info --variants`, cmrun's choice of binary, the
 * scoreboard and the test matrix all come from this table. Adding a variant is a row
 * (and a mechanism file under src/protocols/cashmere/ if it needs a new one).
 */
#ifndef CM_VARIANT_TABLE_H
#define CM_VARIANT_TABLE_H

#define CM_VARIANT_TABLE(_) \
    _(CHSM, PAGE, HOOKS,   BUFFER, STORES,   ANY, "") \
    _(CHSN, PAGE, HOOKS,   NONE,   STORES,   ANY, "") \
    _(CHHM, PAGE, OFFLOAD, BUFFER, PLAIN,    ANY, "") \
    _(CHHN, PAGE, OFFLOAD, NONE,   PLAIN,    ANY, "") \
    _(NHHM, MAP,  MAPPED,  NONE,   PLAIN,    MAP, \
      "M: stores reach the home through the mapping, nothing is forwarded to merge: same as NHHN") \
    _(NHHN, MAP,  MAPPED,  NONE,   PLAIN,    MAP, "") \
    _(NSHM, LINE, OFFLOAD, BUFFER, ACCESSES, ANY, "") \
    _(NSHN, LINE, OFFLOAD, NONE,   ACCESSES, ANY, "") \
    _(NSSN, LINE, HOOKS,   NONE,   ACCESSES, ANY, "") \
    _(NSSM, LINE, HOOKS,   BUFFER, ACCESSES, ANY, "")

/* CM_VARIANT's values for the config table: "CHSM|CHSN|...|" (a trailing | ends the list). */
#define CM_VARIANT_VALUE_(name, fill, write, merge, build, fabric, note) #name "|"
#define CM_VARIANT_VALUES CM_VARIANT_TABLE(CM_VARIANT_VALUE_)

typedef enum {
#define CM_VARIANT_ENUM_(name, fill, write, merge, build, fabric, note) CM_VARIANT_##name,
    CM_VARIANT_TABLE(CM_VARIANT_ENUM_)
#undef CM_VARIANT_ENUM_
    CM_VARIANT_COUNT
} cm_variant_t;

typedef enum { CM_FILL_PAGE, CM_FILL_MAP, CM_FILL_LINE, CM_FILL_COUNT } cm_fill_kind_t;
typedef enum { CM_WRITE_HOOKS, CM_WRITE_MAPPED, CM_WRITE_OFFLOAD, CM_WRITE_COUNT } cm_write_kind_t;
typedef enum { CM_MERGE_NONE, CM_MERGE_BUFFER, CM_MERGE_COUNT } cm_merge_kind_t;
/*
 * The builds of the BUILD column: kind, short name, and the suffix cmrun appends to a
 * program's name to find that build. The build system makes every program a variant may run
 * in every build some row uses (util/cm_flavours.sh reads both tables).
 */
#define CM_BUILD_TABLE(_) \
    _(PLAIN,    "plain",    "") \
    _(STORES,   "stores",   ".hooks") \
    _(ACCESSES, "accesses", ".access")

typedef enum {
#define CM_BUILD_ENUM_(kind, name, suffix) CM_BUILD_##kind,
    CM_BUILD_TABLE(CM_BUILD_ENUM_)
#undef CM_BUILD_ENUM_
    CM_BUILD_COUNT
} cm_build_kind_t;
typedef enum { CM_FABRIC_ANY, CM_FABRIC_MAP } cm_fabric_need_t;

#endif
