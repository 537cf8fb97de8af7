#!/bin/bash
# vm: --disk ahci --disk nvme:2 --append threadirqs --smp 4,sockets=2,cores=2 --timeout 900
# irqpilot_cq cost, for the record (relative only: TCG): 4k random reads, iodepth 16, fio on
# CPU 3, each disk alone for 8 s, first on the original completion path, then attached. Prints
# IOPS both ways, completions and wakeups per completion. PASS when every run succeeded; the
# numbers are not judged.
. "$VM_LIB"
. "$VM_SRC/kmod/tests/lib-ipcq.sh"

sd=$(vm_disk sd) || vm_fail "no AHCI disk"; sd=${sd#/dev/}
nv=$(vm_disk nvme) || vm_fail "no NVMe disk"; nv=${nv#/dev/}
nullb_make nullb0 2
dd if=/dev/zero of=/dev/nullb0 bs=1M count=256 oflag=direct status=none
insmod "$IPCQ_KO" || vm_fail "insmod"

run() {
	vm_fio --name=b --filename=/dev/"$1" --direct=1 --ioengine=libaio --iodepth=16 --bs=4k \
		--rw=randread --size=200M --time_based --runtime=8 --cpus_allowed=3 ||
		vm_fail "fio on $1"
	echo "$FIO_RIOPS"
}
res=""
for d in "$sd" "$nv" nullb0; do
	off=$(run "$d")
	ipcq attach "$d" || vm_fail "attach $d"
	on=$(run "$d")
	c=$(ipcq_sum completions "$d"); w=$(ipcq_sum wakeups "$d")
	wpc=$(awk -v w="$w" -v c="$c" 'BEGIN { printf "%.2f", (c ? w / c : 0) }')
	ipcq detach "$d" || vm_fail "detach $d"
	vm_log "$d: original path $off IOPS, threads $on IOPS, $c completions, $wpc wakeups/completion"
	res+="$d $off->$on IOPS ${wpc}w/c; "
done
rmmod irqpilot_cq || vm_fail "rmmod"
vm_kernel_clean || vm_fail "kernel log trouble"
vm_pass "${res%; }"
