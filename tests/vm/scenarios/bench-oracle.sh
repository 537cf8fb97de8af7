#!/bin/bash
# vm: --disk ahci --append threadirqs --smp 4,sockets=2,cores=2 --timeout 3000
# Issue 14, "which CPU of the domain": every static placement of the one AHCI vector (CPUs 0-3),
# measured in the same boot as irqbalance and irqpilotd, so that the daemons are judged against
# the best placement this guest has and not against each other alone. Under threadirqs each
# completion is a BLOCK softirq on the vector's CPU. Two workloads: one submitter (fio on CPU 3)
# and two (one fio job on each of CPUs 2 and 3). LLC domains are {0,1} and {2,3}.
#
# TCG is noisy and drifts as the host's load changes, so each round measures every placement and
# both daemons back to back, ORACLE_ROUNDS rounds (3). The order of the six ways turns by one
# each round (round 2 starts with irqpilotd, round 3 with irqbalance, ...): in a fixed order a
# drift within the round would always fall on the same way. The summary gives medians of IOPS and
# p99 per placement, the best placement, each daemon's median as a share of the best, and each
# daemon paired: the median over rounds of its IOPS over the static run, in the same round, on
# the CPU it left the vector on ("vs its cpu"; its placement set apart from its presence), and
# irqpilotd over irqbalance in the same round. It asserts only that every run worked; make bench
# writes the figures into bench/RESULTS.md.
# The number of rounds is the scenario's first argument, since run-vm.sh passes the guest no
# environment: tests/vm/run-vm.sh tests/vm/scenarios/bench-oracle.sh 1 (ORACLE_ROUNDS, if set
# in the guest, is the default).
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"
# shellcheck source=bench/vm-compare.sh
. "$VM_SRC/bench/vm-compare.sh"
trap vm_daemon_save_log EXIT

grep -qw threadirqs /proc/cmdline || vm_fail "kernel was booted without threadirqs"
rounds=${1:-${ORACLE_ROUNDS:-3}}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || vm_fail "rounds must be a positive number, not '$rounds'"
CMP_START_CPU=1 CMP_DOMAIN=2-3
cmp_setup
fio_one=("${CMP_FIO[@]}")
# split: each job is bound to one CPU of cpus_allowed, as two submitting threads would be
fio_two=("${CMP_FIO[@]}" --numjobs=2 --group_reporting --cpus_allowed_policy=split)

# the guest's awk is mawk: no asort
# where a daemon left the vector: the "affinity X," of its cmp_line
left_on() { sed -n 's/.* us, affinity \(.*\), [0-9]* affinity changes.*/\1/p' <<<"$1"; }

declare -A got_iops got_p99 got_aff got_pair
# IOPS of each way in the current round
declare -A this left
record() { # KEY
	got_iops[$1]+=" $IOPS"
	got_p99[$1]+=" ${P99:-}"
	this[${1#*,}]=$IOPS
}

static() { # CPU
	local p=$1
	echo "$p" >/proc/irq/"$CMP_IRQ"/smp_affinity_list || vm_fail "cannot put irq $CMP_IRQ on cpu $p"
	sleep 0.5
	# the daemons' runs have the affinity poller beside them (0.5 s reads of every
	# /proc/irq/*, not cheap under TCG) and CMP_WARM seconds of the same fio before the
	# measured run: so do these. Measured cold, a static run came out 10-17% below a
	# daemon that left the vector on the same CPU, and the daemons "beat" the best placement.
	cmp_poller_start
	cmp_warm "$CMP_WARM"
	cmp_measure
	cmp_poller_stop
	# x86 moves a vector at its next interrupt, so effective_affinity is judged by where
	# the measured run's interrupts came, not before it
	on=$(vm_pct "$(vm_sum_in "$IRQS" "$p")" "$(vm_sum "$IRQS")")
	awk -v x="$on" 'BEGIN { exit !(x >= 90) }' ||
		vm_fail "irq $CMP_IRQ fired only $on% on cpu $p after a write of $p: [$IRQS]"
	record "$w,cpu$p"
	vm_log "  static cpu $p: $IOPS IOPS, p99 ${P99:-?} us, BLOCK [$BLOCK]"
}

ways=(cpu0 cpu1 cpu2 cpu3 irqbalance irqpilotd)
for w in one two; do
	if [ $w = one ]; then
		CMP_SUBMIT_CPU=3 CMP_FIO=("${fio_one[@]}")
	else
		CMP_SUBMIT_CPU=2,3 CMP_FIO=("${fio_two[@]}")
	fi
	for r in $(seq "$rounds"); do
		this=()
		left=()	# where each daemon left the vector this round
		order=()
		for i in "${!ways[@]}"; do
			order+=("${ways[(i - r + 1 + ${#ways[@]} * rounds) % ${#ways[@]}]}")
		done
		vm_log "workload $w (fio on $CMP_SUBMIT_CPU), round $r of $rounds: ${order[*]}"
		for way in "${order[@]}"; do
			case $way in
			cpu*) static "${way#cpu}" ;;
			irqbalance)
				cmp_irqbalance
				if [ -x "$IRQBALANCE_BIN" ]; then
					record "$w,irqbalance"
					left[irqbalance]=$(left_on "$CMP_B")
					got_aff[$w,irqbalance]+=" ${left[irqbalance]}"
				fi
				;;
			irqpilotd)
				cmp_irqpilotd
				record "$w,irqpilotd"
				left[irqpilotd]=$(left_on "$CMP_C")
				got_aff[$w,irqpilotd]+=" ${left[irqpilotd]}"
				;;
			esac
		done
		# paired within the round: a daemon against the static run on the CPU it left the
		# vector on (a single CPU; a set has no static run to pair with)
		for d in irqbalance irqpilotd; do
			[ -n "${this[$d]:-}" ] || continue
			a=${left[$d]}
			[[ $a =~ ^[0-3]$ ]] && got_pair[$w,$d]+=" $(vm_ratio "${this[$d]}" "${this[cpu$a]}" 3)"
		done
		[ -n "${this[irqbalance]:-}" ] &&
			got_pair[$w,vs]+=" $(vm_ratio "${this[irqpilotd]}" "${this[irqbalance]}" 3)"
	done
done

summary=()
for w in one two; do
	best="" best_iops=0 row=""
	for p in 0 1 2 3; do
		m=$(vm_median <<<"${got_iops[$w,cpu$p]}")
		row+=" cpu$p $m/$(vm_median <<<"${got_p99[$w,cpu$p]}")us"
		if awk -v a="$m" -v b="$best_iops" 'BEGIN { exit !(a > b) }'; then best=$p best_iops=$m; fi
	done
	if [ $w = one ]; then line="fio on cpu 3:"; else line="fio on cpus 2,3:"; fi
	line+="${row}; best cpu $best"
	for d in irqbalance irqpilotd; do
		[ -n "${got_iops[$w,$d]:-}" ] || { line+="; $d not run"; continue; }
		m=$(vm_median <<<"${got_iops[$w,$d]}")
		line+="; $d $m/$(vm_median <<<"${got_p99[$w,$d]}")us $(awk -v a="$m" -v b="$best_iops" \
			'BEGIN { printf "%.0f%%", 100 * a / b }') of best, on${got_aff[$w,$d]}"
		line+=", $(vm_median <<<"${got_pair[$w,$d]:-}") vs its cpu [${got_pair[$w,$d]:-} ]"
	done
	[ -n "${got_pair[$w,vs]:-}" ] &&
		line+="; irqpilotd/irqbalance $(vm_median <<<"${got_pair[$w,vs]}") [${got_pair[$w,vs]} ]"
	summary+=("$line")
	vm_log "ORACLE $line"
done
vm_pass "$rounds rounds, IOPS/p99 medians | ${summary[0]} | ${summary[1]}"
