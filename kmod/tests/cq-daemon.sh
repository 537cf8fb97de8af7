#!/bin/bash
# vm: --disk ahci --append threadirqs --smp 4,sockets=2,cores=2 --throttle 0:10 --timeout 900
# irqpilotd with irqpilot_cq (issue 6). AHCI under threadirqs, its vector pinned by the policy to
# CPU 0, a little CPU ([cpus] efficiency = 0-1) that the host throttles to 10%; fio submits from
# CPU 3. Under forced threading blk-mq never sends completions to the submitter, so every BLOCK
# softirq runs in the IRQ thread on CPU 0.
#  1. fio IOPS measured both ways, alternating: the original path, and the module's thread on
#     CPU 2 (attached and placed by hand with ipcq-ctl and taskset);
#  2. irqpilotd, default completion_threads = auto: the vector cannot follow its submitters (the
#     policy pins it) and forced threading keeps completions on CPU 0, so auto attaches sda on
#     trial; after the dwell the daemon compares sda's I/O rate attached with the rate before,
#     and keeps or detaches. Its verdict must follow the trial's own figures as it logs them and
#     the policy's threshold (IP_CQ_TRIAL_KEEP in src/lib/policy.c): step 1 is a separate pair
#     of TCG measurements taken minutes earlier (runs of the same path vary by 10-40%), so it is
#     reported next to the verdict, not held against it. A detached sda is not tried again while
#     the hold lasts;
#  3. reload with [device "sda"] completion_threads = yes: irqpilotd attaches sda, places the
#     completion thread in CPU 3's domain (2-3), BLOCK softirqs on CPU 0 drop to ~0, irqctl show
#     threads lists the thread with its rate; SIGTERM detaches sda (restore).
# Waits end on what they wait for (a log line, a cycle count, a number of completions); their
# time limits only catch a daemon or a thread that stopped.
# Build first: make -C kmod KDIR=..., and the tree (irqpilotd, irqctl) in the build dir.
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"
. "$VM_SRC/kmod/tests/lib-ipcq.sh"
trap vm_daemon_save_log EXIT

grep -qw threadirqs /proc/cmdline || vm_fail "kernel was booted without threadirqs"
sd=$(vm_disk sd) || vm_fail "no AHCI disk"; sd=${sd#/dev/}
irq=$(vm_irqs ahci | head -n1)
[ -n "$irq" ] || vm_fail "no ahci vector in /proc/interrupts"
echo 0 >/proc/irq/"$irq"/smp_affinity_list || vm_fail "cannot put irq $irq on cpu 0"
# stall_ms=1000: on a loaded host TCG vCPUs are descheduled for 100-300 ms, which the default
# 100 ms guard takes for a starved thread (the daemon's stall handling then moves and detaches).
insmod "$IPCQ_KO" stall_ms=1000 || vm_fail "insmod"
fioargs=(--name=rr --filename=/dev/"$sd" --direct=1 --ioengine=libaio --iodepth=16 --bs=4k
	--rw=randread --size=200M)

cq_pid() { ipcq list | awk -v d="$sd" '$1 == "disk=" d { sub(/pid=/, "", $5); print $5; exit }'; }

# One fio run of $1 seconds on CPU 3; prints "IOPS BLOCK-softirqs-on-cpu0". (No process
# substitution: the guest has no /dev/fd.)
run() {
	local b
	b=$(vm_softirqs BLOCK)
	vm_fio "${fioargs[@]}" --time_based --runtime="$1" --cpus_allowed=3 || vm_fail "fio"
	echo "$FIO_RIOPS $(vm_at "$(vm_delta "$b" "$(vm_softirqs BLOCK)")" 0)"
}

# 1. Both ways, alternating, so that the host's load drifts over both alike.
offs=(); ons=()
for _ in 1 2 3; do
	r=$(run 6); offs+=("${r% *}"); off_blk=${r#* }
	ipcq attach "$sd" || vm_fail "attach $sd"
	taskset -pc 2 "$(cq_pid)" >/dev/null || vm_fail "taskset"
	r=$(run 6); ons+=("${r% *}"); on_blk=${r#* }
	ipcq detach "$sd" || vm_fail "detach $sd"
done
mean() { printf '%s\n' "$@" | awk '{ s += $1 } END { printf "%.0f", s / NR }'; }
off=$(mean "${offs[@]}"); on=$(mean "${ons[@]}")
vm_log "original path: ${offs[*]} IOPS (mean $off), BLOCK on cpu 0 in the last run $off_blk"
vm_log "module, thread on cpu 2: ${ons[*]} IOPS (mean $on), BLOCK on cpu 0 $on_blk"

# 2. irqpilotd, completion_threads = auto (the default).
conf() {
	vm_policy /tmp/irqpilot.conf '[daemon]' 'interval = 1' '[cpus]' 'efficiency = 0-1' \
		'[policy]' 'dwell = 5' '[device "sda"]' 'pin = 0' "$@"
}
conf
keep=$(awk '$1 == "#define" && $2 == "IP_CQ_TRIAL_KEEP" { print $3 }' "$VM_SRC/src/lib/policy.c")
[ -n "$keep" ] || vm_fail "no IP_CQ_TRIAL_KEEP in src/lib/policy.c"
vm_fio_bg 3 "${fioargs[@]}"
vm_wait_io "/dev/$sd" 60 || vm_fail "fio does not reach $sd"
vm_daemon_start /tmp/irqpilot.conf
# The daemon's own cycle count paces these waits: auto attaches once it has IP_CQ_TRIAL_CYCLES
# (3) cycles of sda's rate unattached, and judges after the dwell (5 s, interval 1 s: at most 5
# cycles) and 3 cycles attached. Twice that in cycles is the limit; the 300 s limit only
# catches a daemon whose cycles stopped.
alive() { kill -0 "$VM_DAEMON_PID" 2>/dev/null || { cat "$VM_DLOG"; vm_fail "irqpilotd exited: $1"; }; }
trial=""; verdict=""; vcycle=""; cyc=0
end=$((SECONDS + 300))
while [ $SECONDS -lt $end ]; do
	alive "while auto was to try $sd"
	cyc=$(vm_status_field cycles); cyc=${cyc:-0}
	[ -z "$trial" ] && grep -q "attach $sd to irqpilot_cq: completion_threads = auto, on trial" "$VM_DLOG" &&
		trial=$cyc
	if grep -q "detach $sd from irqpilot_cq: completion_threads = auto: trial measured" "$VM_DLOG"; then
		verdict=original; vcycle=$cyc; break
	fi
	grep -q "$sd stays on irqpilot_cq" "$VM_DLOG" && { verdict=module; vcycle=$cyc; break; }
	[ -z "$trial" ] && [ "$cyc" -gt 15 ] &&
		vm_fail "auto did not attach $sd on trial within 15 cycles (its vector is pinned away from the submitters under threadirqs)"
	[ -n "$trial" ] && [ "$cyc" -gt $((trial + 16)) ] &&
		vm_fail "no verdict on the trial of $sd within 16 cycles of its start (cycle $trial, now $cyc)"
	sleep 0.5
done
[ -n "$trial" ] || vm_fail "auto did not attach $sd on trial, and the daemon made only $cyc cycles in 300 s"
[ -n "$verdict" ] || vm_fail "no verdict on the trial of $sd, and the daemon made only $cyc cycles in 300 s"
if [ "$verdict" = original ]; then
	line=$(grep -o "trial measured [0-9.]* I/Os per second attached against [0-9.]* before" "$VM_DLOG" | head -n1)
	[[ $line =~ measured\ ([0-9.]+)\ I/Os\ per\ second\ attached\ against\ ([0-9.]+)\ before ]] ||
		vm_fail "the detach line of $sd has no figures: $(grep "detach $sd" "$VM_DLOG" | head -n1)"
else
	line=$(grep -o "$sd stays on irqpilot_cq: [0-9.]* I/Os per second attached, [0-9.]* before" "$VM_DLOG" | head -n1)
	[[ $line =~ :\ ([0-9.]+)\ I/Os\ per\ second\ attached,\ ([0-9.]+)\ before ]] ||
		vm_fail "the keep line of $sd has no figures: $(grep "$sd stays" "$VM_DLOG" | head -n1)"
fi
t_on=${BASH_REMATCH[1]}; t_off=${BASH_REMATCH[2]}
auto_why="trial measured $t_on I/Os per second attached against $t_off before"
# The policy keeps the module when there is no reference or it reaches keep x before; the
# logged figures are rounded, so a rate within 1 I/O per second of the threshold decides nothing.
want=$(awk -v a="$t_on" -v b="$t_off" -v k="$keep" 'BEGIN {
	if (b <= 0 || a >= k * b + 1) print "module"; else if (a < k * b - 1) print "original"; else print "either" }')
vm_log "auto: trial from cycle $trial, verdict at cycle $vcycle: the $verdict path ($auto_why; keeps at >= $keep x); step 1 measured $on attached against $off"
[ "$want" = either ] || [ "$want" = "$verdict" ] ||
	vm_fail "auto chose the $verdict path, but its trial's figures ($t_on attached, $t_off before, threshold $keep) call for the $want path"
if [ "$verdict" = original ]; then
	# Detached and held: it stays so over the next 3 cycles, and the daemon says why. The note
	# comes in the first cycle in which auto wants the threads again, which need not be within
	# 3 cycles of the count read at the verdict (a CI run had it just after the third; that
	# count is read before the log is, so it may be the cycle before the detach): wait for the
	# note itself, up to 8 cycles.
	end=$((SECONDS + 120)); said=""
	while c=$(vm_status_field cycles); [ "${c:-0}" -lt $((vcycle + 3)) ] || [ -z "$said" ]; do
		alive "after the trial of $sd"
		[ $SECONDS -lt $end ] || vm_fail "the daemon's cycles stopped after the trial (cycle ${c:-?})"
		[ -z "$(cq_pid)" ] || vm_fail "auto attached $sd again right after the trial failed"
		[ -z "$said" ] && grep -q "not attaching $sd to irqpilot_cq again for now" "$VM_DLOG" &&
			{ said=1; vm_log "auto said why it holds off $sd by cycle ${c:-?} (verdict read at $vcycle)"; }
		[ -n "$said" ] || [ "${c:-0}" -le $((vcycle + 8)) ] ||
			vm_fail "auto did not say why it holds off $sd within 8 cycles of the verdict (cycle $vcycle, now ${c:-?})"
		sleep 0.5
	done
	[ -z "$(cq_pid)" ] || vm_fail "auto attached $sd again right after the trial failed"
fi

# 3. completion_threads = yes for sda, on reload.
conf 'completion_threads = yes'
hup=$(vm_status_field cycles)
kill -HUP "$VM_DAEMON_PID"
# attached on the reload's first cycle, placed on the next one with rates: 10 cycles is the
# limit, 300 s only catches stopped cycles
placed=""; pid=""; end=$((SECONDS + 300))
while [ $SECONDS -lt $end ]; do
	alive "after the reload"
	c=$(vm_status_field cycles)
	pid=$(cq_pid)
	if [ -n "$pid" ] && vm_cpus_in "$(vm_thread_cpus "$pid")" 2-3; then
		placed=$c; break
	fi
	[ "${c:-0}" -gt $((${hup:-0} + 10)) ] && break
	sleep 0.25
done
[ -n "$pid" ] || vm_fail "completion_threads = yes did not attach $sd"
[ -n "$placed" ] || vm_fail "completion thread $pid of $sd not in 2-3: $(vm_thread_cpus "$pid")"
# (a trial that kept the module left sda attached: then there is nothing to attach)
[ "$verdict" = module ] ||
	grep -q "attach $sd to irqpilot_cq: completion_threads = yes (rule 'sda')" "$VM_DLOG" ||
	vm_fail "no attach line for $sd in the daemon's log"
thr_cpus=$(vm_thread_cpus "$pid")
# A window of 500 completions by the thread once placed (after 50 to settle), not of a fixed
# time: the BLOCK softirqs on CPU 0 are judged against the thread's completions in it. The 120 s
# limit only catches a thread that stopped completing.
wait_cpl() { # N -> waits until the thread's completions reach N, prints them
	local n end=$((SECONDS + 120))
	while n=$(ipcq_sum completions "$sd"); [ "$n" -lt "$1" ] && [ $SECONDS -lt $end ]; do sleep 0.25; done
	echo "$n"
}
c0=$(wait_cpl $(( $(ipcq_sum completions "$sd") + 50 )))
b=$(vm_softirqs BLOCK); t0=$SECONDS
c1=$(wait_cpl $((c0 + 500)))
blk=$(vm_delta "$b" "$(vm_softirqs BLOCK)"); cpl=$((c1 - c0)); secs=$((SECONDS - t0))
vm_irqctl show threads >/tmp/threads.txt
vm_irqctl --json show threads | tr -d ' \n' >/tmp/threads.json
vm_fio_bg_stop
vm_log "attached: thread $pid on $thr_cpus; BLOCK [$blk], $cpl completions by the thread in $secs s"
grep -E "irqpilot_cq|ipcq|stall" "$VM_DLOG" | head -n 8
tail -n 2 /tmp/threads.txt
[ "$cpl" -ge 500 ] || vm_fail "the completion thread completed only $cpl requests in $secs s"
[ "$(vm_at "$blk" 0)" -le $(( cpl / 50 + 3 )) ] ||
	vm_fail "BLOCK softirqs on cpu 0 did not drop: [$blk] against $cpl thread completions"
grep -Eq "^$pid +$sd +0 " /tmp/threads.txt || vm_fail "irqctl show threads does not list $pid"
grep -q '"completion_threads":\[{"device":"'"$sd"'","queue":0,"pid":'"$pid"',"cpus":"2' /tmp/threads.json ||
	vm_fail "irqctl --json show threads: no completion thread $pid of $sd on 2-3"

vm_daemon_stop || vm_fail "irqpilotd exited with status $? on SIGTERM"
[ -z "$(cq_pid)" ] || vm_fail "$sd still attached after irqpilotd stopped (restore)"
rmmod irqpilot_cq || vm_fail "rmmod"
vm_kernel_clean || vm_fail "kernel log trouble"
vm_pass "fio IOPS original path ${offs[*]} (mean $off), module ${ons[*]} (mean $on): auto's trial chose the $verdict path ($auto_why); with completion_threads = yes the thread went to $thr_cpus at cycle $placed (reload at cycle $hup), BLOCK [$blk] vs $cpl thread completions in $secs s; detached on exit"
