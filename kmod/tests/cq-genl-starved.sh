#!/bin/bash
# vm: --disk ahci --smp 4,sockets=2,cores=2 --timeout 600
# A starved completion thread blocks nobody else (issue 12, item 10). The AHCI disk's thread is
# pinned to CPU 2 at SCHED_FIFO 40 and a SCHED_FIFO 99 busy loop starves it there. While the
# hog still runs:
# - DETACH returns (its teardown waits for the thread on a work item, not in the request);
# - another generic netlink family answers (`genl ctrl list`, the controller), as does
#   irqpilot_cq's own LIST;
# - fio verify on the disk goes on (the detach completed what waited for the thread);
# and once the hog is gone the thread exits. The old module held genl_mutex, which every
# family shares, in kthread_stop() until the hog ended.
. "$VM_LIB"
. "$VM_SRC/kmod/tests/lib-ipcq.sh"

command -v genl >/dev/null || vm_skip "no genl (iproute2) to query another family"
sd=$(vm_disk sd) || vm_fail "no AHCI disk"; sd=${sd#/dev/}
insmod "$IPCQ_KO" stall_ms=100 || vm_fail "insmod"
ipcq attach "$sd" || vm_fail "attach $sd"
pid=$(ipcq list | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^pid=/) print substr($i, 5) }')
[ -n "$pid" ] || vm_fail "no thread pid in LIST"
taskset -p -c 2 "$pid" >/dev/null || vm_fail "taskset on the completion thread"
chrt -f -p 40 "$pid" || vm_fail "chrt on the completion thread"

"$IPCQ_CTL" listen 100 >/tmp/events.log 2>&1 &
listener=$!
fio --name=st --filename=/dev/"$sd" --direct=1 --ioengine=libaio --iodepth=8 --bs=4k \
	--rw=randwrite --size=32M --verify=crc32c --do_verify=1 --verify_fatal=1 --randrepeat=0 \
	--cpus_allowed=0 --time_based --runtime=20 >/tmp/fio.log 2>&1 &
fiop=$!
sleep 2

# The hog ends by itself; it writes a mark when it does, so the order of events is read
# from what happened, not from a clock.
rm -f /tmp/hog.done
taskset -c 2 chrt -f 99 bash -c 'end=$((SECONDS + 12)); while [ $SECONDS -lt $end ]; do :; done; : >/tmp/hog.done' &
hog=$!
sleep 2
grep -q "^State:.*R" /proc/$hog/status || vm_fail "the hog is not running"
[ "$(awk '/^State/ { print $2 }' /proc/"$pid"/status)" != X ] || vm_fail "thread gone before detach"

ipcq detach "$sd" || vm_fail "detach $sd while its thread is starved"
[ -e /tmp/hog.done ] && vm_fail "DETACH returned only after the hog ended: it waited for the thread"
genl ctrl list >/tmp/genl.out 2>&1 || { cat /tmp/genl.out; vm_fail "genl ctrl list failed"; }
[ -e /tmp/hog.done ] && vm_fail "genl ctrl list answered only after the hog ended"
grep -q "Name: nlctrl" /tmp/genl.out || vm_fail "genl ctrl list did not list nlctrl"
grep -q "Name: irqpilot_cq" /tmp/genl.out || vm_fail "genl ctrl list did not list irqpilot_cq"
ipcq list >/tmp/list.out || vm_fail "LIST failed while a teardown waits"
[ -e /tmp/hog.done ] && vm_fail "LIST answered only after the hog ended"
grep -q "disk=$sd" /tmp/list.out && vm_fail "$sd still listed after DETACH"
alive=no
[ -d /proc/"$pid" ] && alive=yes
vm_log "while the hog ran: DETACH returned, genl ctrl list gave $(grep -c '^Name:' /tmp/genl.out) families, thread $pid still alive: $alive"

wait $hog
wait $fiop || { cat /tmp/fio.log; vm_fail "fio verify failed across the starved detach"; }
grep -E "err=" /tmp/fio.log | head -2
for i in $(seq 1 50); do [ -d /proc/"$pid" ] || break; sleep 0.2; done
[ -d /proc/"$pid" ] && vm_fail "thread $pid still there 10 s after the hog ended"
kill $listener 2>/dev/null
wait $listener 2>/dev/null
cat /tmp/events.log
grep -q "event=detach disk=$sd" /tmp/events.log || vm_fail "no detach event"
rmmod irqpilot_cq || vm_fail "rmmod"
vm_kernel_clean || vm_fail "kernel log trouble"
vm_pass "thread starved: DETACH, genl ctrl list and LIST answered before the hog ended (thread alive then: $alive); thread gone after it; fio verify clean"
