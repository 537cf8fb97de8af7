#!/bin/bash
# vm: --disk ahci --throttle 0,1:10 --smp 4,sockets=2,cores=2 --need-arch x86_64,aarch64 --timeout 900
# Issue 5 with irqpilot on little and big cores: vCPUs 0 and 1 are capped at 10% of a host CPU
# (run-vm.sh --throttle, the figure throttle-little-cores showed works on a loaded host) and
# declared efficiency cores in the policy file; 2 and 3 are the performance domain (LLC domains
# {0,1} and {2,3}). A capped vCPU is slow only once it uses up its quota, so each little core also
# runs a SCHED_IDLE busy loop, as little cores run background work: it yields to any interrupt at
# once inside the guest, but keeps the vCPU at its cap, so an interrupt there waits for the
# vCPU's next slot, as on a slow core. The AHCI vector starts on CPU 0 and fio submits from CPU 3. fio's IOPS are
# measured with the vector left on CPU 0 (no daemon), then with irqpilotd running: it must move
# the vector into 2-3, and IOPS must rise by at least 20%.
# Policy changed from the defaults: interval 1 s (default 2) and dwell 2 s (default 10) keep the
# run short under TCG; [cpus] efficiency = 0-1 declares the little cores, which x86 cannot
# detect here (uniform cpu_capacity); min_rate = 20 (default 200/s), because the interrupt rate
# is what the capped CPU 0 holds down, and under TCG it can fall below 200/s.
# On aarch64 the little cores are real to the kernel: the devicetree run-vm.sh makes gives CPUs
# 0-1 capacity-dmips-mhz 400 and 2-3 1024, so cpu_capacity says which is which and the policy
# declares nothing; the throttle still makes them slow, as TCG runs every vCPU alike.
# Without a cgroup to throttle with, run-vm.sh SKIPs the run; the scenario also SKIPs when it was
# started without the throttle, so it can never pass without little cores.
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"
trap vm_daemon_save_log EXIT

[ "$VM_THROTTLE" = "0,1:10" ] || vm_skip "needs --throttle 0,1:10 (got '${VM_THROTTLE:-none}')"
# This shell, fio and the daemon stay off the capped CPUs; only the interrupt is placed there.
taskset -pc 2-3 $$ >/dev/null || vm_fail "cannot pin the scenario to cpus 2-3"
hogs=()
for c in 0 1; do
	taskset -c "$c" chrt -i 0 bash -c 'while :; do :; done' &
	hogs+=($!)
done
trap 'kill "${hogs[@]}" 2>/dev/null; vm_daemon_save_log' EXIT
disk=$(vm_disk sd) || vm_fail "no AHCI disk (/sys/block/sd*) appeared"
irq=$(vm_irqs 'ahci' | head -n1)
[ -n "$irq" ] || vm_fail "no ahci vector in /proc/interrupts"
echo 0 >/proc/irq/"$irq"/smp_affinity_list || vm_fail "cannot put irq $irq on cpu 0"
fioargs=(--name=rr --filename="$disk" --direct=1 --ioengine=libaio --iodepth=16 --bs=4k
	--rw=randread --size=64M --cpus_allowed=3)

bi=$(vm_irq_counts "$irq")
vm_fio "${fioargs[@]}" --runtime=8 --time_based || vm_fail "fio failed with the vector on cpu 0"
before=$FIO_RIOPS
ib=$(vm_delta "$bi" "$(vm_irq_counts "$irq")")
vm_log "vector on cpu 0 (capped): $before IOPS, irqs [$ib]"

caps=""
if [ "$(uname -m)" = aarch64 ]; then
	for c in 0 1 2 3; do caps+="${caps:+ }$(vm_read /sys/devices/system/cpu/cpu$c/cpu_capacity)"; done
	read -r c0 c1 c2 c3 <<<"$caps"
	[ "$c0" -lt "$c2" ] && [ "$c1" -lt "$c3" ] ||
		vm_fail "cpu_capacity [$caps]: the devicetree did not make cpus 0-1 little"
	vm_policy /tmp/irqpilot.conf '[daemon]' 'interval = 1' '[policy]' 'dwell = 2' 'min_rate = 20'
else
	vm_policy /tmp/irqpilot.conf '[daemon]' 'interval = 1' '[cpus]' 'efficiency = 0-1' \
		'[policy]' 'dwell = 2' 'min_rate = 20'
fi
vm_fio_bg 3 "${fioargs[@]}"
vm_wait_io "$disk" || vm_fail "no I/O from fio on $disk"
vm_daemon_start /tmp/irqpilot.conf
# Judged by where the vector is and by IOPS; the time limits only catch a daemon that did nothing.
mc=$(vm_wait_moves 0 120) || vm_fail "irqpilotd made no move in 120 s: $(vm_irqctl explain "$irq")"
for _ in $(seq 1 300); do
	e=$(vm_eff "$irq"); a=$(vm_aff "$irq")
	vm_cpus_in "$e" 2-3 && vm_cpus_in "$a" 2-3 && break
	sleep 0.1
done
vm_fio_bg_stop
grep -E ': moved ' "$VM_DLOG"
vm_cpus_in "$e" 2-3 && vm_cpus_in "$a" 2-3 ||
	vm_fail "irq $irq is on $a (effective $e), not in the performance domain 2-3"
bi=$(vm_irq_counts "$irq")
vm_fio "${fioargs[@]}" --runtime=8 --time_based || vm_fail "fio failed with irqpilotd running"
after=$FIO_RIOPS
ia=$(vm_delta "$bi" "$(vm_irq_counts "$irq")")
vm_log "with irqpilotd, vector on $e: $after IOPS, irqs [$ia]"
vm_daemon_stop || vm_fail "irqpilotd exited with status $? on SIGTERM"
kill "${hogs[@]}"
[ "$(vm_sum_in "$ia" 2-3)" -eq "$(vm_sum "$ia")" ] || vm_fail "interrupts outside 2-3 after the move: [$ia]"

ratio=$(awk -v a="$after" -v b="$before" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
summary="cpus 0-1 capped at 10%${caps:+, cpu_capacity [$caps]}; fio on cpu 3: vector on cpu 0 $before IOPS, moved by irqpilotd to $e in cycle $mc: $after IOPS (x$ratio)"
awk -v r="$ratio" 'BEGIN { exit !(r >= 1.2) }' || vm_fail "IOPS did not rise enough: $summary"
vm_pass "$summary"
