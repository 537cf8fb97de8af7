#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/run.sh BUILDDIR: irqpilotd against irqbalance, side by side, in the
# same run, on the same generated machines; writes bench/RESULTS.md.
# Builds nothing: `make bench` builds BUILDDIR/tests/fixturegen,
# BUILDDIR/bench/bench-cycle and BUILDDIR/bench/bench-steady first.
#
# Per machine size (CPUs:IRQs), both daemons run at once, each on its own
# copy of the tree, at the same interval:
#   idle    a still tree: CPU time per cycle, wakeups per minute, peak RSS;
#   steady  bench-steady advances the counters between cycles like a steady
#           workload, interrupts following the affinity each daemon wrote:
#           CPU time per cycle, peak RSS, IRQs moved;
#   Ir      valgrind --tool=callgrind of one --oneshot run of each.
# Then one longer steady run (BENCH_MOVES_*) for moves per hour, and the two
# VM scenarios tests/vm/scenarios/bench-*.sh (BENCH_VM=0 skips them).
#
# irqbalance runs in a private mount namespace over the tree (bench/ns-run.sh,
# which refuses to start it if a real file is still visible). This machine's
# /proc/irq/*/smp_affinity(_list) are recorded first and compared at the end
# and after every run; any change aborts loudly.
#
# Environment: BENCH_QUICK=1 (two sizes, fewer cycles), BENCH_SIZES
# ("8:100 64:500 256:2000 1024:8000"), BENCH_INTERVAL (10), BENCH_CYCLES (4),
# BENCH_IDLE_FROM (4), BENCH_IDLE_CYCLES (6),
# BENCH_CALLGRIND_MAX_CPUS (256; larger sizes skip callgrind), BENCH_MOVES_SIZE
# (64:500), BENCH_MOVES_INTERVAL (2), BENCH_MOVES_CYCLES (60), BENCH_SEED (1),
# BENCH_ORACLE_ROUNDS (6, rounds of tests/vm/scenarios/bench-oracle.sh),
# BENCH_THREADS=1 (trees of a threadirqs/PREEMPT_RT machine: an irq/N thread
# for every device vector, fixturegen --all-irq-threads),
# BENCH_RESULTS (bench/RESULTS.md), IRQPILOT_BENCH_CACHE (/var/tmp/irqpilot-bench),
# TMPDIR (else /dev/shm when writable).
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 BUILDDIR" >&2
	exit 2
fi
builddir=$(cd "$1" && pwd)
srcdir=$(cd "$(dirname "$0")/.." && pwd)
gen=$builddir/tests/fixturegen
cycle=$builddir/bench/bench-cycle
steady=$builddir/bench/bench-steady
floor=$builddir/bench/bench-floor
ipd=$builddir/src/irqpilotd/irqpilotd
ctl=$builddir/src/irqctl/irqctl
for p in "$gen" "$cycle" "$steady" "$ipd" "$ctl"; do
	if [ ! -x "$p" ]; then
		echo "$0: $p is missing; run 'make bench' (it builds it first)" >&2
		exit 1
	fi
done
if [ "$(id -u)" != 0 ]; then
	echo "$0: needs root: irqbalance runs in a private mount namespace (unshare -m)" >&2
	exit 1
fi

quick=${BENCH_QUICK:-0}
if [ "$quick" = 1 ]; then
	sizes=${BENCH_SIZES:-"8:100 64:500"}
	cycles=${BENCH_CYCLES:-3}
	moves_cycles=${BENCH_MOVES_CYCLES:-30}
else
	sizes=${BENCH_SIZES:-"8:100 64:500 256:2000 1024:8000"}
	# The window (15 to 55 s at 10 s) falls between the second sample's
	# full scan of /proc/interrupts and the next, a minute later: the
	# steady figure is the fast cycles', and the full scan's share of an
	# interval is measured on its own (bench-cycle --full) and added in
	# the report's full scan table.
	cycles=${BENCH_CYCLES:-4}
	moves_cycles=${BENCH_MOVES_CYCLES:-60}
fi
interval=${BENCH_INTERVAL:-10}
# Idle is measured as a daemon idles for hours: from 4.5 intervals after the
# start, past the three quiet cycles that start irqpilotd's back-off, over 6
# intervals of wall time (bench-steady --after). Not counted in cycles: on
# these trees irqpilotd waits on an inotify watch of the probe's files with
# no timer (watch.h), and a still tree gives it none to count: not even the
# full cycle a minute, which runs only while the tree's counts are written.
idle_from=${BENCH_IDLE_FROM:-4}
idle_cycles=${BENCH_IDLE_CYCLES:-6}
cg_max=${BENCH_CALLGRIND_MAX_CPUS:-256}
moves_size=${BENCH_MOVES_SIZE:-64:500}
moves_interval=${BENCH_MOVES_INTERVAL:-2}
seed=${BENCH_SEED:-1}
gen_threads=()
if [ "${BENCH_THREADS:-0}" = 1 ]; then gen_threads=(--all-irq-threads); fi
# Six rounds: with three, one round's ±15% TCG noise decided a median (session 16).
oracle_rounds=${BENCH_ORACLE_ROUNDS:-6}
results=${BENCH_RESULTS:-$srcdir/bench/RESULTS.md}
conf=$srcdir/conf/irqpilot.conf

ib=$("$srcdir/bench/get-irqbalance.sh")
ib_version=$(dpkg-deb -f "$(dirname "$ib")"/../../../irqbalance_*.deb Version 2>/dev/null || echo "?")

base=${TMPDIR:-}
if [ -z "$base" ]; then
	if [ -d /dev/shm ] && [ -w /dev/shm ]; then base=/dev/shm; else base=/tmp; fi
fi
tmp=$(mktemp -d "$base/irqpilot-bench.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- this machine's IRQs must never change ----------------------------------
snap_real() {
	local f
	for f in /proc/irq/*/smp_affinity /proc/irq/*/smp_affinity_list; do
		printf '%s %s\n' "$f" "$(cat "$f" 2>/dev/null || echo '?')"
	done
}
snap_real >"$tmp/real-irq.before"
check_real() {
	snap_real >"$tmp/real-irq.now"
	if ! cmp -s "$tmp/real-irq.before" "$tmp/real-irq.now"; then
		{
			echo
			echo "!!!!!!!! $0: THIS MACHINE'S /proc/irq CHANGED during the benchmark ($1) !!!!!!!!"
			diff "$tmp/real-irq.before" "$tmp/real-irq.now" || true
			echo "Aborting. The original values are above (lines starting with '<')."
		} >&2
		exit 99
	fi
}

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# irqbalance classifies a PCI device only if it can read vendor, device,
# subsystem_vendor, subsystem_device and class (classify.c get_pci_info());
# without one of them the device's IRQs get balance level "none" and are
# never placed, which would make irqbalance look cheaper and calmer than on
# a real machine. fixturegen writes no subsystem IDs: take the device's own,
# as many devices report.
complete_pci() {
	local dev
	for dev in "$1"/sys/bus/pci/devices/*/; do
		[ -e "$dev/subsystem_vendor" ] || cp "$dev/vendor" "$dev/subsystem_vendor"
		[ -e "$dev/subsystem_device" ] || cp "$dev/device" "$dev/subsystem_device"
	done
}

# gen DIR CPUS IRQS [STEP]
gen_tree() {
	if [ $# -gt 3 ]; then
		"$gen" --cpus "$2" --irqs "$3" --nvme 2 --seed "$seed" ${gen_threads[@]+"${gen_threads[@]}"} --step "$4" "$1"
		# irqpilotd then takes its own clock, as on a live machine: a
		# recorded time_ns would only advance at bench-steady's ticks
		rm -f "$1/irqpilot/time_ns"
	else
		"$gen" --cpus "$2" --irqs "$3" --nvme 2 --seed "$seed" ${gen_threads[@]+"${gen_threads[@]}"} "$1"
	fi
	complete_pci "$1"
}

field() { # KEY LINE -> value of KEY=... in LINE, or "-"
	local v
	v=$(printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n1)
	echo "${v:--}"
}

# run_pair NAME INTERVAL CYCLES TREE_IB TREE_IP [STEP0 STEP1 SIM]: both daemons at once,
# each watched by bench-steady; leaves "$tmp/NAME.ib" and "$tmp/NAME.ip" (BENCH lines),
# and the daemons' logs next to them. Returns nonzero if either failed. Beside them,
# bench-floor (a process that only wakes once per interval) is watched over the same
# wall time: "$tmp/NAME.floor", what any once-per-interval daemon pays here, now.
run_pair() {
	local name=$1 ivl=$2 n=$3 tib=$4 tip=$5 writer=() ibp ipp mib mip flp mfl iop="" mio="" after rc=0
	if [ $# -gt 5 ]; then writer=(--step0 "$6" --step1 "$7" --sim "$8"); fi
	rm -rf "$tmp/rt"
	mkdir -p "$tmp/rt"
	"$srcdir/bench/ns-run.sh" "$tib" "$ib" --foreground --interval "$ivl" \
		>"$tmp/$name.ib.log" 2>&1 &
	ibp=$!
	"$ipd" --root "$tip" --foreground --runtime-dir "$tmp/rt" --interval "$ivl" --config "$conf" \
		>"$tmp/$name.ip.log" 2>&1 &
	ipp=$!
	"$floor" --interval "$ivl" &
	flp=$!
	pids+=("$ibp" "$ipp" "$flp")
	after=$(awk -v f="${from:-1}" -v i="$ivl" 'BEGIN { print f * i + i / 2 }')
	"$steady" --pid "$flp" --interval "$ivl" --cycles "$n" --after "$after" --label floor >"$tmp/$name.floor" &
	mfl=$!
	rm -f "$tmp/$name.iofloor"
	if [ -s "${replay:-}" ] && [ ${#writer[@]} -gt 0 ]; then
		"$floor" --interval "$ivl" --replay "$replay" &
		iop=$!
		pids+=("$iop")
		# its tree is written as the daemons' are: what it reads is as fresh
		"$steady" --pid "$iop" --interval "$ivl" --cycles "$n" --tree "$replay_tree" "${writer[@]}" \
			--label iofloor >"$tmp/$name.iofloor" &
		mio=$!
	fi
	if [ ${#writer[@]} -gt 0 ]; then
		"$steady" --pid "$ibp" --interval "$ivl" --cycles "$n" --tree "$tib" "${writer[@]}" \
			--label irqbalance >"$tmp/$name.ib" &
		mib=$!
		"$steady" --pid "$ipp" --interval "$ivl" --cycles "$n" --tree "$tip" "${writer[@]}" \
			--label irqpilotd >"$tmp/$name.ip" &
		mip=$!
	else
		"$steady" --pid "$ibp" --interval "$ivl" --cycles "$n" --after "$after" --label irqbalance >"$tmp/$name.ib" &
		mib=$!
		"$steady" --pid "$ipp" --interval "$ivl" --cycles "$n" --after "$after" --label irqpilotd >"$tmp/$name.ip" &
		mip=$!
	fi
	wait "$mib" || rc=1
	wait "$mip" || rc=1
	# its own account of its last full scan (the second sample's, after a
	# sleep), beside bench-cycle's warm one
	"$ctl" --socket "$tmp/rt/control" metrics >"$tmp/$name.ip.prom" 2>/dev/null || : >"$tmp/$name.ip.prom"
	wait "$mfl" || echo "$name: the floor's monitor failed" >>"$tmp/failures"
	if [ -n "$mio" ]; then
		wait "$mio" || echo "$name: the I/O floor's monitor failed" >>"$tmp/failures"
		kill "$iop" 2>/dev/null || true
		wait "$iop" 2>/dev/null || true
	fi
	kill "$ibp" "$ipp" "$flp" 2>/dev/null || true
	wait "$ibp" "$ipp" "$flp" 2>/dev/null || true
	pids=()
	check_real "after $name"
	if grep -q "REFUSING" "$tmp/$name.ib.log"; then
		cat "$tmp/$name.ib.log" >&2
		echo "$0: ns-run refused to start irqbalance; nothing was run" >&2
		exit 1
	fi
	return $rc
}

# io_record DIR S0 S1 OUT: the file system calls of one steady irqpilotd cycle,
# as bench-floor --replay takes them. irqpilotd runs at 1 s on DIR (a copy of
# S0) while bench-steady advances it; strace -y (which names each fd's file)
# watches it for a few cycles once placement has settled; the last cycle
# (from one epoll_wait to the next) that only read and statted is kept. The
# replay reads DIR, written between its cycles as the daemons' trees are.
# Empty OUT (and the I/O floor not measured) without strace or such a cycle.
io_record() {
	local dir=$1 s0=$2 s1=$3 out=$4 p m
	: >"$out"
	command -v strace >/dev/null || return 0
	# Its own runtime directory, kept until the run ends: the cycle
	# recorded stats the state file there (07a221e), and the replay opens
	# that directory; removed, the I/O floor failed to start.
	mkdir -p "$out.rt"
	"$ipd" --root "$dir" --foreground --runtime-dir "$out.rt" --interval 1 --config "$conf" \
		>"$tmp/io-record.log" 2>&1 &
	p=$!
	"$steady" --pid "$p" --interval 1 --cycles 12 --tree "$dir" --step0 "$s0" --step1 "$s1" \
		--sim 1 --label io-record >/dev/null &
	m=$!
	pids+=("$p" "$m")
	sleep 8
	timeout -s INT 4 strace -f -y -s 0 -p "$p" -o "$tmp/io-record.strace" 2>/dev/null || true
	kill "$m" "$p" 2>/dev/null || true
	wait "$m" "$p" 2>/dev/null || true
	pids=()
	awk '
	function flush() { if (ok && n > 0) { last = ""; for (k = 1; k <= n; k++) last = last ops[k] "\n" } }
	/ epoll_wait\(/ { flush(); n = 0; ok = 1; next }
	{ line = $0; sub(/^[0-9]+ +/, "", line) }
	match(line, /^pread64\([0-9]+<[^>]*>, ""\.\.\., [0-9]+, [0-9]+\)/) {
		split(substr(line, 1, RLENGTH), a, /[<>]/); t = a[3]; gsub(/[^0-9]+/, " ", t); split(t, c, " ")
		ops[++n] = "pread " a[2] " " c[1] " " c[2]; next
	}
	match(line, /^newfstatat\([0-9]+<[^>]*>, "", /) { split(line, a, /[<>]/); ops[++n] = "fstat " a[2]; next }
	match(line, /^newfstatat\([0-9]+<[^>]*>, "[^"]*", /) {
		split(line, a, /[<>]/); split(a[3], b, /"/); ops[++n] = "statat " a[2] " " b[2]; next
	}
	line ~ /^(read|gettid|timerfd_settime|clock_gettime|epoll_ctl)\(/ { next }
	{ ok = 0 } # a write, an open, a message: not a cycle that only reads
	END { printf "%s", last }' "$tmp/io-record.strace" >"$out"
}

# Ir of one --oneshot run: callgrind's "totals:" line
callgrind_ir() {
	awk '/^(totals|summary):/ { print $2; exit }' "$1" 2>/dev/null
}

row() { printf '%s\n' "$*" >>"$tmp/rows"; }
: >"$tmp/rows"
: >"$tmp/floor"
: >"$tmp/fullscan"
: >"$tmp/failures"
t_start=$(date +%s)

for size in $sizes; do
	cpus=${size%%:*}
	irqs=${size##*:}
	d=$tmp/$cpus-$irqs
	mkdir -p "$d"
	log "$cpus CPUs x $irqs IRQs: generating trees"
	gen_tree "$d/still" "$cpus" "$irqs"
	gen_tree "$d/s0" "$cpus" "$irqs" 0
	gen_tree "$d/s1" "$cpus" "$irqs" 1
	ints_mb=$(awk -v b="$(stat -c %s "$d/still/proc/interrupts")" 'BEGIN { printf "%.1f", b / 1048576 }')

	# idle: a still tree, no writer
	cp -a "$d/still" "$d/idle-ib"
	cp -a "$d/still" "$d/idle-ip"
	log "$cpus x $irqs: idle, $idle_cycles intervals of ${interval}s from $idle_from.5 intervals after the start"
	from=$idle_from run_pair "idle-$size" "$interval" "$idle_cycles" "$d/idle-ib" "$d/idle-ip" ||
		echo "idle $size: a monitor failed" >>"$tmp/failures"
	# steady: counters advance between cycles; beside them, the file system
	# calls of one recorded irqpilotd cycle replayed (the I/O floor)
	cp -a "$d/s0" "$d/load-io"
	log "$cpus x $irqs: recording one steady irqpilotd cycle's file system calls (strace)"
	io_record "$d/load-io" "$d/s0" "$d/s1" "$tmp/io-$size.replay"
	cp -a "$d/s0" "$d/load-ib"
	cp -a "$d/s0" "$d/load-ip"
	log "$cpus x $irqs: steady, $cycles cycles of ${interval}s"
	replay=$tmp/io-$size.replay replay_tree=$d/load-io run_pair "load-$size" "$interval" "$cycles" \
		"$d/load-ib" "$d/load-ip" "$d/s0" "$d/s1" "$interval" ||
		echo "steady $size: a monitor failed" >>"$tmp/failures"

	ipfail=""
	for ph in idle load; do
		if grep -q "cycle failed" "$tmp/$ph-$size.ip.log"; then
			ipfail=$(grep -m1 "cycle failed" "$tmp/$ph-$size.ip.log" | sed 's/^irqpilotd: error: //')
			echo "irqpilotd at $cpus CPUs x $irqs IRQs ($ph): $ipfail" >>"$tmp/failures"
		fi
	done

	# callgrind: one --oneshot each, on fresh copies of the still tree
	ir_ib=- ir_ip=-
	if [ "$cpus" -le "$cg_max" ] && command -v valgrind >/dev/null; then
		log "$cpus x $irqs: callgrind --oneshot"
		cp -a "$d/still" "$d/cg-ib"
		cp -a "$d/still" "$d/cg-ip"
		rm -rf "$tmp/rt" && mkdir -p "$tmp/rt"
		"$srcdir/bench/ns-run.sh" "$d/cg-ib" valgrind --tool=callgrind \
			--callgrind-out-file="$tmp/cg-ib.$size.out" "$ib" --oneshot --foreground --interval 1 \
			>"$tmp/cg-ib.$size.log" 2>&1 || echo "callgrind irqbalance $size failed" >>"$tmp/failures"
		check_real "after callgrind irqbalance $size"
		valgrind --tool=callgrind --callgrind-out-file="$tmp/cg-ip.$size.out" "$ipd" --oneshot \
			--root "$d/cg-ip" --interval 1 --config "$conf" --runtime-dir "$tmp/rt" \
			>"$tmp/cg-ip.$size.log" 2>&1 || echo "callgrind irqpilotd $size failed" >>"$tmp/failures"
		ir_ib=$(callgrind_ir "$tmp/cg-ib.$size.out")
		ir_ip=$(callgrind_ir "$tmp/cg-ip.$size.out")
	fi

	# The full scan: a sample that reads all of /proc/interrupts (and its
	# derive), timed by bench-cycle --full on the still tree. The daemon
	# runs one a minute, or 1,000 times its CPU apart when that is longer
	# (ip_full_scan_period_ns(), at most 600 s); a steady window shorter
	# than that period leaves it out, and its share is added below.
	log "$cpus x $irqs: full scan (bench-cycle --full)"
	fsl=$("$cycle" --root "$d/still" --cycles 3 --full 2>&1 | grep '^BENCH' || true)
	own=$(awk '$1 == "irqpilot_full_scan_cpu_seconds" { printf "%.3f", $2 * 1000 }' "$tmp/load-$size.ip.prom" 2>/dev/null)
	printf '%s|%s|%s|%s\n' "$cpus" "$irqs" "$(field cpu_ms "$fsl")" "${own:--}" >>"$tmp/fullscan"

	li=$(cat "$tmp/idle-$size.ib" 2>/dev/null || true)
	lp=$(cat "$tmp/idle-$size.ip" 2>/dev/null || true)
	si=$(cat "$tmp/load-$size.ib" 2>/dev/null || true)
	sp=$(cat "$tmp/load-$size.ip" 2>/dev/null || true)
	# cpus irqs MB | load cpu ib ip | idle cpu ib ip | wakeups ib ip | hwm ib ip | Ir ib ip | moves ib ip | ipfail
	# | preempted ib ip
	row "$cpus|$irqs|$ints_mb|$(field cpu_ms_per_cycle "$si")|$(field cpu_ms_per_cycle "$sp")|$(field cpu_ms_per_cycle "$li")|$(field cpu_ms_per_cycle "$lp")|$(field wakeups_per_min "$li")|$(field wakeups_per_min "$lp")|$(field vmhwm_kb "$si")|$(field vmhwm_kb "$sp")|${ir_ib:--}|${ir_ip:--}|$(field moves "$si")|$(field moves "$sp")|${ipfail:-ok}|$(field preempted_per_min "$li")|$(field preempted_per_min "$lp")"
	# cpus irqs | floor idle, irqbalance idle | floor steady, irqbalance steady | I/O floor steady,
	# its calls, irqpilotd steady
	printf '%s|%s|%s|%s|%s|%s|%s|%s|%s\n' "$cpus" "$irqs" "$(field cpu_ms_per_cycle "$(cat "$tmp/idle-$size.floor" 2>/dev/null)")" \
		"$(field cpu_ms_per_cycle "$li")" "$(field cpu_ms_per_cycle "$(cat "$tmp/load-$size.floor" 2>/dev/null)")" \
		"$(field cpu_ms_per_cycle "$si")" "$(field cpu_ms_per_cycle "$(cat "$tmp/load-$size.iofloor" 2>/dev/null)")" \
		"$(wc -l <"$tmp/io-$size.replay")" "$(field cpu_ms_per_cycle "$sp")" >>"$tmp/floor"
	rm -rf "$d"
done

# ---- moves per hour: a longer steady run -------------------------------------
mc=${moves_size%%:*}
mi=${moves_size##*:}
d=$tmp/moves
mkdir -p "$d"
gen_tree "$d/s0" "$mc" "$mi" 0
gen_tree "$d/s1" "$mc" "$mi" 1
cp -a "$d/s0" "$d/ib"
cp -a "$d/s0" "$d/ip"
log "moves: $mc x $mi, $moves_cycles cycles of ${moves_interval}s"
run_pair moves "$moves_interval" "$moves_cycles" "$d/ib" "$d/ip" "$d/s0" "$d/s1" "$moves_interval" ||
	echo "moves run: a monitor failed" >>"$tmp/failures"
mv_ib=$(cat "$tmp/moves.ib" 2>/dev/null || true)
mv_ip=$(cat "$tmp/moves.ip" 2>/dev/null || true)
rm -rf "$d"

# ---- placement in the VM: no daemon, irqbalance, irqpilotd --------------------
vm_lines=()
if [ "${BENCH_VM:-1}" = 1 ] && [ -x "$srcdir/tests/vm/run-vm.sh" ]; then
	for sc in bench-single-vector bench-little-big bench-idle-wakeups bench-oracle; do
		log "VM: $sc (QEMU/TCG, a few minutes)"
		# the oracle's rounds are its argument: run-vm.sh gives the guest no environment
		args=()
		[ "$sc" = bench-oracle ] && args=("$oracle_rounds")
		line=$(IRQPILOT_BUILD=$builddir "$srcdir/tests/vm/run-vm.sh" --out "$tmp/vm-$sc" \
			"$srcdir/tests/vm/scenarios/$sc.sh" "${args[@]}" 2>/dev/null | tail -n1) || true
		vm_lines+=("${line:-FAIL $sc: no verdict from run-vm.sh}")
		check_real "after the VM scenario $sc"
	done
fi

# ---- bench-cycle, our own sample+derive cycle, for continuity -----------------
gen_tree "$tmp/bc" 256 2000
bc_out=$("$cycle" --root "$tmp/bc" --cycles 50 2>&1 | grep '^BENCH' || echo "bench-cycle failed")
rm -rf "$tmp/bc"
check_real "at the end"
t_total=$(( $(date +%s) - t_start ))

# ---- the report ------------------------------------------------------------------
# full_scan_period MS: the seconds between full scans that cost MS of CPU: 60, or 1,000
# times their CPU where that is longer, at most 600 (ip_full_scan_period_ns())
full_scan_period() {
	awk -v f="$1" 'BEGIN { if (f == "-" || f == "") { print "-"; exit }
		p = f > 60 ? f : 60; if (p > 600) p = 600; print p }'
}
# full_scan_share MS: their share of an interval, CPU x interval / period
full_scan_share() {
	awk -v f="$1" -v p="$(full_scan_period "$1")" -v ivl="$interval" \
		'BEGIN { if (p == "-") print "-"; else printf "%.3f", f * ivl / p }'
}
# full_scan_ms WARM OWN: the larger of bench-cycle's warm full sample and the
# daemon's own last scan (irqpilot_full_scan_cpu_seconds), either may be "-"
full_scan_ms() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || a == "-") a = b; if (b == "" || b == "-") b = a
		if (a == "" || a == "-") print "-"; else print (a + 0 > b + 0 ? a : b) }'
}
# with_full_scan CPUS IRQS MS: a steady figure with the full scan's share added
with_full_scan() {
	local f sh
	f=$(grep "^$1|$2|" "$tmp/fullscan" 2>/dev/null | head -n1 | awk -F'|' '{ print $3 "|" $4 }')
	sh=$(full_scan_share "$(full_scan_ms "${f%%|*}" "${f##*|}")")
	awk -v s="$3" -v sh="$sh" 'BEGIN { if (s == "-" || s == "" || sh == "-") print s; else printf "%.3f", s + sh }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
mib() { awk -v k="$1" 'BEGIN { if (k == "-") print "-"; else printf "%.1f", k / 1024 }'; }
mir() { awk -v k="$1" 'BEGIN { if (k == "-" || k == "") print "-"; else printf "%.1f", k / 1e6 }'; }
sum_list() { awk -v l="$1" 'BEGIN { if (l == "-") { print "-"; exit } n = split(l, x, ","); s = 0; for (i = 1; i <= n; i++) s += x[i]; print s }'; }
per_hour() { # BENCH line -> settled moves per simulated hour
	awk -v m="$(field moves_settled "$1")" -v c="$(field settled_cycles "$1")" \
		'BEGIN { if (m == "-" || c + 0 == 0) print "-"; else printf "%.0f", m * 360 / c }'
}

model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n 1)
[ -n "$model" ] || model=$(uname -m)
commit=$(git -C "$srcdir" rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git -C "$srcdir" diff --quiet HEAD 2>/dev/null; then commit="$commit (with local changes)"; fi
fstype=$(stat -f -c %T "$tmp" 2>/dev/null || echo unknown)

{
	echo "# Benchmark results: irqpilotd against irqbalance"
	echo
	echo "Written by \`bench/run.sh\` (\`make bench\`); each run replaces this file."
	echo "Ratios are irqpilotd / irqbalance, measured in the same run on the same trees:"
	echo "below 1 means irqpilotd used less."
	echo
	echo "- Date: $(date -u +%Y-%m-%dT%H:%M:%SZ); run took ${t_total} s"
	echo "- Machine: \`$(uname -srm)\`, nproc $(nproc), $model, load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "- irqpilotd binary: \`$ipd\`, $("$ipd" --version 2>/dev/null | head -n1), built $(date -u -r "$ipd" +%Y-%m-%dT%H:%M:%SZ)"
	echo "- Source: $commit; irqbalance $ib_version (Debian package, unpacked, run from $(dirname "$ib"))"
	echo "- Trees: \`fixturegen --cpus N --irqs M --nvme 2 --seed $seed${gen_threads[*]:+ ${gen_threads[*]}} [--step 0|1]\` on $fstype, generated per run"
	echo "- irqbalance: \`bench/ns-run.sh TREE irqbalance --foreground --interval $interval\` (private mount namespace over the tree)"
	echo "- irqpilotd: \`irqpilotd --root TREE --foreground --runtime-dir TMP --interval $interval --config conf/irqpilot.conf\`"
	echo "- Watcher: \`bench-steady --pid PID --interval $interval --cycles $cycles [--tree TREE --step0 S0 --step1 S1]\`;"
	echo "  both daemons run at the same time, each on its own copy of the tree."
	echo "- Callgrind: \`valgrind --tool=callgrind\` of \`irqbalance --oneshot --interval 1\` (in the namespace) and"
	echo "  \`irqpilotd --oneshot --root TREE --interval 1\` on the still tree; sizes above $cg_max CPUs skipped."
	echo
	echo "## Cost per cycle"
	echo
	echo "CPU time is user+sys of every thread (schedstat) over $cycles cycles after the first,"
	echo "divided by $cycles: everything the daemon did per ${interval} s interval. *Steady*: the"
	echo "counters advance between cycles (bench-steady). The window falls between irqpilotd's full"
	echo "scans of /proc/interrupts (one a minute or less often): its figure is the fast cycles', and"
	echo "the full scan's share of an interval is in its own table below, added to it; the"
	echo "cpu_steady of the BENCH-RATIO lines is that sum's."
	echo "*Idle*: a still tree, $idle_cycles intervals"
	echo "of wall time from $idle_from.5 intervals after the start (\`--after\`), past irqpilotd's three"
	echo "quiet cycles. On these trees an idle irqpilotd runs no timer: it waits on an inotify watch"
	echo "of /proc/diskstats and the CPU lists (its probe's files), as it waits on perf on a live"
	echo "machine, and runs its full cycle a minute only while the tree's counts are written: on a"
	echo "still tree, after going idle, nothing. Without either (task sampling) it probes those"
	echo "files every interval and runs the full cycle a minute: 6 wakeups a minute."
	echo "Wakeups are voluntary context switches per minute, idle tree: each is a sleep the daemon"
	echo "was woken from. In parentheses, the involuntary ones (preempted while running: a long"
	echo "cycle on a busy 2-CPU host is switched out by the scheduler, which wakes nothing)."
	echo "Peak RSS is VmHWM at the end of the steady run. Ir: instructions of one --oneshot run"
	echo "(start-up, two samples and one decision) under callgrind, in millions."
	echo
	echo "| CPUs × IRQs | /proc/interrupts | CPU ms/cycle steady: irqbalance | irqpilotd | ratio | idle: irqbalance | irqpilotd | ratio | wakeups/min idle: irqbalance | irqpilotd | peak RSS MiB: irqbalance | irqpilotd | ratio | Ir (M) oneshot: irqbalance | irqpilotd | ratio |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	while IFS='|' read -r c i mb sib sip iib iip wib wip hib hip rib rip _ _ fail pib pip; do
		wib+=" (+$pib)" wip+=" (+$pip)"
		if [ "$fail" = ok ]; then
			echo "| $c × $i | $mb MB | $sib | $sip | $(ratio "$sip" "$sib") | $iib | $iip | $(ratio "$iip" "$iib") | $wib | $wip | $(mib "$hib") | $(mib "$hip") | $(ratio "$hip" "$hib") | $(mir "$rib") | $(mir "$rip") | $(ratio "$rip" "$rib") |"
		else
			# its cycles failed: what it spent on them is no comparison
			echo "| $c × $i **irqpilotd FAILED** | $mb MB | $sib | ($sip) | n/a | $iib | ($iip) | n/a | $wib | ($wip) | $(mib "$hib") | ($(mib "$hip")) | n/a | $(mir "$rib") | ($(mir "$rip")) | n/a |"
		fi
	done <"$tmp/rows"
	echo
	echo "Targets tracked (not enforced): steady and idle CPU ratio ≤ 0.20 at every size and"
	echo "≤ 0.10 at 1,024 CPUs; cost no faster than linear in tracked vectors × CPUs; peak RSS"
	echo "at most half of irqbalance's at 1,024 CPUs; at idle at most 1 wakeup per minute."
	echo "Figures in parentheses are of cycles that failed."
	echo
	# One line per size for scripts (issue 18): the ratios irqpilotd / irqbalance of this
	# run and irqpilotd's own idle wakeups; a size whose cycles failed has none, and a
	# figure that was not measured is "-".
	echo '```'
	while IFS='|' read -r c i _ sib sip iib iip _ wip hib hip _ _ _ _ fail _; do
		[ "$fail" = ok ] || continue
		echo "BENCH-RATIO size=${c}x${i} cpu_steady=$(ratio "$(with_full_scan "$c" "$i" "$sip")" "$sib") cpu_idle=$(ratio "$iip" "$iib") rss=$(ratio "$hip" "$hib") wakeups_idle_per_min=${wip:--}"
	done <"$tmp/rows"
	echo '```'
	echo
	echo "### The floor: waking once per interval, and reading what irqpilotd reads"
	echo
	echo "bench-floor wakes on a timerfd every ${interval} s through epoll and does nothing else; it"
	echo "runs beside the daemons and is measured the same way over the same wall time. Its CPU"
	echo "per interval is what a daemon that runs once per interval pays before it reads a"
	echo "file; floor / irqbalance is the lowest ratio such a daemon can reach here."
	echo
	echo "The I/O floor (\`bench-floor --replay\`) also makes, at each wakeup, the file system calls"
	echo "of one steady irqpilotd cycle, recorded with strace before the steady run (preads and"
	echo "stats, on files opened once), and nothing between them: the kernel's side of irqpilotd's"
	echo "cycle. irqpilotd's steady cost above it is its own code: parsing, deriving, deciding,"
	echo "reporting. I/O floor / irqbalance is the lowest steady ratio irqpilotd can reach here"
	echo "while it reads what it reads now."
	echo
	echo "| CPUs × IRQs | floor ms/interval idle | floor / irqbalance idle | floor ms/interval steady | floor / irqbalance steady | I/O floor ms/interval steady (calls) | I/O floor / irqbalance steady | irqpilotd above the I/O floor, ms |"
	echo "|---|---|---|---|---|---|---|---|"
	while IFS='|' read -r c i fi_ ib_i fs ib_s io nio ip_s; do
		above=$(awk -v a="$ip_s" -v b="$io" 'BEGIN { if (a == "-" || b == "-" || a == "" || b == "") print "-"; else printf "%.3f", a - b }')
		[ "$io" = - ] && nio=-
		echo "| $c × $i | $fi_ | $(ratio "$fi_" "$ib_i") | $fs | $(ratio "$fs" "$ib_s") | $io ($nio) | $(ratio "$io" "$ib_s") | $above |"
	done <"$tmp/floor"
	echo
	echo "### The full scan of /proc/interrupts, and its share of an interval"
	echo
	echo "A full sample (all of /proc/interrupts, and its derive) timed by \`bench-cycle --full\` on the"
	echo "still tree, warm (a loop of 3 after a warm-up), and irqpilotd's own last one in the steady"
	echo "run, as its metrics give it (irqpilot_full_scan_cpu_seconds: the read of /proc/interrupts at"
	echo "its second sample, after a sleep). irqpilotd runs one a minute after the last, or 1,000"
	echo "times its CPU apart where that is longer (at most 600 s). None falls in the steady window;"
	echo "the share of an interval of the larger of the two (CPU × interval / period) is added here,"
	echo "and the ratio with it is irqpilotd's steady cost per interval, all in."
	echo
	echo "| CPUs × IRQs | full sample CPU ms, warm | the daemon's own, ms | period s | share ms/interval | steady with it, ms | ratio |"
	echo "|---|---|---|---|---|---|---|"
	while IFS='|' read -r c i warm own; do
		fms=$(full_scan_ms "$warm" "$own")
		r=$(grep "^$c|$i|" "$tmp/rows" | head -n1 || true)
		sib=$(echo "$r" | cut -d'|' -f4)
		all=$(with_full_scan "$c" "$i" "$(echo "$r" | cut -d'|' -f5)")
		per=$(full_scan_period "$fms")
		[ "$per" = - ] || per=$(printf '%.0f' "$per")
		echo "| $c × $i | ${warm:--} | ${own:--} | $per | $(full_scan_share "$fms") | $all | $(ratio "$all" "$sib") |"
	done <"$tmp/fullscan"
	echo
	echo "### Cost against IRQs × CPUs (steady)"
	echo
	echo "| CPUs × IRQs | IRQs × CPUs | irqbalance µs per 1,000 IRQ×CPU | irqpilotd µs per 1,000 IRQ×CPU |"
	echo "|---|---|---|---|"
	while IFS='|' read -r c i _ sib sip _; do
		awk -v c="$c" -v i="$i" -v a="$sib" -v b="$sip" 'BEGIN {
			p = c * i
			printf "| %s × %s | %d | %s | %s |\n", c, i, p,
				(a == "-" ? "-" : sprintf("%.2f", a * 1e6 / p)), (b == "-" ? "-" : sprintf("%.2f", b * 1e6 / p)) }'
	done <"$tmp/rows"
	echo
	echo "## Moves"
	echo
	echo "IRQs whose written affinity changed, counted by bench-steady from the tree itself (the"
	echo "same observer for both), per cycle of the steady runs above:"
	echo
	echo "| CPUs × IRQs | irqbalance moves per cycle | irqpilotd moves per cycle |"
	echo "|---|---|---|"
	while IFS='|' read -r c i _ _ _ _ _ _ _ _ _ _ _ mib_ mip_ _; do
		echo "| $c × $i | $mib_ | $mip_ |"
	done <"$tmp/rows"
	echo
	echo "Moves per hour: $mc CPUs × $mi IRQs, $moves_cycles cycles at a ${moves_interval} s interval (the"
	echo "workload is steady and noiseless, so what a daemon does per cycle does not depend on the"
	echo "interval); the first half is settling, the rest is counted and scaled to an hour of"
	echo "10 s cycles (360 cycles)."
	echo
	echo "| daemon | moves, all cycles | moves after settling | per hour after settling |"
	echo "|---|---|---|---|"
	echo "| irqbalance | $(field moves_total "$mv_ib") | $(field moves_settled "$mv_ib") in $(field settled_cycles "$mv_ib") cycles | $(per_hour "$mv_ib") |"
	echo "| irqpilotd | $(field moves_total "$mv_ip") | $(field moves_settled "$mv_ip") in $(field settled_cycles "$mv_ip") cycles | $(per_hour "$mv_ip") |"
	echo
	echo "Per cycle: irqbalance \`$(field moves "$mv_ib")\`; irqpilotd \`$(field moves "$mv_ip")\`."
	echo
	echo "## Placement (QEMU/TCG guest, Debian 6.1, 4 vCPUs)"
	echo
	if [ ${#vm_lines[@]} -gt 0 ]; then
		echo "\`tests/vm/run-vm.sh tests/vm/scenarios/SCENARIO.sh\`, one workload three ways in one boot"
		echo "(bench/vm-compare.sh). Completions in 2-3: share of BLOCK softirqs in fio's domain."
		echo "TCG on a loaded host makes IOPS and p99 noisy: read locality first."
		echo "bench-idle-wakeups: both daemons idle, then under steady fio, on a real kernel, each alone at"
		echo "its default interval (irqbalance 10 s, irqpilotd 2 s): wakeups and CPU ms a minute, the"
		echo "steady ones over 3 rounds in turned order (medians, and irqpilotd/irqbalance per round). The"
		echo "generated trees above show only irqpilotd's timer back-off and task sampling; its perf"
		echo "counters and wakeup need the kernel's own disks."
		echo
		for l in "${vm_lines[@]}"; do echo "- $l"; echo; done
	else
		echo "Not run (BENCH_VM=0, or no tests/vm)."
		echo
	fi
	echo "## Failures"
	echo
	if [ -s "$tmp/failures" ]; then
		sed 's/^/- /' "$tmp/failures"
	else
		echo "None."
	fi
	echo
	echo "## Raw"
	echo
	echo '```'
	for f in "$tmp"/idle-* "$tmp"/load-* "$tmp"/moves.ib "$tmp"/moves.ip "$tmp"/moves.floor; do
		case $f in *.log | *.prom) continue ;; esac
		[ -f "$f" ] && printf '%s: %s\n' "$(basename "$f")" "$(cat "$f")"
	done
	echo "$bc_out"
	echo '```'
	echo
	echo "This machine's /proc/irq/*/smp_affinity(_list) were the same before and after the run."
} >"$results"
cat "$results"
echo "wrote $results" >&2
