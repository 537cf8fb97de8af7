#!/bin/bash
# vm: --disk ahci --smp 4,sockets=2,cores=2 --timeout 600
# Issue 18, wakeups without I/O, on a real kernel. make bench's generated trees (--root) can only
# show irqpilotd's fallback back-off: its idle wakeup is a perf ring buffer on the block_bio_queue
# tracepoint (src/lib/perfwake.c), which needs the kernel's own disks. Here both daemons run as
# users run them (their default intervals: irqbalance 10 s, irqpilotd 2 s), each alone, with no
# I/O on the AHCI disk (the root is 9p, no journal, no udev):
# - wakeups a minute over IDLE_S seconds: voluntary + involuntary context switches of all the
#   process's threads (/proc/PID/task/*/status), counted after a settle time in which irqpilotd
#   goes idle (IP_IDLE_AFTER_CYCLES quiet cycles); nothing asks either daemon anything meanwhile;
# - irqpilotd's reaction: fio starts on CPU 3 while the vector is on CPU 1; seconds until its
#   first cycle after the idle and until the move.
# It asserts only that the runs worked; the numbers are the summary.
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"
trap vm_daemon_save_log EXIT
IDLE_S=${IDLE_S:-60}
SETTLE_S=${SETTLE_S:-20}
IRQBALANCE_BIN=${IRQBALANCE_BIN:-/var/tmp/irqpilot-bench/irqbalance/usr/sbin/irqbalance}

disk=$(vm_disk sd) || vm_fail "no AHCI disk (/sys/block/sd*) appeared"
irq=$(vm_irqs 'ahci' | head -n1)
[ -n "$irq" ] || vm_fail "no ahci vector in /proc/interrupts"

ctxsw() { # PID -> voluntary + involuntary switches of all its threads
	local t s n=0 re_v=$'voluntary_ctxt_switches:[ \t]*([0-9]+)' re_n=$'nonvoluntary_ctxt_switches:[ \t]*([0-9]+)'
	for t in /proc/"$1"/task/*; do
		s=""
		IFS= read -r -d '' s <"$t/status" 2>/dev/null
		[[ $s =~ $re_v ]] && n=$((n + BASH_REMATCH[1]))
		[[ $s =~ $re_n ]] && n=$((n + BASH_REMATCH[1]))
	done
	echo "$n"
}
ios() { local a b; read -r a _ _ _ b _ <"/sys/block/${disk#/dev/}/stat"; echo $((a + b)); }
idle_window() { # PID LABEL -> sets PER_MIN
	local c0 c1 io0 io1
	sleep "$SETTLE_S"
	io0=$(ios); c0=$(ctxsw "$1")
	sleep "$IDLE_S"
	c1=$(ctxsw "$1"); io1=$(ios)
	[ "$io1" = "$io0" ] || vm_fail "$2: the disk was not idle ($((io1 - io0)) I/Os in the window)"
	PER_MIN=$(awk -v d=$((c1 - c0)) -v s="$IDLE_S" 'BEGIN { printf "%.1f", d * 60 / s }')
	vm_log "$2: $((c1 - c0)) context switches in ${IDLE_S} s idle: $PER_MIN a minute"
}

echo 1 >/proc/irq/"$irq"/smp_affinity_list || vm_fail "cannot put irq $irq on CPU 1"

ib="irqbalance: not run (no $IRQBALANCE_BIN; run bench/get-irqbalance.sh on the host)"
if [ -x "$IRQBALANCE_BIN" ]; then
	mkdir -p /run/irqbalance
	"$IRQBALANCE_BIN" --foreground >/tmp/irqbalance.log 2>&1 &
	pid=$!
	idle_window "$pid" irqbalance
	kill -0 "$pid" 2>/dev/null || vm_fail "irqbalance exited: $(cat /tmp/irqbalance.log)"
	kill "$pid"; wait "$pid" 2>/dev/null
	ib="irqbalance $PER_MIN wakeups/min"
	echo 1 >/proc/irq/"$irq"/smp_affinity_list
fi

vm_policy /tmp/irqpilot.conf '[daemon]' 'log_level = debug'
vm_daemon_start /tmp/irqpilot.conf
idle_window "$VM_DAEMON_PID" irqpilotd
ip_idle=$PER_MIN
# Which idle it was: perf's wakeup, or the timer back-off (daemon.c says which, at debug).
how=$(grep -m1 -o 'no storage I/O: [^(]*' "$VM_DLOG") || how="never went idle"
how=${how% }
vm_log "irqpilotd at idle: $how"
# Nothing polls the daemon until it has moved: a client request is a wakeup and starts a cycle
# too, which would hide whether the first bio woke it.
vm_fio_bg 3 --name=rr --filename="$disk" --direct=1 --ioengine=libaio --iodepth=16 --bs=4k \
	--rw=randread --size=64M
vm_wait_io "$disk" || vm_fail "no I/O from fio on $disk"
tio=$SECONDS
sleep 10
woke=$(grep -c 'storage I/O started: a cycle now' "$VM_DLOG")
m=$(vm_status_field moves) || m=0
if [ "${m:-0}" -gt 0 ]; then moved="moved within 10 s"
else
	vm_wait_moves 0 60 >/dev/null || vm_fail "irqpilotd made no move in 70 s after the idle"
	moved="moved after $((SECONDS - tio)) s"
fi
vm_fio_bg_stop
vm_daemon_stop || vm_fail "irqpilotd exited with status $? on SIGTERM"
vm_pass "idle ${IDLE_S}s: $ib, irqpilotd $ip_idle wakeups/min ($how); fio on CPU 3: woken by I/O $woke time(s), $moved"
