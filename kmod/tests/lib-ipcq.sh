# Helpers for the irqpilot_cq VM scenarios (kmod/tests/*.sh), sourced after "$VM_LIB".
# The module is the one check-vm.sh built for this kernel (BUILD/kmod/VERSION), else the one
# built in the tree: make -C kmod KDIR=/usr/src/linux-headers-VERSION.

IPCQ_KO=""
for d in "${VM_BUILD:-}/kmod/$(uname -r)" "${VM_BUILD:-}/kmod" "${VM_SRC:-}/kmod"; do
	[ -f "$d/irqpilot_cq.ko" ] && { IPCQ_KO="$d/irqpilot_cq.ko"; break; }
done
[ -n "$IPCQ_KO" ] || vm_skip "no kmod/irqpilot_cq.ko in the build or source tree (make -C kmod)"
[ "$(modinfo -F vermagic "$IPCQ_KO" | cut -d' ' -f1)" = "$(uname -r)" ] ||
	vm_skip "kmod/irqpilot_cq.ko was built for $(modinfo -F vermagic "$IPCQ_KO" | cut -d' ' -f1), guest runs $(uname -r)"

# The netlink test client, built from source in the guest's /tmp; a foreign-arch guest has no
# compiler and runs the one tests/vm/cross-build.sh made.
IPCQ_CTL=/tmp/ipcq-ctl
if ! command -v gcc >/dev/null && [ -x "${VM_BUILD:-}/kmod/tests/ipcq-ctl" ]; then
	cp "$VM_BUILD/kmod/tests/ipcq-ctl" "$IPCQ_CTL"
else gcc -O2 -Wall -I"$VM_SRC/include/uapi" $(pkg-config --cflags libnl-genl-3.0) \
	"$VM_SRC/kmod/tests/ipcq-ctl.c" $(pkg-config --libs libnl-genl-3.0) -o "$IPCQ_CTL" ||
	vm_fail "cannot build kmod/tests/ipcq-ctl.c"
fi
chmod 755 "$IPCQ_CTL"

ipcq() { "$IPCQ_CTL" "$@"; }

# Sum of one LIST field over the threads of a disk: ipcq_sum completions nullb0
ipcq_sum() {
	ipcq list | awk -v f="$1" -v d="$2" '
		{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
		v["disk"] == d { s += v[f] } END { print s + 0 }'
}

# Requests the block layer completed for a disk: reads + writes + discards + flushes.
disk_ios() { awk '{ print $1 + $5 + $12 + $16 }' /sys/block/"$1"/stat; }

# A memory-backed null_blk (data survives, so fio can verify) through configfs.
# nullb_make NAME SUBMIT_QUEUES
nullb_make() {
	local c=/sys/kernel/config/nullb/$1
	# configfs is a module: /sys/kernel/config appears once null_blk pulls it in.
	modprobe null_blk nr_devices=0 || vm_fail "modprobe null_blk"
	mountpoint -q /sys/kernel/config || mount -t configfs configfs /sys/kernel/config
	mkdir "$c" || vm_fail "mkdir $c"
	echo 256 >"$c/size"
	echo 4096 >"$c/blocksize"
	echo 1 >"$c/memory_backed"
	echo 1 >"$c/irqmode"		# softirq: completions go through blk_mq_complete_request
	[ -e "$c/poll_queues" ] && echo 0 >"$c/poll_queues"
	echo "$2" >"$c/submit_queues"
	echo 1 >"$c/power" || vm_fail "power on $1"
	vm_wait_path "/sys/block/$1" 10 || vm_fail "no /sys/block/$1"
}
