#!/bin/sh
# irqpilotd as an operator meets it: started on a writable copy of the
# phone fixture with a temporary runtime directory, driven with irqctl, and
# checked by the files it writes. A small loop stands in for the kernel:
# it counts the UFS interrupts on the CPU the vector's affinity names and
# the submissions of a "fio" on CPU 6.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/lib-daemon.sh
. "$top_srcdir/tests/lib-daemon.sh"
raw=$top_builddir/tests/ctl-raw

daemon_test_dirs daemon

affinity_is() { [ "$(cat "$root/proc/irq/37/smp_affinity_list")" = "$1" ]; }
affinity_in() { grep -qx "$1" "$root/proc/irq/37/smp_affinity_list"; }

cp -a "$top_srcdir/tests/fixtures/phone-arm64" "$root"
chmod 755 "$tmp"
cat >"$conf" <<'EOF'
[daemon]
interval = 0.3
[policy]
dwell = 1
EOF

# --- the stand-in kernel and workload --------------------------------------
mkdir -p "$root/irqpilot"
standin_kernel "$root" 37 sda 6
pids="$pids $standin_pid"

# --- start ------------------------------------------------------------------
start_daemon
if wait_for "$limit" test -S "$rt/control"; then ok "the daemon opens its control socket"; else
	bad "the daemon opens its control socket"
	cat "$log"
	exit 1
fi
# irqctl(8), ACCESS CONTROL: mode 0660, the daemon's user's (root's, run as
# root); made so by bind(), with no chmod by path after it.
check "... with mode 0660, owned by the daemon's user" \
	test "$(stat -c '%a %u' "$rt/control")" = "660 $(id -u)"
run "irqctl status answers" "$ctl" status
check "status counts the two UFS LUNs" grep -q "devices: 2" "$tmp/out"
check "the UFS vector moves to the performance domain of fio's CPU" wait_for "$limit" affinity_in '[67]'
check "the move is logged once with its reason" wait_for "$limit" sh -c "[ \$(grep -c 'moved 37 ufshcd 0 → [67]' '$log') -eq 1 ]"
check "status names the move and the cycle that made it" wait_for "$limit" sh -c "'$ctl' status | grep -Eq '^moves: 1; last: 37 ufshcd → [67], in cycle [0-9]+\$'"
check "... so does --json" sh -c "'$ctl' --json status | grep -Eq '\"last_move_cycle\": *[1-9]'"
run "irqctl explain 37 gives the evidence" "$ctl" explain 37
# a loaded machine can starve the stand-in kernel for a cycle: ask again
check "... the submitter domain" wait_for "$limit" sh -c "'$ctl' explain 37 | grep -q 'performance domain 6-7: 100%'"
check "... and the decision" grep -q "decision: " "$tmp/out"
run "irqctl show irqs --json" "$ctl" show irqs --json
check "... lists IRQ 37" grep -q '"irq": 37' "$tmp/out"
run "irqctl top --once" "$ctl" top --once
check "... shows its locality, 100% once settled" wait_for "$limit" sh -c "'$ctl' top --once | grep -q '^37 .* 100%'"
check "irqctl explain of an unknown IRQ fails" sh -c "! '$ctl' explain 999"

# --- pin, unpin -------------------------------------------------------------
check "irqctl pin 37 4-5" "$ctl" pin 37 4-5
check "the pin is written" wait_for "$limit" affinity_is 4-5
check "explain says it is pinned" sh -c "'$ctl' explain 37 | grep -q 'pinned at run time to 4-5'"
check "irqctl unpin 37" "$ctl" unpin 37
if ! wait_for "$limit" affinity_in '[67]'; then
	bad "unpinned, it goes back to its submitters"
	"$ctl" explain 37; cat "$tmp/kernel.err"
else
	ok "unpinned, it goes back to its submitters"
fi
check "unpin of an IRQ that is not pinned fails" sh -c "! '$ctl' unpin 37"
# the phone has CPUs 0-7: a pin on CPU 100 could never be placed
check "irqctl pin 37 6,100 (no CPU 100) fails" sh -c "! '$ctl' pin 37 6,100 2>'$tmp/pin.err'"
check "... saying so" grep -q "no CPU 100 on this machine (possible: 0-7)" "$tmp/pin.err"
check "... and nothing is pinned" sh -c "! '$ctl' explain 37 | grep -q 'pinned at run time'"

# --- dry run ----------------------------------------------------------------
check "irqctl dry-run on" "$ctl" dry-run on
check "status says dry run" sh -c "'$ctl' status | grep -q 'dry run'"
before=$(cat "$root/proc/irq/37/smp_affinity_list")
"$ctl" pin 37 2 >/dev/null
sleep 1.5
check "in a dry run nothing is written" affinity_is "$before"
"$ctl" unpin 37 >/dev/null
check "irqctl dry-run off" "$ctl" dry-run off

# --- reload -----------------------------------------------------------------
cp "$conf" "$conf.good"
printf '[policy]\nmove_threshold = 150\n' >"$conf"
check "reload of a bad file fails" sh -c "! '$ctl' reload >'$tmp/reload' 2>&1"
check "... naming file and line" grep -q "irqpilot.conf:2: move_threshold" "$tmp/reload"
kill -HUP "$daemon"
sleep 0.5
check "SIGHUP with a bad file leaves it running" "$ctl" status
check "... and says so in the log" grep -q "reload rejected, keeping the running policy" "$log"
cp "$conf.good" "$conf"
check "reload of a good file" "$ctl" reload

# --- isolation and banned CPUs at run time ---------------------------------------
# CPUs fenced off while the daemon runs: the vector leaves them the next cycle.
# cpuset.cpus.isolated is as kernel/cgroup/cpuset.c prints it ("%*pbl\n", "\n"
# when empty; cpuset_common_seq_show(), FILE_ISOLATED_CPULIST).
mkdir -p "$root/sys/fs/cgroup"
check "the vector sits in the performance domain" wait_for "$limit" affinity_in '[67]'
on=$(cat "$root/proc/irq/37/smp_affinity_list")
other=$((13 - on))
echo "$on" >"$root/sys/fs/cgroup/cpuset.cpus.isolated"
check "CPU $on made isolated (cgroup v2 partition): the vector leaves it" wait_for "$limit" affinity_is "$other"
# (from: where it was handled in the cycle's interval, which may hold both CPUs)
check "... logged with its reason" wait_for "$limit" grep -Eq "moved 37 ufshcd [0-9,-]+ → $other: on isolated or nohz_full CPU $on, moved off at once" "$log"
echo >"$root/sys/fs/cgroup/cpuset.cpus.isolated"
run "irqctl ban $other" "$ctl" ban "$other"
check "... says the set and that a reload keeps it" grep -q "CPUs $other banned; banned now: $other (kept across reload" "$tmp/out"
check "the banned CPU is left" wait_for "$limit" affinity_is "$on"
run "irqctl ban $other again" "$ctl" ban "$other"
check "... succeeds and says it already was" grep -q "CPUs $other banned ($other already were); banned now: $other" "$tmp/out"
if wait_for "$limit" grep -Eq "moved 37 ufshcd [0-9,-]+ → $on: on banned CPU $other, moved off at once" "$log"; then
	ok "... logged with its reason"
else
	bad "... logged with its reason"
	grep "moved 37" "$log"
fi
"$ctl" ban 0-7 >"$tmp/out" 2>&1
check "banning every online CPU is refused (exit 1)" test $? -eq 1
check "... saying why" grep -q "would ban every online CPU" "$tmp/out"
# the same from the policy file: the reload was taken, and the vector,
# with no CPU left to use, stayed where it was, on a banned CPU, unsaid
cp "$conf" "$conf.good"
printf '[cpus]\nbanned = 0-7\n' >>"$conf"
check "a reload into a file banning every online CPU is refused" sh -c "! '$ctl' reload >'$tmp/reload' 2>&1"
check "... saying why" grep -q "irqpilot.conf: \[cpus\] banned = 0-7 with irqctl's ban of $other bans every online CPU (online 0-7)" \
	"$tmp/reload"
check "... and the log that the running policy is kept" \
	grep -q "reload rejected, keeping the running policy: .* bans every online CPU" "$log"
cp "$conf.good" "$conf"
"$ctl" ban 0-99 >"$tmp/out" 2>&1
check "banning CPUs the machine lacks is refused" test $? -eq 1
check "... saying which" grep -q "no CPU 8-99 on this machine (possible: 0-7)" "$tmp/out"
"$ctl" ban 4- >"$tmp/out" 2>&1
check "a malformed CPU list is a usage error (exit 2)" test $? -eq 2
"$ctl" unban 3 >"$tmp/out" 2>&1
check "unban of a CPU that is not banned fails" grep -q "CPU 3 is not banned (banned: $other)" "$tmp/out"
check "reload keeps the run-time ban" "$ctl" reload
sleep 1
check "... the vector stays off it" affinity_is "$on"
run "... and unban still finds it banned" "$ctl" unban "$other"
check "... now none is" grep -q "banned now: none" "$tmp/out"

# --- who may do what ----------------------------------------------------------
chmod 755 "$rt"
chmod 666 "$rt/control"
if command -v setpriv >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
	nobody="setpriv --reuid=nobody --regid=nogroup --clear-groups"
	check "nobody may read" $nobody "$ctl" status
	$nobody "$ctl" pin 37 0 >"$tmp/out" 2>&1
	rc=$?
	check "nobody may not pin (exit 4)" test "$rc" -eq 4
	check "... and is told why" grep -q "only root may do that" "$tmp/out"
	$nobody "$ctl" dry-run on >/dev/null 2>&1
	check "nobody may not toggle dry run" test $? -eq 4
	$nobody "$ctl" ban 5 >"$tmp/out" 2>&1
	check "nobody may not ban (exit 4)" test $? -eq 4
else
	echo "ok - nobody checks skipped: needs root and setpriv"
fi

# --- hostile clients ----------------------------------------------------------
"$raw" "$rt/control" --hold 4 &
pids="$pids $!"
run "junk is answered with an error" "$raw" "$rt/control" --junk 3000
check "... and the client is cut off" grep -q "after: closed" "$tmp/out"
run "an oversized request is refused" "$raw" "$rt/control" --junk 9000
check "... with EMSGSIZE" grep -q '"ok":false' "$tmp/out"
run "an unknown protocol version is refused" "$raw" "$rt/control" "v9 status"
check "... and the client is cut off" grep -q "after: closed" "$tmp/out"
check "a second client is not disturbed" "$ctl" status
# output that does not reach stdout is a failure, not a silent exit 0
if [ -w /dev/full ]; then
	"$ctl" show irqs --json >/dev/full 2>"$tmp/out"
	check "irqctl's output on a full disk fails (exit 1)" test $? -eq 1
	check "... saying so" grep -q "irqctl: writing to standard output: No space left on device" "$tmp/out"
	# the limit only ends an irqctl that would redraw into /dev/full for good
	timeout "$limit" "$ctl" top --interval 0.1 >/dev/full 2>"$tmp/out"
	check "irqctl top on a full disk stops at its first table (exit 1)" test $? -eq 1
	"$bin" --root "$root" --capture "$tmp/series" --samples 2 --interval 0.1 >/dev/null 2>&1
	check "irqpilotd --capture records a series" test -d "$tmp/series/0001"
	"$bin" --replay "$tmp/series" --json >/dev/full 2>"$tmp/out"
	check "irqpilotd --replay's report on a full disk fails (exit 1)" test $? -eq 1
	check "... saying so" grep -q "irqpilotd: writing the report to standard output: No space" "$tmp/out"
	"$bin" --check-config "$conf" --verbose >/dev/full 2>"$tmp/out"
	check "irqpilotd --check-config --verbose on a full disk fails (exit 1)" test $? -eq 1
	check "... saying so" grep -q "irqpilotd: writing to standard output: No space" "$tmp/out"
	for opt in --help --version; do
		"$bin" $opt >/dev/full 2>"$tmp/out"
		check "irqpilotd $opt on a full disk fails (exit 1)" test $? -eq 1
		check "... saying so" grep -q "irqpilotd: writing to standard output: No space" "$tmp/out"
	done
else
	skip "output on a full disk: no /dev/full"
fi

# --- refusing to start --------------------------------------------------------
"$bin" --root "$root" --runtime-dir "$rt" --config "$conf" >"$tmp/second" 2>&1
check "a second irqpilotd refuses to start (exit 3)" test $? -eq 3
check "... because the first holds the lock" grep -q "another irqpilotd is running" "$tmp/second"
"$bin" --check-config="$tmp/none.conf" >/dev/null 2>&1
check "--check-config of a missing file fails (exit 2)" test $? -eq 2
printf '[daemon]\ninterval = fast\n' >"$tmp/bad.conf"
"$bin" --check-config="$tmp/bad.conf" >"$tmp/out" 2>&1
check "--check-config of a bad file fails (exit 2)" test $? -eq 2
check "... with FILE:LINE" grep -q "bad.conf:2: interval" "$tmp/out"
"$bin" --check-config "$tmp/bad.conf" >"$tmp/out" 2>&1
check "--check-config FILE (with a space) checks FILE, not the default" test $? -eq 2
check "... with FILE:LINE" grep -q "bad.conf:2: interval" "$tmp/out"
"$bin" --check-config "$tmp/bad.conf" --config "$conf" >"$tmp/out" 2>&1
check "--check-config FILE --config OTHER checks FILE, wherever --config stands" test $? -eq 2
"$bin" --check-config "$conf" --verbose >"$tmp/out" 2>&1
check "--check-config FILE --verbose accepts a good file" test $? -eq 0
# admin_group names a group of the machine the daemon runs on, and a file
# may be checked on another: valid, but the daemon's refusal here is told.
nogroup=irqpilot-no-such-group
if getent group "$nogroup" >/dev/null 2>&1; then
	skip "--check-config with an unknown admin_group: this machine has a group $nogroup"
else
	printf '[control]\nadmin_group = %s\n' "$nogroup" >"$tmp/nogroup.conf"
	"$bin" --check-config "$tmp/nogroup.conf" >"$tmp/out" 2>"$tmp/err"
	check "--check-config accepts an admin_group this machine lacks (exit 0)" test $? -eq 0
	check "... says the file is valid" grep -qx "$tmp/nogroup.conf: valid" "$tmp/out"
	check "... and warns on stderr, naming the file, the key and the group" grep -qxF \
		"irqpilotd: warning: $tmp/nogroup.conf: [control] admin_group: $nogroup is not a group of this machine; irqpilotd would refuse to start here" \
		"$tmp/err"
	"$bin" --root "$root" --runtime-dir "$tmp/run3" --config "$tmp/nogroup.conf" --foreground \
		>"$tmp/out" 2>&1
	check "... which the daemon does (exit 2)" test $? -eq 2
fi
printf '[control]\nadmin_group = %s\n' "$(id -gn)" >"$tmp/group.conf"
"$bin" --check-config "$tmp/group.conf" >"$tmp/out" 2>"$tmp/err"
check "--check-config of an admin_group this machine has warns of nothing" \
	sh -c '[ $1 -eq 0 ] && [ ! -s "$2" ]' sh $? "$tmp/err"
cp -a "$top_srcdir/tests/fixtures/phone-arm64" "$tmp/root2"
mkdir -p "$tmp/root2/proc/4242"
echo irqbalance >"$tmp/root2/proc/4242/comm"
"$bin" --root "$tmp/root2" --runtime-dir "$tmp/run2" --config "$conf" >"$tmp/out" 2>&1
check "irqbalance running: refuses to start (exit 3)" test $? -eq 3
check "... and says how to coexist" grep -q "coexist = yes" "$tmp/out"

# --- a --dry-run daemon made to write, reloaded into dry_run = yes -------------
# It went on writing: the reload left a --dry-run daemon's state alone.
cp -a "$top_srcdir/tests/fixtures/phone-arm64" "$tmp/root-dry"
mkdir -m 700 "$tmp/rt-dry"
printf '[daemon]\ninterval = 0.3\n' >"$tmp/dry.conf"
"$bin" --root "$tmp/root-dry" --runtime-dir "$tmp/rt-dry" --config "$tmp/dry.conf" --foreground --dry-run \
	>"$tmp/dry.log" 2>&1 &
dry=$!
pids="$pids $dry"
check "a daemon of --dry-run on another tree starts" wait_for "$limit" test -S "$tmp/rt-dry/control"
check "... irqctl dry-run off makes it write" "$ctl" --socket "$tmp/rt-dry/control" dry-run off
printf '[daemon]\ninterval = 0.3\ndry_run = yes\n' >"$tmp/dry.conf"
check "... a reload into dry_run = yes" "$ctl" --socket "$tmp/rt-dry/control" reload
check "... makes it a dry run again" \
	sh -c "'$ctl' --socket '$tmp/rt-dry/control' --json status | grep -q '\"dry_run\": true'"
kill "$dry"
wait "$dry"

# --- explain by one action name of a shared line ------------------------------
# IRQ 10 of the QEMU fixture is "mmc0, sym53c8xx": explain took only the
# whole string, which no argument can be (it has a blank).
cp -a "$top_srcdir/tests/fixtures/qemu-intx-shared" "$tmp/root-shared"
mkdir -m 700 "$tmp/rt-shared"
"$bin" --root "$tmp/root-shared" --runtime-dir "$tmp/rt-shared" --config "$tmp/dry.conf" --foreground --dry-run \
	>"$tmp/shared.log" 2>&1 &
shared=$!
pids="$pids $shared"
check "a daemon on the QEMU fixture starts" wait_for "$limit" test -S "$tmp/rt-shared/control"
for name in mmc0 sym53c8xx; do
	run "irqctl explain $name (one action of shared IRQ 10)" "$ctl" --socket "$tmp/rt-shared/control" explain "$name"
	check "... explains IRQ 10" grep -q "^IRQ 10 mmc0, sym53c8xx" "$tmp/out"
done
kill "$shared"
wait "$shared"

# --- the default policy file gone at a reload ------------------------------------
# Without --config a missing default file is the built-in policy at start;
# at a reload it was taken the same way, and a file deleted or moved aside
# by hand dropped its [cpus] banned in silence. The default path is the
# build's (irqpilotd --help says it); the daemon runs in a private mount
# namespace where an overlay of ours over that path's grandparent holds the
# file, removed and put back from inside, so the host's is never touched.
defconf=$("$bin" --help | sed -n 's/.*policy file (default \(.*\))$/\1/p')
defetc=$(dirname "$(dirname "$defconf")")
inns() { nsenter -t "$defd" -m "$@"; }
if [ "$(id -u)" = 0 ] && command -v unshare >/dev/null && command -v nsenter >/dev/null && [ -d "$defetc" ] &&
	grep -qw overlay /proc/filesystems && unshare -m true 2>/dev/null; then
	mkdir -p "$tmp/ov/up" "$tmp/ov/work" "$tmp/rt-def"
	chmod 700 "$tmp/rt-def"
	printf '[daemon]\ninterval = 0.3\n[cpus]\nbanned = 5\n' >"$tmp/def.conf"
	unshare -m sh -c 'mount -t overlay overlay -o "lowerdir=$2,upperdir=$1/up,workdir=$1/work" "$2" &&
		mkdir -p "$(dirname "$3")" && cp "$4" "$3" && shift 4 && exec "$@"' \
		sh "$tmp/ov" "$defetc" "$defconf" "$tmp/def.conf" \
		"$bin" --root "$root" --runtime-dir "$tmp/rt-def" --foreground --dry-run >"$tmp/def.log" 2>&1 &
	defd=$!
	pids="$pids $defd"
	check "a daemon on the default policy file starts" wait_for "$limit" test -S "$tmp/rt-def/control"
	inns rm "$defconf"
	"$ctl" --socket "$tmp/rt-def/control" reload >"$tmp/out" 2>&1
	check "a reload with the default file gone is refused (exit 1)" test $? -eq 1
	check "... saying why" grep -q "$defconf is gone (the running policy was read from it)" "$tmp/out"
	# a ban of a banned CPU says so: the file's [cpus] banned = 5 stands
	run "... and its ban stays" "$ctl" --socket "$tmp/rt-def/control" ban 5
	check "... as irqctl ban 5 says" grep -q "CPUs 5 banned (5 already were)" "$tmp/out"
	inns cp "$tmp/def.conf" "$defconf"
	check "put back, the reload is taken" "$ctl" --socket "$tmp/rt-def/control" reload
	kill "$defd"
	wait "$defd"
	check "the host's default path is untouched" sh -c "! cmp -s '$tmp/def.conf' '$defconf' 2>/dev/null"
else
	skip "the default policy file gone at a reload: needs root, unshare -m, nsenter and overlayfs"
fi

# --- an action named "" -------------------------------------------------------
# MT8195's mtk-sd requests its IRQ under pdev->name, "" for a devicetree
# device: the line's blanks say it has an action, and reports said "(no action)".
"$bin" --root "$top_srcdir/tests/fixtures/mt8195-emmc" --oneshot --dry-run --interval 0.1 --config "$tmp/dry.conf" \
	>"$tmp/out" 2>&1
check "--oneshot shows the eMMC host's vector with its unnamed action" grep -q "vector 129 (unnamed action) affinity" "$tmp/out"
check "... and its decision so" grep -q "kept 129 (unnamed action): " "$tmp/out"
mkdir -m 700 "$tmp/rt-mtk"
"$bin" --root "$top_srcdir/tests/fixtures/mt8195-emmc" --runtime-dir "$tmp/rt-mtk" --config "$tmp/dry.conf" --foreground \
	--dry-run >"$tmp/mtk.log" 2>&1 &
mtk=$!
pids="$pids $mtk"
check "a daemon on the MT8195 fixture starts" wait_for "$limit" test -S "$tmp/rt-mtk/control"
check "irqctl explain 129 says its action is unnamed" wait_for "$limit" \
	sh -c "'$ctl' --socket '$tmp/rt-mtk/control' explain 129 | grep -q '^IRQ 129 (unnamed action) (GICv3 163 Level)'"
kill "$mtk"
wait "$mtk"

# --- stopping -----------------------------------------------------------------
check "a move is in place before stopping" affinity_in '[67]'
# with the vector it is of: its line's chip, hwirq and name
check "the state file records the original" grep -q "^irq 37 0-7 chip=GICv3 hwirq=297 actions=ufshcd$" "$rt/state"
kill -TERM "$daemon"
rc=0
wait "$daemon" || rc=$?
check "SIGTERM: exit 0" test "$rc" -eq 0
check "SIGTERM restores the original affinity" affinity_is 0-7
check "... and removes the state file" test ! -e "$rt/state"

"$bin" --root "$root" --runtime-dir "$rt" --config "$conf" >"$log" 2>&1 &
daemon=$!
pids="$pids $daemon"
check "started again, it moves the vector" wait_for "$limit" affinity_in '[67]'
wait_for "$limit" test -e "$rt/state"
kill -9 "$daemon"
wait "$daemon" 2>/dev/null
check "after kill -9 the original is still recorded" grep -q "^irq 37 0-7 chip=GICv3 hwirq=297 actions=ufshcd$" "$rt/state"
check "irqpilotd --restore puts it back" "$bin" --restore --root "$root" --runtime-dir "$rt"
check "... to 0-7" affinity_is 0-7
check "--restore with nothing recorded is fine" "$bin" --restore --root "$root" --runtime-dir "$rt"

if [ "$fail" -ne 0 ]; then
	echo "--- daemon log"
	cat "$log"
fi
exit $fail
