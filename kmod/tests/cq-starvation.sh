#!/bin/bash
# vm: --disk ahci --smp 4,sockets=2,cores=2 --timeout 600
# irqpilot_cq stall guard: the AHCI disk's completion thread is pinned (taskset, from user
# space: the thread is not kthread_bind-ed) to CPU 2, where a SCHED_FIFO 99 busy loop then
# starves it. The guard must report a stall event, complete the queue on the original path,
# and fio (verify) must go on; once the hog is gone the thread takes over again.
. "$VM_LIB"
. "$VM_SRC/kmod/tests/lib-ipcq.sh"

sd=$(vm_disk sd) || vm_fail "no AHCI disk"; sd=${sd#/dev/}
# The fallback is the original path: the BLOCK softirq on the vector's CPU. Were that CPU 2,
# the hog would starve the fallback too (softirqs go to ksoftirqd, which the hog starves), and
# the run would measure where the kernel put the vector, not the guard. So it goes to CPU 0.
irq=$(vm_irqs ahci | head -n1)
[ -n "$irq" ] || vm_fail "no ahci vector"
echo 0 >/proc/irq/"$irq"/smp_affinity_list || vm_fail "cannot move the ahci vector to CPU 0"
vm_log "ahci vector $irq: affinity $(vm_aff "$irq"), effective $(vm_eff "$irq")"
insmod "$IPCQ_KO" stall_ms=100 || vm_fail "insmod"
ipcq attach "$sd" || vm_fail "attach $sd"
pid=$(ipcq list | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^pid=/) print substr($i, 5) }')
[ -n "$pid" ] || vm_fail "no thread pid in LIST"
taskset -p -c 2 "$pid" || vm_fail "taskset on the completion thread failed (kthread_bind-ed?)"
chrt -f -p 40 "$pid" || vm_fail "chrt on the completion thread failed"
grep -E '^(Cpus_allowed_list|voluntary)' /proc/"$pid"/status
[ "$(chrt -p "$pid" | awk -F': ' '/priority/ { print $2 }')" = 40 ] || vm_fail "priority not changed"

"$IPCQ_CTL" listen 100 >/tmp/events.log 2>&1 &
listener=$!
job() {
	vm_fio --name=st --filename=/dev/"$sd" --direct=1 --ioengine=libaio --iodepth=8 --bs=4k \
		--rw=randwrite --size=32M --verify=crc32c --do_verify=1 --verify_fatal=1 \
		--randrepeat=0 --cpus_allowed=0 "$@"
}
job || vm_fail "fio before starvation"
c0=$(ipcq_sum completions "$sd")
vm_log "before: $c0 completions, $FIO_WIOPS write IOPS"

# The hog: FIFO 99 beats the thread's FIFO 40 on CPU 2. It spins to the next second's boundary
# (up to 1 s, far above stall_ms) and then sleeps 50 ms, and does so until the starved job has
# ended, not for a set time: fio takes seconds to start under TCG, and a hog that ended first
# starved only part of it (120 s is a guard, ten times fio's slowest start seen under TCG).
# Why it sleeps at all: on 6.1 PREEMPT_RT a FIFO 99 loop that never sleeps stalls the kernel,
# not just the thread. A reader preempted inside an RCU read-side section on CPU 2 is boosted
# only to FIFO 1 (rcutree.kthread_prio), so no grace period ends: "rcu_preempt detected
# stalls", rcub/0 and fio blocked for more than 30 s, and the starved job returned only when
# the hog stopped. The 50 ms let such work run; the thread is still starved for up to a second
# at a time, so the guard must fire.
rm -f /tmp/hog.stop /tmp/hog.running
taskset -c 2 chrt -f 99 bash -c ': >/tmp/hog.running; end=$((SECONDS + 120))
	while [ ! -e /tmp/hog.stop ] && [ $SECONDS -lt $end ]; do
		s=$SECONDS; while [ $SECONDS -eq $s ]; do :; done
		sleep 0.05
	done' &
hog=$!
# The starved job starts only once the hog's loop runs. A fixed sleep was not enough: in one run
# on 6.1 PREEMPT_RT the hog was not yet among the FIFO 99 tasks a second after it was started,
# the job ran through the unstarved thread in 19 s, and the guard was blamed.
for _ in $(seq $((600 * VM_GUARD))); do [ -e /tmp/hog.running ] && break; sleep 0.1; done
[ -e /tmp/hog.running ] || vm_fail "the FIFO 99 hog did not start its loop within $((60 * VM_GUARD)) s"
ps -eLo pid,cls,rtprio,psr,pcpu,comm | grep -E ' (bash|ipcq/)' | grep -v grep
hz=$(getconf CLK_TCK)
h0=$(vm_cpu_ticks $hog) t_job=$SECONDS
job --size=8M || vm_fail "fio failed while the thread was starved"
t_job=$((SECONDS - t_job)) h1=$(vm_cpu_ticks $hog)
: >/tmp/hog.stop
[ -n "$h1" ] || vm_fail "the hog ended (its 120 s guard) before the ${t_job}s starved job did"
hog_s=$(( (h1 - h0) / hz ))
vm_log "the hog ran ${hog_s}s on CPU 2 during the ${t_job}s job"
ipcq list
starved_iops=$FIO_WIOPS
wait $hog
st=$(ipcq_sum stalls "$sd"); fb=$(ipcq_sum fallbacks "$sd"); c1=$(ipcq_sum completions "$sd")
vm_log "starved: stalls $st, fallbacks $fb, completions $((c1 - c0)), $starved_iops write IOPS, the job took ${t_job}s"
# Below half the job on CPU 2 (RT throttling leaves it 95%), the thread was not starved, and a
# missing stall says nothing about the guard.
[ "$st" -ge 1 ] || [ $((hog_s * 2)) -ge "$t_job" ] ||
	vm_fail "the hog ran only ${hog_s}s of the ${t_job}s job: the thread was not starved"
[ "$st" -ge 1 ] || vm_fail "no stall detected (the hog ran ${hog_s}s of the ${t_job}s job)"
[ "$fb" -ge 1000 ] || vm_fail "only $fb requests took the fallback"

sleep 1
job || vm_fail "fio after starvation"
c2=$(ipcq_sum completions "$sd")
vm_log "after: $((c2 - c1)) completions through the thread again"
[ $((c2 - c1)) -ge 1000 ] || vm_fail "thread did not take over again after the hog ($((c2 - c1)))"
sleep 1
kill $listener; wait $listener 2>/dev/null
cat /tmp/events.log
grep -q "event=stall disk=$sd .*hwq=0 .*wait_ns=" /tmp/events.log || vm_fail "no stall event"
ipcq list
rmmod irqpilot_cq || vm_fail "rmmod"
vm_kernel_clean || vm_fail "kernel log trouble"
vm_pass "stall detected ($st), $fb requests on the fallback at $starved_iops IOPS (job ${t_job}s), thread took over again"
