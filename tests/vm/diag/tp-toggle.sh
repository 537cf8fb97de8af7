#!/bin/bash
# vm: --disk ahci --disk nvme:2 --smp 4,sockets=2,cores=2 --timeout 1500 --append softlockup_all_cpu_backtrace=1
# Diagnostic, not run by make check-vm: does guest-init's tracepoint holder (tests/vm/tp-hold.c)
# keep multi-threaded TCG from hanging when perf events on the block tracepoints come and go
# under I/O, as they do when irqpilotd starts and stops?
#   tests/vm/run-vm.sh tests/vm/diag/tp-toggle.sh keep|release [CYCLES]
# Each cycle opens and closes the events irqpilotd opens (a second tp-hold) while fio verifies
# on AHCI and NVMe. "release" lets go of guest-init's holder first, so that every
# cycle patches submit_bio_noacct_nocheck() and blk_update_request() (the way scenarios ran
# before the holder); "keep" leaves it, so that no cycle writes kernel text.
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"

mode=${1:-}
CYCLES=${2:-60}
case $mode in
keep) [ -n "${VM_TP_HOLD_PID:-}" ] || vm_fail "guest-init holds no tracepoints (see the console)" ;;
release) vm_tp_release ;;
*) vm_fail "usage: tp-toggle.sh keep|release [CYCLES]" ;;
esac
sd=$(vm_disk sd) || vm_fail "no AHCI disk"; sd=${sd#/dev/}
nv=$(vm_disk nvme) || vm_fail "no NVMe disk"; nv=${nv#/dev/}
disks="$sd $nv"

vm_fio_verify_start $disks
sleep 3
for c in $(seq 1 "$CYCLES"); do
	vm_tp_hold || vm_fail "cycle $c: tp-hold: $VM_TPH_MSG"
	sleep 0.$(( c % 10 ))
	kill "$VM_TPH_PID"
	wait "$VM_TPH_PID"
	[ $((c % 10)) -eq 0 ] && vm_log "cycle $c: events opened and closed"
done
vm_fio_verify_stop || vm_fail "fio verify failed"
vm_kernel_clean || vm_fail "kernel log trouble"
vm_pass "$mode: $CYCLES open/close cycles of perf events on block:block_bio_queue and block_rq_complete under fio verify: no hang"
