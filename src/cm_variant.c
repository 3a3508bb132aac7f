#include "config.h"
#include "src/cm_variant.h"

const cm_variant_info_t cm_variants[] = {
    [CM_VARIANT_CHSM] = {"CHSM", true},  [CM_VARIANT_CHSN] = {"CHSN", true},
    [CM_VARIANT_CHHM] = {"CHHM", false}, [CM_VARIANT_CHHN] = {"CHHN", false},
    [CM_VARIANT_NHHM] = {"NHHM", false}, [CM_VARIANT_NHHN] = {"NHHN", false},
    [CM_VARIANT_NSHM] = {"NSHM", false}, [CM_VARIANT_NSHN] = {"NSHN", false},
    [CM_VARIANT_NSSN] = {"NSSN", false}, [CM_VARIANT_NSSM] = {"NSSM", false},
};
const int cm_nvariants = (int)(sizeof(cm_variants) / sizeof(cm_variants[0]));

bool cm_variant_needs_hooks(cm_variant_t v)
{
    const char *n = cm_variants[v].name;
    return n[2] == 'S' || (n[0] == 'N' && n[1] == 'S'); /* software writes or line fills */
}

const char *cm_variant_mechanism(cm_variant_t v, int pos)
{
    const char *n = cm_variants[v].name;

    switch (pos) {
    case 0:
        return (n[0] == 'C') ? "page copied from its home on a fault (RMA get)"
                             : "64-byte line transfers (not implemented yet)";
    case 1:
        if (n[0] == 'C') {
            return "reads hit the local copy";
        }
        return (n[1] == 'H') ? "direct load/store mapping of the home (not implemented yet)"
                             : "instrumented loads fill lines by RMA get (not implemented yet)";
    case 2:
        return (n[2] == 'S') ? "compiler store hooks forward each store to the home (RMA put)"
                             : "direct mapping or offload thread (not implemented yet)";
    default:
        return (n[3] == 'M') ? "software merge buffer (CM_MERGE_LINES lines of 64 B, byte masks)"
                             : "no merge buffer: one transfer per store";
    }
}
