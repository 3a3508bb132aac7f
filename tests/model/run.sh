#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Model checking of the Cashmere protocol with SPIN (tests/README.md, "The protocol model"):
#   - the fixed protocol passes an exhaustive search in each configuration;
#   - the old orderings produce counterexamples (tests that expect failure);
#   - every reachability probe is reached (the search covers the paths it claims).
# Likewise treadmarks.pml, TreadMarks' lazy diffs with twins across intervals:
# the rule passes, the old rule and its broken variants give lost updates. And
# wake.pml, the blocking waits' sleep and wake-up: no sleeper is left asleep.
# The variants' mechanisms (line fills, mapped homes, the offload engine) pass
# their own searches; their broken orderings give lost updates.
# `make check` runs the default set (a few minutes: the two big searches run
# in parallel, ~13 GB of memory at most together); --full adds the other two configurations.
#
# --parse only has SPIN generate every configuration's verifier (seconds: the model files are
# all there and well formed), for the tarball's check (distcheck-ci) of what make check verifies.
#
#   tests/model/run.sh [--full | --parse] [--keep DIR]
set -u
here=$(cd "$(dirname "$0")" && pwd)
full=0
parse=0
keep=
while [ $# -gt 0 ]; do
    case $1 in
    --full) full=1 ;;
    --parse) parse=1 ;;
    --keep) keep=$2; shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done

if ! command -v spin >/dev/null 2>&1; then
    echo "SKIP: spin is not installed (Debian package spin); the protocol model was not checked"
    exit 77
fi
CC=${CC:-cc}
# The lowest priority: under make -j check the searches run on what the other tests leave
# idle (tests/one_at_a_time.sh); alone, they get the whole machine as before.
chrt --idle -p 0 $$ >/dev/null 2>&1 || renice -n 19 -p $$ >/dev/null 2>&1 || :
work=${keep:-$(mktemp -d)}
mkdir -p "$work"
[ -n "$keep" ] || trap 'rm -rf "$work"' EXIT
failures=0

# Verifiers that only find a counterexample or reach a probe (in a second or two) are compiled
# without optimization: cc -O2 of a verifier takes 12 s of CPU, -O0 1.4 s, and these are most of
# the ~60 builds. The exhaustive searches, and the mutations that search for a minute, keep -O2.
quick=" cas-unsafe-wait cas-safe-wait mcs-unsafe-wait mcs-safe-wait
        add-old_rely add-no_self_join add-tail_first add-leave_unfenced add-home_join_unfenced
        lock-no_resolve lock-split_release lock-split_link
        mech-line-keep mech-offload-late mech-fill-no-twin refetch-no-self refetch-add-no-self
        early-busy
        ring-old-pending ring-wait tmk-old-rule tmk-no-encode tmk-foreign-needs-twin tmk-cold-raw
        wake-futex wake-seq-late wake-events wake-no-self-fd wake-bell wake-bell-look-first
        wake-bell-arm-first wake-bell-seen-late wake-sleep wake-sleep-wake-first
        wake-sleep-nap-late wake-sleep-no-flush wake-progress wake-progress-arm-no-wake
        twolevel-outgoing_keep_twin twolevel-early_unlock twolevel-no_leave twolevel-no_self
        twolevel-drop_writes twolevel-incoming_copy twolevel-incoming_keep_twin
        twolevel-no_drain_wait twolevel-ignore_wn twolevel-ft_no_copy twolevel-ft_no_wait
        hostlock-no_recheck hostlock-ask_no_grant hostlock-next_late hostlock-stop_early "
# Verifiers that try the processes in reverse order (pan's -DREVERSE): the two-level mutations
# whose counterexample the default order finds after 10-50 M states find it within 0.5 M.
# (A counterexample is one whatever the order; the passing searches keep the default order.)
reverse=" twolevel-incoming_keep_twin twolevel-no_drain_wait twolevel-ignore_wn "
# Searched exhaustively only with --full; else their verifiers serve probes.
[ "$full" = 1 ] || quick="$quick cas-safe mcs-unsafe add-unsafe"
quick=" $(echo $quick) "   # one space between names

# build NAME MODEL FLAGS...: spin + cc into $work/NAME.
build() {
    local name=$1 model=$2 dir="$work/$1" opt=-O2
    shift 2
    case $quick in *" $name "*) opt=-O0 ;; esac
    case $reverse in *" $name "*) opt="$opt -DREVERSE" ;; esac
    mkdir -p "$dir"
    cp "$here"/*.pml "$dir/"   # a model may include another (cashmere.pml: dir_add.pml)
    (
        cd "$dir" || exit 1
        spin -a "$@" "$model" >spin.out 2>&1 || exit 1
        [ "$parse" = 0 ] || exit 0
        # COLLAPSE: exact state storage, compressed (no hash compaction, no bitstate).
        $CC $opt -DSAFETY -DCOLLAPSE -o pan pan.c >cc.out 2>&1 || exit 1
    ) || { echo "FAIL $name: could not build the verifier ($model $*)"; \
           cat "$dir"/spin.out "$dir"/cc.out 2>/dev/null | head -5; } >"$dir/build.err"
}

# check NAME BUILD EXPECT [PROBE]: runs BUILD's verifier (with PROBE=n in its
# environment if given). EXPECT is pass (an exhaustive search without error)
# or fail:PATTERN (an error whose message matches PATTERN). The verdict line
# goes to $work/NAME.verdict; the end of the script prints them in order.
names=()
check() {
    local name=$1 bdir="$work/$2" expect=$3 probe=${4:-} out errors states start secs
    names+=("$name")
    if [ -s "$bdir/build.err" ]; then
        cp "$bdir/build.err" "$work/$name.verdict"
        return
    fi
    if [ "$parse" = 1 ]; then
        echo "ok   $name: SPIN generated its verifier (--parse: not run)" >"$work/$name.verdict"
        return
    fi
    out="$work/$name.out"
    start=$(date +%s)
    (cd "$bdir" && PROBE=$probe ./pan -m200000 -w26 >"$out" 2>&1)
    secs=$(( $(date +%s) - start ))
    errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$out")
    states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$out")
    case $expect in
    pass)
        if [ "$errors" = 0 ] && ! grep -q "search was not completed\|max search depth too small" "$out"; then
            echo "ok   $name: no error in an exhaustive search of $states states (${secs}s)"
        else
            echo "FAIL $name: expected no error ($states states)"
            grep -E "violated|invalid end|error|too small" "$out" | head -5 | sed 's/^/       /'
        fi ;;
    fail:*)
        if [ "${errors:-0}" -gt 0 ] && grep -Eq -- "${expect#fail:}" "$out"; then
            echo "ok   $name: counterexample as expected: $(grep -Eo 'assertion violated.*|invalid end state.*' "$out" | head -1) (${secs}s)"
        else
            echo "FAIL $name: expected an error matching /${expect#fail:}/, got ${errors:-none} ($states states)"
        fi ;;
    esac >"$work/$name.verdict"
}

stale='assertion violated \(val==ghost'      # a stale read under a lock
reached() { echo "fail:assertion violated \\($1==0\\)"; }

# The two exhaustive protocol searches, one per directory form, with complementary features:
#   unsafe: every weak page unsafe (version checks), a one-slot ring that overflows, each
#           critical section on both pages (so that an overflow drops a mapped page);
#   safe:   notices and self-notices only, duplicate suppression, a two-slot ring.
# Both with first-touch home migration. --full runs each in the other form too.
unsafe=(-DTHRESH=0 -DFIRST_TOUCH=1 -DCAP=1 -DBOTH_PAGES)
safe=(-DTHRESH=2 -DFIRST_TOUCH=1 -DCAP=2)
probes_unsafe="1 3 4 5 6 8 11 13 14"      # the paths each configuration must reach
probes_safe="1 2 5 6 8 11 12"
forms="cas mcs"
big="cas-unsafe mcs-safe"
[ "$full" = 1 ] && big="cas-unsafe mcs-safe mcs-unsafe cas-safe"

# The add form (issue 45: dir_add.pml): the safe configuration's exhaustive search, 240 M states
# and 13 GB; --full adds the unsafe one's (345 M states, 17 GB, 8 min). Its broken orderings
# fail in a configuration without first touch (137 M states when it passes) within seconds.
# The unsafe configuration's verifier serves its probes (overflow, unsafe pages) by default.
add_mut=(-DCM_DIR_ADD -DTHRESH=2 -DFIRST_TOUCH=0 -DCAP=2)
big="$big add-safe"
[ "$full" = 1 ] && big="$big add-unsafe add-choice"

# Two at a time: this is meant for 2 cores.
throttle() { while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done; }
for form in $forms; do
    for kind in unsafe safe; do
        if [ "$kind" = unsafe ]; then flags=("${unsafe[@]}"); else flags=("${safe[@]}"); fi
        throttle; build "$form-$kind" cashmere.pml "-DCM_DIR_${form^^}" "${flags[@]}" &
        throttle; build "$form-$kind-wait" cashmere.pml "-DCM_DIR_${form^^}" "${flags[@]}" -DWAIT_PROBES &
    done
    throttle; build "$form-old-order" cashmere.pml "-DCM_DIR_${form^^}" -DOLD_ORDER &
done
throttle; build add-safe cashmere.pml -DCM_DIR_ADD -DJOIN_TELL_ALWAYS "${safe[@]}" &
# The joins' notices to the writers they found, told or not at each (the code tells at the
# second such join in a row): every mix, without first touch (335 M states, 16 GB, 8 min).
[ "$full" = 1 ] && { throttle; build add-choice cashmere.pml "${add_mut[@]}" & }
throttle; build add-unsafe cashmere.pml -DCM_DIR_ADD "${unsafe[@]}" &
for m in OLD_RELY NO_SELF_JOIN TAIL_FIRST LEAVE_UNFENCED HOME_JOIN_ANY HOME_JOIN_UNFENCED; do
    throttle; build "add-${m,,}" cashmere.pml "${add_mut[@]}" "-D$m" &
done
# The variants' mechanisms (the safe configuration, CAS form): line fills (NSS*), the home's
# memory mapped (NH**), the offload engine (CHH*), both (NSH*); and their broken orderings.
mech_flags=(-DCM_DIR_CAS "${safe[@]}")
throttle; build mech-line cashmere.pml "${mech_flags[@]}" -DFILL_LINE &
throttle; build mech-mapped cashmere.pml "${mech_flags[@]}" -DWRITE_MAPPED &
throttle; build mech-offload cashmere.pml "${mech_flags[@]}" -DWRITE_OFFLOAD &
throttle; build mech-line-offload cashmere.pml "${mech_flags[@]}" -DFILL_LINE -DWRITE_OFFLOAD &
throttle; build mech-line-keep cashmere.pml "${mech_flags[@]}" -DFILL_LINE -DLINE_KEEP &
throttle; build mech-offload-late cashmere.pml "${mech_flags[@]}" -DWRITE_OFFLOAD -DOFFLOAD_LATE &
throttle; build mech-fill-no-twin cashmere.pml "${mech_flags[@]}" -DFILL_LINE -DWRITE_OFFLOAD -DFILL_NO_TWIN &
# Refetch at acquire (CM_REFETCH, the default across hosts of page copies with the CAS form): a
# small configuration (two processes, one with four critical sections over two pages) where
# every path is reached, a held page going unused twice and leaving included; there, the
# mutation without the snapshot's self-notice, which must read a stale word. --full adds the
# safe configuration's search (three processes, 47 M states).
[ "$full" = 1 ] && { throttle; build refetch-safe cashmere.pml "${mech_flags[@]}" -DREFETCH & }
refetch_small=(-DCM_DIR_CAS -DTHRESH=2 -DCAP=2 -DNPROC=2 -DNCS0=4 -DNCS=1 -DNPAGE=2 -DREFETCH)
throttle; build refetch-small cashmere.pml "${refetch_small[@]}" &
throttle; build refetch-no-self cashmere.pml "${refetch_small[@]}" -DREFETCH_NO_SELF &
# Two critical sections for the second process, three for the first: a writer can write,
# release and leave while the other's acquire refetches. With the snapshots read with the
# copies (REFETCH_SNAP_LATE, the code before issue 30's fix) a stale word is read (85 M states,
# 2 min); read before them, --full's exhaustive search passes (168 M states, 9 GB, 5 min).
refetch_two=(-DCM_DIR_CAS -DTHRESH=2 -DCAP=2 -DNPROC=2 -DNCS0=3 -DNCS=2 -DNPAGE=2 -DREFETCH)
[ "$full" = 1 ] && { throttle; build refetch-two cashmere.pml "${refetch_two[@]}" & }
throttle; build refetch-snap-late cashmere.pml "${refetch_two[@]}" -DREFETCH_SNAP_LATE &
# Refetch under the add form (the default directory): the small configuration passes (21 M
# states); with three critical sections for the second process, a held page that is never
# self-noticed reads a stale word (1 M states, 2 s), as under the CAS form.
refetch_add=(-DCM_DIR_ADD -DTHRESH=2 -DCAP=2 -DNPROC=2 -DNPAGE=2 -DREFETCH)
throttle; build refetch-add cashmere.pml "${refetch_add[@]}" -DNCS0=4 -DNCS=1 &
throttle; build refetch-add-no-self cashmere.pml "${refetch_add[@]}" -DNCS0=2 -DNCS=3 -DREFETCH_NO_SELF &
# A fault's copy got with its join (CAS form, page copies, a fixed home): taken while a first
# toucher's claim is still BUSY, it reads the data from before the claim copied it in.
throttle; build early-busy cashmere.pml "${mech_flags[@]}" -DEARLY_BUSY &
# The add form's application lock, whose release waits for nothing (lock.pml): three processes
# acquiring it three times each (10 M states, 9 s; four processes twice each, 461 M states,
# pass too), and its three broken orderings.
throttle; build lock lock.pml -DNPROC=3 -DNACQ=3 &
for m in NO_RESOLVE SPLIT_RELEASE SPLIT_LINK; do
    throttle; build "lock-${m,,}" lock.pml "-D$m" &
done
throttle; build ring-cap2 ring.pml -DNPOSTER=3 -DCAP=2 &
throttle; build ring-cap1 ring.pml -DNPOSTER=3 -DCAP=1 &
throttle; build ring-old-pending ring.pml -DOLD_PENDING &
throttle; build ring-wait ring.pml -DWAIT_PROBES &
# TreadMarks: the rule in any happened-before order of application; the variants that
# must fail in the code's order (vector-time sums), so that they do not rest on the model's
# freer choice.
throttle; build tmk treadmarks.pml &
throttle; build tmk-old-rule treadmarks.pml -DOLD_RULE -DVTSUM &
throttle; build tmk-no-encode treadmarks.pml -DNO_ENCODE_ON_FOREIGN -DVTSUM &
throttle; build tmk-foreign-needs-twin treadmarks.pml -DFOREIGN_NEEDS_TWIN -DVTSUM &
# Values that come back to the twin's (TOGGLE): the cold copy must follow an encode of the
# manager's writes; a raw copy (COLD_RAW, the code before this model's change) loses an update.
throttle; build tmk-toggle treadmarks.pml -DTOGGLE &
throttle; build tmk-cold-raw treadmarks.pml -DTOGGLE -DCOLD_RAW -DVTSUM &
# Blocking waits: a sleeper is always woken (futex; worker fd + eventfd), the broken orders not.
throttle; build wake-futex wake.pml &
throttle; build wake-seq-late wake.pml -DSEQ_LATE &
throttle; build wake-events wake.pml -DEVENTS &
throttle; build wake-no-self-fd wake.pml -DEVENTS -DNO_SELF_FD &
throttle; build wake-bell wake.pml -DBELL &
throttle; build wake-bell-look-first wake.pml -DBELL -DLOOK_FIRST &
throttle; build wake-bell-arm-first wake.pml -DBELL -DARM_FIRST &
throttle; build wake-bell-seen-late wake.pml -DBELL -DSEEN_LATE &
throttle; build wake-progress wake.pml -DPROGRESS &
throttle; build wake-progress-arm-no-wake wake.pml -DPROGRESS -DARM_NO_WAKE &
# The compat layers' sleeps on a lock's word (locks/cm_sleep.c): no waiter left asleep.
throttle; build wake-sleep wake.pml -DSLEEP &
throttle; build wake-sleep-wake-first wake.pml -DSLEEP -DWAKE_FIRST &
throttle; build wake-sleep-nap-late wake.pml -DSLEEP -DNAP_LATE &
throttle; build wake-sleep-no-flush wake.pml -DSLEEP -DNO_FLUSH &
# The two-level protocol (issue 46, twolevel.pml): two hosts of two processes, one page. Its
# three programs pass (the counters' 67 M states, 3.9 GB, 104 s); each broken ordering fails in
# the program that exercises it (within 0.5 M states, the first three in reverse order).
for prog in 0 1 2; do
    throttle; build "twolevel-$prog" twolevel.pml -DPROG=$prog &
done
# First touch per host (FIRST_TOUCH): the first join claims the home, BUSY while it copies the
# page in from the old home. A program where host 0's processes and host 1's work on the two
# words under two locks at once (0.5 M states); a claimer that does not copy, and a joiner that
# does not wait for BUSY, read stale words.
throttle; build twolevel-ft twolevel.pml -DPROG=3 -DFIRST_TOUCH &
# --full: the counters program with first touch too (86 M states, 5 GB, 5 min).
[ "$full" = 1 ] && { throttle; build twolevel-0-ft twolevel.pml -DPROG=0 -DFIRST_TOUCH & }
for n in FT_NO_COPY FT_NO_WAIT; do
    throttle; build "twolevel-${n,,}" twolevel.pml -DPROG=3 -DFIRST_TOUCH "-D$n" &
done
twolevel_mut="0:INCOMING_KEEP_TWIN 0:NO_DRAIN_WAIT 0:IGNORE_WN 0:OUTGOING_KEEP_TWIN
              0:EARLY_UNLOCK 0:NO_LEAVE 1:NO_SELF 2:DROP_WRITES 2:INCOMING_COPY"
for m in $twolevel_mut; do
    n=${m#*:}
    throttle; build "twolevel-${n,,}" twolevel.pml -DPROG=${m%%:*} "-D$n" &
done
# The two-level lock that stays at its host until another host asks (hostlock.pml): two
# hosts of two processes; --full: two of them acquire twice (74 M states, 3 min).
throttle; build hostlock hostlock.pml &
[ "$full" = 1 ] && { throttle; build hostlock-2 hostlock.pml -DNACQ=2 & }
for m in NO_RECHECK ASK_NO_GRANT NEXT_LATE STOP_EARLY; do
    throttle; build "hostlock-${m,,}" hostlock.pml "-D$m" &
done
wait
mechs="mech-line mech-mapped mech-offload mech-line-offload refetch-small refetch-add
       twolevel-0 twolevel-1 twolevel-2 twolevel-ft hostlock"
[ "$full" = 1 ] && mechs="$mechs refetch-safe refetch-two twolevel-0-ft hostlock-2"
for name in $big $mechs; do
    throttle; check "$name" "$name" pass &
done
# The mutations that search for a while (12-80 s each) share the two cores with those.
slow="refetch-snap-late cas-old-order mcs-old-order"
for name in $slow; do
    throttle; check "$name" "$name" "fail:$stale" &
done
wait

# Each mechanism's broken ordering loses a lock-protected update; its own path is reached.
check mech-line-keep mech-line-keep "fail:$stale"
check mech-offload-late mech-offload-late "fail:$stale"
check mech-fill-no-twin mech-fill-no-twin "fail:$stale"
check probe-15-line mech-line "$(reached 15)" 15
check probe-15-line-offload mech-line-offload "$(reached 15)" 15
check probe-16-offload mech-offload "$(reached 16)" 16
check probe-16-line-offload mech-line-offload "$(reached 16)" 16
check refetch-no-self refetch-no-self "fail:$stale"
check refetch-add-no-self refetch-add-no-self "fail:$stale"
check early-busy early-busy "fail:$stale"
check probe-20-cas-unsafe cas-unsafe "$(reached 20)" 20   # a fault's copy got with its join
check probe-17-refetch refetch-small "$(reached 17)" 17   # a writer's WRITE skipped
check probe-19-refetch refetch-small "$(reached 19)" 19   # a page refetched
check probe-12-refetch refetch-small "$(reached 12)" 12   # a self-notice invalidates
check probe-18-refetch refetch-small "$(reached 18)" 18  # a held page leaves unused
check probe-19-refetch-add refetch-add "$(reached 19)" 19   # a page refetched, add form

# The add form: a writer that relies on another's notices, a joiner that does not notice
# itself, a bin's tail not fenced behind its slots, a leave not fenced before the next join;
# the home's join (an add not waited for) taken on a page homed elsewhere, or landing before
# the same process's leave.
check add-old-rely add-old_rely "fail:$stale"
check add-no-self-join add-no_self_join "fail:$stale"
check add-tail-first add-tail_first "fail:assertion violated \\(bin"
check add-leave-unfenced add-leave_unfenced "fail:assertion violated \\(+\\(e_sh"   # a JOIN's or a WRITE's
check add-home-join-any add-home_join_any "fail:$stale"
check add-home-join-unfenced add-home_join_unfenced "fail:assertion violated \\(\\(dsh"
for p in 1 5 6 11 12 20 21 22 23 24 25 26; do
    check "probe-$p-add-safe" add-safe "$(reached $p)" $p
done
for p in 3 4 13 14; do   # overflow, unsafe pages
    check "probe-$p-add-unsafe" add-unsafe "$(reached $p)" $p
done

# The two-level protocol's fast mutations, and its paths: an incoming diff that keeps a
# local write (1), a refetch of a page still shared (2), a fault that maps what another
# local process refetched (3), a release that writes again after its host left (4), a
# self-notice drained (5), the master written while host 1 gets it (6), an outgoing diff
# that carries another local process's write (7), a release of a page whose mapping its
# acquire dropped (8).
# A stale read under a lock, a process's own write read back lost, or a released write
# missing from the master at the end.
twolevel_stale='assertion violated \((v==ghost|v==mine|\(cp)'
for m in INCOMING_KEEP_TWIN NO_DRAIN_WAIT IGNORE_WN OUTGOING_KEEP_TWIN EARLY_UNLOCK NO_LEAVE \
         NO_SELF DROP_WRITES INCOMING_COPY FT_NO_COPY FT_NO_WAIT; do
    check "twolevel-${m,,}" "twolevel-${m,,}" "fail:$twolevel_stale"
done
for p in 1 2 3 4 5 6 7 8; do
    check "probe-$p-twolevel-0" twolevel-0 "$(reached $p)" $p
done
check probe-5-twolevel-1 twolevel-1 "$(reached 5)" 5
for p in 1 3 7 8; do
    check "probe-$p-twolevel-2" twolevel-2 "$(reached $p)" $p
done
# A claim by host 1, copied in from the old home (9); a join that finds the claim BUSY (10).
for p in 9 10; do
    check "probe-$p-twolevel-ft" twolevel-ft "$(reached $p)" $p
done

# The host lock: a release or a handler that misses an ask (no look after the unlock, a
# handler that only records it, next cleared after the swap, a look that stops after finding
# the place granted meanwhile) leaves another host waiting;
# its five paths are reached (a kept place taken, the three ways it is given up, and a pass
# inside the host although another host asked).
for m in NO_RECHECK ASK_NO_GRANT NEXT_LATE STOP_EARLY; do
    check "hostlock-${m,,}" "hostlock-${m,,}" "fail:invalid end state"
done
for p in 1 2 3 4 5; do
    check "probe-$p-hostlock" hostlock "$(reached $p)" $p
done

# The lock whose release waits for nothing: exclusion and no process left waiting; a node
# reset before its last position is resolved (a second link lands on it), a release that
# reads its link and marks itself RELEASED in two steps, a successor that reads RELEASED
# before its link lands: each leaves a process waiting, or two links on one node.
check lock lock pass
check lock-no-resolve lock-no_resolve "fail:assertion violated \\(\\(old"
check lock-split-release lock-split_release "fail:invalid end state"
check lock-split-link lock-split_link "fail:invalid end state"

# The write-notice ring with concurrent posters.
check ring-3posters-cap2 ring-cap2 pass
check ring-3posters-cap1 ring-cap1 pass
check ring-old-pending ring-old-pending "fail:assertion violated"
check ring-probe-1 ring-cap2 "$(reached 1)" 1
check ring-probe-2 ring-cap1 "$(reached 2)" 2
check ring-probe-3 ring-wait "$(reached 3)" 3

# TreadMarks' lazy diffs: the rule passes; the combined diff at every notice it covers (the
# old rule), no diff when a foreign notice arrives, and a diff only when there is a twin
# (tm_invalidate before commit 47aaefd, then in src/cm_treadmarks.c) each lose a lock-protected
# update.
# Probes: a twin encoded for 2 intervals, an empty diff applied, a request that encodes
# writes of an open interval, an encode for a foreign notice, a cold copy, a grant that ends
# an interval inside a critical section, a store that faults again; and (8, with TOGGLE) a
# cold copy that makes the manager close and encode its writes first.
check tmk tmk pass
check tmk-old-rule tmk-old-rule "fail:$stale"
check tmk-no-encode-on-foreign tmk-no-encode "fail:$stale"
check tmk-foreign-needs-twin tmk-foreign-needs-twin "fail:$stale"   # the code before 47aaefd
check tmk-toggle tmk-toggle pass
check tmk-cold-raw tmk-cold-raw "fail:$stale"   # a raw page copy, before the fix of issue 14
check tmk-probe-8 tmk-toggle "$(reached 8)" 8
check wake-futex wake-futex pass
check wake-seq-late wake-seq-late "fail:invalid end state"
check wake-events wake-events pass
check wake-no-self-fd wake-no-self-fd "fail:invalid end state"   # the first version
check wake-bell wake-bell pass
check wake-bell-look-first wake-bell-look-first "fail:invalid end state"
check wake-bell-arm-first wake-bell-arm-first "fail:invalid end state"
check wake-bell-seen-late wake-bell-seen-late "fail:invalid end state"
check wake-progress wake-progress pass
check wake-progress-arm-no-wake wake-progress-arm-no-wake "fail:invalid end state"   # d9e3f75
check wake-sleep wake-sleep pass
check wake-sleep-wake-first wake-sleep-wake-first "fail:invalid end state"
check wake-sleep-nap-late wake-sleep-nap-late "fail:invalid end state"
check wake-sleep-no-flush wake-sleep-no-flush "fail:invalid end state"
for p in 1 2 3 4 5 6 7; do
    check "tmk-probe-$p" tmk "$(reached $p)" $p
done

# The old ordering loses a lock-protected update, in both forms; every probe is reached.
for form in $forms; do
    for p in $probes_unsafe; do
        check "probe-$p-$form-unsafe" "$form-unsafe" "$(reached "$p")" "$p"
    done
    for p in $probes_safe; do
        check "probe-$p-$form-safe" "$form-safe" "$(reached "$p")" "$p"
    done
    for p in 7 9; do   # the waits: a separate step, in their own verifiers
        check "probe-$p-$form-unsafe" "$form-unsafe-wait" "$(reached $p)" $p
        check "probe-$p-$form-safe" "$form-safe-wait" "$(reached $p)" $p
    done
done
wait

for name in $big $mechs $slow "${names[@]}"; do
    cat "$work/$name.verdict"
    grep -q '^FAIL' "$work/$name.verdict" && failures=$((failures + 1))
done

if [ "$failures" -ne 0 ]; then
    echo "FAIL: $failures model check(s) did not give the expected result (work files: $work)"
    [ -n "$keep" ] || trap - EXIT
    exit 1
fi
echo "PASS"
