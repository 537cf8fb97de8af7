#!/bin/bash
# vm: --disk ahci --append "threadirqs isolcpus=3" --smp 4,sockets=2,cores=2
# Issue 5 with irqpilot and an isolated CPU: CPU 3 is isolated (isolcpus=3) and fio runs pinned
# there, with the AHCI vector first on CPU 1 (LLC domains {0,1} and {2,3}). irqpilotd must bring
# the vector and its IRQ thread to the housekeeping CPU of fio's LLC, CPU 2, and never to CPU 3:
# smp_affinity_list, effective_affinity_list and the thread's CPUs are polled over the whole run
# and must never contain 3, over 12 of the daemon's cycles. On failure it leaves out/capture.tar to replay.
# Policy changed from the defaults to keep the run short under TCG: interval 1 s (default 2),
# dwell 2 s (default 10).
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"
trap vm_daemon_save_log EXIT

[ "$(cat /sys/devices/system/cpu/isolated)" = 3 ] ||
	vm_fail "cpu 3 is not isolated (isolated: '$(cat /sys/devices/system/cpu/isolated)')"
disk=$(vm_disk sd) || vm_fail "no AHCI disk (/sys/block/sd*) appeared"
irq=$(vm_irqs 'ahci' | head -n1)
[ -n "$irq" ] || vm_fail "no ahci vector in /proc/interrupts"
echo 1 >/proc/irq/"$irq"/smp_affinity_list || vm_fail "cannot put irq $irq on cpu 1"
thread=$(vm_irq_thread "$irq")
[ -n "$thread" ] || vm_fail "no irq/$irq-* thread: forced threading is not in effect"

vm_policy /tmp/irqpilot.conf '[daemon]' 'interval = 1' '[policy]' 'dwell = 2'
vm_fio_bg 3 --name=rr --filename="$disk" --direct=1 --ioengine=libaio --iodepth=16 --bs=4k \
	--rw=randread --size=64M
vm_wait_io "$disk" || vm_fail "no I/O from fio on $disk"
bi=$(vm_irq_counts "$irq")
vm_daemon_start /tmp/irqpilot.conf
# The window is 12 of the daemon's cycles, however long TCG takes for them: each cycle is a
# decision that could have picked CPU 3. The time limit only catches a daemon that stopped.
want=12 t_end=$(( SECONDS + 180 ))
polls=0 cycles=0 bad="" seen_a="" seen_e="" seen_t="" moved=""
while [ "${cycles:-0}" -lt $want ] && [ $SECONDS -lt $t_end ]; do
	a=$(vm_aff "$irq"); e=$(vm_eff "$irq"); t=$(vm_thread_cpus "$thread")
	polls=$((polls + 1))
	seen_a+=" $a"; seen_e+=" $e"; seen_t+=" $t"
	vm_cpus_in 3 "$a" || vm_cpus_in 3 "$e" || vm_cpus_in 3 "$t" && bad+=" [aff $a eff $e thread $t]"
	# a status that timed out keeps the last count
	c=$(vm_status_field cycles) && cycles=$c
	[ -z "$moved" ] && [ "$e" = 2 ] && [ "$a" = 2 ] && moved=${cycles:-?}
	sleep 0.2
done
idelta=$(vm_delta "$bi" "$(vm_irq_counts "$irq")")
# Where the thread ended up, read after polling.
t=$(vm_thread_cpus "$thread")
explain=$(vm_irqctl explain "$irq")
echo "$explain"
# A daemon that did not move leaves a replayable record of what it saw (out/capture.tar, for
# irqpilotd --replay), written to tmpfs first: thousands of small files over 9p take minutes.
if [ -z "$moved" ] && "$IRQPILOTD" --capture /tmp/capture --samples 3 --interval 1 >/dev/null 2>&1; then
	tar -C /tmp -cf "$VM_OUT/capture.tar" capture
fi
vm_fio_bg_stop
uniq_() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -u | tr '\n' ' '; }
vm_log "$polls polls: affinity seen $(uniq_ "$seen_a"), effective $(uniq_ "$seen_e"), thread $(uniq_ "$seen_t"); irqs per cpu [$idelta]"
grep -E ': (moved|kept|thread) ' "$VM_DLOG" | head -n5
vm_daemon_stop || vm_fail "irqpilotd exited with status $? on SIGTERM"
[ -z "$bad" ] || vm_fail "isolated cpu 3 was used:$bad"
[ "$(vm_at "$idelta" 3)" -eq 0 ] || vm_fail "irq $irq fired on isolated cpu 3: [$idelta]"
[ -n "$moved" ] || vm_fail "irq $irq never reached housekeeping cpu 2 (affinity $a, effective $e)"
[ "$t" = 2 ] || vm_fail "irq thread $thread is on cpus $t, not 2"
[ "${cycles:-0}" -ge $want ] || vm_fail "irqpilotd ran only ${cycles:-0} of $want cycles in 180 s"

vm_pass "isolcpus=3, fio on cpu 3: irq $irq cpu 1 -> 2 in cycle $moved, thread on 2; $polls polls over $cycles cycles never saw cpu 3 (affinity $(uniq_ "$seen_a")); irqs per cpu [$idelta]"
