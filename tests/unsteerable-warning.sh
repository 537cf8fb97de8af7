#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# A disk no route can find a vector for: the Pixel 6 tree without its
# devicetree link and SCSI proc_name, its UFS IRQ under a name nothing
# knows. irqpilotd must say so once in the log, and irqctl status and
# explain must say it too: which device, which routes were tried, and to
# send a capture.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/lib-daemon.sh
. "$top_srcdir/tests/lib-daemon.sh"

daemon_test_dirs unsteer

cp -a "$top_srcdir/tests/fixtures/pixel6-gs101" "$root"
chmod -R u+w "$root"
ufs=$root/sys/devices/platform/soc@0/14700000.ufs
rm "$ufs/of_node" "$ufs/host0/scsi_host/host0/proc_name"
sed 's/  ufshcd$/  exynos-ufs-irq/' "$root/proc/interrupts" >"$tmp/i" && cat "$tmp/i" >"$root/proc/interrupts"
printf '[daemon]\ninterval = 0.2\n' >"$tmp/conf"

"$bin" --root "$root" --runtime-dir "$rt" --config "$tmp/conf" --dry-run --foreground >"$log" 2>&1 &
daemon=$!
if ! wait_for "$limit" test -S "$rt/control"; then
	bad "the daemon starts"
	cat "$log"
	exit 1
fi
# some cycles, so that "once" means something. A still tree makes the daemon
# idle after three quiet cycles, and then it waits on the tree's files with no
# timer (watch.h): each try completes a read on sda in /proc/diskstats, in
# place as the kernel's file is read, and a cycle follows.
io_then_cycles() {
	io_done sda 1 && sleep 0.3 && "$ctl" status | grep -Eq '^cycles: ([5-9]|[1-9][0-9]+)'
}
check "the daemon runs several cycles" wait_for "$limit" io_then_cycles
for d in sda sdb sdc; do
	check "the log warns about $d exactly once" \
		sh -c "[ \$(grep -c 'warning.*$d (exynos-ufshc on 14700000.ufs): no IRQ vector found' '$log') -eq 1 ]"
done
check "... naming the routes tried" grep -q "tried msi_irqs, kernel names, driver name heuristics" "$log"
check "... and asking for a capture" grep -q "irqpilotd --capture DIR" "$log"
check "irqctl status shows the warning" sh -c "'$ctl' status | grep -q '^warning: sda (exynos-ufshc on 14700000.ufs): no IRQ vector found'"
check "irqctl --json status lists it" sh -c "'$ctl' --json status | tr -d ' \\n' | grep -q '\"warnings\":\\[\"sda(exynos-ufshc'"
check "irqctl explain sda shows it" sh -c "'$ctl' explain sda | grep -q 'warning: sda .*attach DIR to a bug report'"
exit $fail
