# shellcheck shell=bash
# Sourced on the host by run-vm.sh and check-vm.sh, which must agree on the guest kernel:
# IRQPILOT_VM_KERNEL, else the newest /boot/vmlinuz-V that has /lib/modules/V/kernel/drivers
# (the host may run another kernel; `uname -r` is not the guest's). Prints nothing if none.
vm_guest_kernel() {
	local f v best=""
	if [ -n "${IRQPILOT_VM_KERNEL:-}" ]; then
		printf '%s' "$IRQPILOT_VM_KERNEL"
		return
	fi
	for f in /boot/vmlinuz-*; do
		[ -e "$f" ] || continue
		v=${f#/boot/vmlinuz-}
		[ -d "/lib/modules/$v/kernel/drivers" ] || continue
		best=$(printf '%s\n%s\n' "$best" "$v" | sed '/^$/d' | sort -V | tail -n1)
	done
	printf '%s' "$best"
}
