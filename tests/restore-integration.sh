#!/bin/sh
# The originals and their restore (issue 12, items 3-9), as an operator
# checks them: the value in the file the kernel exposes (a writable copy
# of the phone fixture), the state file, the exit status. A loop stands in
# for the kernel and the workload, as in daemon-integration.sh.
#
# The read-only smp_affinity_list needs a bind mount in a private mount
# namespace (unshare -m, as root): without it this script SKIPs (77).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/lib-daemon.sh
. "$top_srcdir/tests/lib-daemon.sh"

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: needs root for a read-only bind mount in a private mount namespace"
	exit 77
fi
if [ -z "${IP_RESTORE_IN_NS:-}" ]; then
	if ! unshare -m --propagation private true 2>/dev/null; then
		echo "SKIP: unshare -m is not possible here"
		exit 77
	fi
	IP_RESTORE_IN_NS=1 exec unshare -m --propagation private "$0" "$@"
fi

daemon_test_dirs restore
aff=$root/proc/irq/37/smp_affinity_list
# the original of IRQ 37 as recorded: its list and its line's vector
rec37="irq 37 0-7 chip=GICv3 hwirq=297 actions=ufshcd"

cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	umount -l "$aff" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
affinity_is() { [ "$(cat "$aff")" = "$1" ]; }
moved() { grep -qx '[67]' "$aff"; }

cp -a "$top_srcdir/tests/fixtures/phone-arm64" "$root"
mkdir -p "$rt" "$root/irqpilot" "$root/proc/sys/kernel"
chmod 700 "$rt"
echo 32768 >"$root/proc/sys/kernel/pid_max"
cat >"$conf" <<'EOT'
[daemon]
interval = 0.3
[policy]
dwell = 1
EOT
standin_kernel "$root" 37 sda 6
pids="$pids $standin_pid"

start() { start_daemon "$@"; }
stop() { # expected exit status
	kill -TERM "$daemon"
	rc=0
	wait "$daemon" || rc=$?
	check "SIGTERM: exit $1" test "$rc" -eq "$1"
}

# --- item 9: the original is on disk before the write -----------------------
start
check "the daemon moves IRQ 37" wait_for "$limit" moved
check "the state file holds the original, not the moved value" grep -qx "$rec37" "$rt/state"

# --- --restore beside the running daemon ------------------------------------
# It deleted the state file, the daemon moved IRQ 37 again without writing
# the file back (its original in memory), and a kill -9 then lost 0-7.
moved_to=$(cat "$aff")
"$bin" --restore --root "$root" --runtime-dir "$rt" >"$tmp/out" 2>&1
check "--restore while the daemon runs is refused (exit 3)" test $? -eq 3
check "... saying so" grep -q "irqpilotd is running (pid $daemon holds" "$tmp/out"
check "... and the state file keeps the original" grep -qx "$rec37" "$rt/state"
check "... and the IRQ is not touched" affinity_is "$moved_to"

# --- item 5: dry-run on, then SIGTERM still restores -------------------------
check "irqctl dry-run on" "$ctl" dry-run on
stop 0
check "item 5: SIGTERM after 'dry-run on' restores 0-7" affinity_is 0-7
check "... and nothing is left in the state file" test ! -e "$rt/state"

# --- item 5: a reload into dry_run = yes -----------------------------------
start
check "moved again" wait_for "$limit" moved
printf '[daemon]\ninterval = 0.3\ndry_run = yes\n[policy]\ndwell = 1\n' >"$conf"
kill -HUP "$daemon"
check "the reload is logged" wait_for "$limit" grep -q "reloaded" "$log"
stop 0
check "item 5: SIGTERM after a reload into dry_run = yes restores 0-7" affinity_is 0-7
printf '[daemon]\ninterval = 0.3\n[policy]\ndwell = 1\n' >"$conf"

# --- item 4: a restore that fails keeps its record ---------------------------
start
check "moved again" wait_for "$limit" moved
moved_to=$(cat "$aff")
mount --bind "$aff" "$aff" && mount -o remount,bind,ro "$aff"
check "smp_affinity_list is read-only now" sh -c "! echo 0-7 >'$aff'"
stop 0
check "item 4: the failed restore is logged" grep -q "restoring proc/irq/37/smp_affinity_list to 0-7 failed" "$log"
check "item 4: the record survives the failed restore" grep -qx "$rec37" "$rt/state"
"$bin" --restore --root "$root" --runtime-dir "$rt" >"$tmp/out" 2>&1
check "--restore on the read-only file fails (exit 1)" test $? -eq 1
check "... and keeps the record" grep -qx "$rec37" "$rt/state"
# Lazy: the stand-in kernel reads the file every 50 ms, and a plain umount
# that meets one of its reads fails with EBUSY (seen once under make
# distcheck); -l takes the read-only view away at once all the same.
umount -l "$aff"
check "the file still holds the moved value" affinity_is "$moved_to"
check "--restore once the file is writable" "$bin" --restore --root "$root" --runtime-dir "$rt"
check "... puts 0-7 back" affinity_is 0-7
check "... and removes the state file" test ! -e "$rt/state"

# --- restore_on_exit = no: kept for --restore, and the log says where -------
printf '[daemon]\ninterval = 0.3\nrestore_on_exit = no\n[policy]\ndwell = 1\n' >"$conf"
start
check "moved with restore_on_exit = no" wait_for "$limit" moved
moved_to=$(cat "$aff")
stop 0
check "restore_on_exit = no: SIGTERM leaves the vector where it was moved" affinity_is "$moved_to"
check "... its original in the state file" grep -qx "$rec37" "$rt/state"
check "... and the log says where it is and how to put it back" \
	grep -q "restore_on_exit = no: the original of 1 setting(s) this run changed stays in $rt/state; irqpilotd --restore puts them back" "$log"
check "--restore then" "$bin" --restore --root "$root" --runtime-dir "$rt"
check "... puts 0-7 back" affinity_is 0-7
printf '[daemon]\ninterval = 0.3\n[policy]\ndwell = 1\n' >"$conf"

# --- item 3: a state file that does not parse --------------------------------
printf '# irqpilot state 2\nirq 37 0-7\nirq x y\n' >"$rt/state"
chmod 600 "$rt/state"
cp "$rt/state" "$tmp/state.orig"
echo 3 >"$aff"
"$bin" --root "$root" --runtime-dir "$rt" --config "$conf" --foreground >"$tmp/out" 2>&1
check "item 3: the daemon refuses to start (exit 3)" test $? -eq 3
check "... naming the file and line" grep -q "$rt/state:3: " "$tmp/out"
check "... and the file is untouched" cmp "$rt/state" "$tmp/state.orig"
# --oneshot adds to the same file: refused as the daemon is, each line said
"$bin" --oneshot --root "$root" --runtime-dir "$rt" --config "$conf" --interval 0.3 >/dev/null 2>"$tmp/out"
check "... as is --oneshot (exit 3)" test $? -eq 3
check "... which lists the line" grep -q "error: $rt/state:3: IRQ number out of range: irq x y" "$tmp/out"
check "... and says to run --restore first" grep -q "$rt/state:3: IRQ number out of range: the originals it records would be lost; run irqpilotd --restore first" "$tmp/out"
check "... writing nothing" affinity_is 3
check "... and the file is untouched" cmp "$rt/state" "$tmp/state.orig"
"$bin" --restore --root "$root" --runtime-dir "$rt" >"$tmp/out" 2>&1
check "--restore with an invalid record exits 1" test $? -eq 1
check "... reports it with its line" grep -q "state:3: IRQ number out of range" "$tmp/out"
check "... restores the valid record" affinity_is 0-7
check "... and keeps the whole file aside" sh -c "cmp '$tmp/state.orig' '$rt'/state.invalid-*"

# --- item 7: --restore validates every field ---------------------------------
rm -f "$rt"/state.invalid-*
echo 3 >"$aff"
mkdir -p "$tmp/outside"
echo 1 >"$tmp/outside/x"
cat >"$rt/state" <<'EOT'
# irqpilot state 2
thread 4294967297 37 1 irq/37-ufshcd sched 1 99
irq -1 0-7
rq ../../../outside/x 2
thread 812 37 1 irq/37-ufshcd sched 1 200
thread 812 37 1 irq/37-ufshcd sched 7 1
irq 37 0-7
EOT
chmod 600 "$rt/state"
"$bin" --restore --root "$root" --runtime-dir "$rt" >"$tmp/out" 2>&1
check "item 7: --restore of hostile records exits 1" test $? -eq 1
check "... a pid above pid_max is refused (line 2)" grep -q "state:2: pid out of range" "$tmp/out"
check "... irq -1 is refused (line 3)" grep -q "state:3: IRQ number out of range" "$tmp/out"
check "... rq ../../x is refused (line 4)" grep -q "state:4: not a block device name" "$tmp/out"
check "... priority 200 is refused (line 5)" grep -q "state:5: scheduling policy or priority" "$tmp/out"
check "... policy 7 is refused (line 6)" grep -q "state:6: scheduling policy or priority" "$tmp/out"
check "... nothing was written outside the root" grep -qx 1 "$tmp/outside/x"
check "... the valid record is restored" affinity_is 0-7
check "... and the invalid ones are kept" grep -q "^rq ../../../outside/x 2" "$rt"/state.invalid-*
rm -f "$rt"/state.invalid-*

# --- --restore stopped after setting an invalid file aside -------------------
# The file with an invalid line went aside before the valid records were
# restored, and was written again with what failed only at the end: a
# --restore killed (or whose last write found the disk full) in between
# left no state file, and the next said "nothing to restore". A FIFO for
# proc/irq/20's file holds --restore in its first write (open(2) waits
# for a reader); IRQ 37 comes after it.
rm "$root/proc/irq/20/smp_affinity_list"
mkfifo "$root/proc/irq/20/smp_affinity_list"
echo 3 >"$aff"
printf '# irqpilot state 2\nirq x y\nirq 20 0-7\nirq 37 0-7\n' >"$rt/state"
chmod 600 "$rt/state"
"$bin" --restore --root "$root" --runtime-dir "$rt" >"$tmp/out" 2>&1 &
restore_pid=$!
pids="$pids $restore_pid"
check "--restore sets the invalid file aside" wait_for "$limit" sh -c "ls '$rt'/state.invalid-* >/dev/null 2>&1"
sleep 0.5
kill -9 "$restore_pid"
wait "$restore_pid" 2>/dev/null
check "killed in its restore: the state file keeps IRQ 20's record" grep -qx "irq 20 0-7" "$rt/state"
check "... and IRQ 37's" grep -qx "irq 37 0-7" "$rt/state"
check "... and not the invalid line, which is aside" sh -c "! grep -q '^irq x' '$rt/state'"
rm "$root/proc/irq/20/smp_affinity_list"
echo 5 >"$root/proc/irq/20/smp_affinity_list"
check "--restore again restores both" "$bin" --restore --root "$root" --runtime-dir "$rt"
check "... IRQ 20 to 0-7" grep -qx 0-7 "$root/proc/irq/20/smp_affinity_list"
check "... IRQ 37 to 0-7" affinity_is 0-7
check "... and removes the state file" test ! -e "$rt/state"
rm -f "$rt"/state.invalid-*

# --- item 6: no links, no foreign runtime directory --------------------------
echo precious >"$tmp/victim"
ln -s "$tmp/victim" "$rt/state"
"$bin" --root "$root" --runtime-dir "$rt" --config "$conf" --foreground >"$tmp/out" 2>&1
check "item 6: a symlinked state file refuses the start (exit 3)" test $? -eq 3
check "... saying so" grep -q "symbolic link" "$tmp/out"
rm "$rt/state"
ln -s "$tmp/victim" "$rt/state.tmp"
start
check "moved again" wait_for "$limit" moved
check "item 6: a planted state.tmp link is not written through" grep -qx precious "$tmp/victim"
check "... the state file is a regular file" test -f "$rt/state" -a ! -L "$rt/state"
stop 0
check "restored" affinity_is 0-7
: >"$rt/state"
chmod 600 "$rt/state"
start
check "an empty state file: the daemon starts" wait_for "$limit" "$ctl" status
stop 0
check "... and does not claim originals from an earlier run" sh -c "! grep -q 'found originals' '$log'"
chmod 770 "$rt"
"$bin" --root "$root" --runtime-dir "$rt" --config "$conf" --foreground >"$tmp/out" 2>&1
check "item 6: a group-writable runtime directory refuses the start (exit 3)" test $? -eq 3
check "... saying why" grep -q "writable by no one else" "$tmp/out"
chmod 700 "$rt"

# --- a state file of another boot ---------------------------------------------
# A --runtime-dir on a disk keeps the state file across a reboot, which put
# every setting back already. Its records were loaded as this boot's
# originals: IRQ 37, set to 2-3 in this boot, was not recorded as 2-3 when
# moved (one original per IRQ), and SIGTERM wrote the last boot's 0-7.
boot_a=6f1a3c1e-0d7b-4a0e-9d43-2b7c9a4c1f00
boot_b=0b2e6c5a-9f1d-4c3e-8a71-5d4f3e2c1b00
mkdir -p "$root/proc/sys/kernel/random"
echo "$boot_a" >"$root/proc/sys/kernel/random/boot_id"
start
check "moved again" wait_for "$limit" moved
check "the state file names its boot" grep -qx "# boot $boot_a" "$rt/state"
kill -9 "$daemon"
wait "$daemon" 2>/dev/null
cp "$rt/state" "$tmp/state.boot_a"
# the reboot: another boot_id, and this boot's setting of IRQ 37 is 2-3
echo "$boot_b" >"$root/proc/sys/kernel/random/boot_id"
echo 2-3 >"$aff"
start
check "after a reboot the daemon says the file is of another boot" \
	wait_for "$limit" grep -q "holds the originals of another boot (boot_id $boot_a; this is $boot_b)" "$log"
check "... keeps it aside" sh -c "cmp '$tmp/state.boot_a' '$rt'/state.invalid-*"
check "moved again" wait_for "$limit" moved
check "... and records this boot's original, 2-3" grep -q "^irq 37 2-3 " "$rt/state"
stop 0
check "SIGTERM restores this boot's 2-3, not the last boot's 0-7" affinity_is 2-3
rm -f "$rt"/state.invalid-*
cp "$tmp/state.boot_a" "$rt/state"
"$bin" --restore --root "$root" --runtime-dir "$rt" >"$tmp/out" 2>&1
check "--restore of another boot's file: exit 0" test $? -eq 0
check "... says there is nothing to restore, and why" grep -q "nothing to restore: .*another boot" "$tmp/out"
check "... writes nothing" affinity_is 2-3
check "... and keeps the file aside" sh -c "test ! -e '$rt/state' && cmp '$tmp/state.boot_a' '$rt'/state.invalid-*"
rm -f "$rt"/state.invalid-* "$root/proc/sys/kernel/random/boot_id"
echo 0-7 >"$aff"

# --- a state file of another root ---------------------------------------------
# A daemon run on a fixture tree with the live daemon's runtime directory,
# killed, left the tree's originals: loaded by a daemon of another root
# (the live one), the tree's CPU lists were written at its stop to whatever
# IRQs bear those numbers there. The file names its root; another root's
# daemon refuses to start and its --restore writes nothing.
other=$tmp/other-root
cp -a "$root" "$other"
echo 0-7 >"$other/proc/irq/37/smp_affinity_list"
start
check "moved again" wait_for "$limit" moved
check "the state file names its root" grep -qxF "# root $(realpath "$root")" "$rt/state"
kill -9 "$daemon"
wait "$daemon" 2>/dev/null
cp "$rt/state" "$tmp/state.root"
rc=0
timeout 20 "$bin" --root "$other" --runtime-dir "$rt" --config "$conf" --foreground >"$tmp/out" 2>&1 || rc=$?
check "a daemon of another root refuses to start: exit 3" test "$rc" -eq 3
check "... saying whose originals the file holds" \
	grep -qF "holds the originals of another root ($(realpath "$root"); this is $(realpath "$other"))" "$tmp/out"
rc=0
"$bin" --restore --root "$other" --runtime-dir "$rt" >"$tmp/out" 2>&1 || rc=$?
check "--restore under another root: exit 1" test "$rc" -eq 1
check "... writes nothing there" test "$(cat "$other/proc/irq/37/smp_affinity_list")" = 0-7
check "... and keeps the file as it was" cmp "$tmp/state.root" "$rt/state"
"$bin" --restore --root "$root" --runtime-dir "$rt" >"$tmp/out" 2>&1
check "--restore under its own root: exit 0" test $? -eq 0
check "... puts back 0-7" affinity_is 0-7

# --- --oneshot records its originals, as the daemon does --------------------
# It wrote and exited, and nothing recorded what it changed: --restore
# could not undo it, and a daemon started next took its placement for
# the machine's and restored that.
rm -f "$rt/state"
echo 0-7 >"$aff"
"$bin" --oneshot --root "$root" --runtime-dir "$rt" --config "$conf" --interval 1 >/dev/null 2>"$tmp/out"
check "--oneshot: exit 0" test $? -eq 0
check "... moves IRQ 37" moved
check "... records its original first" grep -q "^irq 37 0-7 " "$rt/state"
check "... and says where, and how to undo it" grep -qF "recorded in $rt/state; irqpilotd --restore puts them back" "$tmp/out"
"$bin" --restore --root "$root" --runtime-dir "$rt" >"$tmp/out" 2>&1
check "--restore after --oneshot: exit 0, 0-7 back" sh -c '[ $1 -eq 0 ] && [ "$(cat "$2")" = 0-7 ]' sh $? "$aff"
"$bin" --oneshot --root "$root" --runtime-dir "$rt" --config "$conf" --interval 1 >/dev/null 2>&1
check "--oneshot again moves IRQ 37" moved

# --restore beside a running --oneshot told the operator to stop it with
# SIGTERM "and it restores by itself": a --oneshot restores nothing.
"$bin" --oneshot --root "$root" --runtime-dir "$rt" --config "$conf" --interval 3 >/dev/null 2>&1 &
one=$!
pids="$pids $one"
wait_for "$limit" sh -c '[ "$(cat "$1/irqpilotd.lock" 2>/dev/null)" = "$2" ]' sh "$rt" "$one"
"$bin" --restore --root "$root" --runtime-dir "$rt" >"$tmp/out" 2>&1
check "--restore beside a running --oneshot is refused (exit 3)" test $? -eq 3
check "... not saying that it restores by itself" \
	sh -c '! grep -qF "stop it with SIGTERM, and it restores by itself" "$1" &&
		grep -qF "after an irqpilotd --oneshot run --restore again" "$1"' sh "$tmp/out"
wait "$one"
start
check "a daemon started after it takes its originals over" \
	wait_for "$limit" grep -q "found originals from an earlier run" "$log"
"$bin" --oneshot --root "$root" --runtime-dir "$rt" --config "$conf" --interval 0.3 >/dev/null 2>"$tmp/out"
check "--oneshot beside the daemon is refused (exit 3)" test $? -eq 3
check "... saying why" grep -q "refusing to write: another irqpilotd is running" "$tmp/out"

# --- one root, two runtime directories ----------------------------------------
# The runtime directory's lock kept out a daemon of that directory only:
# one given another moved the same IRQs, each took the other's moves for
# its originals, and the last to stop wrote the other's placement back.
mkdir -m 700 "$tmp/rt2"
"$bin" --root "$root" --runtime-dir "$tmp/rt2" --config "$conf" --foreground >"$tmp/out" 2>&1
check "a daemon with another runtime directory on the same root refuses (exit 3)" test $? -eq 3
check "... saying another changes those IRQs" grep -qF "another irqpilotd changes the IRQs under $(realpath "$root")" "$tmp/out"
# With nothing to restore it was refused all the same: the ExecStopPost
# --restore of a service refused beside a daemon run by hand failed too.
"$bin" --restore --root "$root" --runtime-dir "$tmp/rt2" >"$tmp/out" 2>&1
check "--restore with nothing to restore beside it: exit 0" test $? -eq 0
printf '# irqpilot state 2: original settings, for irqpilotd --restore\nirq 37 2-3 %s\n' \
	"chip=GICv3 hwirq=297 actions=ufshcd" >"$tmp/rt2/state"
chmod 600 "$tmp/rt2/state"
"$bin" --restore --root "$root" --runtime-dir "$tmp/rt2" >"$tmp/out" 2>&1
check "--restore with another runtime directory beside it is refused (exit 3)" test $? -eq 3
check "... and keeps its file" grep -q "^irq 37 2-3 " "$tmp/rt2/state"
rm "$tmp/rt2/state"
"$bin" --oneshot --root "$root" --runtime-dir "$tmp/rt2" --config "$conf" --interval 0.3 >/dev/null 2>&1
check "... and so is --oneshot (exit 3)" test $? -eq 3
# Without --runtime-dir it records nothing under a tree, and it took no
# lock either: it moved the daemon's IRQs under it.
"$bin" --oneshot --root "$root" --config "$conf" --interval 0.3 >/dev/null 2>"$tmp/out"
check "... and so is --oneshot recording nothing (exit 3)" test $? -eq 3
check "... saying why" grep -qF "refusing to write: another irqpilotd changes the IRQs under" "$tmp/out"
"$bin" --oneshot --dry-run --root "$root" --runtime-dir "$tmp/rt2" --config "$conf" --interval 0.3 >/dev/null 2>&1
check "--oneshot --dry-run, which writes nothing, runs beside it" test $? -eq 0
"$bin" --root "$root" --runtime-dir "$tmp/rt2" --config "$conf" --foreground --dry-run >"$tmp/dlog" 2>&1 &
dry=$!
pids="$pids $dry"
check "... and so does a daemon of --dry-run" wait_for "$limit" test -S "$tmp/rt2/control"
"$ctl" --socket "$tmp/rt2/control" dry-run off >"$tmp/out" 2>&1
check "... which irqctl dry-run off cannot make write (exit 1)" test $? -eq 1
check "... saying why" grep -qF "another irqpilotd changes the IRQs under" "$tmp/out"
kill "$dry"
wait "$dry"
# A daemon of --dry-run holds no lock, yet restores at stop the originals
# its state file holds: it wrote them under the daemon beside it.
printf '# irqpilot state 2: original settings, for irqpilotd --restore\n# root %s\nirq 37 2-3 %s\n' \
	"$(realpath "$root")" "chip=GICv3 hwirq=297 actions=ufshcd" >"$tmp/rt2/state"
chmod 600 "$tmp/rt2/state"
cp "$tmp/rt2/state" "$tmp/state.rt2"
"$bin" --root "$root" --runtime-dir "$tmp/rt2" --config "$conf" --foreground --dry-run >"$tmp/dlog" 2>&1 &
dry=$!
pids="$pids $dry"
check "a daemon of --dry-run with originals starts beside it" wait_for "$limit" test -S "$tmp/rt2/control"
kill "$dry"
wait "$dry"
check "... and at stop writes none of them under it" \
	sh -c '! grep -q "restored proc/irq/37" "$1" && grep -qx "[67]" "$2"' sh "$tmp/dlog" "$aff"
check "... saying why" grep -qF "not restoring: another irqpilotd changes the IRQs under" "$tmp/dlog"
check "... and keeps them in its file" cmp "$tmp/state.rt2" "$tmp/rt2/state"
rm "$tmp/rt2/state"
stop 0
check "SIGTERM restores the setting from before --oneshot, 0-7" affinity_is 0-7

# --- proc/irq locked by another user ------------------------------------------
# /proc/irq is world-readable: any user could flock it, and the service
# refused to start (exit 3, never restarted), its ExecStopPost --restore
# put nothing back and --oneshot was refused, all for a process that
# cannot write an IRQ. Only a holder of our euid or root's counts.
if command -v setpriv >/dev/null && command -v flock >/dev/null; then
	chmod o+x "$tmp"
	mkdir -m 777 "$tmp/squat"
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		flock -x "$root/proc/irq" sh -c 'echo $$ >"$1"; exec sleep 60' sh "$tmp/squat/pid" &
	pids="$pids $!"
	wait_for "$limit" test -s "$tmp/squat/pid"
	"$bin" --oneshot --root "$root" --runtime-dir "$rt" --config "$conf" --interval 1 >/dev/null 2>"$tmp/out"
	check "another user's lock on proc/irq does not refuse --oneshot (exit 0)" test $? -eq 0
	check "... said as another user's" grep -qF "proc/irq is locked by another user's process" "$tmp/out"
	"$bin" --restore --root "$root" --runtime-dir "$rt" >"$tmp/out" 2>&1
	check "... nor --restore, which puts back 0-7" sh -c '[ $1 -eq 0 ] && [ "$(cat "$2")" = 0-7 ]' sh $? "$aff"
	# the daemon's warning goes to its log (the journal, with a priority)
	start
	check "... nor the daemon, which warns in its log" \
		wait_for "$limit" grep -qF "irqpilotd: warning: $root/proc/irq is locked by another user's process" "$log"
	check "... and moves IRQ 37" wait_for "$limit" moved
	stop 0
	kill "$(cat "$tmp/squat/pid")"
	chmod o-x "$tmp"
else
	echo "# SKIP another user's lock: no setpriv or flock"
fi

# --- the runtime directory's lock is root's alone ---------------------------
# Made 0644 (by --oneshot run by hand in /run/irqpilot, umask 022), any
# user could open and flock it: the service then refused to start (exit
# 3) and its ExecStopPost --restore to run.
mkdir -m 755 "$tmp/rt3"
: >"$tmp/rt3/irqpilotd.lock"
chmod 644 "$tmp/rt3/irqpilotd.lock"
(umask 022 && "$bin" --oneshot --root "$root" --runtime-dir "$tmp/rt3" --config "$conf" --interval 1 >/dev/null 2>&1)
check "--oneshot leaves the lock it found mode 0600" test "$(stat -c %a "$tmp/rt3/irqpilotd.lock")" = 600
rm "$tmp/rt3/irqpilotd.lock"
(umask 022 && "$bin" --restore --root "$root" --runtime-dir "$tmp/rt3" >/dev/null 2>&1)
check "--restore creates it mode 0600, and puts back 0-7" \
	sh -c '[ "$(stat -c %a "$1")" = 600 ] && [ "$(cat "$2")" = 0-7 ]' sh "$tmp/rt3/irqpilotd.lock" "$aff"
rm -rf "$tmp/rt3"

# --- a freed vector's original is not written onto the next one -------------
# free_desc() removes /proc/irq/37 and the line; the next vector allocated
# may get number 37 (a driver reloaded). Restoring the old vector's 0-7
# there would overwrite what that vector's driver or admin set (here 3).
start
check "moved again" wait_for "$limit" moved
free_vector "$root" 37 "$tmp/irq37"
# a cycle needs I/O (io_done); each try counts some
freed() { io_done sda 100 && ! grep -q '^irq 37 ' "$rt/state" 2>/dev/null; }
check "IRQ 37 freed: its original is dropped" wait_for "$limit" freed
check "... and the log says so" grep -q "notice: IRQ 37 was freed (its line and proc/irq/37 are gone): its original is dropped" "$log"
cp -a "$tmp/irq37" "$root/proc/irq/37"
echo 3 >"$aff"
awk '{ print } /^ *20:/ { print " 37:          0          0          0          5          0          0          0          0     GICv3 400 Level     mydev" }' \
	"$tmp/interrupts.freed" >"$tmp/interrupts.reused"
rewrite "$root/proc/interrupts" "$tmp/interrupts.reused"
io_done sda 100
sleep 1
stop 0
check "... and not restored onto the vector now numbered 37" affinity_is 3

# --- a number given to another vector before a sample saw it gone ----------
# The vector moved is freed and the next one allocated gets number 37 at
# once: the line and proc/irq/37 are there, but the line shows another
# chip, hwirq and name. Its original (0-7, recorded with ufshcd's line) is
# not that vector's.
fixture_line37() { # the tree as before the freed vector: ufshcd on 37, at 0-7
	grep '^ *37:' "$top_srcdir/tests/fixtures/phone-arm64/proc/interrupts" >"$tmp/line37"
	awk -v l="$(cat "$tmp/line37")" '{ print } /^ *20:/ { print l }' \
		"$tmp/interrupts.freed" >"$tmp/interrupts.ufs"
	rewrite "$root/proc/interrupts" "$tmp/interrupts.ufs"
	rm -rf "$root/sys/kernel/irq/37"
	cp -a "$top_srcdir/tests/fixtures/phone-arm64/sys/kernel/irq/37" "$root/sys/kernel/irq/37"
	echo 0-7 >"$aff"
}
# free_desc() removes the old vector's /sys/kernel/irq/37 (the daemon's
# kept per_cpu_count fd fails, and it reads all of /proc/interrupts); the
# new vector's line, from another device, is in its place.
reuse_37() {
	stop_standin "$standin_pid"
	free_irq_dir "$root/sys/kernel/irq/37"
	rewrite "$root/proc/interrupts" "$tmp/interrupts.reused"
}
reused_notice="IRQ 37 was freed (its number names another vector now): its original is dropped, not written onto the next IRQ of that number; the line shows"

fixture_line37
standin_kernel "$root" 37 sda 6
pids="$pids $standin_pid"
start
check "ufshcd's IRQ 37 is moved" wait_for "$limit" moved
check "its original is recorded with the line's chip, hwirq and name" \
	grep -qx "$rec37" "$rt/state"
reuse_37
reused() { io_done sda 100 && ! grep -q '^irq 37 ' "$rt/state" 2>/dev/null; }
check "IRQ 37 reused by another vector: the next sample drops its original" wait_for "$limit" reused
# no storage vector now, so sampled untracked: its name alone is known
check "... saying why, as for a freed vector" grep -qF "notice: $reused_notice mydev, not GICv3 297 ufshcd" "$log"
echo 3 >"$aff"
stop 0
check "... and 0-7 is not restored onto the vector now numbered 37" affinity_is 3

# The same after a kill -9: --restore reads the line afresh.
fixture_line37
standin_kernel "$root" 37 sda 6
pids="$pids $standin_pid"
start
check "moved again" wait_for "$limit" moved
check "... recorded with its line" grep -qx "$rec37" "$rt/state"
kill -9 "$daemon"
wait "$daemon" 2>/dev/null
reuse_37
echo 3 >"$aff"
"$bin" --restore --root "$root" --runtime-dir "$rt" >"$tmp/out" 2>&1
check "--restore after kill -9, IRQ 37 reused: exit 0" test $? -eq 0
check "... does not write 0-7 onto the new vector" affinity_is 3
check "... and says why" grep -qF "$reused_notice GICv3 400 mydev, not GICv3 297 ufshcd" "$tmp/out"
check "... and drops the original" sh -c "! grep -q '^irq 37 ' '$rt/state' 2>/dev/null"

# --- a line made up inside a GPIO consumer label -----------------------------
# gpiolib-cdev requests a line's IRQ under the label user space chose (31
# bytes, a newline allowed): "\n37: 9 9 9 9 9 9 9 9 G 1 mydev" printed a second
# line for 37, another vector's by its name. --restore took it for the
# kernel's, dropped ufshcd's original as freed and left 37 where moved.
fixture_line37
standin_kernel "$root" 37 sda 6
pids="$pids $standin_pid"
start
check "moved again" wait_for "$limit" moved
kill -9 "$daemon"
wait "$daemon" 2>/dev/null
stop_standin "$standin_pid"
moved_to=$(cat "$aff")
awk '{ print } /^ *45:/ { print "210:          0          0          0          0          0          0          0          0  pinctrl  12 Edge      cd"; print "37: 9 9 9 9 9 9 9 9 G 1 mydev" }' \
	"$tmp/interrupts.ufs" >"$tmp/interrupts.label"
rewrite "$root/proc/interrupts" "$tmp/interrupts.label"
"$bin" --restore --root "$root" --runtime-dir "$rt" >"$tmp/out" 2>&1
check "--restore beside a made-up line for IRQ 37: exit 0" test $? -eq 0
check "... restores 0-7, not dropping it as freed (was $moved_to)" affinity_is 0-7
check "... and leaves no record" sh -c "! grep -q '^irq 37 ' '$rt/state' 2>/dev/null"

if [ "$fail" -ne 0 ]; then
	echo "--- daemon log"
	cat "$log"
fi
exit $fail
