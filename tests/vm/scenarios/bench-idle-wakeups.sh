#!/bin/bash
# vm: --disk ahci --smp 4,sockets=2,cores=2 --timeout 1500
# Issue 18, wakeups without I/O, on a real kernel. make bench's generated trees (--root) can only
# show irqpilotd's fallback back-off: its idle wakeup is a perf ring buffer on the block_bio_queue
# tracepoint (src/lib/perfwake.c), which needs the kernel's own disks. Here both daemons run as
# users run them (their default intervals: irqbalance 10 s, irqpilotd 2 s), each alone, with no
# I/O on the AHCI disk (the root is 9p, no journal, no udev):
# - wakeups a minute over IDLE_S seconds: voluntary context switches of all the process's
#   threads (/proc/PID/task/*/status), each a sleep it was woken from (the involuntary ones are
#   the scheduler switching a running daemon out, as bench-steady counts them apart), counted
#   after a settle time in which irqpilotd
#   goes idle (IP_IDLE_AFTER_CYCLES quiet cycles); nothing asks either daemon anything meanwhile;
# - irqpilotd's reaction: fio starts on CPU 3 while the vector is on CPU 1; seconds until its
#   first cycle after the idle and until the move.
# - CPU time, idle and under steady I/O, on the same real kernel: user+sys of all the process's
#   threads (/proc/PID/task/*/schedstat, first field) per minute, over the idle window above and
#   over STEADY_S seconds of fio on CPU 3 (after SETTLE_S), each daemon alone, at its default
#   interval: what each costs a user who installs it. make bench's generated trees measure the
#   same per cycle at one interval, but without perf (irqpilotd samples tasks there) and without a
#   kernel behind the files.
#   One steady window of each, one after the other, is not a measurement under TCG: irqbalance's
#   own figure moved 52.7 -> 69.1 -> 39.5 ms a minute between three boots with nothing changed on
#   its side. So the steady windows run in ROUNDS rounds (the first argument, 3), each daemon
#   started afresh from the vector on CPU 1, the order turned every round, and the summary gives
#   each daemon's median, the median of the per-round ratios and the rounds' ratios.
# It asserts only that the runs worked; the numbers are the summary.
#   tests/vm/run-vm.sh tests/vm/scenarios/bench-idle-wakeups.sh [ROUNDS]
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"
trap vm_daemon_save_log EXIT
IDLE_S=${IDLE_S:-60}
SETTLE_S=${SETTLE_S:-20}
STEADY_S=${STEADY_S:-60}
IRQBALANCE_BIN=${IRQBALANCE_BIN:-/var/tmp/irqpilot-bench/irqbalance/usr/sbin/irqbalance}
rounds=${1:-3}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || vm_fail "rounds must be a positive number, not '$rounds'"

disk=$(vm_disk sd) || vm_fail "no AHCI disk (/sys/block/sd*) appeared"
irq=$(vm_irqs 'ahci' | head -n1)
[ -n "$irq" ] || vm_fail "no ahci vector in /proc/interrupts"

ctxsw() { # PID -> voluntary switches of all its threads (the line, not nonvoluntary_'s tail)
	local t s n=0 re_v=$'\nvoluntary_ctxt_switches:[ \t]*([0-9]+)'
	for t in /proc/"$1"/task/*; do
		s=""
		IFS= read -r -d '' s <"$t/status" 2>/dev/null
		[[ $s =~ $re_v ]] && n=$((n + BASH_REMATCH[1]))
	done
	echo "$n"
}
cpu_ns() { # PID -> user+sys nanoseconds of all its threads (sched_show_schedstat's first field)
	local t a n=0
	for t in /proc/"$1"/task/*; do
		read -r a _ <"$t/schedstat" 2>/dev/null && n=$((n + a))
	done
	echo "$n"
}
ios() { local a b; read -r a _ _ _ b _ <"/sys/block/${disk#/dev/}/stat"; echo $((a + b)); }
# window PID LABEL SECONDS idle|steady -> sets PER_MIN (wakeups) and MS_MIN (CPU ms a minute)
window() {
	local c0 c1 t0 t1 io0 io1
	sleep "$SETTLE_S"
	io0=$(ios); c0=$(ctxsw "$1"); t0=$(cpu_ns "$1")
	sleep "$3"
	c1=$(ctxsw "$1"); t1=$(cpu_ns "$1"); io1=$(ios)
	if [ "$4" = idle ]; then
		[ "$io1" = "$io0" ] || vm_fail "$2: the disk was not idle ($((io1 - io0)) I/Os in the window)"
	else
		[ $((io1 - io0)) -gt 1000 ] || vm_fail "$2: only $((io1 - io0)) I/Os in the steady window"
	fi
	PER_MIN=$(awk -v d=$((c1 - c0)) -v s="$3" 'BEGIN { printf "%.1f", d * 60 / s }')
	MS_MIN=$(awk -v d=$((t1 - t0)) -v s="$3" 'BEGIN { printf "%.3f", d * 60 / s / 1e6 }')
	vm_log "$2, $4: $((c1 - c0)) context switches and $(((t1 - t0) / 1000)) us CPU in ${3} s: $PER_MIN wakeups, $MS_MIN ms CPU a minute ($((io1 - io0)) I/Os)"
}
idle_window() { window "$1" "$2" "$IDLE_S" idle; }
fio_args=(--name=rr --filename="$disk" --direct=1 --ioengine=libaio --iodepth=16 --bs=4k --rw=randread
	--size=64M)
steady_window() { # PID LABEL: with fio running on CPU 3 -> PER_MIN, MS_MIN
	vm_fio_bg 3 "${fio_args[@]}"
	vm_wait_io "$disk" || vm_fail "no I/O from fio on $disk"
	window "$1" "$2" "$STEADY_S" steady
	vm_fio_bg_stop
}

# the guest's awk is mawk: no asort
ib_start() {
	mkdir -p /run/irqbalance
	"$IRQBALANCE_BIN" --foreground >/tmp/irqbalance.log 2>&1 &
	IB_PID=$!
}
ib_stop() {
	kill -0 "$IB_PID" 2>/dev/null || vm_fail "irqbalance exited: $(cat /tmp/irqbalance.log)"
	kill "$IB_PID"; wait "$IB_PID" 2>/dev/null
}

echo 1 >/proc/irq/"$irq"/smp_affinity_list || vm_fail "cannot put irq $irq on CPU 1"

ib="irqbalance: not run (no $IRQBALANCE_BIN; run bench/get-irqbalance.sh on the host)"
if [ -x "$IRQBALANCE_BIN" ]; then
	ib_start
	idle_window "$IB_PID" irqbalance
	ib="irqbalance $PER_MIN wakeups/min"
	ib_idle_ms=$MS_MIN
	ib_stop
	echo 1 >/proc/irq/"$irq"/smp_affinity_list
fi

vm_policy /tmp/irqpilot.conf '[daemon]' 'log_level = debug'
vm_daemon_start /tmp/irqpilot.conf
idle_window "$VM_DAEMON_PID" irqpilotd
ip_idle=$PER_MIN
ip_idle_ms=$MS_MIN
# Which idle it was: perf's wakeup, or the timer back-off (daemon.c says which, at debug).
how=$(grep -m1 -o 'no storage I/O: [^(]*' "$VM_DLOG") || how="never went idle"
how=${how% }
vm_log "irqpilotd at idle: $how"
# Nothing polls the daemon until it has moved: a client request is a wakeup and starts a cycle
# too, which would hide whether the first bio woke it.
vm_fio_bg 3 "${fio_args[@]}"
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
# shellcheck disable=SC2119
vm_daemon_stop || vm_fail "irqpilotd exited with status $? on SIGTERM"

# Steady I/O, ROUNDS rounds; each daemon starts from the vector on CPU 1 and settles as the
# other does (SETTLE_S, in which irqpilotd moves it and its placement comes to hold).
ways=(irqpilotd)
[ -x "$IRQBALANCE_BIN" ] && ways=(irqbalance irqpilotd)
declare -A steady this
ratios=""
for rd in $(seq "$rounds"); do
	order=("${ways[@]}")
	[ $((rd % 2)) = 0 ] && [ ${#ways[@]} = 2 ] && order=(irqpilotd irqbalance)
	this=()
	for way in "${order[@]}"; do
		echo 1 >/proc/irq/"$irq"/smp_affinity_list || vm_fail "cannot put irq $irq on CPU 1"
		if [ "$way" = irqbalance ]; then
			ib_start
			steady_window "$IB_PID" "irqbalance (round $rd)"
			ib_stop
		else
			vm_daemon_start /tmp/irqpilot.conf
			steady_window "$VM_DAEMON_PID" "irqpilotd (round $rd)"
			# shellcheck disable=SC2119
			vm_daemon_stop || vm_fail "irqpilotd exited with status $? on SIGTERM"
		fi
		steady[$way]+=" $MS_MIN"
		this[$way]=$MS_MIN
	done
	[ -n "${this[irqbalance]:-}" ] && ratios+=" $(vm_ratio "${this[irqpilotd]}" "${this[irqbalance]}" 2)"
done
ip_steady_ms=$(vm_median <<<"${steady[irqpilotd]}")
cpu="CPU ms/min at default intervals: idle irqpilotd $ip_idle_ms"
if [ -n "${ib_idle_ms:-}" ]; then
	ib_steady_ms=$(vm_median <<<"${steady[irqbalance]}")
	cpu+=" irqbalance $ib_idle_ms ratio $(vm_ratio "$ip_idle_ms" "$ib_idle_ms" 2),"
	cpu+=" steady ($rounds rounds, medians) irqpilotd $ip_steady_ms [${steady[irqpilotd]} ]"
	cpu+=" irqbalance $ib_steady_ms [${steady[irqbalance]} ] ratio $(vm_median <<<"$ratios") [$ratios ]"
else
	cpu+=", steady ($rounds rounds, median) irqpilotd $ip_steady_ms [${steady[irqpilotd]} ]"
fi
vm_pass "idle ${IDLE_S}s: $ib, irqpilotd $ip_idle wakeups/min ($how); fio on CPU 3: woken by I/O $woke time(s), $moved; $cpu"
