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
tphold=$VM_OUT/tp-hold
[ -x "$tphold" ] || vm_fail "no $tphold (run-vm.sh builds it)"
sd=$(vm_disk sd) || vm_fail "no AHCI disk"; sd=${sd#/dev/}
nv=$(vm_disk nvme) || vm_fail "no NVMe disk"; nv=${nv#/dev/}
disks="$sd $nv"

pids=()
for d in $disks; do
	(
		while [ ! -e /tmp/stop ]; do
			fio --name="$d" --filename=/dev/"$d" --direct=1 --ioengine=libaio --iodepth=16 \
				--bs=4k --rw=randwrite --size=24M --verify=crc32c --do_verify=1 \
				--verify_fatal=1 --randrepeat=0 >/tmp/fio-"$d".log 2>&1 ||
				{ echo "fio $d failed"; cat /tmp/fio-"$d".log; exit 1; }
		done
	) &
	pids+=($!)
done

sleep 3
for c in $(seq 1 "$CYCLES"); do
	coproc H { exec "$tphold" block:block_bio_queue block:block_rq_complete 2>&1; }
	hp=$H_PID
	read -r -t 60 -u "${H[0]}" msg || msg="no answer in 60 s"
	[ "${msg%% *}" = held ] || vm_fail "cycle $c: tp-hold: $msg"
	sleep 0.$(( c % 10 ))
	kill "$hp"
	wait "$hp"
	[ $((c % 10)) -eq 0 ] && vm_log "cycle $c: events opened and closed"
done
touch /tmp/stop
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
[ $rc -eq 0 ] || vm_fail "fio verify failed"
bad=$(dmesg | grep -E 'BUG:|WARNING:|Oops|blocked for more than|rcu: INFO|self-detected stall' | head -n5)
[ -z "$bad" ] || vm_fail "kernel log trouble: $bad"
vm_pass "$mode: $CYCLES open/close cycles of perf events on block:block_bio_queue and block_rq_complete under fio verify: no hang"
