#!/bin/bash
# irqpilot VM stage 2: PID 1 inside the guest after switch_root onto the host's / (read-only 9p).
# Run by the initramfs that tests/vm/run-vm.sh generates (or, with run-vm.sh --systemd, by
# irqpilot-vm.service under systemd). It finishes the mounts, loads the
# drivers udev would have loaded, runs the scenario named in /run/irqpilot/out/job.sh from /tmp,
# prints "IRQPILOT-RESULT: PASS|FAIL|SKIP <summary>" on the serial console and powers off.
# It must never exit: PID 1 exiting panics the guest (under systemd it ends the same way, so that
# the verdict line is the console's last word either way).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp LANG=C LC_ALL=C TERM=dumb

# Powering off shuts the virtio devices down, 9p included, so once it is triggered nothing may be
# exec'd from the root any more: an exec failing with EIO would end PID 1 and panic the guest.
# The wait after the trigger therefore uses only bash builtins, on a FIFO that never delivers.
finish() {
	local st=$1 hold; shift
	sync
	echo "IRQPILOT-RESULT: $st $*"
	mkfifo /run/irqpilot/hold 2>/dev/null
	exec {hold}<>/run/irqpilot/hold
	read -r -t 0.3 -u "$hold" _
	while :; do
		echo o >/proc/sysrq-trigger
		read -r -t 20 -u "$hold" _
	done
}

# --systemd: run by irqpilot-vm.service (tests/vm/systemd/) under systemd as PID 1, which has
# mounted the API filesystems and started udev already; mounting them again would stack a second
# devpts and /dev/shm over systemd's.
under_systemd=0
[ "${1:-}" = --systemd ] && under_systemd=1
if [ $under_systemd -eq 0 ]; then
	mount -t proc proc /proc 2>/dev/null
	mount -t sysfs sysfs /sys 2>/dev/null
	mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
	mkdir -p /dev/pts /dev/shm
	mount -t devpts -o gid=5,mode=620 devpts /dev/pts
	mount -t tmpfs -o mode=1777 shm /dev/shm
	mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
	mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
	mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
fi
# Not /run/irqpilot/state: that is the installed daemon's state file, which it refuses to read
# when it is a directory (seen under --systemd: "refusing to start").
mkdir -p /run/lock /tmp/var
hostname irqpilot-vm 2>/dev/null

echo "IRQPILOT-BOOTED $(cut -d' ' -f1 /proc/uptime) $(uname -r)"

# A hung task is a failure here; do not wait the default two minutes to hear about it.
echo 30 >/proc/sys/kernel/hung_task_timeout_secs 2>/dev/null

VM_OUT=/run/irqpilot/out
[ -r "$VM_OUT/job.sh" ] || finish FAIL "guest-init: no $VM_OUT/job.sh"
# shellcheck source=/dev/null
. "$VM_OUT/job.sh"

# No udev: load the drivers for the PCI storage controllers present (class 01: AHCI, NVMe,
# virtio-blk), plus the SCSI disk driver AHCI disks need. The machine's legacy IDE controller
# (0101) and other classes are left to scenarios that want them: it keeps boot short and keeps
# vectors no scenario asked for out of /proc/interrupts.
aliases=()
for f in /sys/bus/pci/devices/*/modalias; do
	case "$(cat "${f%/modalias}/class")" in 0x0101*) continue ;; 0x01*) ;; *) continue ;; esac
	[ -e "${f%/modalias}/driver" ] || aliases+=("$(cat "$f")")
done
[ ${#aliases[@]} -gt 0 ] && modprobe -q -a -b "${aliases[@]}" 2>/dev/null
ls /sys/bus/pci/drivers/ahci >/dev/null 2>&1 && modprobe -q sd_mod
# Under systemd, udev's coldplug may still be binding drivers when the scenario's service starts.
# A host without the udev package gives the guest none: the modprobe above bound them already.
[ $under_systemd -eq 1 ] && command -v udevadm >/dev/null && udevadm settle -t 60

export VM_OUT VM_NAME VM_THROTTLE VM_DISKS VM_HOST_SRC VM_HOST_BUILD
export VM_SRC=/run/irqpilot/src VM_BUILD=/run/irqpilot/build
export VM_LIB=/run/irqpilot/src/tests/vm/lib.sh
export VM_SUMMARY=/run/irqpilot/summary
: >"$VM_SUMMARY"

# Turn on now, before any I/O, the block tracepoints irqpilotd counts with, and keep them on:
# patching them under fio hangs multi-threaded TCG (tests/vm/tp-hold.c, tests/vm/README.md).
# vm_tp_hold starts run-vm.sh's build of the holder for this guest's arch; lib.sh's other helpers
# are not for PID 1 (vm_fail exits).
. "$VM_LIB"
vm_tp_hold
echo "IRQPILOT-TPHOLD $VM_TPH_MSG"
export VM_TP_HOLD_PID=$VM_TPH_PID

# With --throttle the host caps the vCPU threads only now that boot is over; wait until it has.
if [ -n "${VM_THROTTLE:-}" ]; then
	for _ in $(seq 1 600); do
		[ -e "$VM_OUT/throttle.ready" ] && break
		sleep 0.1
	done
	[ -e "$VM_OUT/throttle.ready" ] || finish FAIL "host never applied --throttle $VM_THROTTLE"
	echo "IRQPILOT-THROTTLED $(cat "$VM_OUT/throttle.ready")"
fi

# fio --verify keeps a state file in its working directory; /tmp is the guest's own tmpfs.
cd /tmp || finish FAIL "guest-init: no /tmp"
echo "IRQPILOT-START $VM_NAME $(cut -d' ' -f1 /proc/uptime)"
bash "$VM_SCENARIO" "${VM_ARGS[@]}" </dev/null 2>&1 | tee "$VM_OUT/scenario.log"
rc=${PIPESTATUS[0]}
echo "IRQPILOT-END $VM_NAME rc=$rc $(cut -d' ' -f1 /proc/uptime)"
dmesg >"$VM_OUT/dmesg.txt" 2>/dev/null

summary=$(tail -n1 "$VM_SUMMARY" 2>/dev/null)
case "$rc" in
0) finish PASS "${summary:-no summary}" ;;
77) finish SKIP "${summary:-no summary}" ;;
*) finish FAIL "${summary:-no summary} (exit $rc)" ;;
esac
