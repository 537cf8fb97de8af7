#!/bin/bash
# vm: --disk ahci --append threadirqs --smp 4,sockets=2,cores=2 --throttle 0,1:10 --timeout 480
# Issue 7, placement side by side on little and big cores: vCPUs 0-1 are capped at 10% of a host
# CPU (run-vm.sh --throttle) and declared efficiency CPUs to irqpilotd ([cpus] efficiency = 0-1).
# The AHCI vector starts on little CPU 0, under threadirqs, so its completions run there; fio
# submits from big CPU 3. Measured with no daemon, irqbalance and irqpilotd
# (bench/vm-compare.sh): completion locality in 2-3, IOPS, p99 latency, affinity writes. It asserts
# only that the three runs worked; the numbers are the summary. As in irqpilot-little-big,
# min_rate = 20 (TCG's few hundred interrupts a second are below the default) and a longer
# warm-up (16 s) for both daemons.
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"
# shellcheck source=bench/vm-compare.sh
. "$VM_SRC/bench/vm-compare.sh"
trap vm_daemon_save_log EXIT

[ "$VM_THROTTLE" = "0,1:10" ] || vm_skip "needs --throttle 0,1:10 (got '${VM_THROTTLE:-none}')"
grep -qw threadirqs /proc/cmdline || vm_fail "kernel was booted without threadirqs"
CMP_START_CPU=0 CMP_SUBMIT_CPU=3 CMP_DOMAIN=2-3 CMP_WARM=16
cmp_all 'min_rate = 20' '[cpus]' 'efficiency = 0-1' 'performance = 2-3'
