#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# An idle irqpilotd on a --root tree (watch.h, idle.h): it waits on an inotify
# watch of its probe's files (/proc/diskstats, the CPU lists) with no probe
# timer, and on a still tree with no timer at all; a read completing on sda,
# written to /proc/diskstats as the kernel counts it, starts a cycle at once;
# a write to /proc/interrupts brings back the full cycle a minute after the
# last; and a watched directory that turns out to be the kernel's (procfs,
# which tells inotify nothing) is said in the log, and the daemon goes on
# probing on its timer.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/lib-daemon.sh
. "$top_srcdir/tests/lib-daemon.sh"

daemon_test_dirs idlewatch

cp -a "$top_srcdir/tests/fixtures/phone-arm64" "$root"
chmod -R u+w "$root"
printf '[daemon]\ninterval = 0.5\nlog_level = debug\n' >"$tmp/conf"
"$bin" --root "$root" --runtime-dir "$rt" --config "$tmp/conf" --dry-run --foreground >"$log" 2>&1 &
daemon=$!
if ! wait_for "$limit" test -S "$rt/control"; then
	bad "the daemon starts"
	cat "$log"
	exit 1
fi
cycles() { "$ctl" status | sed -n 's/^cycles: \([0-9]*\).*/\1/p'; }
watched="(no storage I/O: a change to the tree's /proc/diskstats or CPU lists starts one)"
still="none while the tree is still (no storage I/O: a change to the tree's /proc/diskstats or CPU lists starts one;"

check "idle on a still tree: the daemon waits on the tree's files, with no timer" \
	wait_for "$limit" sh -c "'$ctl' status | grep -qF \"$still\""
check "... says so in its log" grep -q "no storage I/O: a change to the tree's /proc/diskstats or CPU lists wakes irqpilotd (inotify); a full cycle every 60 s while its /proc/interrupts, /proc/softirqs or /irqpilot/submit is written" "$log"
check "... and that the tree is still" grep -q "idle: nothing in the tree written since the last full cycle: none until /proc/interrupts, /proc/softirqs or /irqpilot/submit is" "$log"
check "... and irqctl names the files it waits for" sh -c "'$ctl' status | grep -qF 'to its /proc/interrupts, /proc/softirqs or /irqpilot/submit, a full cycle 60 s after the last)'"

# A probe timer would run every 0.5 s: 4 wakeups in 2 s; the watch none.
sleep 1
w0=$(ctxt "$daemon")
sleep 2
w1=$(ctxt "$daemon")
check "no wakeup in 2 s of idle ($((w1 - w0)))" test $((w1 - w0)) -le 1

# 100 reads complete on sda
c0=$(cycles)
io_done sda 100
# the next full cycle is a minute away: only the watch can start this one
check "I/O written to /proc/diskstats starts a cycle within 5 s" \
	wait_for 5 sh -c "[ \"\$('$ctl' status | sed -n 's/^cycles: \\([0-9]*\\).*/\\1/p')\" -gt $c0 ]"
check "idle again after three quiet cycles, the tree still" \
	wait_for "$limit" sh -c "'$ctl' status | grep -qF \"$still\""

# A stand-in kernel counts interrupts: a new /proc/interrupts renamed over
# the old one, with its mtime kept (cp -p). The minute's full cycle is due
# again, a minute after the last began; no cycle before it, none after.
c0=$(cycles)
t0=$(date +%s)
cp -p "$root/proc/interrupts" "$root/proc/interrupts.new"
mv "$root/proc/interrupts.new" "$root/proc/interrupts"
check "a write to /proc/interrupts ends the still wait" \
	wait_for 5 sh -c "'$ctl' status | grep -qF \"$watched\""
check "... and no cycle runs at once" test "$(cycles)" -eq "$c0"
check "the full cycle runs within 65 s" \
	wait_for 65 sh -c "[ \"\$('$ctl' status | sed -n 's/^cycles: \\([0-9]*\\).*/\\1/p')\" -gt $c0 ]"
t1=$(date +%s)
check "... not before the minute is out ($((t1 - t0)) s after the write)" test $((t1 - t0)) -ge 40
check "... then the tree is still again" wait_for 5 sh -c "'$ctl' status | grep -qF \"$still\""
check "... with one cycle ($(($(cycles) - c0)))" test "$(($(cycles) - c0))" -eq 1

# sys/fs/cgroup (a cgroup v2 isolated partition's cpuset.cpus.isolated) is
# missing here and waited for in sys/; sys/fs appears as the kernel's procfs
ln -s /proc "$root/sys/fs"
check "a watched directory on procfs is said" wait_for 10 grep -q \
	"idle: watching the tree's files: sys/fs is on procfs, which tells inotify of no change; probing every 0.5 s instead" "$log"
check "... and the daemon probes on its timer again" \
	wait_for 10 sh -c "'$ctl' status | grep -q '^cycles: [0-9]*, every 60.0 s (no storage I/O)\$'"
w0=$(ctxt "$daemon")
sleep 2
w1=$(ctxt "$daemon")
check "... waking for it ($((w1 - w0)) wakeups in 2 s)" test $((w1 - w0)) -ge 2
check "the daemon is still running" kill -0 "$daemon"
[ "$fail" -eq 0 ] || { echo "# daemon log:"; sed 's/^/#    /' "$log" | tail -n 30; }
exit "$fail"
