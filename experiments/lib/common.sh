# SPDX-License-Identifier: BSD-3-Clause
# Sourced by experiments/scoreboard and experiments/paper: what both need to find the tools,
# run a setting, judge a run, describe the machine and draw a setting. The caller defines
# die() and $here (its own directory).

# CMRUN, CM_INFO and STATS_TOOL (cm_stats, which reads statistics files): $CMRUN if set,
# else the build tree's (with its apps), else the installed; the other two beside it.
exp_find_tools() {
    if [ -n "${CMRUN:-}" ]; then
        :
    elif [ -x "$here/../src/tools/cmrun" ]; then
        CMRUN="$here/../src/tools/cmrun"
        export CM_APPS_DIR="${CM_APPS_DIR:-$(cd "$here/../apps" && pwd)}"
    else
        CMRUN=$(command -v cmrun) || die "cmrun not found (build the tree or install Cashmere-RMA)"
    fi
    CM_INFO=${CM_INFO:-$(dirname "$CMRUN")/cm_info}
    STATS_TOOL=${STATS_TOOL:-$(dirname "$CMRUN")/cm_stats}
    [ -x "$CM_INFO" ] || die "cm_info not found next to $CMRUN"
}

# exp_code: sets CODE_KEY (what runs are keyed and resumed by) and CODE_NOTE (one line for the
# records) from the code that runs. In a git checkout with git installed: the last commit that
# changed the code (a study resumes across commits touching only experiments/ or docs), +dirty
# for uncommitted changes. Otherwise the commit the binaries were built from (cm_info's first
# line) and, where even that is unknown, a checksum of the library and cm_info: results of
# different code never share a key.
exp_code() {
    local code_paths="src util directory writenotice locks rma apps include compat flavours.am"
    local built lib sum git="git -c safe.directory=*" # the tree runs here already: trusted
    built=$("$CM_INFO" | sed -n '1s/.*(commit \([^)]*\))$/\1/p')
    # A checkout of its own: not a tarball unpacked inside some other repository.
    if command -v git >/dev/null 2>&1 &&
        [ "$(cd "$here/.." && $git rev-parse --show-toplevel 2>/dev/null)" = "$(cd "$here/.." && pwd -P)" ] &&
        CODE_KEY=$(cd "$here/.." && $git log -1 --format=%H -- $code_paths 2>/dev/null) &&
        [ -n "$CODE_KEY" ]; then
        (cd "$here/.." && $git diff --quiet HEAD -- $code_paths) || CODE_KEY="$CODE_KEY+dirty"
        CODE_NOTE="commit $($git -C "$here/.." rev-parse HEAD)$($git -C "$here/.." diff --quiet HEAD -- 2>/dev/null || echo ' (with uncommitted changes)'); binaries built from ${built:-?}; runs keyed by $CODE_KEY, the last commit of the code that runs"
    elif [ -n "$built" ] && [ "$built" != unknown ]; then
        CODE_KEY="built:$built"
        CODE_NOTE="binaries built from commit $built (cm_info; $( command -v git >/dev/null 2>&1 && echo "$here/.. is no git checkout" || echo "git is not installed")); runs keyed by it"
    else
        lib=$(ldd "$CM_INFO" 2>/dev/null | awk '/libcashmere/ {print $3; exit}')
        sum=$(cat "$CM_INFO" ${lib:+"$lib"} | cksum | cut -d' ' -f1)
        CODE_KEY="build:$sum"
        CODE_NOTE="commit unknown (built without git); runs keyed by a checksum of cm_info and ${lib:-the library}: $sum"
    fi
}

# exp_env SETTING: its environment assignments (sequential: the plain binary, one process).
# A Cashmere setting is a variant, or VARIANT/FORM to name its directory form (mcs, cas, add;
# as tests/mp/stress.sh names them); a variant alone runs the default form (CM_DIRECTORY).
exp_env() {
    case "$1" in
        sequential)      echo "CM_PROTOCOL=none" ;;
        treadmarks)      echo "CM_PROTOCOL=treadmarks CM_TMK_WRITE_DETECT=fault" ;;
        treadmarks-scan) echo "CM_PROTOCOL=treadmarks CM_TMK_WRITE_DETECT=scan" ;;
        */*)             echo "CM_PROTOCOL=cashmere CM_VARIANT=${1%/*} CM_DIRECTORY=${1#*/}" ;;
        *)               echo "CM_PROTOCOL=cashmere CM_VARIANT=$1" ;;
    esac
}

# exp_file SETTING: the setting as it appears in a file name (no slash).
exp_file() { echo "${1//\//-}"; }

# exp_ran SETTING: how an app's result line names what ran under SETTING (exp_env).
exp_ran() {
    case "$1" in
        sequential)   echo "protocol none" ;;
        treadmarks*)  echo "protocol treadmarks" ;;
        *)            echo "protocol cashmere variant ${1%/*}" ;;
    esac
}

# exp_judge LOG RC SETTING: "VERDICT TIME" of a run of SETTING whose stdout is LOG and exit
# status RC: OK with the app's parallel section in seconds, or TIMEOUT, FAILED (did not
# verify), ERROR (also when the result line names another protocol or variant than SETTING).
exp_judge() {
    local t ran
    ran=$(exp_ran "$3")
    t=$(sed -n "s/.*processes: parallel section \\([0-9.]*\\) s, $ran\$/\\1/p" "$1" | head -1)
    if [ "$2" -eq 124 ] || [ "$2" -eq 137 ]; then echo "TIMEOUT $t"
    elif grep -q '^VERIFY FAILED$' "$1"; then echo "FAILED $t"
    elif [ "$2" -ne 0 ] || ! grep -q '^VERIFY OK$' "$1" || [ -z "$t" ]; then echo "ERROR $t"
    else echo "OK $t"
    fi
}

# The machine, as lines of a run record.
exp_machine() {
    echo "host: $(uname -n) $(uname -srm)"
    echo "cpus: $(nproc) ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1))"
    echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)"
}

# exp_colour SETTING [light]: one colour per pair of fill and write mechanisms (the variant
# table's, as `cm_info --variants` lists them), TreadMarks black and grey; with light, a
# variant without a merge buffer gets its pair's lighter tint (bars, which cannot be dashed),
# unless it is the first of a pair that has no buffer at all (NHHM, whose M has nothing to
# merge, beside NHHN). cm_info: $CM_INFO, the build tree's, or the installed one; without
# it, and for any other setting, brown.
exp_colour() {
    local row pair tint=0 lib
    case $1 in
        treadmarks)      echo '#000000'; return ;;
        treadmarks-scan) echo '#808080'; return ;;
    esac
    if [ -z "${EXP_VARIANTS+set}" ]; then
        lib=$(dirname "${BASH_SOURCE[0]}")
        EXP_VARIANTS=$("${CM_INFO:-$lib/../../src/tools/cm_info}" --variants 2>/dev/null ||
                       cm_info --variants 2>/dev/null) || EXP_VARIANTS=
    fi
    row=$(awk -v v="$1" '$1 == v' <<< "$EXP_VARIANTS")
    pair=$(sed -n 's/.* \(fill=[a-z]* write=[a-z]*\) .*/\1/p' <<< "$row")
    if [ "${2:-}" = light ] && [ -n "$pair" ] && [[ "$row" == *" merge=none"* ]] &&
        { grep -q " $pair merge=buffer" <<< "$EXP_VARIANTS" ||
          [ "$(grep " $pair " <<< "$EXP_VARIANTS" | head -1 | cut -d' ' -f1)" != "$1" ]; }; then
        tint=1
    fi
    case "$pair:$tint" in
        "fill=page write=hooks:0")   echo '#1f77b4' ;;
        "fill=page write=hooks:1")   echo '#9ecae1' ;;
        "fill=page write=offload:0") echo '#2ca02c' ;;
        "fill=page write=offload:1") echo '#98df8a' ;;
        "fill=map write=mapped:0")   echo '#d62728' ;;
        "fill=map write=mapped:1")   echo '#ff9896' ;;
        "fill=line write=offload:0") echo '#9467bd' ;;
        "fill=line write=offload:1") echo '#c5b0d5' ;;
        "fill=line write=hooks:0")   echo '#ff7f0e' ;;
        "fill=line write=hooks:1")   echo '#ffbb78' ;;
        *)                           echo '#8c564b' ;;
    esac
}
