#!/bin/bash
# vm: --disk none --smp 4,sockets=2,cores=2 --timeout 600
# irqpilot_cq against callers it must not obey and clients that die (issue 12, items 11-13):
# - ATTACH by nobody, and by nobody holding only CAP_NET_ADMIN (what GENL_ADMIN_PERM checks),
#   is refused with EPERM, and so is root of a user namespace; LIST by nobody shows the threads
#   but no counts; LIST from another pid namespace gives no pid of the initial one;
# - malformed requests (ipcq-raw.py: lengths, types, unknown attributes and bits, ranges,
#   versions, reserved bytes) are refused with the right errno and attach nothing;
# - an unprivileged client that leaves a LIST dump unread does not keep the module loaded;
# - a loop device (blk-mq, drivers/block/loop.c) is refused, and stays detachable by losetup;
# - stall_ms=0 (which turned the stall guard off) is refused at insmod and in sysfs;
# - a client that attached with IPCQ_ATTACH_F_OWNED ("ipcq-ctl hold") and is killed with -9
#   leaves no attached disk and no completion thread behind, while a disk attached without
#   the flag stays attached; I/O on the disk goes on and verifies.
. "$VM_LIB"
. "$VM_SRC/kmod/tests/lib-ipcq.sh"

nullb_make nullb0 2
nullb_make nullb1 1

# --- stall_ms=0 no longer turns the guard off
out=$(insmod "$IPCQ_KO" stall_ms=0 2>&1) && vm_fail "insmod with stall_ms=0 succeeded"
vm_log "insmod stall_ms=0 refused: $out"
dmesg | grep -q "stall_ms" || vm_fail "no kernel message for stall_ms=0"
insmod "$IPCQ_KO" || vm_fail "insmod $IPCQ_KO"
p=/sys/module/irqpilot_cq/parameters/stall_ms
echo 0 >"$p" 2>/dev/null && vm_fail "stall_ms=0 accepted in sysfs"
[ "$(cat "$p")" = 100 ] || vm_fail "stall_ms is $(cat "$p") after a refused write"
echo 250 >"$p" || vm_fail "stall_ms=250 refused"
[ "$(cat "$p")" = 250 ] || vm_fail "stall_ms is $(cat "$p"), not 250"

"$IPCQ_CTL" listen 120 >/tmp/events.log 2>&1 &
listener=$!
sleep 1

# --- privileges
nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$IPCQ_CTL" "$@"; }
netadmin() {
	setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=+net_admin \
		--ambient-caps=+net_admin "$IPCQ_CTL" "$@"
}
ipcq attach nullb0 || vm_fail "root attach nullb0"
out=$(nobody attach nullb1 2>&1) && vm_fail "nobody could ATTACH"
echo "$out" | grep -q "Operation not permitted" || vm_fail "nobody ATTACH refused, but not with EPERM: $out"
# The next check means something only if setpriv really left nobody CAP_NET_ADMIN.
caps=$(setpriv --reuid=nobody --regid=nogroup --clear-groups --inh-caps=+net_admin \
	--ambient-caps=+net_admin awk '/^CapEff/ { print $2 }' /proc/self/status)
[ "$caps" = 0000000000001000 ] || vm_fail "setpriv gave nobody CapEff $caps, not CAP_NET_ADMIN alone: cannot test"
out=$(netadmin attach nullb1 2>&1) && vm_fail "nobody with CAP_NET_ADMIN could ATTACH"
echo "$out" | grep -q "Operation not permitted" ||
	vm_fail "CAP_NET_ADMIN-only ATTACH refused, but not with EPERM: $out"
vm_log "CAP_NET_ADMIN only: $out"
out=$(netadmin detach nullb0 2>&1) && vm_fail "nobody with CAP_NET_ADMIN could DETACH"
echo "$out" | grep -q "Operation not permitted" || vm_fail "CAP_NET_ADMIN-only DETACH: $out"
nobody list >/tmp/nobody.list || vm_fail "nobody cannot LIST"
cat /tmp/nobody.list
[ "$(grep -c 'disk=nullb0 .*pid=' /tmp/nobody.list)" -eq 2 ] || vm_fail "nobody's LIST lacks nullb0's threads"
grep -qE 'completions=|cpus=' /tmp/nobody.list && vm_fail "nobody's LIST shows counts"
ipcq list | grep -q 'disk=nullb0 .*completions=' || vm_fail "root's LIST shows no counts"
ipcq list | grep -q "disk=nullb1" && vm_fail "nullb1 attached by an unprivileged caller"
# Every capability, but in a user namespace of its own (the initial network namespace, where
# the family lives): what counts is CAP_SYS_ADMIN and CAP_NET_ADMIN in the initial one.
out=$(unshare --user --map-root-user "$IPCQ_CTL" attach nullb1 2>&1) &&
	vm_fail "root of a user namespace could ATTACH"
echo "$out" | grep -q "Operation not permitted" || vm_fail "user-namespace ATTACH: $out"
out=$(unshare --user --map-root-user "$IPCQ_CTL" detach nullb0 2>&1) &&
	vm_fail "root of a user namespace could DETACH"
# A LIST from another pid namespace (a container sharing the host's network): the initial
# namespace's pids name other tasks there, which a client would move. The threads are not
# visible there, so their messages carry no PID.
pidns=$(unshare --pid --fork --mount-proc "$IPCQ_CTL" list 2>&1) || vm_fail "LIST in a pid namespace: $pidns"
echo "$pidns"
echo "$pidns" | grep -q "disk=nullb0" || vm_fail "LIST in a pid namespace lacks nullb0"
echo "$pidns" | grep -q "disk=nullb0 .*pid=" &&
	vm_fail "LIST in a child pid namespace gives the initial namespace's pids"
privs="EPERM for nobody, CAP_NET_ADMIN only and a user namespace's root, counts hidden from nobody, no pids into a pid namespace"

# --- malformed requests (kmod/tests/ipcq-raw.py builds them byte by byte): each gets its errno
# from the policy or the module, nullb1 stays unattached, and the module goes on answering.
IFS=: read -r nb1maj nb1min </sys/block/nullb1/dev
python3 "$VM_SRC/kmod/tests/ipcq-raw.py" "$nb1maj" "$nb1min" nullb1 >/tmp/raw.log 2>&1 ||
	{ cat /tmp/raw.log; vm_fail "a malformed request got another answer"; }
cat /tmp/raw.log
ipcq list | grep -q "disk=nullb1" && vm_fail "nullb1 attached by a malformed request"
ipcq list | grep -q "disk=nullb0" || vm_fail "nullb0 gone after the malformed requests"
malformed="$(grep -c "^ok" /tmp/raw.log) raw requests answered right"

# --- a loop device is refused (and not held open)
truncate -s 64M /tmp/loop.img
modprobe loop 2>/dev/null
loopdev=$(losetup -f --show /tmp/loop.img) || vm_fail "losetup"
[ -e /sys/block/${loopdev#/dev/}/mq ] || vm_log "note: ${loopdev#/dev/} has no mq/ (not blk-mq?)"
out=$(ipcq attach "${loopdev#/dev/}" 2>&1) && vm_fail "ATTACH of $loopdev succeeded"
vm_log "loop refused: $out"
echo "$out" | grep -q "Operation not supported" || vm_fail "loop refused, but not with EOPNOTSUPP: $out"
ipcq list | grep -q "disk=loop" && vm_fail "a loop device is listed"
losetup -d "$loopdev" || vm_fail "losetup -d $loopdev: the module still holds it?"

# --- an owner killed with -9
fio --name=held --filename=/dev/nullb1 --direct=1 --ioengine=libaio --iodepth=16 --bs=4k \
	--rw=randwrite --size=48M --verify=crc32c --do_verify=1 --verify_fatal=1 \
	--time_based --runtime=20 >/tmp/held.log 2>&1 &
fiop=$!
"$IPCQ_CTL" hold nullb1 >/tmp/hold.out 2>&1 &
holder=$!
for i in $(seq 1 50); do grep -q held /tmp/hold.out && break; sleep 0.2; done
grep -q held /tmp/hold.out || { cat /tmp/hold.out; vm_fail "ipcq-ctl hold did not attach nullb1"; }
# fio takes seconds to start its I/O under TCG: wait for the thread to have completed some.
before=0
for i in $(seq 1 120); do
	before=$(ipcq_sum completions nullb1)
	[ "$before" -gt 0 ] && break
	sleep 0.5
done
[ "$before" -gt 0 ] || vm_fail "nullb1's thread completed nothing in 60 s while held"
kill -0 $fiop 2>/dev/null || vm_fail "fio ended before the owner was killed: cannot test I/O across it"
pgrep -f 'ipcq/nullb1' >/dev/null || vm_fail "no ipcq/nullb1 thread while held"
kill -9 "$holder"
wait "$holder" 2>/dev/null
gone=""
for i in $(seq 1 25); do
	if ! ipcq list | grep -q "disk=nullb1" && ! pgrep -f 'ipcq/nullb1' >/dev/null; then
		gone=$i
		break
	fi
	sleep 0.2
done
[ -n "$gone" ] || { ipcq list; vm_fail "nullb1 still attached or its thread alive 5 s after kill -9 of its owner"; }
ipcq list | grep -q "disk=nullb0" || vm_fail "nullb0 (not owned) was detached too"
wait $fiop || { cat /tmp/held.log; vm_fail "fio verify on nullb1 failed across the owner's death"; }
grep -E "err=" /tmp/held.log | head -2
dmesg | grep -q "nullb1: the socket that attached it was closed; detached" ||
	vm_fail "no kernel message for the owner's release"
vm_log "owner killed: nullb1 detached by poll $gone of 25 (0.2 s apart); $before completions through its thread before"

ipcq detach nullb0 || vm_fail "detach nullb0"
sleep 1
kill $listener 2>/dev/null
wait $listener 2>/dev/null
cat /tmp/events.log
grep -q "event=attach disk=nullb1" /tmp/events.log || vm_fail "no attach event for nullb1"
grep -q "event=detach disk=nullb1" /tmp/events.log || vm_fail "no detach event for nullb1"

# --- an unprivileged LIST dump left unread: a dump in progress holds a reference to the module,
# so one that never finishes would keep anyone from unloading it. A LIST that fits one message
# buffer must end in its first call.
ipcq attach nullb0 || vm_fail "attach nullb0 again"
cp "$VM_SRC/kmod/tests/ipcq-raw.py" /tmp/ipcq-raw.py
setpriv --reuid=nobody --regid=nogroup --clear-groups python3 /tmp/ipcq-raw.py unread-dump 60 \
	>/tmp/unread.out 2>&1 &
unread=$!
for i in $(seq 1 50); do grep -q sent /tmp/unread.out && break; sleep 0.2; done
grep -q sent /tmp/unread.out || { cat /tmp/unread.out; vm_fail "the unread-dump client sent nothing"; }
out=$(rmmod irqpilot_cq 2>&1) ||
	vm_fail "rmmod refused while nobody left a LIST dump of nullb0's 2 threads unread: $out"
kill "$unread" 2>/dev/null
wait "$unread" 2>/dev/null
vm_kernel_clean || vm_fail "kernel log trouble"
vm_pass "$privs; $malformed; loop refused; stall_ms=0 refused; owner killed -9: nullb1 detached by poll $gone/25, fio verify clean; rmmod with an unread LIST dump"
