#!/bin/bash
# vm: --disk ahci --disk nvme:2 --smp 4,sockets=2,cores=2 --timeout 1200 --tcg-threads single --append softlockup_all_cpu_backtrace=1
# irqpilot_cq unload under I/O: 20 cycles of insmod, attach (AHCI, NVMe, null_blk) and rmmod,
# while fio writes and verifies (crc32c) on all three. Odd cycles rmmod with the disks still
# attached (module exit detaches them), even cycles detach first. Every request must complete
# exactly once: fio verify sees no error, nothing hangs, and the kernel log has no oops,
# warning or stall.
#
# Single-threaded TCG: with one host thread per vCPU, 2 of 5 runs here hung in a rmmod. The
# all-CPU backtraces (softlockup_all_cpu_backtrace) showed rmmod waiting in text_poke_bp's sync
# IPI (smp_call_function_many_cond) while the other vCPUs looped in exc_int3 on an int3 at
# blk_mq_complete_request_remote+0, a site the patching CPU had already rewritten and synced (an
# int3 that is no longer in memory is rewound and re-executed by the kprobe handler; a vCPU still
# running a stale translation traps again, with interrupts off). That is QEMU's multi-threaded
# TCG running code another vCPU rewrote, which sync_core forbids on hardware; the module's code
# is not on those stacks. tests/vm/diag/ftrace-toggle.sh runs the same stress with the kernel's
# function tracer instead of the module (60 cycles passed here: too few to tell either way).
# With all vCPUs on one host thread code writes are coherent; the vCPUs still interleave, at a
# coarser grain, and 2 of 2 runs passed.
. "$VM_LIB"
. "$VM_SRC/kmod/tests/lib-ipcq.sh"

CYCLES=${1:-20}
sd=$(vm_disk sd) || vm_fail "no AHCI disk"; sd=${sd#/dev/}
nv=$(vm_disk nvme) || vm_fail "no NVMe disk"; nv=${nv#/dev/}
nullb_make nullb0 2
disks="$sd $nv nullb0"

vm_fio_verify_start $disks
sleep 3
redirected=0
for c in $(seq 1 "$CYCLES"); do
	insmod "$IPCQ_KO" || vm_fail "cycle $c: insmod"
	for d in $disks; do ipcq attach "$d" || vm_fail "cycle $c: attach $d"; done
	sleep $(( (c % 3) + 1 ))
	n=0; for d in $disks; do n=$(( n + $(ipcq_sum completions "$d") )); done
	redirected=$((redirected + n))
	if [ $((c % 2)) -eq 0 ]; then
		for d in $disks; do ipcq detach "$d" || vm_fail "cycle $c: detach $d"; done
	fi
	rmmod irqpilot_cq || vm_fail "cycle $c: rmmod"
	vm_log "cycle $c: $n completions through the threads"
	[ -d /sys/module/irqpilot_cq ] && vm_fail "cycle $c: module still loaded"
done
vm_fio_verify_stop || vm_fail "fio verify failed during the unload cycles"
[ "$redirected" -gt 1000 ] || vm_fail "only $redirected completions went through the threads"
vm_kernel_clean || vm_fail "kernel log trouble"
vm_pass "$CYCLES insmod/attach/rmmod cycles under fio verify on $disks: no error, $redirected completions via threads"
