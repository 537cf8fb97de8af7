#!/bin/bash
# vm: --disk ahci --append threadirqs --smp 4,sockets=2,cores=2
# Issue 5, before irqpilot: with forced IRQ threading (threadirqs, as PREEMPT_RT does), the
# BLOCK softirqs of a single-queue device run on the CPU its interrupt fires on, wherever the I/O
# was submitted: irq_forced_thread_fn raises them inside the IRQ thread, and
# blk_mq_complete_need_ipi() refuses to IPI the submitter while force_irqthreads() holds.
# fio submits from CPU 3 only; the assertion is that >= 95% of BLOCK softirqs still run on the
# IRQ's CPU, with rq_affinity 1 (default) and 2 (which would otherwise force the submitter).
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"

grep -qw threadirqs /proc/cmdline || vm_fail "kernel was booted without threadirqs"
disk=$(vm_disk sd) || vm_fail "no AHCI disk (/sys/block/sd*) appeared"
dev=${disk#/dev/}
irq=$(vm_irqs 'ahci' | head -n1)
[ -n "$irq" ] || vm_fail "no ahci vector in /proc/interrupts"
[ "$(cat /sys/block/"$dev"/mq/*/cpu_list | wc -l)" -eq 1 ] ||
	vm_fail "$dev has more than one hw queue; the softirq path needs a single-queue device"

# The submitter is CPU 3; an interrupt there too would prove nothing. Where the kernel puts the
# vector varies from boot to boot, so it is always put on CPU 1: the other socket, where
# rq_affinity=1 would IPI the submitter if threading were not forced.
eff=$(cat /proc/irq/"$irq"/effective_affinity_list)
echo 1 >/proc/irq/"$irq"/smp_affinity_list || vm_fail "cannot move irq $irq (on cpu $eff) to cpu 1"
vm_log "irq $irq was on cpu $eff, moved to cpu 1"

thread=$(pgrep "^irq/$irq-" | head -n1)
[ -n "$thread" ] || vm_fail "no irq/$irq-* thread: forced threading is not in effect"

run() { # rq_affinity -> sets DELTA IRQCPU SHARE IOPS
	echo "$1" >/sys/block/"$dev"/queue/rq_affinity || vm_fail "cannot set rq_affinity $1"
	local b_sirq a_sirq b_irq a_irq idelta
	b_sirq=$(vm_softirqs BLOCK)
	b_irq=$(vm_irq_counts "$irq")
	vm_fio --name="rq$1" --filename="$disk" --direct=1 --ioengine=libaio --iodepth=16 --bs=4k \
		--rw=randread --size=64M --runtime=5 --time_based --cpus_allowed=3 ||
		vm_fail "fio failed with rq_affinity $1"
	a_sirq=$(vm_softirqs BLOCK)
	a_irq=$(vm_irq_counts "$irq")
	IOPS=$FIO_RIOPS
	DELTA=$(vm_delta "$b_sirq" "$a_sirq")
	idelta=$(vm_delta "$b_irq" "$a_irq")
	# The CPU the interrupt actually fired on during the run, not what affinity claims.
	IRQCPU=$(awk -v l="$idelta" 'BEGIN { n = split(l, x, " "); m = 1;
		for (i = 2; i <= n; i++) if (x[i] > x[m]) m = i; print m - 1 }')
	local itot ion
	itot=$(vm_sum "$idelta"); ion=$(vm_at "$idelta" "$IRQCPU")
	[ "$itot" -gt 0 ] || vm_fail "irq $irq did not fire during fio"
	[ "$ion" -eq "$itot" ] || vm_log "note: irq $irq fired on several cpus: $idelta"
	[ "$IRQCPU" != 3 ] || vm_fail "irq $irq fired on cpu 3, the submitter; nothing to show"
	SHARE=$(vm_pct "$(vm_at "$DELTA" "$IRQCPU")" "$(vm_sum "$DELTA")")
	[ "$(vm_sum "$DELTA")" -gt 100 ] || vm_fail "only $(vm_sum "$DELTA") BLOCK softirqs with rq_affinity $1"
	vm_log "rq_affinity $1: irq on cpu $IRQCPU (irqs $idelta), thread $thread on cpu $(awk '{ print $39 }' /proc/"$thread"/stat), BLOCK softirqs [$DELTA], $SHARE% on irq cpu, $IOPS IOPS"
}

run 1
d1=$DELTA; c1=$IRQCPU; s1=$SHARE; i1=$IOPS
run 2
d2=$DELTA; c2=$IRQCPU; s2=$SHARE; i2=$IOPS

summary="fio on cpu 3, irq $irq on cpu $c1: rq_affinity=1 BLOCK [$d1] $s1% on irq cpu ($i1 IOPS); rq_affinity=2 BLOCK [$d2] $s2% on irq cpu $c2 ($i2 IOPS)"
awk -v a="$s1" -v b="$s2" 'BEGIN { exit !(a >= 95 && b >= 95) }' ||
	vm_fail "expected >= 95% of BLOCK softirqs on the irq cpu under threadirqs: $summary"
vm_pass "$summary"
