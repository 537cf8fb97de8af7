#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/ns-run.sh TREE CMD [ARG...]: run CMD (irqbalance) in a private mount
# namespace where the fixture TREE stands in for this machine's /sys and for
# the /proc files irqbalance reads, so that its reads come from the fixture
# and its writes to /proc/irq/N/smp_affinity land in TREE/proc/irq.
#
# Every file irqbalance 1.9 opens was listed with strace: /proc/interrupts,
# /proc/stat, /proc/irq/N/{smp_affinity,node}, /sys/devices/system/{cpu,node},
# /sys/bus/pci/devices/* and the device directories their relative links
# point to. The whole of TREE/sys goes over /sys, so those links cannot
# resolve to this machine's real PCI devices. /run gets a tmpfs for its
# socket (/run/irqbalance/irqbalanceN.sock).
#
# It refuses to exec CMD unless every covered path is, by device and inode,
# the fixture's (and the fixture's marker file is visible through it): a
# missing mount must never let irqbalance see, or write, the real thing.
# Exit status 70 is such a refusal.
set -eu

if [ $# -lt 2 ]; then
	echo "usage: $0 TREE CMD [ARG...]" >&2
	exit 2
fi
tree=$(cd "$1" && pwd)
shift
if [ "$(id -u)" != 0 ]; then
	echo "$0: needs root (unshare -m)" >&2
	exit 2
fi
[ -d "$tree/proc/irq" ] && [ -d "$tree/sys/devices/system/cpu" ] || {
	echo "$0: $tree is not a fixture tree (no proc/irq or sys/devices/system/cpu)" >&2
	exit 2
}
marker=.irqpilot-bench-fixture
echo "$tree" >"$tree/sys/$marker"
echo "$tree" >"$tree/proc/irq/$marker"

exec unshare -m --propagation private sh -eu -c '
tree=$1 marker=$2
shift 2
refuse() { echo "ns-run: REFUSING to run: $*" >&2; exit 70; }
mount --bind "$tree/sys" /sys
mount --bind "$tree/proc/irq" /proc/irq
for f in interrupts stat softirqs diskstats cmdline; do
	[ -e "$tree/proc/$f" ] || continue
	mount --bind "$tree/proc/$f" "/proc/$f"
done
mount -t tmpfs -o mode=0755,size=16m irqpilot-bench /run
mkdir -p /run/irqbalance
# The same inode means the mount is in place; the marker means it is the
# fixture, not some other bind of the real thing.
for p in sys proc/irq proc/interrupts proc/stat; do
	[ "$(stat -L -c %d:%i "/$p")" = "$(stat -L -c %d:%i "$tree/$p")" ] ||
		refuse "/$p is not $tree/$p: the real one is still visible"
done
for f in softirqs diskstats cmdline; do
	[ ! -e "$tree/proc/$f" ] ||
		[ "$(stat -L -c %d:%i "/proc/$f")" = "$(stat -L -c %d:%i "$tree/proc/$f")" ] ||
		refuse "/proc/$f is not the fixture'"'"'s"
done
[ -f "/sys/$marker" ] && [ -f "/proc/irq/$marker" ] || refuse "fixture marker not visible"
cmp -s /proc/interrupts "$tree/proc/interrupts" || refuse "/proc/interrupts differs from the fixture'"'"'s"
# A PCI link must resolve inside the fixture, never to a real device.
for l in /sys/bus/pci/devices/*; do
	[ -e "$l" ] || continue
	t=$(readlink -f "$l")
	case $t in /sys/devices/*) ;; *) refuse "$l resolves to $t" ;; esac
	[ "$(stat -L -c %d "$l")" = "$(stat -L -c %d "$tree/sys")" ] || refuse "$l is not on the fixture"
done
exec "$@"
' ns-run "$tree" "$marker" "$@"
