#!/bin/bash
# vm: --disk ahci --disk nvme:2 --smp 4,sockets=2,cores=2 --timeout 1500 --append softlockup_all_cpu_backtrace=1
# Diagnostic, not run by make check-vm. The stress of kmod/tests/cq-unload.sh (fio verify on
# AHCI, NVMe and null_blk while a hook on blk_mq_complete_request_remote() comes and goes) with
# the kernel's own function tracer in place of irqpilot_cq: no out-of-tree code in the guest.
# If this hangs like cq-unload did under --tcg-threads multi (a vCPU looping on an int3 at
# blk_mq_complete_request_remote+0 that another vCPU already removed, while the patching CPU
# waits for it in smp_call_function_many_cond), the hang belongs to QEMU's TCG, not the module.
#   tests/vm/run-vm.sh [--tcg-threads single] tests/vm/diag/ftrace-toggle.sh [CYCLES]
. "$VM_LIB"
. "$VM_SRC/kmod/tests/lib-ipcq.sh"

CYCLES=${1:-60}
t=/sys/kernel/tracing
mountpoint -q $t || mount -t tracefs nodev $t || vm_fail "mount tracefs"
[ -w $t/set_ftrace_filter ] || vm_skip "no function tracer in this kernel"
sd=$(vm_disk sd) || vm_fail "no AHCI disk"; sd=${sd#/dev/}
nv=$(vm_disk nvme) || vm_fail "no NVMe disk"; nv=${nv#/dev/}
nullb_make nullb0 2
disks="$sd $nv nullb0"

vm_fio_verify_start $disks
sleep 3
echo blk_mq_complete_request_remote >$t/set_ftrace_filter || vm_fail "set_ftrace_filter"
for c in $(seq 1 "$CYCLES"); do
	echo function >$t/current_tracer || vm_fail "cycle $c: function tracer on"
	sleep $(( (c % 3) + 1 ))
	hits=$(grep -c blk_mq_complete_request_remote $t/trace)
	echo nop >$t/current_tracer || vm_fail "cycle $c: tracer off"
	echo >$t/trace
	vm_log "cycle $c: $hits traced calls"
done
vm_fio_verify_stop || vm_fail "fio verify failed"
vm_kernel_clean || vm_fail "kernel log trouble"
vm_pass "$CYCLES function-tracer on/off cycles on blk_mq_complete_request_remote under fio verify: no hang"
