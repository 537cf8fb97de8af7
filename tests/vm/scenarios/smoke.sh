#!/bin/bash
# vm: --disk ahci --append threadirqs --smp 4,sockets=2,cores=2
# Proves the harness: an AHCI disk shows up with its MSI vector, fio runs on it from CPU 3
# (random reads, then random writes read back with crc32c), and the BLOCK softirqs it causes
# are counted per CPU. PASS if fio ran without errors.
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"

disk=$(vm_disk sd) || vm_fail "no AHCI disk (/sys/block/sd*) appeared"
irq=$(vm_irqs 'ahci' | head -n1)
[ -n "$irq" ] || vm_fail "no ahci vector in /proc/interrupts"
irqcpu=$(cat /proc/irq/"$irq"/effective_affinity_list)
vm_log "disk $disk, ahci irq $irq, effective affinity $irqcpu, rq_affinity $(cat /sys/block/"${disk#/dev/}"/queue/rq_affinity)"
grep -E "^ *$irq:" /proc/interrupts

common=(--filename="$disk" --direct=1 --ioengine=libaio --iodepth=16 --bs=4k --cpus_allowed=3)
before=$(vm_softirqs BLOCK)
vm_fio --name=randread "${common[@]}" --rw=randread --size=64M --runtime=5 --time_based ||
	vm_fail "fio randread failed on $disk"
after=$(vm_softirqs BLOCK)
riops=$FIO_RIOPS
delta=$(vm_delta "$before" "$after")
total=$(vm_sum "$delta")
oncpu=$(vm_at "$delta" "$irqcpu")
share=$(vm_pct "$oncpu" "$total")
vm_log "BLOCK softirq delta per CPU: $delta (total $total, $share% on irq cpu $irqcpu)"

vm_fio --name=verify "${common[@]}" --rw=randwrite --size=16M --verify=crc32c --do_verify=1 ||
	vm_fail "fio randwrite --verify=crc32c failed on $disk"
wiops=$FIO_WIOPS

vm_pass "ahci irq $irq on cpu $irqcpu; fio on cpu 3: randread $riops IOPS, randwrite+verify $wiops IOPS, 0 errors; BLOCK softirqs per cpu [$delta], $share% on irq cpu $irqcpu"
