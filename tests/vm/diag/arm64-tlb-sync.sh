#!/bin/bash
# vm: --disk ahci --throttle 0,1:10 --smp 4,sockets=2,cores=2 --need-arch x86_64,aarch64 --timeout 900
# Diagnostic (not in check-vm; run it by hand, e.g. ARCH=aarch64 tests/vm/run-vm.sh ... with
# --throttle 0,1:10 and with 0,1:10/10): how much do busy, capped little vCPUs 0-1 slow big CPU 3
# when nothing of CPU 3's is placed on them? In one boot, with SCHED_IDLE busy loops on 0-1
# ("hog") and without ("nohog"), interleaved:
#  - on CPU 3: a shell loop (CPU only), 20,000 one-byte read/write syscalls (dd), and 50 spawns
#    of /bin/true (fork, exec, mmap, munmap, exit: on arm64 the broadcast TLB flushes);
#  - the IOPS of one fio (iodepth 1, on CPU 3) over 8 s with the AHCI vector on big CPU 2, and,
#    with the hogs, on little CPU 0.
# The first argument is the number of rounds (default 2). See irqpilot-little-big.sh's header
# and tests/vm/README.md for what it showed.
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"
taskset -pc 2-3 $$ >/dev/null
disk=$(vm_disk sd) || vm_fail "no AHCI disk"
irq=$(vm_irqs 'ahci' | head -n1)
hogs=()
trap 'kill "${hogs[@]}" 2>/dev/null; vm_fio_bg_stop' EXIT
hogs_on() {
	for c in 0 1; do taskset -c "$c" chrt -i 0 bash -c 'while :; do :; done' & hogs+=($!); done
	sleep 1
}
hogs_off() { kill "${hogs[@]}" 2>/dev/null; wait "${hogs[@]}" 2>/dev/null; hogs=(); sleep 1; }
now() { local u; read -r u _ </proc/uptime; echo "$u"; }
el() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
spawns() {
	local t0 t1 t2 t3
	t0=$(now); taskset -c 3 bash -c 'for ((i = 0; i < 20000; i++)); do :; done'
	t1=$(now); taskset -c 3 dd if=/dev/zero of=/dev/null bs=1 count=20000 2>/dev/null
	t2=$(now); taskset -c 3 bash -c 'for ((i = 0; i < 50; i++)); do /bin/true; done'
	t3=$(now)
	vm_log "SPAWN $1: shell loop $(el "$t0" "$t1") s, syscalls $(el "$t1" "$t2") s, 50 spawns $(el "$t2" "$t3") s"
}
window() { # label cpu-for-the-vector
	local st=/sys/block/${disk#/dev/}/stat r0 r1 t0 t1
	echo "$2" >/proc/irq/"$irq"/smp_affinity_list
	sleep 1
	read -r t0 _ </proc/uptime; read -r r0 _ <"$st"
	sleep 8
	read -r t1 _ </proc/uptime; read -r r1 _ <"$st"
	vm_log "FIO $1: vector on $(vm_eff "$irq"): $(awk -v r="$((r1 - r0))" -v a="$t0" -v b="$t1" 'BEGIN { printf "%d", r / (b - a) }') IOPS"
}
rounds=${1:-2} # the first argument: how many rounds of each measurement
for ((r = 1; r <= rounds; r++)); do
	spawns "nohog$r"; hogs_on; spawns "hog$r"; hogs_off
done
vm_fio_bg 3 --name=rr --filename="$disk" --direct=1 --ioengine=libaio --iodepth=1 --bs=4k \
	--rw=randread --size=64M
vm_wait_io "$disk" || vm_fail "no I/O from fio on $disk"
for ((r = 1; r <= rounds; r++)); do
	window "nohog$r" 2; hogs_on; window "hog$r" 2; window "hog$r" 0; hogs_off
done
vm_pass "done"
