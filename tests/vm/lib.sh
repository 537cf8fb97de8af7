# shellcheck shell=bash disable=SC2034 # FIO_* are results for the scenarios
# Helpers for scenarios in tests/vm/scenarios/, sourced inside the guest: . "$VM_LIB"
# A scenario ends with vm_pass, vm_fail or vm_skip; each records the one-line summary that
# run-vm.sh prints on the host.

vm_summary() {
	echo "$*" >>"${VM_SUMMARY:-/dev/null}"
	echo "SUMMARY: $*"
}
vm_pass() { vm_summary "$*"; exit 0; }
vm_fail() { vm_summary "$*"; exit 1; }
vm_skip() { vm_summary "$*"; exit 77; }
vm_log() { echo "[$(cut -d' ' -f1 /proc/uptime)] $*"; }

# The waits below are hang guards, not the assertions (those count cycles or requests). TCG
# emulating arm64 on this x86 host runs the same I/O about 7 times slower (AHCI randread from a
# big CPU: 220-1,100 IOPS against 1,600-3,400 on x86), and fio took over 20 s to start there,
# so an aarch64 guest waits 4 times as long before it calls it a hang.
case $(uname -m) in aarch64) VM_GUARD=4 ;; *) VM_GUARD=1 ;; esac

# Number of possible CPUs (columns of /proc/softirqs).
vm_ncpu() { awk 'NR == 1 { print NF; exit }' /proc/softirqs; }

# Per-CPU counts of one /proc/softirqs row, space separated: vm_softirqs BLOCK
vm_softirqs() {
	awk -v row="$1:" '$1 == row { $1 = ""; sub(/^ /, ""); print; exit }' /proc/softirqs
}

# Per-CPU differences of two count lists: vm_delta "$before" "$after"
vm_delta() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		n = split(a, x, " "); split(b, y, " ");
		for (i = 1; i <= n; i++) printf "%s%d", (i > 1 ? " " : ""), y[i] - x[i]; print "" }'
}

# Field i (0-based CPU) of a count list, and the list's sum.
vm_at() { awk -v i="$2" -v l="$1" 'BEGIN { split(l, x, " "); print x[i + 1] + 0 }'; }
vm_sum() {
	awk -v l="$1" 'BEGIN { n = split(l, x, " "); s = 0; for (i = 1; i <= n; i++) s += x[i]
		print s }'
}

# IRQ numbers whose action (last columns of /proc/interrupts) matches an ERE: vm_irqs 'ahci'
vm_irqs() {
	awk -v re="$1" 'NR > 1 && $1 ~ /^[0-9]+:$/ {
		line = $0; sub(/^[^:]*:/, "", line)
		if (line ~ re) { sub(/:$/, "", $1); print $1 } }' /proc/interrupts
}

# Per-online-CPU counts of one IRQ from /proc/interrupts.
vm_irq_counts() {
	local n
	n=$(awk 'NR == 1 { print NF; exit }' /proc/interrupts)
	awk -v irq="$1:" -v n="$n" '$1 == irq { s = ""
		for (i = 2; i <= n + 1; i++) s = s (i > 2 ? " " : "") $i; print s; exit }' /proc/interrupts
}

# Wait up to $2 seconds (default 20) for a path to exist.
vm_wait_path() {
	for _ in $(seq 1 $(( ${2:-20} * 10 ))); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# First block device whose driver chain matches: vm_disk sd|nvme|vd -> /dev/NAME
vm_disk() {
	local d
	for _ in $(seq 1 200); do
		for d in /sys/block/"$1"*; do
			[ -e "$d" ] && { echo "/dev/${d##*/}"; return 0; }
		done
		sleep 0.1
	done
	return 1
}

# Run fio with --minimal (terse v3) output; sets FIO_ERR, FIO_RIOPS, FIO_WIOPS. Returns fio's
# status. Terse fields: 5 error, 8 read IOPS, 49 write IOPS.
vm_fio() {
	local outf rc
	outf=$(mktemp /tmp/fio.XXXXXX)
	fio --minimal "$@" >"$outf" 2>"$outf.err"
	rc=$?
	FIO_ERR=$(awk -F';' 'NR == 1 { print $5 }' "$outf")
	FIO_RIOPS=$(awk -F';' '{ s += $8 } END { print s + 0 }' "$outf")
	FIO_WIOPS=$(awk -F';' '{ s += $49 } END { print s + 0 }' "$outf")
	if [ $rc -ne 0 ] || [ "${FIO_ERR:-0}" != 0 ]; then
		echo "fio failed (status $rc, error ${FIO_ERR:-?}):"
		cat "$outf.err" "$outf"
		[ $rc -ne 0 ] || rc=1
	fi
	rm -f "$outf" "$outf.err"
	return $rc
}

# Percentage a/b with one decimal, 0 when b is 0.
vm_pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b > 0 ? 100 * a / b : 0) }'; }
# the median of the numbers on stdin (spaces or lines; a "-" is none), "-" for none
vm_median() { tr ' ' '\n' | grep -E '^-?[0-9.]+$' | sort -n | awk '{ v[++n] = $1 } END { if (!n) { print "-"; exit }
	print (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }'; }
# A / B to DIGITS decimals, "-" when B is not above 0
vm_ratio() { awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { if (b > 0) printf "%.*f", d, a / b; else print "-" }'; }

# --- irqpilotd in the guest --------------------------------------------------------------------
# The daemon runs from the build tree as root, in the foreground (its log on stderr goes to
# VM_DLOG), with its runtime dir (socket, lock, state) in VM_RT, and is stopped by the scenario.
VM_RT=/run/irqpilot-rt
VM_DLOG=/tmp/irqpilotd.log
VM_DAEMON_PID=""
IRQPILOTD="${VM_BUILD:-/run/irqpilot/build}/src/irqpilotd/irqpilotd"
IRQCTL="${VM_BUILD:-/run/irqpilot/build}/src/irqctl/irqctl"

# A policy file from the lines given: vm_policy FILE LINE...
vm_policy() {
	local f=$1; shift
	printf '%s\n' "$@" >"$f"
	"$IRQPILOTD" --check-config="$f" >/dev/null || vm_fail "policy file $f is invalid: $(cat "$f")"
}

# Hold the block tracepoints irqpilotd counts with on: tests/vm/tp-hold (run-vm.sh builds it into
# out/) opens a counting perf event on each until SIGTERM. Sets VM_TPH_PID and VM_TPH_MSG (its
# "held N" line, or why not); returns 1, with no holder left, unless it holds them. Never calls
# vm_fail: guest-init.sh, which is PID 1, starts the boot's holder with it.
vm_tp_hold() {
	local bin=$VM_OUT/tp-hold
	VM_TPH_PID=""
	if [ ! -x "$bin" ]; then
		VM_TPH_MSG="none: no $bin (run-vm.sh says why)"
		return 1
	fi
	coproc VM_TPH { exec "$bin" block:block_bio_queue block:block_rq_complete 2>&1; }
	read -r -t $((30 * VM_GUARD)) -u "${VM_TPH[0]}" VM_TPH_MSG ||
		VM_TPH_MSG="no answer in $((30 * VM_GUARD)) s"
	case $VM_TPH_MSG in held\ *) return 0 ;; esac
	kill "$VM_TPH_PID" 2>/dev/null
	wait "$VM_TPH_PID" 2>/dev/null
	VM_TPH_PID=""
	return 1
}

# Let go of the block tracepoints guest-init holds on (tests/vm/tp-hold.c), for a scenario that
# measures what turning them on costs. Daemons started under I/O after this can hang
# multi-threaded TCG (tests/vm/README.md).
vm_tp_release() {
	[ -n "${VM_TP_HOLD_PID:-}" ] || return 0
	kill "$VM_TP_HOLD_PID" 2>/dev/null
	for _ in $(seq 1 100); do
		kill -0 "$VM_TP_HOLD_PID" 2>/dev/null || { VM_TP_HOLD_PID=""; return 0; }
		sleep 0.1
	done
	vm_fail "tp-hold (pid $VM_TP_HOLD_PID) did not exit on SIGTERM"
}

# Start irqpilotd: vm_daemon_start CONF [EXTRA OPTIONS...]; waits for its control socket.
vm_daemon_start() {
	local conf=$1; shift
	[ -x "$IRQPILOTD" ] || vm_fail "no $IRQPILOTD: build the tree first"
	mkdir -p "$VM_RT"
	"$IRQPILOTD" --foreground --runtime-dir "$VM_RT" --config "$conf" "$@" >>"$VM_DLOG" 2>&1 &
	VM_DAEMON_PID=$!
	for _ in $(seq 1 100); do
		[ -S "$VM_RT/control" ] && { vm_log "irqpilotd started, pid $VM_DAEMON_PID"; return 0; }
		kill -0 "$VM_DAEMON_PID" 2>/dev/null || break
		sleep 0.1
	done
	cat "$VM_DLOG"
	vm_fail "irqpilotd did not start (no $VM_RT/control)"
}

# Stop it with a signal (default TERM) and wait; returns its exit status.
vm_daemon_stop() {
	local rc
	[ -n "$VM_DAEMON_PID" ] || return 0
	kill -"${1:-TERM}" "$VM_DAEMON_PID" 2>/dev/null
	wait "$VM_DAEMON_PID"
	rc=$?
	VM_DAEMON_PID=""
	return $rc
}

# Keep the daemon's log with the results, whatever the outcome.
vm_daemon_save_log() { cp "$VM_DLOG" "$VM_OUT/irqpilotd.log" 2>/dev/null; }

vm_irqctl() { "$IRQCTL" --socket "$VM_RT/control" --no-pager "$@"; }

# One number from "irqctl status --json": vm_status_field cycles|moves
vm_status_field() {
	local st
	# Say why when it fails: an empty figure alone does not tell a timeout from a bad reply.
	st=$(vm_irqctl --json status 2>&1) || { vm_log "irqctl status failed: $st" >&2; return 1; }
	[[ $st =~ \"$1\":\ *([0-9]+) ]] && echo "${BASH_REMATCH[1]}"
}

# Wait until the daemon's move count exceeds $1, for at most $2 seconds (default 15); prints the
# cycle that made the last move (status "last_move_cycle").
vm_wait_moves() {
	local st m c end=$(( SECONDS + ${2:-15} * VM_GUARD ))
	while [ $SECONDS -lt $end ]; do
		st=$(vm_irqctl --json status 2>/dev/null)
		[[ $st =~ \"moves\":\ *([0-9]+) ]] && m=${BASH_REMATCH[1]} || m=""
		# the cycle that moved, not the one this poll happened to see: under TCG on a busy
		# host a poll can lag a cycle or two
		[[ $st =~ \"last_move_cycle\":\ *([0-9]+) ]] && c=${BASH_REMATCH[1]} || c=""
		if [ -n "$m" ] && [ "$m" -gt "$1" ]; then echo "$c"; return 0; fi
		sleep 0.1
	done
	return 1
}

# Is every CPU of cpulist $1 in cpulist $2? Bash builtins only: scenarios poll this, and every
# fork costs tens of milliseconds under TCG.
vm_cpus_expand() { # cpulist -> " 0 1 2 " in VM_CPUS
	local p lo hi
	VM_CPUS=" "
	for p in ${1//,/ }; do
		if [[ $p == *-* ]]; then lo=${p%-*}; hi=${p#*-}; else lo=$p; hi=$p; fi
		while [ "$lo" -le "$hi" ]; do VM_CPUS+="$lo "; lo=$((lo + 1)); done
	done
}
vm_cpus_in() {
	local want c
	vm_cpus_expand "$2"; want=$VM_CPUS
	vm_cpus_expand "$1"
	for c in $VM_CPUS; do [[ $want == *" $c "* ]] || return 1; done
	return 0
}

# First line of a file, without a fork.
vm_read() { local l=""; read -r l <"$1" 2>/dev/null; printf '%s' "$l"; }
vm_eff() { vm_read /proc/irq/"$1"/effective_affinity_list; }
vm_aff() { vm_read /proc/irq/"$1"/smp_affinity_list; }
# One field of /proc/PID/status: vm_proc_status PID Cpus_allowed_list
# The file is taken in one read(). A "while read" loop must not be used on it: bash reads a
# block, then lseek()s back to the end of the line it consumed, and each seek makes the
# kernel's seq_file format the file afresh (fs/seq_file.c, traverse()). When a field before
# the one wanted changed length in between ("State: S (sleeping)" vs "R (running)" as the IRQ
# thread wakes), the next read starts mid-line and the key is never matched: an empty result
# for a thread that is alive (seen in 7 of 3,000 reads of a busy process on the host).
vm_proc_status() {
	local s="" re
	IFS= read -r -d '' s 2>/dev/null <"/proc/$1/status"
	re=$'(^|\n)'"$2"$':[ \t]*([^\n]*)'
	[[ $s =~ $re ]] && printf '%s' "${BASH_REMATCH[2]}"
}
vm_thread_cpus() { vm_proc_status "$1" Cpus_allowed_list; }
vm_irq_thread() { pgrep "^irq/$1-" | head -n1; }
# vm_cpu_ticks PID: the CPU time it has used, in clock ticks (getconf CLK_TCK): utime + stime,
# proc(5) fields 14 and 15, counted after the ")" that ends comm (which may hold spaces). One
# read, as above. Nothing, and status 1, once the process is gone.
vm_cpu_ticks() {
	local s=""
	IFS= read -r -d '' s 2>/dev/null <"/proc/$1/stat"
	[ -n "$s" ] || return 1
	s=${s##*) }
	awk 'NR == 1 { print $12 + $13 }' <<<"$s"
}

# Start fio in the background, pinned to one CPU, until killed: vm_fio_bg CPU FIO_ARGS...
# Sets FIO_BG_PID.
vm_fio_bg() {
	local cpu=$1; shift
	fio --minimal --time_based --runtime=600 --cpus_allowed="$cpu" "$@" >/tmp/fio-bg.out 2>&1 &
	FIO_BG_PID=$!
}
# Wait until I/O flows on a disk (/dev/X): 100 more requests completed, for at most $2 seconds
# (default 20). fio takes seconds to start under TCG on a busy host, and "within N cycles" counts
# from when the workload runs.
vm_wait_io() {
	local st a b end=$(( SECONDS + ${2:-20} * VM_GUARD ))
	st=/sys/block/${1#/dev/}/stat
	read -r a _ _ _ b _ <"$st"
	local n0=$((a + b))
	while [ $SECONDS -lt $end ]; do
		read -r a _ _ _ b _ <"$st"
		[ $((a + b - n0)) -ge 100 ] && return 0
		sleep 0.1
	done
	return 1
}
# fio writes and verifies (crc32c) each disk, pass after pass, in the background until
# vm_fio_verify_stop: the stress under which the module and kernel-text tests make things come and
# go. vm_fio_verify_start DISK... (names in /dev); sets VM_FIOV_PIDS.
vm_fio_verify_start() {
	local d
	VM_FIOV_PIDS=()
	rm -f /tmp/fio-verify.stop
	for d in "$@"; do
		(
			n=0
			while [ ! -e /tmp/fio-verify.stop ]; do
				fio --name="$d" --filename=/dev/"$d" --direct=1 --ioengine=libaio \
					--iodepth=16 --bs=4k --rw=randwrite --size=24M --verify=crc32c \
					--do_verify=1 --verify_fatal=1 --randrepeat=0 >/tmp/fio-"$d".log 2>&1 ||
					{ echo "fio $d pass $n failed"; cat /tmp/fio-"$d".log; exit 1; }
				n=$((n + 1))
			done
			echo "fio $d: $n passes"
		) &
		VM_FIOV_PIDS+=($!)
	done
}
# Ends the loops after their current pass; returns 1 if any pass failed.
vm_fio_verify_stop() {
	local p rc=0
	touch /tmp/fio-verify.stop
	for p in "${VM_FIOV_PIDS[@]}"; do wait "$p" || rc=1; done
	VM_FIOV_PIDS=()
	return $rc
}

# Kernel log trouble since boot: prints the first bad lines, returns 1 if any.
vm_kernel_clean() {
	local bad
	bad=$(dmesg | grep -E 'Oops|BUG:|WARNING:|general protection|blocked for more than|rcu: INFO|self-detected stall|list_add corruption|refcount_t' | head -n5)
	[ -z "$bad" ] && return 0
	echo "$bad"
	return 1
}

vm_fio_bg_stop() {
	[ -n "${FIO_BG_PID:-}" ] || return 0
	kill -INT "$FIO_BG_PID" 2>/dev/null
	wait "$FIO_BG_PID" 2>/dev/null
	FIO_BG_PID=""
}

# Index of the largest count of a list (the CPU where most happened).
vm_argmax() {
	awk -v l="$1" 'BEGIN { n = split(l, x, " "); m = 1
		for (i = 2; i <= n; i++) if (x[i] > x[m]) m = i; print m - 1 }'
}

# Sum of a count list over the CPUs of a cpulist: vm_sum_in "$counts" 2-3
vm_sum_in() {
	awk -v l="$1" -v c="$2" 'BEGIN { n = split(l, x, " "); m = split(c, p, ","); s = 0
		for (i = 1; i <= m; i++) {
			if (split(p[i], r, "-") == 2) { a = r[1]; b = r[2] } else { a = p[i]; b = p[i] }
			for (k = a; k <= b; k++) s += x[k + 1]
		}
		print s }'
}

# --- one vector, its IRQ thread, two LLC domains ({0,1} and {2,3}: --smp 4,sockets=2,cores=2) ---
# For scenarios that make the daemon move a single vector and then check that it was put back.
# They set irq, thread, disk and fioargs; these set aff0 eff0 thr0 sch0 (the originals), fcpu
# and dom (where fio runs).

# What the daemon will record as original: taken again before each run.
vm_vec_originals() {
	aff0=$(vm_aff "$irq"); eff0=$(vm_eff "$irq")
	thr0=$(vm_thread_cpus "$thread"); sch0=$(chrt -p "$thread" | tr '\n' ' ')
	vm_log "originals: irq $irq affinity $aff0 effective $eff0; thread $thread cpus $thr0, $sch0"
}
# fio goes to the other domain than the vector's effective CPU, so there is something to move.
vm_vec_fio_elsewhere() {
	vm_fio_bg_stop
	if vm_cpus_in "$(vm_eff "$irq")" 0-1; then fcpu=3; dom=2-3; else fcpu=1; dom=0-1; fi
	vm_fio_bg "$fcpu" "${fioargs[@]}"
	vm_wait_io "$disk" || vm_fail "no I/O from fio on $disk"
}
# vm_vec_restored WHEN: the vector and the thread are as they were before the daemon.
# The waits end on what is seen; their limits (30 s) only catch a daemon or kernel that did not
# do it, however slowly TCG runs on a loaded host.
vm_vec_restored() {
	local a t s e
	for _ in $(seq 1 300); do
		a=$(vm_aff "$irq"); e=$(vm_eff "$irq"); t=$(vm_thread_cpus "$thread")
		s=$(chrt -p "$thread" | tr '\n' ' ')
		# After a write to smp_affinity the thread copies the effective affinity at its next
		# wakeup (irq_thread_check_affinity), whatever was restored onto it; so it may also
		# match the kernel's effective CPU, which may differ from before.
		[ "$a" = "$aff0" ] && { [ "$t" = "$thr0" ] || [ "$t" = "$e" ]; } && [ "$s" = "$sch0" ] &&
			{ vm_log "$1: affinity $a effective $e, thread cpus $t, $s"; return 0; }
		sleep 0.1
	done
	vm_fail "$1: irq $irq affinity $a (was $aff0), effective $e, thread cpus $t (was $thr0), $s (was $sch0)"
}
# vm_vec_moved WHEN: the vector and its thread are in fio's domain.
vm_vec_moved() {
	local a t
	for _ in $(seq 1 300); do
		a=$(vm_aff "$irq"); t=$(vm_thread_cpus "$thread")
		vm_cpus_in "$a" "$dom" && vm_cpus_in "$t" "$dom" && return 0
		sleep 0.1
	done
	vm_fail "$1: irq $irq affinity $a (effective $(vm_eff "$irq")), thread $t not in $dom"
}
