#!/bin/bash
# vm: --disk ahci --smp 4,sockets=2,cores=2 --need-arch aarch64 --llc shared
# The README's claim about rq_affinity on asymmetric CPUs, measured. The devicetree gives CPUs
# 0-1 capacity 400 and 2-3 1024, all four under one shared cache (--llc shared, as a DynamIQ
# phone's L3). The AHCI vector is on little CPU 0 and fio submits from big CPU 3, with
# rq_affinity 1 and then 2, no forced threading. blk_mq_complete_need_ipi() (block/blk-mq.c)
# completes on the interrupt's CPU when it shares a cache with the submitter; from 6.9
# (af550e4c9682) only when their capacities are also equal, else it sends the completion to the
# submitter with an IPI. So with rq_affinity 1, >= 90% of BLOCK softirqs must run on CPU 0 before
# 6.9 and on CPU 3 from 6.9; with rq_affinity 2 (QUEUE_FLAG_SAME_FORCE) on CPU 3 on both. The
# summary has the shares, the IOPS and the function-call IPIs (arm64's IPI1) CPU 3 took.
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"

grep -qw threadirqs /proc/cmdline && vm_fail "booted with threadirqs: completions would never leave the irq cpu"
caps=""
for c in 0 1 2 3; do caps+="${caps:+ }$(vm_read /sys/devices/system/cpu/cpu$c/cpu_capacity)"; done
read -r c0 _ _ c3 <<<"$caps"
[ "$c0" -lt "$c3" ] || vm_fail "cpu_capacity [$caps]: cpu 0 is not littler than cpu 3"
# The LLC: the highest cache level's shared_cpu_list of cpu 0 (drivers/base/cacheinfo.c).
llc=""
for d in /sys/devices/system/cpu/cpu0/cache/index*; do llc=$(vm_read "$d/shared_cpu_list"); done
[ "$llc" = 0-3 ] || vm_fail "cpu 0's last-level cache is shared with '$llc', want 0-3 (--llc shared)"
disk=$(vm_disk sd) || vm_fail "no AHCI disk (/sys/block/sd*) appeared"
irq=$(vm_irqs 'ahci' | head -n1)
[ -n "$irq" ] || vm_fail "no ahci vector in /proc/interrupts"
echo 0 >/proc/irq/"$irq"/smp_affinity_list || vm_fail "cannot put irq $irq on cpu 0"
q=/sys/block/${disk#/dev/}/queue/rq_affinity
kv=$(uname -r); kmaj=${kv%%.*}; rest=${kv#*.}; kmin=${rest%%[!0-9]*}
if [ "$kmaj" -gt 6 ] || { [ "$kmaj" -eq 6 ] && [ "$kmin" -ge 9 ]; }; then want1=3; else want1=0; fi

ipi1() { awk '$1 == "IPI1:" { print $5; exit }' /proc/interrupts; }	# cpu 3's column
summary="cpu_capacity [$caps], llc $llc, irq on 0, fio on 3:"
for ra in 1 2; do
	echo "$ra" >"$q" || vm_fail "cannot set rq_affinity $ra"
	b=$(vm_softirqs BLOCK); i0=$(ipi1)
	vm_fio --name=rr --filename="$disk" --direct=1 --ioengine=libaio --iodepth=16 --bs=4k \
		--rw=randread --size=64M --runtime=6 --time_based --cpus_allowed=3 ||
		vm_fail "fio failed with rq_affinity $ra"
	d=$(vm_delta "$b" "$(vm_softirqs BLOCK)"); ipis=$(( $(ipi1) - i0 ))
	s0=$(vm_pct "$(vm_at "$d" 0)" "$(vm_sum "$d")"); s3=$(vm_pct "$(vm_at "$d" 3)" "$(vm_sum "$d")")
	vm_log "rq_affinity $ra: BLOCK [$d] cpu0 $s0% cpu3 $s3%, $FIO_RIOPS IOPS, $ipis IPI1 on cpu 3"
	want=$want1; [ "$ra" = 2 ] && want=3
	[ "$want" = 0 ] && share=$s0 || share=$s3
	summary+=" rq_affinity=$ra BLOCK [$d] ${share}% on cpu $want, $FIO_RIOPS IOPS, $ipis IPIs;"
	[ "$(vm_sum "$d")" -gt 100 ] || vm_fail "only $(vm_sum "$d") BLOCK softirqs with rq_affinity $ra"
	awk -v s="$share" 'BEGIN { exit !(s >= 90) }' ||
		vm_fail "kernel $kv, rq_affinity $ra: $share% of BLOCK softirqs on cpu $want, want >= 90%: $summary"
done
vm_pass "kernel $kv: $summary"
