#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# conf/irqbalance-ban-storage against the fixture trees: irqbalance must be
# told to ban exactly the storage IRQs. Runs the script with dash when there
# is one, to keep it POSIX.

here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/.." && pwd)}
script="$top_srcdir/conf/irqbalance-ban-storage"
fixtures="$top_srcdir/tests/fixtures"
shell="sh"
command -v dash >/dev/null 2>&1 && shell=dash
fail=0

# expect FIXTURE DEVPATH IRQ OUTPUT WHY
expect() {
	out=$(IRQPILOT_ROOT="$fixtures/$1" "$shell" "$script" "$2" "$3")
	rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "FAIL: $1 $2 $3: exit $rc (irqbalance discards the output unless 0)"
		fail=1
	elif [ "$out" != "$4" ]; then
		echo "FAIL: $1 $2 $3: printed '$out', expected '$4' ($5)"
		fail=1
	else
		echo "ok: $1 $2 $3 -> '$out' ($5)"
	fi
}

pci=/sys/bus/pci/devices
expect laptop-hybrid $pci/0000:01:00.0 125 ban=true "NVMe I/O queue"
expect laptop-hybrid $pci/0000:01:00.0 9999 ban=true "nvme0n1 beneath the controller, name unknown"
expect laptop-hybrid $pci/0000:00:06.0 122 "" "root port above the NVMe: PCIe PME is not storage"
expect laptop-hybrid $pci/0000:00:14.3 138 "" "wifi"
expect laptop-hybrid $pci/0000:00:14.0 123 "" "xhci"
expect laptop-hybrid /sys 124 ban=true "no device path, named nvme0q0"
expect server-2s $pci/0000:00:17.0 38 ban=true "AHCI"
expect server-2s $pci/0000:00:17.0 9999 ban=true "sda beneath the AHCI controller"
expect server-2s $pci/0000:5e:00.0 150 ban=true "mpi3mr HBA"
expect server-2s $pci/0000:5d:00.0 9999 "" "bridge above the HBA"
expect server-2s $pci/0000:18:00.0 61 "" "i40e NIC queue"
expect server-2s /sys 0 "" "timer"
expect phone-arm64 /sys 37 ban=true "UFS host, a platform device"
expect phone-arm64 /sys 60 "" "display"
expect qemu-intx-shared $pci/0000:00:05.0 9999 ban=true "SCSI HBA with sda beneath"
expect qemu-intx-shared $pci/0000:00:04.0 10 ban=true "INTx line shared by mmc0 and sym53c8xx"
expect qemu-intx-shared $pci/0000:00:03.0 11 "" "virtio0 without a disk"
expect qemu-intx-shared /sys/bus/pci/devices/nonexistent 4 "" "serial port, bad path"
expect qemu-intx-shared /sys abc "" "not an IRQ number"

# An action name that is a shell glob must not expand against files.
tmp=$(mktemp -d) || exit 99
mkdir -p "$tmp/proc" "$tmp/sys/block"
printf '           CPU0\n 50:  1  PCI-MSI 1-edge  [n]vme\n' >"$tmp/proc/interrupts"
touch "$tmp/nvme"
out=$(cd "$tmp" && IRQPILOT_ROOT="$tmp" "$shell" "$script" /sys 50)
if [ -n "$out" ]; then
	echo "FAIL: the action name '[n]vme' was expanded to a file name"
	fail=1
else
	echo "ok: action names are not globbed"
fi
rm -rf "$tmp"

exit $fail
