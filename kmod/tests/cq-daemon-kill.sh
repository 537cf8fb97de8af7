#!/bin/bash
# vm: --disk ahci --smp 2 --timeout 600
# A daemon killed with -9 leaves no attached disk (issue 12, item 13). irqpilotd with
# [device "sda"] completion_threads = yes attaches the AHCI disk on its long-lived irqpilot_cq
# connection, owned (IPCQ_ATTACH_F_OWNED); its completion thread completes I/O of a fio verify
# job; then the daemon is killed with -9, so nothing of it restores anything. The module sees
# the socket released and detaches sda by itself: polled until LIST no longer shows it (fail after
# 30 s; the release is immediate, the reap a work item). fio verify runs across the kill and
# must end clean. The state file still records the attach (written ahead), so
# irqpilotd --restore then finds sda already detached (the module's ENOENT), drops the record and
# exits 0; a second --restore has nothing left to do.
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"
. "$VM_SRC/kmod/tests/lib-ipcq.sh"
trap vm_daemon_save_log EXIT

sd=$(vm_disk sd) || vm_fail "no AHCI disk"; sd=${sd#/dev/}
# stall_ms=1000: TCG vCPUs on a loaded host are descheduled for 100-300 ms, which the default
# guard takes for a starved thread.
insmod "$IPCQ_KO" stall_ms=1000 || vm_fail "insmod"
cq_pid() { ipcq list | awk -v d="$sd" '$1 == "disk=" d { sub(/pid=/, "", $5); print $5; exit }'; }

vm_policy /tmp/irqpilot.conf '[daemon]' 'interval = 1' "[device \"$sd\"]" 'completion_threads = yes'
# Verified writes across attach, kill -9 and the module's own detach. The job ends by itself;
# the steps below end on what happened, each with a limit that only catches a stuck system.
fio --name=kill --filename=/dev/"$sd" --direct=1 --ioengine=libaio --iodepth=8 --bs=4k \
	--rw=randwrite --size=32M --verify=crc32c --do_verify=1 --verify_fatal=1 --randrepeat=0 \
	--verify_backlog=256 --time_based --runtime=60 >/tmp/fio.log 2>&1 &
fiop=$!
vm_daemon_start /tmp/irqpilot.conf

pid=""
end=$((SECONDS + 60))
while [ $SECONDS -lt $end ] && [ -z "$pid" ]; do pid=$(cq_pid); [ -n "$pid" ] || sleep 0.25; done
[ -n "$pid" ] || { cat "$VM_DLOG"; vm_fail "irqpilotd did not attach $sd within 60 s"; }
grep -q "attach $sd to irqpilot_cq: completion_threads = yes" "$VM_DLOG" ||
	vm_fail "$sd is attached, but the daemon's log has no attach line for it"
grep -q "cq $sd " "$VM_RT/state" || vm_fail "the state file does not record the attach of $sd"

# The thread carries I/O before the kill: 200 completions, within 60 s.
cpl=0
end=$((SECONDS + 60))
while [ $SECONDS -lt $end ]; do
	cpl=$(ipcq_sum completions "$sd")
	[ "$cpl" -ge 200 ] && break
	sleep 0.25
done
[ "$cpl" -ge 200 ] || vm_fail "the completion thread of $sd completed only $cpl requests in 60 s"
kill -0 "$fiop" 2>/dev/null || vm_fail "fio ended before the kill: $(cat /tmp/fio.log)"

dpid=$VM_DAEMON_PID
t0=$SECONDS
vm_daemon_stop KILL
left=""
while [ $((SECONDS - t0)) -le 30 ]; do
	left=$(cq_pid)
	[ -z "$left" ] && break
	sleep 0.2
done
took=$((SECONDS - t0))
[ -z "$left" ] || vm_fail "$sd still attached (thread $left) 30 s after irqpilotd (pid $dpid) was killed with -9"
dmesg | grep -q "$sd: the socket that attached it was closed; detached" ||
	vm_fail "no 'the socket that attached it was closed' line for $sd in dmesg"
ipcq list | grep -q "disk=$sd" && vm_fail "LIST still shows $sd"
for _ in $(seq 1 50); do [ -d /proc/"$pid" ] || break; sleep 0.2; done
[ -d /proc/"$pid" ] && vm_fail "completion thread $pid still there 10 s after the detach"

wait "$fiop"; rc=$?
[ $rc -eq 0 ] || { cat /tmp/fio.log; vm_fail "fio verify failed across the kill (status $rc)"; }
grep -qE "err= *[1-9]" /tmp/fio.log && { cat /tmp/fio.log; vm_fail "fio reported errors"; }

"$IRQPILOTD" --restore --runtime-dir "$VM_RT" >/tmp/restore.out 2>&1; rrc=$?
cat /tmp/restore.out
[ $rrc -eq 0 ] || vm_fail "irqpilotd --restore exited $rrc after the module had detached $sd"
grep -q "$sd was no longer attached to irqpilot_cq" /tmp/restore.out ||
	vm_fail "--restore did not say that $sd was already detached"
grep -qs "^cq $sd " "$VM_RT/state" && vm_fail "the state file still records $sd after --restore"
"$IRQPILOTD" --restore --runtime-dir "$VM_RT" >/tmp/restore2.out 2>&1 ||
	{ cat /tmp/restore2.out; vm_fail "a second --restore failed"; }
grep -q "$sd" /tmp/restore2.out && vm_fail "a second --restore dealt with $sd again: $(cat /tmp/restore2.out)"

rmmod irqpilot_cq || vm_fail "rmmod"
vm_kernel_clean || vm_fail "kernel log trouble"
vm_pass "irqpilotd attached $sd owned (thread $pid, $cpl completions); after kill -9 the module detached it within $took s; fio verify clean; --restore exited 0 and dropped the record"
