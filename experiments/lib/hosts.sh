# SPDX-License-Identifier: BSD-3-Clause
# The two-host mode of the scoreboard and the study (--hosts netns|HOST,HOST[,...]): where each
# run goes, and the link it crosses. Sourced by bash after common.sh; the caller defines die()
# and $here.
#
#   exp_hosts_up SPEC PROCS   the hosts (netns: made here, experiments/lib/netns.sh, removed at
#                             exit); sets host_names, nhosts and prefix (the command that runs
#                             what follows on the first host); dies unless every count of
#                             PROCS (1 aside) splits evenly over them
#   exp_hostlist NP           cmrun's --hosts value for NP processes split evenly
#   exp_link WHEN RECORD TAG LOG   measures the link between the first two hosts
#                             (exp_link_probe, limit.sh; cm_bench's output in LOG), appends
#                             "RTT_US BW_MBS" to links and a line to RECORD
. "$here/lib/limit.sh"

prefix=()
nhosts=0
host_names=()
links=()

exp_hosts_up() {
    local np
    [ -x "$STATS_TOOL" ] || die "cm_stats not found next to $CMRUN (the link model reads the runs' statistics)"
    CM_BENCH=${CM_BENCH:-$(dirname "$CMRUN")/cm_bench}
    [ -x "$CM_BENCH" ] || die "cm_bench not found next to $CMRUN (it measures the link)"
    if [ "$1" = netns ]; then
        . "$here/lib/netns.sh"
        trap netns_down EXIT
        netns_up || die "--hosts netns: $netns_why"
        prefix=($(netns_on a))
        host_names=("$NETNS_IPA" "$NETNS_IPB")
    else
        IFS=, read -r -a host_names <<< "$1"
    fi
    nhosts=${#host_names[@]}
    [ "$nhosts" -ge 2 ] || die "--hosts needs two hosts or more (or netns)"
    for np in $2; do
        [ "$np" -eq 1 ] || [ $((np % nhosts)) -eq 0 ] ||
            die "--procs: $np processes do not split evenly over $nhosts hosts"
    done
}

exp_hostlist() {
    local h l=""
    for h in "${host_names[@]}"; do l="$l${l:+,}$h:$(($1 / nhosts))"; done
    echo "$l"
}

exp_link() {
    local r
    # The run's own timeout: under emulation (the VM cluster) cm_bench takes minutes.
    if r=$(exp_link_probe "$4" "${prefix[@]}" timeout -k 10 "${timeout_s:-600}" "$CMRUN" -n 2 \
            --hosts "${host_names[0]}:1,${host_names[1]}:1" "$CM_BENCH" --json --link --batches 5); then
        links+=("$r")
        echo "link ($1): round trip ${r% *} us, bandwidth ${r#* } MB/s" >> "$2"
        echo "$3: link ($1): round trip ${r% *} us, bandwidth ${r#* } MB/s" >&2
    else
        die "measuring the link failed (cm_bench across the hosts): $4"
    fi
}
