# shellcheck shell=bash disable=SC2034
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Sourced inside the QEMU guest by tests/vm/scenarios/bench-*.sh, after
# tests/vm/lib.sh: one workload measured three ways in one boot, no daemon,
# irqbalance, irqpilotd, and one summary line comparing them.
#
# irqbalance is Debian's package unpacked on the host by
# bench/get-irqbalance.sh (the host's / is the guest's root, read only):
# $IRQBALANCE_BIN, default /var/tmp/irqpilot-bench/irqbalance/usr/sbin/irqbalance.
# Both daemons run at the same interval, CMP_INTERVAL (2 s: the default 10 s
# of irqbalance would need minutes under TCG).
#
# Each way: the IRQ starts on CMP_START_CPU; a warm-up fio lets the daemon see
# the load for CMP_WARM seconds; then a measured fio (CMP_RUN seconds) from
# CMP_SUBMIT_CPU gives IOPS and p99 completion latency, and /proc/softirqs and
# /proc/interrupts around it give where completions ran. Completion locality
# is the share of BLOCK softirqs (for AHCI under threadirqs every completion is
# one) that ran in CMP_DOMAIN, the submitter's domain. Affinity writes: a
# poller reads every /proc/irq/*/smp_affinity_list each 0.5 s while a daemon
# runs and counts changes; irqpilotd's own move count (irqctl status) is given
# next to it.

IRQBALANCE_BIN=${IRQBALANCE_BIN:-/var/tmp/irqpilot-bench/irqbalance/usr/sbin/irqbalance}
CMP_INTERVAL=${CMP_INTERVAL:-2}
CMP_WARM=${CMP_WARM:-8}
CMP_RUN=${CMP_RUN:-8}

cmp_setup() { # sets CMP_DISK CMP_IRQ
	CMP_DISK=$(vm_disk sd) || vm_fail "no AHCI disk (/sys/block/sd*) appeared"
	CMP_IRQ=$(vm_irqs 'ahci' | head -n1)
	[ -n "$CMP_IRQ" ] || vm_fail "no ahci vector in /proc/interrupts"
	CMP_FIO=(--name=rr --filename="$CMP_DISK" --direct=1 --ioengine=libaio --iodepth=16 --bs=4k
		--rw=randread --size=64M)
}

cmp_all_affinity() {
	local f
	for f in /proc/irq/*/smp_affinity_list; do printf '%s=%s ' "${f//[^0-9]/}" "$(cat "$f" 2>/dev/null)"; done
}

cmp_poller_start() {
	local prev
	rm -f /tmp/cmp-writes
	# the first snapshot before the daemon starts: reading every IRQ takes
	# seconds under TCG, long enough to miss a daemon's first move
	prev=$(cmp_all_affinity)
	(
		n=0
		while [ ! -e /tmp/cmp-poller-stop ]; do
			sleep 0.5
			cur=$(cmp_all_affinity)
			if [ "$cur" != "$prev" ]; then
				# count IRQs whose list changed (no process substitution:
				# the guest has no /dev/fd)
				n=$(( n + $(awk -v a="$prev" -v b="$cur" 'BEGIN {
					k = split(a, x, " "); for (i = 1; i <= k; i++) old[x[i]] = 1
					k = split(b, y, " "); c = 0
					for (i = 1; i <= k; i++) if (!(y[i] in old)) c++
					print c }') ))
				prev=$cur
			fi
			echo "$n" >/tmp/cmp-writes
		done
	) &
	CMP_POLLER=$!
}

cmp_poller_stop() { # -> CMP_WRITES
	touch /tmp/cmp-poller-stop
	wait "$CMP_POLLER" 2>/dev/null
	rm -f /tmp/cmp-poller-stop
	CMP_WRITES=$(cat /tmp/cmp-writes 2>/dev/null || echo 0)
}

# The measured fio: sets IOPS P99 LOC IRQLOC BLOCK IRQS
cmp_measure() {
	local bs bi out
	vm_log "measuring: fio ${CMP_RUN}s on cpu $CMP_SUBMIT_CPU, irq $CMP_IRQ on cpu $(vm_eff "$CMP_IRQ")"
	bs=$(vm_softirqs BLOCK); bi=$(vm_irq_counts "$CMP_IRQ")
	out=$(fio --minimal --percentile_list=99 --time_based --runtime="$CMP_RUN" \
		--cpus_allowed="$CMP_SUBMIT_CPU" "${CMP_FIO[@]}" 2>&1) || vm_fail "fio failed: $out"
	BLOCK=$(vm_delta "$bs" "$(vm_softirqs BLOCK)")
	IRQS=$(vm_delta "$bi" "$(vm_irq_counts "$CMP_IRQ")")
	IOPS=$(awk -F';' 'NR == 1 { print $8 + 0 }' <<<"$out")
	P99=$(awk -F';' 'NR == 1 { for (i = 18; i <= 37; i++) if ($i ~ /^99\.0*%=/) { sub(/.*=/, "", $i); print $i; exit } }' <<<"$out")
	[ "$(awk -F';' 'NR == 1 { print $5 }' <<<"$out")" = 0 ] || vm_fail "fio reported an error: $out"
	LOC=$(vm_pct "$(vm_sum_in "$BLOCK" "$CMP_DOMAIN")" "$(vm_sum "$BLOCK")")
	IRQLOC=$(vm_pct "$(vm_sum_in "$IRQS" "$CMP_DOMAIN")" "$(vm_sum "$IRQS")")
	[ "$(vm_sum "$BLOCK")" -gt 100 ] || vm_fail "only $(vm_sum "$BLOCK") BLOCK softirqs in a fio run"
}

# Load for the daemon to see: a bounded fio in the foreground. Not vm_fio_bg: a fio
# interrupted while still starting up under TCG ran on for its full runtime.
cmp_warm() {
	fio --minimal --time_based --runtime="$1" --cpus_allowed="$CMP_SUBMIT_CPU" "${CMP_FIO[@]}" \
		>/dev/null 2>&1 || vm_fail "warm-up fio failed"
}

cmp_reset() {
	echo "$CMP_START_CPU" >/proc/irq/"$CMP_IRQ"/smp_affinity_list ||
		vm_fail "cannot put irq $CMP_IRQ on cpu $CMP_START_CPU"
	sleep 0.5
}

cmp_line() { # LABEL
	printf '%s: completions in %s %s%%, irq in %s %s%%, %s IOPS, p99 %s us' "$1" "$CMP_DOMAIN" "$LOC" \
		"$CMP_DOMAIN" "$IRQLOC" "$IOPS" "${P99:-?}"
}

# (a) no daemon
cmp_none() {
	vm_log "(a) no daemon"
	cmp_reset
	cmp_measure
	CMP_A="$(cmp_line none), affinity $(vm_aff "$CMP_IRQ")"
	vm_log "$CMP_A; BLOCK [$BLOCK]"
}

# irqbalance every CMP_INTERVAL, extra options as arguments (bench-daemon-cost.sh's
# --banirq); sets CMP_IB_PID
# shellcheck disable=SC2120
cmp_irqbalance_start() {
	mkdir -p /run/irqbalance
	"$IRQBALANCE_BIN" --foreground --interval "$CMP_INTERVAL" "$@" >/tmp/irqbalance.log 2>&1 &
	CMP_IB_PID=$!
}
cmp_irqbalance_alive() {
	kill -0 "$CMP_IB_PID" 2>/dev/null || vm_fail "irqbalance exited: $(cat /tmp/irqbalance.log)"
}
cmp_irqbalance_stop() {
	kill "$CMP_IB_PID"
	wait "$CMP_IB_PID" 2>/dev/null
	CMP_IB_PID=
}

# (b) irqbalance
cmp_irqbalance() {
	[ -x "$IRQBALANCE_BIN" ] || { CMP_B="irqbalance: not run (no $IRQBALANCE_BIN; run bench/get-irqbalance.sh on the host)"; return 0; }
	vm_log "(b) irqbalance every ${CMP_INTERVAL}s"
	cmp_reset
	cmp_poller_start
	# shellcheck disable=SC2119
	cmp_irqbalance_start
	cmp_warm "$CMP_WARM"
	cmp_irqbalance_alive
	cmp_measure
	cmp_irqbalance_stop
	cmp_poller_stop
	CMP_B="$(cmp_line irqbalance), affinity $(vm_aff "$CMP_IRQ"), $CMP_WRITES affinity changes"
	vm_log "$CMP_B; BLOCK [$BLOCK]"
	cp /tmp/irqbalance.log "$VM_OUT/irqbalance.log" 2>/dev/null || true
}

# (c) irqpilotd; extra policy lines as arguments
cmp_irqpilotd() {
	local moves aff
	vm_log "(c) irqpilotd every ${CMP_INTERVAL}s"
	cmp_reset
	vm_policy /tmp/irqpilot.conf '[daemon]' "interval = $CMP_INTERVAL" '[policy]' 'dwell = 2' "$@"
	cmp_poller_start
	vm_daemon_start /tmp/irqpilot.conf
	cmp_warm "$CMP_WARM"
	cmp_measure
	moves=$(vm_irqctl --json status 2>/dev/null | sed -n 's/.*"moves": *\([0-9]*\).*/\1/p' | head -n1)
	aff=$(vm_aff "$CMP_IRQ") # before the stop, which restores the original
	# before the stop: restoring the original affinity on exit is not a move
	cmp_poller_stop
	vm_daemon_stop || vm_fail "irqpilotd exited with status $? on SIGTERM"
	CMP_C="$(cmp_line irqpilotd), affinity $aff, $CMP_WRITES affinity changes (${moves:-?} moves by its count)"
	vm_log "$CMP_C; BLOCK [$BLOCK]"
	vm_daemon_save_log
}

cmp_all() { # policy lines for irqpilotd
	cmp_setup
	cmp_none
	cmp_irqbalance
	cmp_irqpilotd "$@"
	vm_pass "fio on cpu $CMP_SUBMIT_CPU, irq $CMP_IRQ from cpu $CMP_START_CPU, daemons every ${CMP_INTERVAL}s | $CMP_A | $CMP_B | $CMP_C"
}
