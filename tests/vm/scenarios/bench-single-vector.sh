#!/bin/bash
# vm: --disk ahci --append threadirqs --smp 4,sockets=2,cores=2 --timeout 420
# Issue 7, placement side by side: one AHCI vector under forced IRQ threading (threadirqs), so
# every completion is a BLOCK softirq on the interrupt's CPU. The vector starts on CPU 1, fio
# submits from CPU 3 (LLC domains {0,1} and {2,3}); measured with no daemon, with irqbalance and
# with irqpilotd (bench/vm-compare.sh): completion locality in 2-3, IOPS, p99 latency and
# affinity writes. It asserts only that the three runs worked; the numbers are the summary.
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"
# shellcheck source=bench/vm-compare.sh
. "$VM_SRC/bench/vm-compare.sh"
trap vm_daemon_save_log EXIT

grep -qw threadirqs /proc/cmdline || vm_fail "kernel was booted without threadirqs"
CMP_START_CPU=1 CMP_SUBMIT_CPU=3 CMP_DOMAIN=2-3
cmp_all
