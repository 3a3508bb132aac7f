#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# cmrun and cm_info as a user meets them.
. "$top_srcdir/tests/lib.sh"
use_shm
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

note "--verbose names the launcher, protocol and variant; the hooked binary is picked"
expect_ok "$CMRUN" --verbose -n 2 "$MP/mp_init" info
expect_out "^cmrun: launcher (mpirun|prterun|srun) .*, protocol cashmere, variant CHSM$"
expect_out "mp_init\.hooks info$"
expect_ok "$CMRUN" --verbose --variant CHSN -n 2 "$MP/mp_init" info
expect_out "variant CHSN$"
expect_out "mp_init\.hooks info$"
note "--variant in the wrong case: refused before launch with the spelling meant"
expect_fail "$CMRUN" --verbose --variant chsn -n 2 "$MP/mp_init" info
expect_out "CM_VARIANT='chsn' is not one of .*\(did you mean CM_VARIANT=CHSN\?\)$"
[ "$(count_out '^cmrun: launcher')" -eq 0 ] || fail "the launcher was started"

note "--stdin: every rank reads the same input"
seq 1 5000 > "$tmp/input"
size=$(wc -c < "$tmp/input")
expect_ok "$CMRUN" -n 4 --stdin "$tmp/input" "$MP/mp_init" stdin
[ "$(count_out "^stdin rank [0-3]: $size bytes")" -eq 4 ] || fail "not every rank read $size bytes"
[ "$(printf '%s\n' "$out" | grep '^stdin rank' | awk '{print $NF}' | sort -u | wc -l)" -eq 1 ] ||
    fail "ranks read different bytes"

note "arguments reach every rank intact"
expect_ok "$CMRUN" -n 2 "$MP/mp_init" args "a b" 'c$d' ""
[ "$(count_out '^args rank [01]: \[a b\] \[c\$d\] \[\]$')" -eq 2 ] || fail "arguments mangled"

note "a bare name is found in CM_APPS_DIR (and its .hooks build picked)"
mkdir "$tmp/apps"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$MP/mp_init" > "$tmp/apps/myapp"
printf '#!/bin/sh\nexec "%s" "$@"\n' "$MP/mp_init.hooks" > "$tmp/apps/myapp.hooks"
chmod +x "$tmp/apps/myapp" "$tmp/apps/myapp.hooks"
expect_ok env CM_APPS_DIR="$tmp/apps" "$CMRUN" -n 2 myapp args found
[ "$(count_out '^args rank [01]: \[found\]')" -eq 2 ] || fail "bare name not resolved"

note "cmrun alone signalled (not its process group): the job ends, nothing is left behind"
start=$SECONDS
run 30 timeout --foreground -s TERM 3 "$CMRUN" -n 2 sleep 60
[ "$rc" -ne 0 ] || fail "exit status 0"
[ $((SECONDS - start)) -le 15 ] || fail "took $((SECONDS - start))s"

note "--version"
expect_ok "$CMRUN" --version
expect_out "^cmrun \(Cashmere-RMA\) [0-9]+\.[0-9]+\.[0-9]+$"
[ "$(count_out .)" -eq 1 ] || fail "--version: not one line"

# Fake launchers: they print each argument they get on a line of its own, and start nothing.
mkdir "$tmp/fake"
for l in srun prterun; do
    # shellcheck disable=SC2016 # "$@" and "$a" are the fake launcher's
    printf '#!/bin/sh\nfor a in "$@"; do printf "%s[%%s]\\n" "$a"; done\n' "$l" > "$tmp/fake/$l"
    chmod +x "$tmp/fake/$l"
done
# Without the size of an allocation the test may itself run in: each check sets its own.
FAKE=(env -u SLURM_NTASKS -u SLURM_NPROCS -u SLURM_JOB_CPUS_PER_NODE "PATH=$tmp/fake:$PATH")
# args LAUNCHER: the arguments the fake LAUNCHER got, one line each, as LAUNCHER[arg].
args() { printf '%s\n' "$out" | grep "^$1\[" || true; }

note "under srun, more ranks than the allocation has tasks: --overcommit, else not"
for c in "4 SLURM_NTASKS=2" "4 SLURM_NPROCS=2" "4 SLURM_JOB_CPUS_PER_NODE=1(x2),1" "4 SLURM_NTASKS=4" \
         "4 SLURM_JOB_CPUS_PER_NODE=2(x2)" "2 SLURM_NTASKS=3"; do
    # shellcheck disable=SC2086 # the count, then the settings
    set -- $c
    n=$1; shift
    expect_ok "${FAKE[@]}" SLURM_JOB_ID=1 "$@" "$CMRUN" -n "$n" "$MP/mp_init" info
    args srun | grep -qx 'srun\[--mpi=pmix\]' || fail "$c: srun not used"
    case "$c" in
        "4 SLURM_NTASKS=4"|"4 SLURM_JOB_CPUS_PER_NODE=2(x2)"|"2 SLURM_NTASKS=3")
            args srun | grep -q overcommit && fail "$c: --overcommit where the ranks fit" ;;
        *)  args srun | grep -qx 'srun\[--overcommit\]' || fail "$c: no --overcommit" ;;
    esac
done

note "prterun run as root gets --allow-run-as-root (as mpirun does)"
expect_ok "${FAKE[@]}" "$CMRUN" --launcher prterun -n 2 "$MP/mp_init" info
args prterun | grep -qx 'prterun\[-n\]' || fail "prterun not used"
if [ "$(id -u)" = 0 ]; then
    args prterun | grep -qx 'prterun\[--allow-run-as-root\]' || fail "no --allow-run-as-root as root"
else
    args prterun | grep -q allow-run-as-root && fail "--allow-run-as-root though not root"
fi

note "CM_LAUNCHER_ARGS is split as a shell splits words (quotes, backslashes), nothing expanded"
expect_ok "${FAKE[@]}" CM_LAUNCHER_ARGS="--mca plm_rsh_args '-p 2222 -o StrictHostKeyChecking=no'" \
    "$CMRUN" --launcher prterun -n 2 "$MP/mp_init" info
[ "$(args prterun | grep -A3 -x 'prterun\[--mca\]' | tr '\n' ' ')" = \
  "prterun[--mca] prterun[plm_rsh_args] prterun[-p 2222 -o StrictHostKeyChecking=no] prterun[$MP/mp_init.hooks] " ] ||
    fail "CM_LAUNCHER_ARGS not split into 3 arguments before the program"
ran=$tmp/ran
la="a\\ b \"c \\\"d\\\" \$HOME\" '\$(touch $ran)' \`touch $ran\`"
expect_ok "${FAKE[@]}" CM_LAUNCHER_ARGS="$la" "$CMRUN" --launcher prterun -n 2 "$MP/mp_init" info
[ "$(args prterun | grep -A4 -x 'prterun\[a b\]' | tr '\n' ' ')" = \
  "prterun[a b] prterun[c \"d\" \$HOME] prterun[\$(touch $ran)] prterun[\`touch] prterun[$ran\`] " ] ||
    fail "CM_LAUNCHER_ARGS=$la: not split as a shell splits it"
[ -e "$tmp/ran" ] && fail "CM_LAUNCHER_ARGS ran a command"
for bad in "--mca x 'unclosed" 'say "unclosed' "trailing\\"; do
    run 30 "${FAKE[@]}" CM_LAUNCHER_ARGS="$bad" "$CMRUN" --launcher prterun -n 2 "$MP/mp_init" info
    [ "$rc" -eq 2 ] || fail "CM_LAUNCHER_ARGS=$bad: exit status $rc, not 2"
    [ "$(count_out .)" -eq 1 ] || fail "CM_LAUNCHER_ARGS=$bad: not one line"
    expect_out "^cmrun: error: CM_LAUNCHER_ARGS: (unbalanced . quote|a backslash at the end) in: "
    [ -z "$(args prterun)" ] || fail "CM_LAUNCHER_ARGS=$bad: the launcher ran"
done

note "usage errors"
expect_fail "$CMRUN" -n 2 no_such_program_xyz
expect_out "program 'no_such_program_xyz' not found"
expect_fail "$CMRUN" -n zero "$MP/mp_init"
expect_out "-n needs a positive number"
expect_fail "$CMRUN" --frobnicate "$MP/mp_init"
expect_out "unknown option --frobnicate"
expect_fail "$CMRUN" --launcher bogus -n 2 "$MP/mp_init"
expect_out "unknown launcher 'bogus'"
expect_fail env CM_LAUNCHER=mpich "$CMRUN" -n 2 "$MP/mp_init"
expect_out "CM_LAUNCHER='mpich' is not one of"

note "process limits are checked by cmrun before launching: one line, at once"
for c in "1000" "65" "65 CM_PROTOCOL=treadmarks" "17 CM_DIRECTORY=cas" "17 CM_DIRECTORY=add"; do
    set -- $c
    n=$1; shift
    start=$SECONDS
    run 30 env "$@" "$CMRUN" -n $n "$MP/mp_init" info
    [ "$rc" -ne 0 ] || fail "-n $n $* accepted"
    [ $((SECONDS - start)) -le 10 ] || fail "-n $n $*: took $((SECONDS - start))s"
    [ "$(count_out "^cashmere: error: .*$n processes.*at most (64|16)")" -eq 1 ] ||
        fail "-n $n $*: not exactly one line naming the limit"
    [ "$(count_out '^cashmere\[')" -eq 0 ] || fail "-n $n $*: a rank started"
done
expect_ok "$CM_INFO" --check -n 64
expect_fail "$CM_INFO" --check -n 65
expect_ok env CM_DIRECTORY=cas "$CM_INFO" --check -n 16
expect_fail env CM_DIRECTORY=cas "$CM_INFO" --check -n 17
expect_ok env CM_DIRECTORY=add "$CM_INFO" --check -n 16
expect_fail env CM_DIRECTORY=add "$CM_INFO" --check -n 17

note "a variant that is not implemented is refused by cmrun, from the variant table"
implemented=$("$CM_INFO" --variants | awk '$2 != "not-implemented" {print $1}' | paste -sd, | sed 's/,/, /g')
[ -n "$implemented" ] || fail "cm_info --variants lists no implemented variant"
missing=$("$CM_INFO" --variants | awk '$2 == "not-implemented" {print $1; exit}')
if [ -n "$missing" ]; then
    run 30 env CM_VARIANT=$missing "$CMRUN" -n 2 "$MP/mp_init" info
    [ "$rc" -ne 0 ] || fail "$missing accepted"
    [ "$(count_out "^cashmere: error: CM_VARIANT=$missing is not implemented yet \(implemented: $implemented\)$")" -eq 1 ] ||
        fail "not exactly one line from cmrun"
    [ "$(count_out '^cashmere\[|UCX')" -eq 0 ] || fail "the job started"
else
    echo "(every variant of the table is implemented: no refusal to check)"
fi
expect_ok "$CM_INFO" --variants
[ "$(count_out '^[CN][HS][HS][MN] (available|unavailable|not-implemented) build=(plain|stores|accesses) fill=[a-z]+ write=[a-z]+ merge=[a-z]+ fabric=(any|map)( (why|note)=.+)?$')" -eq 10 ] ||
    fail "cm_info --variants: not one line per variant of the table"
rows=$(grep -c '^ *_([CN][HS][HS][MN],' "$top_srcdir/util/cm_variant_table.h")
[ "$rows" -eq 10 ] || fail "the variant table has $rows rows, not the paper's ten"
expect_out '^CHSM available build=stores fill=page write=hooks merge=buffer fabric=any$'
expect_out '^NHHM [a-z-]+ build=plain fill=map write=mapped merge=none fabric=map .*(M: stores reach the home through the mapping|why=)'
note "cm_info --check says which build the variant needs"
expect_ok env CM_VARIANT=CHSN "$CM_INFO" --check -n 2
expect_out '^build=stores$'
expect_out '^suffix=\.hooks$'
expect_ok env CM_PROTOCOL=treadmarks "$CM_INFO" --check -n 2
expect_out '^build=plain$'
expect_out '^suffix=$'

grep -Eq 'CHS|NS\?|\?\?S' "$top_srcdir/src/tools/cmrun.in" && fail "cmrun.in has its own copy of variant letters"

note "bad settings caught at start, not at the end: one line, nothing written, no rank started"
mkdir "$tmp/work"
run 30 env -C "$tmp/work" CM_MERGE_LINES=99999999999 "$CMRUN" -n 2 "$MP/mp_init" info
[ "$rc" -ne 0 ] || fail "CM_MERGE_LINES=99999999999 accepted"
[ "$(count_out "^cashmere: error: CM_MERGE_LINES='99999999999' is not .* 0\.\.[0-9]+")" -eq 1 ] ||
    fail "not exactly one line giving the range"
[ "$(count_out '^cashmere\[')" -eq 0 ] || fail "a rank started"
run 30 env -C "$tmp/work" CM_STATS=tabel "$CMRUN" -n 2 "$MP/mp_init" info
[ "$rc" -ne 0 ] || fail "CM_STATS=tabel accepted"
[ "$(count_out "^cashmere: error: CM_STATS='tabel' .*did you mean table")" -eq 1 ] || fail "not one line"
[ -e "$tmp/work/tabel" ] && fail "a file named tabel was written"
[ "$(count_out '^cashmere\[')" -eq 0 ] || fail "a rank started"
run 30 env CM_STATS="$tmp/no/such/dir/s.json" "$CMRUN" -n 2 "$MP/mp_init" info
[ "$rc" -ne 0 ] || fail "an unwritable CM_STATS accepted"
[ "$(count_out "^cashmere: error: CM_STATS=$tmp/no/such/dir/s.json")" -eq 1 ] || fail "not one line"
[ "$(count_out '^rank ')" -eq 0 ] || fail "the job ran before failing"
expect_ok env -C "$tmp/work" CM_STATS=./s.json "$CMRUN" -n 2 "$MP/mp_init" info
[ -s "$tmp/work/s.json" ] || fail "CM_STATS=./s.json not written"

note "cm_info -c lists every setting of the table, with its doc"
expect_ok "$CM_INFO" -c
names=$(sed -n 's/^ *_([a-z_]*, *\([A-Z_]*\),.*/CM_\1/p' "$top_srcdir/util/cm_config_table.h")
[ -n "$names" ] || fail "could not read the table"
for n in $names; do
    expect_out "^$n="
done
[ "$(count_out '^# type: ')" -eq "$(echo "$names" | wc -w)" ] || fail "every setting has a type line"
expect_ok env CM_NET_BANDWIDTH=10Gb "$CM_INFO" -c
expect_out "parsed: 1.25e\+09B/s"
expect_fail env CM_META_SIZE=huge "$CM_INFO" --check
expect_out "CM_META_SIZE='huge' is not a size"

note "cm_info --version, --help; a bad option is one line and exit 2"
expect_version "$CM_INFO" cm_info
expect_ok "$CM_INFO" --help
expect_out "^usage: cm_info .*--version\]$"
for bad in "--bogus" "-n" "-n x" "--check --local -1" "--variants extra"; do
    # shellcheck disable=SC2086
    expect_usage_error 30 "^cm_info: .* \(see cm_info --help\)$" "$CM_INFO" $bad
done

note "cm_info summary"
expect_ok "$CM_INFO"
expect_out "^Cashmere-RMA $PACKAGE_VERSION \(commit [A-Za-z0-9._+-]+\)$"
expect_out "^Cashmere-RMA "
expect_out "^  UCX [0-9]+\.[0-9]+"
expect_out "direct load/store of peers' memory"
expect_out "^  treadmarks  lazy release consistency"
expect_out "^  CHSM  available"
expect_out "^  NHHM  (not-implemented|unavailable|available)"
echo "PASS"
