#!/bin/bash
# vm: --disk ahci --smp 4,sockets=2,cores=2
# Issue 18, steady I/O without a cycle every interval. Under steady I/O whose placement holds,
# irqpilotd cycles every 5 intervals (at most 10 s; src/lib/idle.c) with its perf wakeup armed on
# the CPUs that submitted nothing (src/lib/counters.c, ip_counters_wake_arm_except()). Here, on a
# real kernel, fio runs on CPU 3 with the AHCI vector first on CPU 1:
# - the daemon moves the vector, then holds: "irqctl status" says holding, every 5 s;
# - over HOLD_S seconds it runs about HOLD_S / 5 cycles, not HOLD_S / 1, each reading the perf
#   counters of CPU 3 only;
# - a bio from CPU 1, which submitted nothing, wakes it at once (its log says so) and it samples at
#   the interval again;
# - when fio stops, the held cycle sees it and the daemon goes idle (no timer).
# Policy changed from the defaults to keep the run short under TCG: interval 1 s (default 2),
# dwell 2 s (default 10), min_rate 20 (an I/O rate TCG reaches; see irqpilot-workload-moves.sh).
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"
trap vm_daemon_save_log EXIT
HOLD_S=${HOLD_S:-30}

disk=$(vm_disk sd) || vm_fail "no AHCI disk (/sys/block/sd*) appeared"
irq=$(vm_irqs 'ahci' | head -n1)
[ -n "$irq" ] || vm_fail "no ahci vector in /proc/interrupts"
echo 1 >/proc/irq/"$irq"/smp_affinity_list || vm_fail "cannot put irq $irq on cpu 1"

status() { vm_irqctl --json status 2>&1; }
holding() { [[ $(status) =~ \"holding\":\ *true ]]; }

vm_policy /tmp/irqpilot.conf '[daemon]' 'interval = 1' 'log_level = debug' \
	'[policy]' 'dwell = 2' 'min_rate = 20'
vm_fio_bg 3 --name=rr --filename="$disk" --direct=1 --ioengine=libaio --iodepth=16 --bs=4k \
	--rw=randread --size=64M
vm_wait_io "$disk" || vm_fail "no I/O from fio on $disk"
vm_daemon_start /tmp/irqpilot.conf
vm_wait_moves 0 120 >/dev/null || vm_fail "irqpilotd made no move in 120 s"
# The time-outs below only catch a daemon that stopped: TCG can take seconds for a 1 s cycle.
t_end=$(( SECONDS + 120 * VM_GUARD ))
until holding; do
	[ $SECONDS -lt $t_end ] || vm_fail "not holding 120 s after the move: $(status)"
	sleep 0.5
done
st=$(status)
[[ $st =~ \"cycle_interval_s\":\ *5[,.}] ]] || vm_fail "holding, but not every 5 s: $st"
explain=$(vm_irqctl --json explain "${disk#/dev/}" 2>&1) || vm_fail "irqctl explain: $explain"
[[ $explain =~ \"submit_source\":\ *\"perf\" ]] || vm_fail "submissions not counted by perf: $explain"
held_line=$(grep -m1 'placement held for' "$VM_DLOG") || vm_fail "no 'placement held' in the log"
vm_log "${held_line#*: }"

# Fewer cycles: at the interval there would be about HOLD_S of them. Each held cycle reads the
# perf counters of CPU 3 only; the other three kept their counts, their wakeups having seen no
# bio (counters.c, PERF_SKIP_MAX: every sixth reads all, so the fewest reads seen are taken).
c0=$(vm_status_field cycles)
least_read=99 most_kept=0
t_end=$(( SECONDS + HOLD_S ))
while [ $SECONDS -lt $t_end ]; do
	sleep 1
	n=$(vm_status_field perf_groups_read) || continue
	k=$(vm_status_field perf_groups_kept) || continue
	[ "$n" -lt "$least_read" ] && least_read=$n
	[ "$k" -gt "$most_kept" ] && most_kept=$k
done
c1=$(vm_status_field cycles)
held_cycles=$((c1 - c0))
holding || vm_fail "no longer holding after ${HOLD_S} s of the same fio: $(status)"
[ "$held_cycles" -le $((HOLD_S / 5 + 2)) ] ||
	vm_fail "$held_cycles cycles in ${HOLD_S} s while holding (every 5 s: at most $((HOLD_S / 5 + 2)))"
[ "$held_cycles" -ge 1 ] || vm_fail "no cycle at all in ${HOLD_S} s while holding"
[ "$least_read" -eq 1 ] && [ "$most_kept" -eq 3 ] ||
	vm_fail "held cycles read the perf counters of $least_read CPUs at the fewest and kept $most_kept (want 1 read, CPU 3's, 3 kept)"
vm_log "held cycles: perf counters read on $least_read CPU, kept on $most_kept"

# A bio from CPU 1: the wakeup armed there starts a cycle at once.
woke0=$(grep -c 'storage I/O from a new CPU: a cycle now' "$VM_DLOG")
c2=$(vm_status_field cycles)
t0=$(cut -d' ' -f1 /proc/uptime)
taskset -c 1 dd if="$disk" of=/dev/null bs=4k count=8 skip=4096 iflag=direct 2>/dev/null ||
	vm_fail "dd on cpu 1 failed"
c3=$c2
for _ in $(seq 1 100); do
	c3=$(vm_status_field cycles) || c3=$c2
	[ "$c3" -gt "$c2" ] && break
	sleep 0.05
done
t1=$(cut -d' ' -f1 /proc/uptime)
woke=$(( $(grep -c 'storage I/O from a new CPU: a cycle now' "$VM_DLOG") - woke0 ))
wake_s=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')
[ "$woke" -ge 1 ] || vm_fail "a bio from cpu 1 did not wake irqpilotd (cycles $c2 -> $c3 in $wake_s s)"
[ "$c3" -gt "$c2" ] || vm_fail "no cycle within 5 s of a bio from cpu 1"
vm_log "a bio from cpu 1: woken, a cycle $wake_s s after dd started"

# fio stops: the held cycle sees it, and the daemon goes idle without a timer.
vm_fio_bg_stop
t_end=$(( SECONDS + 60 * VM_GUARD ))
until [[ $(status) =~ \"idle\":\ *true ]]; do
	[ $SECONDS -lt $t_end ] || vm_fail "not idle 60 s after fio stopped: $(status)"
	sleep 0.5
done
holding && vm_fail "idle and holding at once: $(status)"
grep -q 'no storage I/O: no timer' "$VM_DLOG" || vm_fail "idle, but not on the perf wakeup: $(grep 'no storage I/O' "$VM_DLOG")"
vm_daemon_stop || vm_fail "irqpilotd exited with status $? on SIGTERM"
vm_pass "fio on cpu 3: holding every 5 s at a 1 s interval, $held_cycles cycles in ${HOLD_S} s, perf counters read on $least_read CPU of 4; a bio from cpu 1 woke it ($wake_s s to its cycle); idle on the perf wakeup after fio stopped"
