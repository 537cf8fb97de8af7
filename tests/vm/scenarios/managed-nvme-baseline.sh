#!/bin/bash
# vm: --disk nvme:4 --smp 4,sockets=2,cores=2
# Issue 5, before irqpilot: NVMe I/O-queue vectors are managed (PCI_IRQ_AFFINITY), and user
# space cannot move them. KERNEL-NOTES: 6.1 refuses a write with EIO and leaves the file 0644;
# from 6.12 (eb29369fa543, c7718e5c76d4) the write fails with EPERM and smp_affinity is 0444. The admin queue (nvme0q0, a pre-vector)
# is not managed, so a write there must succeed: the refusal is about managedness, not about
# NVMe or the write itself.
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"

disk=$(vm_disk nvme) || vm_fail "no NVMe namespace (/sys/block/nvme*) appeared"
kv=$(uname -r)
kmaj=${kv%%.*}; rest=${kv#*.}; kmin=${rest%%[!0-9]*}
if [ "$kmaj" -eq 6 ] && [ "$kmin" -eq 1 ]; then
	want_err="Input/output error"; want_mode=644; want_name=EIO
elif [ "$kmaj" -gt 6 ] || { [ "$kmaj" -eq 6 ] && [ "$kmin" -ge 12 ]; }; then
	want_err="Operation not permitted"; want_mode=444; want_name=EPERM
else
	vm_skip "kernel $kv: KERNEL-NOTES states the managed-IRQ refusal for 6.1 and from 6.12 only"
fi

admin=$(vm_irqs 'nvme0q0$' | head -n1)
[ -n "$admin" ] || vm_fail "no nvme0q0 vector"
ioq=$(vm_irqs 'nvme0q[1-9][0-9]*$')
n=$(wc -w <<<"$ioq")
[ "$n" -eq 4 ] || vm_fail "expected 4 I/O-queue vectors (max_ioqpairs=4, 4 cpus), found $n: $ioq"
grep -E 'nvme0q' /proc/interrupts

# What the daemon has to tell apart: every IRQ's file modes, its action, and, where the kernel
# has GENERIC_IRQ_DEBUGFS, whether it is managed (kernel/irq/debugfs.c prints the IRQD_* state
# bits). Kept in out/irq-modes.txt: "IRQ MODE(smp_affinity) MODE(smp_affinity_list) MANAGED ACTION".
modes=$VM_OUT/irq-modes.txt
: >"$modes"
for d in /proc/irq/[0-9]*; do
	i=${d##*/}
	m1=$(stat -c %a "$d/smp_affinity" 2>/dev/null)
	m2=$(stat -c %a "$d/smp_affinity_list" 2>/dev/null)
	mg="?"
	if [ -r "/sys/kernel/debug/irq/irqs/$i" ]; then
		grep -q AFFINITY_MANAGED "/sys/kernel/debug/irq/irqs/$i" && mg=managed || mg=-
	fi
	act=$(awk -v i="$i:" '$1 == i { print $NF }' /proc/interrupts)
	echo "$i ${m1:-?} ${m2:-?} $mg ${act:-(none)}" >>"$modes"
done
ro=$(awk '$2 == 444' "$modes" | wc -l)
# 0444 says irq_can_set_affinity_usr() is false (kernel/irq/proc.c), which a managed vector is,
# but so is one with IRQ_NO_BALANCING (6.12.118: IRQ 0, the timer) or a chip that cannot move it
# (IRQ 2, the cascade): those are listed, unless debugfs says they are managed.
ro_other=$(awk '$2 == 444 && $4 != "managed" && $5 !~ /^nvme0q[1-9]/ {
	printf "%s%s(%s)", (n++ ? " " : ""), $1, $5 }' "$modes")
vm_log "smp_affinity 0444 on $ro of $(wc -l <"$modes") IRQs; besides the nvme I/O queues: ${ro_other:-none}"

# Writes a cpulist to one IRQ; prints the strerror text, or "ok".
try_write() {
	local msg
	msg=$( { echo "$2" >/proc/irq/"$1"/smp_affinity_list; } 2>&1 ) && { echo ok; return; }
	sed 's/.*write error: //; s/.*: //' <<<"$msg"
}

placed=""
for irq in $ioq; do
	name=$(awk -v i="$irq:" '$1 == i { print $NF }' /proc/interrupts)
	mode=$(stat -c %a /proc/irq/"$irq"/smp_affinity)
	before=$(cat /proc/irq/"$irq"/smp_affinity_list)
	eff=$(cat /proc/irq/"$irq"/effective_affinity_list)
	# Ask for a CPU outside the vector's current mask so a silent success would show.
	target=0
	[ "$before" = 0 ] && target=3
	got=$(try_write "$irq" "$target")
	after=$(cat /proc/irq/"$irq"/smp_affinity_list)
	vm_log "$name irq $irq: mode $mode, affinity $before (effective $eff), write $target -> $got, now $after"
	[ "$got" = "$want_err" ] ||
		vm_fail "$name (irq $irq): writing smp_affinity_list gave '$got', expected $want_name ($want_err) on $kv"
	[ "$mode" = "$want_mode" ] ||
		vm_fail "$name (irq $irq): smp_affinity mode $mode, expected $want_mode on $kv"
	[ "$after" = "$before" ] || vm_fail "$name (irq $irq): affinity changed from $before to $after"
	placed+="${placed:+ }q${name#nvme0q}:$eff"
done

amode=$(stat -c %a /proc/irq/"$admin"/smp_affinity)
aold=$(cat /proc/irq/"$admin"/smp_affinity_list)
agot=$(try_write "$admin" 2)
anew=$(cat /proc/irq/"$admin"/smp_affinity_list)
echo "$aold" >/proc/irq/"$admin"/smp_affinity_list
vm_log "nvme0q0 irq $admin: mode $amode, affinity $aold, write 2 -> $agot, now $anew"
[ "$agot" = ok ] && [ "$anew" = 2 ] ||
	vm_fail "admin queue nvme0q0 (irq $admin, not managed) refused a move: '$agot', now $anew"

# The device must still work after the refused writes.
vm_fio --name=nvme --filename="$disk" --direct=1 --ioengine=libaio --iodepth=16 --bs=4k \
	--rw=randread --size=32M --runtime=2 --time_based --cpus_allowed=3 ||
	vm_fail "fio on $disk failed"

vm_pass "kernel $kv: 0444 on $ro IRQs (besides the nvme I/O queues: ${ro_other:-none}); 4 managed nvme I/O vectors (mode $want_mode, effective cpus $placed) refuse smp_affinity_list writes with $want_name; admin nvme0q0 (mode $amode) moved; fio $FIO_RIOPS IOPS"
