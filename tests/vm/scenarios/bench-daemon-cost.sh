#!/bin/bash
# vm: --disk ahci --append threadirqs --smp 4,sockets=2,cores=2 --timeout 1800
# Issue 14: what irqpilotd's presence costs the I/O it places, apart from where it places it. The
# AHCI vector stays on CPU 2 (threadirqs) and fio submits on CPU 3; each round measures fio with
# no daemon and beside irqpilotd --dry-run (which samples, decides and opens its perf counters as
# the daemon does, but writes nothing), and, given other irqpilotd binaries after ROUNDS (paths
# the guest sees: the host's /var/tmp, or below the build tree), beside each of them too, e.g. the
# main branch's, to compare; they run in the order given, after this tree's, in every round.
# Last in each round, when bench/get-irqbalance.sh has unpacked it, irqbalance at the same
# interval with --banirq for the AHCI vector: all its sampling and balancing, the vector left
# where it is, so that its presence is measured on the same terms. Each daemon starts cmp_warm's
# 8 s before the measured run, as in bench-oracle.sh. Reports medians of IOPS and the daemon's CPU time (clock ticks of
# utime + stime) in the measured run; asserts only that the runs worked.
# --vector-cpu N puts the vector on CPU N instead (3: fio's own CPU, where bench-oracle.sh's
# daemons leave it, so that their presence is measured where they place).
#   tests/vm/run-vm.sh tests/vm/scenarios/bench-daemon-cost.sh [--vector-cpu N] [ROUNDS [OTHER_IRQPILOTD...]]
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"
# shellcheck source=bench/vm-compare.sh
. "$VM_SRC/bench/vm-compare.sh"
trap vm_daemon_save_log EXIT

grep -qw threadirqs /proc/cmdline || vm_fail "kernel was booted without threadirqs"
# Turning the block tracepoints on is part of the presence measured, so they start off here.
vm_tp_release
vcpu=2
if [ "${1:-}" = --vector-cpu ]; then
	vcpu=${2:-}
	[[ $vcpu =~ ^[0-3]$ ]] || vm_fail "--vector-cpu takes a CPU 0-3, not '$vcpu'"
	shift 2
fi
rounds=${1:-3}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || vm_fail "rounds must be a positive number, not '$rounds'"
CMP_START_CPU=$vcpu CMP_DOMAIN=2-3 CMP_SUBMIT_CPU=3
cmp_setup
declare -A bin=([this]=$IRQPILOTD) # way -> irqpilotd binary
ways=(none this)
shift
for o in "$@"; do
	[ -x "$o" ] || vm_fail "no executable $o in the guest"
	ways+=("other$((${#ways[@]} - 1))")
	bin[${ways[-1]}]=$o
done
[ -x "$IRQBALANCE_BIN" ] && ways+=(irqbalance)


declare -A got_iops got_ticks
one() { # none|this|otherN|irqbalance
	local t0=0 t1=0 pid=
	cmp_reset
	if [ "$1" = irqbalance ]; then
		cmp_irqbalance_start --banirq="$CMP_IRQ"
		pid=$CMP_IB_PID
	elif [ "$1" != none ]; then
		vm_policy /tmp/irqpilot.conf '[daemon]' "interval = $CMP_INTERVAL" '[policy]' 'dwell = 2'
		IRQPILOTD=${bin[$1]}
		vm_daemon_start /tmp/irqpilot.conf --dry-run
		pid=$VM_DAEMON_PID
	fi
	cmp_warm "$CMP_WARM"
	[ "$1" = none ] || t0=$(vm_cpu_ticks "$pid")
	cmp_measure
	[ "$1" = none ] || t1=$(vm_cpu_ticks "$pid")
	got_iops[$1]+=" $IOPS"
	got_ticks[$1]+=" $((t1 - t0))"
	vm_log "  $1: $IOPS IOPS, p99 ${P99:-?} us, irq on $(vm_eff "$CMP_IRQ") [$IRQS], daemon ticks in the run $((t1 - t0))"
	if [ "$1" = irqbalance ]; then
		cmp_irqbalance_alive
		cmp_irqbalance_stop
		[ "$(vm_eff "$CMP_IRQ")" = "$CMP_START_CPU" ] || vm_fail "irqbalance moved the banned vector"
	elif [ "$1" != none ]; then
		vm_daemon_stop TERM || vm_fail "irqpilotd exited with status $? on SIGTERM"
		vm_daemon_save_log
	fi
}
for r in $(seq "$rounds"); do
	vm_log "round $r of $rounds"
	for w in "${ways[@]}"; do one "$w"; done
done
line=""
for w in "${ways[@]}"; do
	label=$w
	case $w in other*) label+=" (${bin[$w]})" ;; esac
	line+="; $label $(vm_median <<<"${got_iops[$w]}") IOPS"
	[ "$w" = none ] || line+=", $(vm_median <<<"${got_ticks[$w]}") ticks"
done
vm_pass "vector on cpu $vcpu, fio on cpu 3, $rounds rounds, medians, daemons --dry-run, ticks of ${CMP_RUN}s (USER_HZ $(getconf CLK_TCK))${line}"
