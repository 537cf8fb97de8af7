#!/bin/bash
# vm: --disk ahci --append threadirqs --smp 4,sockets=2,cores=2 --timeout 900
# Diagnostic, not run by make check-vm: where a daemon's CPU time goes inside the guest, under the
# oracle's workload (AHCI vector on CPU 3, fio on CPU 3, threadirqs, interval 2). bench-oracle.sh
# finds both daemons below the static run on the CPU they chose, irqpilotd further below, and
# bench-daemon-cost.sh counted 2-3 times irqbalance's clock ticks for it: on a 2-CPU host running
# 4 vCPUs, a daemon's guest CPU time is taken from fio's vCPU. For each daemon: clock ticks over
# SECONDS (20), `perf record -e cpu-clock -g` of its process (user and kernel), the top symbols,
# `strace -c` over another SECONDS, and over a third the files its calls touch, counted
# (numbers folded to N). Files land in out/: perf-WAY.txt, strace-WAY.txt, files-WAY.txt.
#   tests/vm/run-vm.sh tests/vm/diag/daemon-profile.sh [SECONDS]
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"
# shellcheck source=bench/vm-compare.sh
. "$VM_SRC/bench/vm-compare.sh"
trap vm_daemon_save_log EXIT

secs=${1:-20}
command -v perf >/dev/null || vm_skip "no perf on the host's /"
CMP_START_CPU=3 CMP_DOMAIN=2-3 CMP_SUBMIT_CPU=3
cmp_setup

profile() { # WAY PID
	local t0 t1
	t0=$(vm_cpu_ticks "$2")
	perf record -q -e cpu-clock -F 499 -g -p "$2" -o /tmp/perf-"$1".data -- sleep "$secs" \
		>/dev/null 2>&1 || vm_fail "perf record of $1 failed"
	t1=$(vm_cpu_ticks "$2")
	perf report -q --stdio --no-children --sort dso,sym -i /tmp/perf-"$1".data 2>/dev/null |
		grep -v '^$' | grep -E '^ +[0-9.]+%' | head -n 40 >"$VM_OUT/perf-$1.txt"
	strace -c -f -p "$2" -o "$VM_OUT/strace-$1.txt" & local st=$!
	sleep "$secs"
	kill -INT "$st"; wait "$st"
	# which files those calls read: one line per call with the fd's path (-y), counted by
	# syscall and path
	strace -f -y -e trace=read,pread64,openat,ioctl,newfstatat -p "$2" -o /tmp/strace-y-"$1".txt &
	st=$!
	sleep "$secs"
	kill -INT "$st"; wait "$st"
	# the path a call names, else the path of its fd
	sed -E -n -e 's/^([0-9]+ +)?(openat|newfstatat)\([^"]*"([^"]*)".*= (-?[0-9]+).*/\2 \3 \4/p' \
		-e 's/^([0-9]+ +)?(read|pread64|ioctl)\([0-9]+<([^>]*)>.*/\2 \3/p' /tmp/strace-y-"$1".txt |
		sed -E 's/[0-9]+/N/g' | sort | uniq -c | sort -rn >"$VM_OUT/files-$1.txt"
	vm_log "$1: $((t1 - t0)) ticks in ${secs}s (USER_HZ $(getconf CLK_TCK)); top symbols:"
	head -n 15 "$VM_OUT/perf-$1.txt"
	vm_log "$1: syscalls:"
	head -n 14 "$VM_OUT/strace-$1.txt"
	RES+=" $1 $((t1 - t0)) ticks;"
}

vm_fio_bg 3 "${CMP_FIO[@]}"
vm_wait_io "$CMP_DISK" || vm_fail "no I/O from fio"
RES=""
cmp_reset
vm_policy /tmp/irqpilot.conf '[daemon]' "interval = $CMP_INTERVAL" '[policy]' 'dwell = 2'
vm_daemon_start /tmp/irqpilot.conf
sleep 8
profile irqpilotd "$VM_DAEMON_PID"
vm_daemon_stop TERM || vm_fail "irqpilotd exited with status $? on SIGTERM"
if [ -x "$IRQBALANCE_BIN" ]; then
	cmp_reset
	# shellcheck disable=SC2119
	cmp_irqbalance_start
	sleep 8
	profile irqbalance "$CMP_IB_PID"
	cmp_irqbalance_alive
	cmp_irqbalance_stop
fi
vm_fio_bg_stop
vm_pass "fio on cpu 3, interval $CMP_INTERVAL, ${secs}s each:$RES see out/perf-*.txt, out/strace-*.txt"
