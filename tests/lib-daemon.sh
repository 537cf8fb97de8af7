# shellcheck shell=sh disable=SC2034,SC2154 # results and $tmp belong to the sourcing script
# Shared by the scripts that drive irqpilotd on a writable fixture tree
# (daemon-integration, restore-integration, hostile-clients, metrics,
# unsteerable-warning, the closed loops, idle-watch): the programs, the
# scratch directory, TAP-style results, waits and the tree's writes.
# Sourced once the script has set $top_srcdir; failures set $fail.

top_builddir=${top_builddir:-$top_srcdir}
bin=$top_builddir/src/irqpilotd/irqpilotd
ctl=$top_builddir/src/irqctl/irqctl
export IRQPILOT_NO_JOURNAL=1

# daemon_test_dirs NAME: $tmp, a scratch directory /tmp/irqpilot-NAME-*, with
# the tree ($root), the runtime directory ($rt, the control socket in it),
# $conf and $log. At exit the daemons started go (those in $pids killed, the
# one in $daemon stopped, so that it restores), then $tmp.
daemon_test_dirs() {
	tmp=$(mktemp -d "/tmp/irqpilot-$1-XXXXXX") || exit 1
	root=$tmp/root
	rt=$tmp/run
	conf=$tmp/irqpilot.conf
	log=$tmp/daemon.log
	export IRQPILOT_SOCKET="$rt/control"
	fail=0
	pids=""
	daemon=""
	trap daemon_test_cleanup EXIT INT TERM
}
# The daemon ($daemon) first, with SIGTERM, so that it restores; then
# whatever else the script started ($pids: stand-in kernels, watchers),
# which would otherwise go on writing into a removed tree for good.
daemon_test_cleanup() {
	if [ -n "$daemon" ]; then
		kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null
	fi
	for p in $pids; do [ "$p" = "$daemon" ] || kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}

ok() { echo "ok - $1"; }
bad() {
	echo "not ok - $1"
	fail=1
}
skip() { echo "ok - # SKIP $1"; }
# run DESCRIPTION command...: its output stays in $tmp/out for later checks
run() {
	d=$1
	shift
	if "$@" >"$tmp/out" 2>&1; then ok "$d"; else bad "$d"; sed 's/^/    /' "$tmp/out"; fi
}
check() { # description, command...
	d=$1
	shift
	if "$@" >"$tmp/check" 2>&1; then ok "$d"; else bad "$d"; sed 's/^/    /' "$tmp/check"; fi
}
# wait_for SECONDS command...: until the command succeeds. Every wait ends as
# soon as what it waits for has happened; the limit only catches a daemon that
# did not do it, so callers pass $limit, which is long: on a loaded 2-CPU
# machine the first move took more than 10 s.
limit=60
wait_for() {
	n=$(($1 * 10))
	shift
	while [ "$n" -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1
		n=$((n - 1))
	done
	return 1
}

# rewrite FILE NEW: FILE gets NEW's text in place, as the kernel's files
# change (irqpilotd keeps the tracked vectors' files open and would read a
# file renamed over them at its old inode). Shell '>' truncates first, and a
# read between its truncate and its write sees an empty file, which no
# kernel shows (seq_read_iter() runs the whole show() before copying out);
# here the text goes in with one write(2) at offset 0 over the old one
# (dd conv=notrunc; iflag=fullblock, so that a short read of NEW does not
# split it) and the size is set after it. What is left: a new text shorter
# than the old reads with the old one's tail until the truncate (the
# stand-ins' counts only grow; a one-CPU list gets shorter going from CPU 10
# or up to below it, and its tail then follows the new text's "\n", where
# the daemon's parser stops), and a read that
# overlaps the write's copy into the page cache itself (regular-file reads
# take no lock against writes), a window of a memcpy of a few dozen bytes.
# The tree has several writers at once (the stand-in kernel's loop and the
# test's own steps), where a kernel has one: each change, read and write,
# is made holding one lock. Without it two rewrites of /proc/diskstats
# interleaved as write A, write B, truncate to B's size, truncate to A's,
# and the file ended in NULs ("major '?????????' is not a number").
rewrite_locked() {
	dd if="$2" of="$1" bs=1M iflag=fullblock conv=notrunc status=none && truncate -r "$2" "$1"
}

# tree_locked CMD [ARGS]: CMD holding the tree's lock (a new open of the
# lock file each time: flock(1) locks an open file description, which a
# background loop would otherwise share with its parent). CMD must not
# take it again.
tree_locked() {
	{ flock 9 && "$@"; } 9>>"$tmp/tree.lock"
}

rewrite() { tree_locked rewrite_locked "$@"; }

# stop_standin PID: kills a stand-in loop between two of its changes, not
# in one: a loop killed between its write and its truncate left the
# file's old tail behind (its dd lived on, orphaned).
stop_standin() {
	tree_locked kill -9 "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# io_done DEV N: N reads completed on DEV, in $root/proc/diskstats (field 4,
# as block/genhd.c diskstats_show() prints it), written in place; with N 0
# the same text again, which a reader of the kernel's file sees made afresh.
io_done_locked() {
	awk -v dev="$1" -v n="$2" '$3 == dev && n { $4 += n } { print }' "$root/proc/diskstats" \
		>"$tmp/diskstats.new" && rewrite_locked "$root/proc/diskstats" "$tmp/diskstats.new"
}
io_done() { tree_locked io_done_locked "$@"; }

# ctxt PID: context switches of all PID's threads, as bench/steady.c counts
# wakeups.
ctxt() { awk '/^(non)?voluntary_ctxt_switches/ { n += $2 } END { print n }' /proc/"$1"/task/*/status; }

# free_irq_dir DIR: removes a freed IRQ's /proc/irq/N or /sys/kernel/irq/N
# as the kernel does for irqpilotd's kept fds. free_desc()
# (kernel/irq/irqdesc.c) removes both nodes, and a kept fd's next read
# fails (-ENODEV from kernfs_seq_start(), -EIO from proc_reg_read_iter()).
# A removed tmpfs file stays readable through an open fd, with its old
# text, until the daemon's next full scan of /proc/interrupts, up to a
# minute later. So each file is emptied first: the daemon reads nothing
# through the kept fd, looks the name up again and finds it gone, which is
# what it does with a failed read.
free_irq_dir() {
	find "$1" -type f -exec truncate -s 0 {} + && rm -rf "$1"
}

# start_daemon [ARGS]: irqpilotd on $root with $conf and $rt, its log in
# $log; $daemon is its pid, killed at exit with the others in $pids.
start_daemon() {
	"$bin" --root "$root" --runtime-dir "$rt" --config "$conf" --foreground "$@" >"$log" 2>&1 &
	daemon=$!
	pids="$pids $daemon"
}

# free_vector ROOT IRQ SAVE: the kernel frees IRQ (kernel/irq/irqdesc.c
# free_desc() removes /proc/irq/N and /sys/kernel/irq/N, and
# show_interrupts() prints no line for it) after the stand-in, which fires
# it, is stopped. Its /proc/irq/N/ is kept in SAVE and the IRQ list
# without it in $tmp/interrupts.freed, to make a vector anew from.
free_vector() {
	stop_standin "$standin_pid"
	cp -a "$1/proc/irq/$2" "$3"
	free_irq_dir "$1/proc/irq/$2"
	free_irq_dir "$1/sys/kernel/irq/$2"
	grep -v "^ *$2:" "$1/proc/interrupts" >"$tmp/interrupts.freed"
	rewrite "$1/proc/interrupts" "$tmp/interrupts.freed"
}

# standin_disk ROOT DISK: 3,000 more reads completed by DISK, the tree's
# lock held (tree_locked).
# diskstats_show() (block/genhd.c) prints "%4d %7d %pg" and the counts one
# space apart; field 4 is reads completed.
standin_disk() {
	awk -v dev="$2" '$3 == dev {
		$4 += 3000
		line = sprintf("%4d %7d %s", $1, $2, $3)
		for (i = 4; i <= NF; i++)
			line = line " " $i
		print line
		next
	} { print }' "$1/proc/diskstats" >"$tmp/diskstats.kernel" &&
		rewrite_locked "$1/proc/diskstats" "$tmp/diskstats.kernel"
}

# standin_tick ROOT IRQ DISK CPU EFF C: one turn of standin_kernel's loop,
# IRQ firing on CPU EFF and DISK's submissions at C, the tree's lock held.
standin_tick() {
	echo "$5" >"$tmp/eff.new"
	rewrite_locked "$1/proc/irq/$2/effective_affinity_list" "$tmp/eff.new"
	echo "$3 $4 $6" >"$1/irqpilot/submit.new"
	mv "$1/irqpilot/submit.new" "$1/irqpilot/submit"
	standin_disk "$1" "$3"
	awk -v irq="$2:" -v eff="$5" '{ if ($1 == irq) { col = eff + 2; $col = $col + 3000 } print }' \
		"$1/proc/interrupts" >"$1/proc/interrupts.new"
	mv "$1/proc/interrupts.new" "$1/proc/interrupts"
	# the kernel counts once (kstat_irqs) and shows it in both;
	# per_cpu_count has a field per possible CPU, all online here
	pcc=$1/sys/kernel/irq/$2/per_cpu_count
	if [ -f "$pcc" ]; then
		awk -F, -v OFS=, -v f="$(($5 + 1))" '{ $f = $f + 3000; print }' "$pcc" >"$pcc.new"
		rewrite_locked "$pcc" "$pcc.new"
	fi
}

# standin_kernel ROOT IRQ DISK CPU: a loop that plays the kernel and a
# workload on a fixture tree, in the background (its pid in $standin_pid):
# 3,000 interrupts of IRQ at a time on the first CPU its smp_affinity_list
# names (as the effective affinity), in /proc/interrupts and in
# /sys/kernel/irq/IRQ/per_cpu_count, and 3,000 submissions of DISK from CPU,
# completed: the kernel counts them in /proc/diskstats too (standin_disk).
# Without that a daemon that saw no change while the loop was held up (a
# loaded machine) went idle, its probe watching a /proc/diskstats that never
# changed, and slept to its minute's full cycle.
standin_kernel() {
	(
		c=0
		eff=
		irqdir=$1/proc/irq/$2
		while :; do
			c=$((c + 3000))
			# irqpilotd writes it with O_TRUNC, then the list: read
			# between the two it is empty, and the last CPU stands
			a=$(cat "$irqdir/smp_affinity_list")
			[ -n "$a" ] && eff=${a%%[-,]*}
			[ -n "$eff" ] || { sleep 0.05; continue; }
			tree_locked standin_tick "$1" "$2" "$3" "$4" "$eff" "$c"
			sleep 0.05
		done
	) 2>"$tmp/kernel.err" &
	standin_pid=$!
}
