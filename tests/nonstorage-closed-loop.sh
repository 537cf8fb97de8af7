#!/bin/sh
# Non-storage IRQs in a closed loop (issue 14): an [irq NAME] rule's pin and
# an irqctl pin are written once, and not again while the IRQ stays where it
# was put. irqpilotd runs on a writable copy of the phone fixture while the
# stand-in kernel of lib-daemon.sh plays the UFS workload; count-writes
# (inotify) sees every write the daemon makes to the IRQs' affinity files.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/lib-daemon.sh
. "$top_srcdir/tests/lib-daemon.sh"
watch=$top_builddir/tests/count-writes

daemon_test_dirs nonstorage

aff() { cat "$root/proc/irq/$1/smp_affinity_list"; }
affinity_is() { [ "$(aff "$1")" = "$2" ]; }
writes() { grep -cx "$root/proc/irq/$1/smp_affinity_list" "$tmp/writes"; }
cycles() { "$ctl" status | sed -n 's/^cycles: \([0-9]*\),.*/\1/p'; }
# wait_cycles N: until the daemon has run N more cycles
wait_cycles() {
	c0=$(cycles)
	wait_for "$limit" sh -c "[ \$('$ctl' status | sed -n 's/^cycles: \([0-9]*\),.*/\1/p') -ge $((c0 + $1)) ]"
}

cp -a "$top_srcdir/tests/fixtures/phone-arm64" "$root"
chmod 755 "$tmp"
# kgsl_3d0_irq (52) and dwc3 (45) drive no block device: the phone fixture's
# GPU and USB controller.
cat >"$conf" <<'EOF'
[daemon]
interval = 0.3
[policy]
dwell = 1
[irq "kgsl*"]
pin = 0-1
EOF

mkdir -p "$root/irqpilot"
standin_kernel "$root" 37 sda 6
pids="$pids $standin_pid"
"$watch" "$root/proc/irq/52/smp_affinity_list" "$root/proc/irq/45/smp_affinity_list" \
	"$root/proc/irq/60/smp_affinity_list" >"$tmp/writes" &
pids="$pids $!"
wait_for "$limit" grep -q watching "$tmp/writes" || bad "count-writes starts"

start_daemon
if ! wait_for "$limit" test -S "$rt/control"; then
	bad "the daemon opens its control socket"
	cat "$log"
	exit 1
fi

# --- an [irq NAME] rule ---------------------------------------------------------
check "the [irq kgsl*] rule places IRQ 52 on 0-1" wait_for "$limit" affinity_is 52 0-1
check "... and the UFS vector follows fio meanwhile" wait_for "$limit" grep -qx '[67]' "$root/proc/irq/37/smp_affinity_list"
check "20 more cycles run" wait_cycles 20
n=$(writes 52)
check "... IRQ 52 was written exactly once in all of them (written: $n)" test "$n" -eq 1
run "irqctl explain 52" "$ctl" explain 52
check "... shows the sampled affinity" grep -q "affinity 0-1" "$tmp/out"
check "... and says it is kept where the rule pins it" grep -q "decision: kept 52 kgsl_3d0_irq: pinned to 0-1 by rule 'kgsl\*'" "$tmp/out"

# --- irqctl pin of a non-storage IRQ -----------------------------------------------
check "irqctl pin 45 2-3" "$ctl" pin 45 2-3
check "the pin is written" wait_for "$limit" affinity_is 45 2-3
check "20 more cycles run" wait_cycles 20
n=$(writes 45)
check "... IRQ 45 was written exactly once (written: $n)" test "$n" -eq 1
n=$(writes 52)
check "... and IRQ 52 not again (written: $n)" test "$n" -eq 1

# --- someone else moves it: the daemon puts it back, once ---------------------
echo 4-7 >"$root/proc/irq/52/smp_affinity_list"
check "IRQ 52 moved by someone else goes back to 0-1" wait_for "$limit" affinity_is 52 0-1
check "10 more cycles run" wait_cycles 10
n=$(writes 52)
# the test's own write counts too: 1 (ours) + 1 (theirs) + 1 (ours)
check "... one write of ours after the other one's (written: $n)" test "$n" -eq 3

# --- irqctl pin NAME, unpin NAME ------------------------------------------------
run "irqctl pin msm_drm 4-5 (IRQ 60 by its action name)" "$ctl" pin msm_drm 4-5
check "... answers with the IRQ it found" grep -qx "IRQ 60 pinned to 4-5 until unpinned or restart" "$tmp/out"
check "... and it is written" wait_for "$limit" affinity_is 60 4-5
"$ctl" pin no_such_irq 1 >"$tmp/out" 2>&1
check "pin of a name no line has fails" test $? -ne 0
check "... saying so" grep -q "no IRQ named 'no_such_irq' in /proc/interrupts" "$tmp/out"
run "irqctl unpin msm_drm" "$ctl" unpin msm_drm
check "... hands back the original affinity" grep -qx "IRQ 60 unpinned: back to its original affinity 0-7" "$tmp/out"
check "... which is in the file" affinity_is 60 0-7
check "5 more cycles run" wait_cycles 5
n=$(writes 60)
check "... and nothing writes it again: the pin and the restore (written: $n)" test "$n" -eq 2
check "... still 0-7" affinity_is 60 0-7

# --- the pinned IRQ vanishes (its driver freed it) -----------------------------
# The stand-in kernel rewrites /proc/interrupts; it stops first so that it
# cannot put the line back. kernel/irq/irqdesc.c frees /sys/kernel/irq/45 and
# kernel/irq/proc.c (unregister_irq_proc) /proc/irq/45 with the descriptor.
# In the kernel's order: free_desc() unregisters /proc/irq/45 first, then
# /sys/kernel/irq/45, then the descriptor leaves /proc/interrupts. A cycle
# runs in between, when the line is there and its /proc/irq/45 is not: the
# daemon must not write the pin then (the write fails with ENOENT, a
# warning, and the pin was dropped with it).
# Without I/O the daemon soon backs off to a full cycle a minute; a read that
# completes on sda (in /proc/diskstats, written in place as the kernel's is
# read) is what its probe sees, so each one below starts a full cycle.
stop_standin "$standin_pid"
free_irq_dir "$root/proc/irq/45"
io_done sda 1
check "a cycle runs while only /proc/irq/45 is gone" wait_cycles 1
free_irq_dir "$root/sys/kernel/irq/45"
grep -v '^ *45:' "$root/proc/interrupts" >"$root/proc/interrupts.new"
mv "$root/proc/interrupts.new" "$root/proc/interrupts"
io_done sda 1
gone="IRQ 45, pinned to 2-3 by irqctl pin, is not in /proc/interrupts"
check "a vanished pinned IRQ gets a note" wait_for "$limit" grep -q "$gone" "$log"
for i in 1 2 3; do
	io_done sda 1
	check "full cycle $i of 3 more" wait_cycles 1
done
n=$(grep -c "$gone" "$log")
check "... said once (said: $n)" test "$n" -eq 1
n=$(grep -c "warning\|error" "$log")
check "... and no warning or error repeats (lines: $n)" test "$n" -eq 0
check "the daemon still answers" "$ctl" status
# the note says the pin waits "until irqctl unpin 45": that must work
run "irqctl unpin 45, as the note says, with IRQ 45 gone" "$ctl" unpin 45
check "... logged" grep -q "IRQ 45 unpinned by irqctl" "$log"
"$ctl" unpin 45 >"$tmp/out" 2>&1
check "... and no pin is left to unpin" test $? -ne 0

# --- a reload whose file lacks the [irq] rule ----------------------------------
# The policy file is replaced whole: IRQ 52, which only the rule claimed, goes
# back to what it had before our first write, as after irqctl unpin; left at
# 0-1, irqctl explain called it untouched until the daemon stopped.
cat >"$conf" <<'EOF'
[daemon]
interval = 0.3
[policy]
dwell = 1
EOF
run "irqctl reload, the [irq kgsl*] rule gone" "$ctl" reload
check "... IRQ 52 is back at its original 0-7" affinity_is 52 0-7
check "... and the log says why" grep -q "reload: restored proc/irq/52/smp_affinity_list to 0-7" "$log"
for i in 1 2 3; do
	io_done sda 1
	check "full cycle $i of 3 after the reload" wait_cycles 1
done
check "... and it stays there" affinity_is 52 0-7

if [ "$fail" -ne 0 ]; then
	echo "--- daemon log"
	cat "$log"
	echo "--- writes"
	cat "$tmp/writes"
fi
exit $fail
