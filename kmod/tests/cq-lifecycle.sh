#!/bin/bash
# vm: --disk none --smp 4,sockets=2,cores=2 --timeout 600
# irqpilot_cq life cycle on null_blk: a non-root client is refused ATTACH and DETACH (EPERM)
# but may LIST (without counts); the number of hw queues changes under fio verify (extra queues take the
# original path, no errors, no use-after-free); a disk removed while attached under I/O is
# detached and reported ("removed" event); the module refuses to load, with -EBUSY and a
# message, while another module holds IPMODIFY on blk_mq_complete_request_remote.
. "$VM_LIB"
. "$VM_SRC/kmod/tests/lib-ipcq.sh"

HOLDER=${IPCQ_KO%/*}/tests/holder/ipcq_holder.ko
nullb_make nullb0 2
nullb_make nullb1 2

# --- -EBUSY while another IPMODIFY user holds the function
if [ -f "$HOLDER" ]; then
	insmod "$HOLDER" || vm_fail "insmod ipcq_holder"
	out=$(insmod "$IPCQ_KO" 2>&1) && vm_fail "irqpilot_cq loaded although ipcq_holder holds IPMODIFY"
	vm_log "insmod refused: $out"
	echo "$out" | grep -q "Device or resource busy" || vm_fail "insmod failed, but not with EBUSY: $out"
	dmesg | grep -q "irqpilot_cq: another module .* already modifies blk_mq_complete_request_remote" ||
		vm_fail "no clear message in dmesg for the EBUSY refusal"
	rmmod ipcq_holder || vm_fail "rmmod ipcq_holder"
	busy="EBUSY refusal ok"
else
	vm_log "no $HOLDER (make -C kmod builds it); EBUSY check skipped"
	busy="EBUSY check skipped"
fi

insmod "$IPCQ_KO" stall_ms=1000 || vm_fail "insmod $IPCQ_KO"
"$IPCQ_CTL" listen 120 >/tmp/events.log 2>&1 &
listener=$!
sleep 1

# --- permissions
ipcq attach nullb0 || vm_fail "root attach nullb0"
nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$IPCQ_CTL" "$@"; }
out=$(nobody attach nullb1 2>&1) && vm_fail "nobody could ATTACH"
echo "$out" | grep -q "Operation not permitted" || vm_fail "nobody ATTACH refused, but not with EPERM: $out"
out=$(nobody detach nullb0 2>&1) && vm_fail "nobody could DETACH"
echo "$out" | grep -q "Operation not permitted" || vm_fail "nobody DETACH refused, but not with EPERM: $out"
[ "$(nobody list | grep -c 'disk=nullb0')" -eq 2 ] || vm_fail "nobody cannot LIST"
nobody list | grep -qE 'completions=|cpus=' && vm_fail "nobody's LIST shows counts"
ipcq list | grep -q "disk=nullb1" && vm_fail "nullb1 attached by nobody"
out=$(ipcq attach no-such-disk 2>&1) && vm_fail "attach of a missing disk succeeded"
vm_log "permissions ok; missing disk: $out"

# --- hw queue count changes under fio verify
fio --name=resize --filename=/dev/nullb0 --direct=1 --ioengine=libaio --iodepth=16 --bs=4k \
	--rw=randwrite --size=64M --verify=crc32c --do_verify=1 --verify_fatal=1 \
	--numjobs=2 --offset_increment=96M --cpus_allowed=0-3 --cpus_allowed_policy=split \
	>/tmp/resize.log 2>&1 &
fiop=$!
for n in 4 1 3 2; do
	sleep 2
	echo "$n" >/sys/kernel/config/nullb/nullb0/submit_queues ||
		vm_fail "cannot set nullb0 submit_queues to $n"
	vm_log "nullb0 now has $(ls -d /sys/block/nullb0/mq/* | wc -l) hw queues"
done
wait $fiop || { cat /tmp/resize.log; vm_fail "fio verify failed while hw queues changed"; }
grep -E "err=|IOPS" /tmp/resize.log | head -4
ipcq list | grep nullb0
[ "$(ipcq_sum completions nullb0)" -gt 1000 ] || vm_fail "nullb0 threads completed nothing"

# --- removal while attached, under I/O
ipcq attach nullb1 || vm_fail "attach nullb1"
fio --name=gone --filename=/dev/nullb1 --direct=1 --ioengine=libaio --iodepth=16 --bs=4k \
	--rw=randrw --time_based --runtime=30 >/tmp/gone.log 2>&1 &
fiop=$!
sleep 3
echo 0 >/sys/kernel/config/nullb/nullb1/power || vm_fail "cannot power off nullb1"
wait $fiop	# fio sees I/O errors here; that is the removal, not the module
for i in $(seq 1 50); do ipcq list | grep -q "disk=nullb1" || break; sleep 0.2; done
ipcq list | grep -q "disk=nullb1" && vm_fail "nullb1 still attached after removal"
# The threads stop in the teardown work that follows the detach.
for i in $(seq 1 50); do pgrep -f 'ipcq/nullb1' >/dev/null || break; sleep 0.2; done
pgrep -f 'ipcq/nullb1' && vm_fail "nullb1 threads left after removal"
rmdir /sys/kernel/config/nullb/nullb1 || vm_fail "cannot remove nullb1 from configfs"

ipcq detach nullb0 || vm_fail "detach nullb0"
sleep 1
kill $listener 2>/dev/null
wait $listener 2>/dev/null
cat /tmp/events.log
grep -q "event=attach disk=nullb0" /tmp/events.log || vm_fail "no attach event"
grep -q "event=removed disk=nullb1" /tmp/events.log || vm_fail "no removed event for nullb1"
grep -q "event=detach disk=nullb0" /tmp/events.log || vm_fail "no detach event"
rmmod irqpilot_cq || vm_fail "rmmod"
vm_kernel_clean || vm_fail "kernel log trouble"
vm_pass "EPERM for nobody; hw queues 2->4->1->3->2 under verify ok; removal detached nullb1 with an event; $busy"
