#!/bin/bash
# vm: --disk none --throttle 2,3:10 --smp 4,sockets=2,cores=2
# Proves run-vm.sh --throttle: the host threads of vCPUs 2 and 3 are capped at 10% of a host CPU,
# so the same CPU-bound work pinned there must take clearly longer (guest time follows host
# time under TCG) than on vCPUs 0 and 1. This is how scenarios emulate little cores. 10%, not
# 30%: on a host already busy, an uncapped vCPU thread may get little more than 30% anyway.
# The work runs on one vCPU at a time so the host's own CPU count does not blur the result.
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"

[ "$VM_THROTTLE" = "2,3:10" ] || vm_skip "needs --throttle 2,3:10 (got '${VM_THROTTLE:-none}')"

work() { # cpu -> milliseconds for a fixed amount of work
	local t0 t1
	t0=$(date +%s%N)
	taskset -c "$1" awk 'BEGIN { for (i = 0; i < 150000; i++) s += i * 2 }'
	t1=$(date +%s%N)
	echo $(( (t1 - t0) / 1000000 ))
}

declare -a ms
for _ in 1 2 3; do
	for cpu in 0 1 2 3; do
		t=$(work "$cpu")
		# Keep the fastest round: host noise only ever adds time.
		if [ -z "${ms[$cpu]:-}" ] || [ "$t" -lt "${ms[$cpu]}" ]; then ms[$cpu]=$t; fi
	done
done
vm_log "ms per cpu: ${ms[*]}"
# Fastest against fastest: other load on the host slows the uncapped vCPUs too, and only the
# fastest run of each kind approximates its real speed.
big=$(( ms[0] < ms[1] ? ms[0] : ms[1] ))
little=$(( ms[2] < ms[3] ? ms[2] : ms[3] ))
ratio=$(awk -v l="$little" -v b="$big" 'BEGIN { printf "%.2f", l / b }')
summary="same work took [${ms[*]}] ms on cpus 0-3; throttled cpus 2,3 are ${ratio}x slower than 0,1 (10% quota)"
awk -v r="$ratio" 'BEGIN { exit !(r >= 1.8) }' || vm_fail "throttle had too little effect: $summary"
vm_pass "$summary"
