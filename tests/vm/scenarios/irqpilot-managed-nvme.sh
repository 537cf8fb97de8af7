#!/bin/bash
# vm: --disk nvme:4 --smp 4,sockets=2,cores=2 --tcg-threads single
# Issue 5 with irqpilot and kernel-managed vectors: an NVMe controller with 4 I/O queues on
# 4 CPUs has one managed vector per queue (nvme0q1..4; nvme0q0, the admin queue, is not
# managed). With fio submitting from CPU 2 and irqpilotd running for 10 cycles:
# - no managed vector's smp_affinity_list changes, and the daemon never logs a move of one;
# - a refused write (EIO on 6.1, where smp_affinity stays 0644) is logged at most once per vector;
# - the daemon explains each managed vector exactly once in its log ("managed by the kernel"),
#   "irqctl show irqs --json" marks each one managed, and "irqctl explain nvme0q1" says so.
# Policy changed from the defaults to keep the run short under TCG: interval 1 s (default 2),
# dwell 2 s (default 10).
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"
trap vm_daemon_save_log EXIT

disk=$(vm_disk nvme) || vm_fail "no NVMe namespace (/sys/block/nvme*) appeared"
ioq=$(vm_irqs 'nvme0q[1-9][0-9]*$')
[ "$(wc -w <<<"$ioq")" -eq 4 ] || vm_fail "expected 4 I/O-queue vectors, found: $ioq"
declare -A name aff0
for q in $ioq; do
	name[$q]=$(awk -v i="$q:" '$1 == i { print $NF }' /proc/interrupts)
	aff0[$q]=$(vm_aff "$q")
done

vm_policy /tmp/irqpilot.conf '[daemon]' 'interval = 1' '[policy]' 'dwell = 2'
vm_fio_bg 2 --name=rr --filename="$disk" --direct=1 --ioengine=libaio --iodepth=16 --bs=4k \
	--rw=randread --size=64M
vm_wait_io "$disk" || vm_fail "no I/O from fio on $disk"
vm_daemon_start /tmp/irqpilot.conf
changed=""
# 10 of the daemon's cycles, each a chance to write a managed vector, however long they take
# (the limit of 120 s only catches a daemon that stopped).
for _ in $(seq 1 480); do
	for q in $ioq; do
		a=$(vm_aff "$q")
		[ "$a" = "${aff0[$q]}" ] || changed+=" ${name[$q]}:${aff0[$q]}->$a"
	done
	c=$(vm_status_field cycles)
	[ "${c:-0}" -ge 10 ] && break
	sleep 0.25
done
[ "${c:-0}" -ge 10 ] || vm_fail "irqpilotd ran only ${c:-0} cycles in 120 s"
irqs_json=$(vm_irqctl --json show irqs) || vm_fail "irqctl show irqs failed"
explain=$(vm_irqctl explain nvme0q1) || vm_fail "irqctl explain nvme0q1 failed"
status=$(vm_irqctl status)
vm_fio_bg_stop
grep -q . /tmp/fio-bg.out && grep -q ';0;' /tmp/fio-bg.out || { cat /tmp/fio-bg.out; vm_fail "fio failed"; }
vm_daemon_stop || vm_fail "irqpilotd exited with status $? on SIGTERM"
cat "$VM_DLOG"
echo "$explain"
echo "$status"

[ -z "$changed" ] || vm_fail "managed vectors changed affinity:$changed"
summary=""
for q in $ioq; do
	n=${name[$q]}
	m=$(jq -r --arg n "$n" '[.. | objects | select(.name? == $n and has("managed")) | .managed] | first' <<<"$irqs_json")
	[ "$m" = true ] || vm_fail "irqctl show irqs --json does not mark $n (irq $q) managed: '$m'"
	k=$(grep -cE "kept $q $n: managed by the kernel" "$VM_DLOG")
	[ "$k" -eq 1 ] || vm_fail "$n (irq $q): the managed explanation is in the log $k times, want once"
	w=$(grep -E "IRQ $q is managed|irq $q" "$VM_DLOG" | grep -cE 'EIO|EPERM|Input/output|not permitted')
	[ "$w" -le 1 ] || vm_fail "$n (irq $q): a refused write is logged $w times"
	grep -qE "moved $q " "$VM_DLOG" && vm_fail "the daemon logged a move of managed $n (irq $q)"
	summary+=" $n:${aff0[$q]}(eio-log $w)"
done
grep -qi managed <<<"$explain" || vm_fail "irqctl explain nvme0q1 does not say it is managed: $explain"

vm_pass "fio on cpu 2, $c cycles: 4 managed vectors untouched, marked managed, explained once each:$summary; explain nvme0q1: $(grep -i -m1 managed <<<"$explain" | sed 's/^ *//')"
