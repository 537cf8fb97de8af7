#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# irqpilotd's control socket against clients that should not get their way,
# on a writable copy of the phone fixture (nothing of this machine is
# touched):
#  - a client inside a user namespace ("unshare -U -r", root or not there)
#    is refused every write verb, with a message saying why, and the
#    daemon's state is unchanged;
#  - [control] admin_group lets its members write, by primary or
#    supplementary group, but not from inside a user namespace; a reload
#    naming another group holds for connections already open;
#  - 64 idle connections of one unprivileged uid leave the table open:
#    root's status answers within a second; with the table full of four
#    users' readers root still gets in, and the idle readers are cut;
#  - oversized and malformed requests are refused;
#  - a daemon with no file descriptor left tells a client so, and does not
#    spin on the connection it cannot take;
#  - capture writes only below the state directory, through no symlink;
#  - a runtime directory another user may write is refused before the
#    lock in it is written through a link planted there, and one whose
#    parent another user may write loses no other file at the stop, nor
#    has another file's mode set when swapped while the socket is made;
#  - irqpilotd --capture refuses a directory another user made, and
#    irqctl capture a state directory another user may write.
# Needs root and setpriv (exit 77 otherwise). Without unprivileged user
# namespaces the rest runs and the script exits 77 when nothing else failed.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/lib-daemon.sh
. "$top_srcdir/tests/lib-daemon.sh"
raw=$top_builddir/tests/ctl-raw

if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null 2>&1; then
	echo "SKIP: needs root and setpriv to run clients as other users"
	exit 77
fi
userns=yes
if ! unshare -U -r true 2>/dev/null; then
	userns=no
elif ! setpriv --reuid=nobody --regid=nogroup --clear-groups unshare -U -r true 2>/dev/null; then
	userns=no
fi

daemon_test_dirs hostile
state=$tmp/state
export STATE_DIRECTORY=$state

# fails_saying STATUS DESCRIPTION PATTERN command...: exit STATUS ("any": any
# but 0) and PATTERN said; else its output is shown, to say what it did instead
fails_saying() {
	want=$1
	d=$2
	pat=$3
	shift 3
	"$@" >"$tmp/out" 2>&1
	rc=$?
	if [ "$rc" -ne 0 ] && { [ "$want" = any ] || [ "$rc" -eq "$want" ]; } && grep -q "$pat" "$tmp/out"; then
		ok "$d"
	else
		bad "$d (exit $rc)"
		sed 's/^/    /' "$tmp/out"
	fi
}
# refused DESCRIPTION PATTERN command...: exit 4 (permission) and PATTERN said
refused() { fails_saying 4 "$@"; }
# ms command...: how long it took, in milliseconds, in $elapsed; its status
ms() {
	t0=$(date +%s%N)
	"$@" >"$tmp/out" 2>&1
	r=$?
	elapsed=$((($(date +%s%N) - t0) / 1000000))
	return $r
}
nobody="setpriv --reuid=nobody --regid=nogroup --clear-groups"
as_uid() { # UID command...
	u=$1
	shift
	setpriv --reuid="$u" --regid="$u" --clear-groups "$@"
}

cp -a "$top_srcdir/tests/fixtures/phone-arm64" "$root"
mkdir -p "$state" "$tmp/outside"
chmod 755 "$tmp"
# Clients run as other users, some inside a user namespace, where only the
# mode bits count: a build tree below a 0700 directory (mktemp -d, as a CI
# clone may be) is out of their reach. Their own copies are not.
cp "$ctl" "$raw" "$tmp/"
ctl=$tmp/${ctl##*/}
raw=$tmp/${raw##*/}
printf '[daemon]\ninterval = 0.3\n' >"$conf"

"$bin" --root "$root" --runtime-dir "$rt" --config "$conf" --foreground >"$log" 2>&1 &
daemon=$!
pids="$pids $daemon"
if ! wait_for "$limit" test -S "$rt/control"; then
	bad "the daemon opens its control socket"
	cat "$log"
	exit 1
fi
# as irqctl(8) says to open it to a group; here to everyone
chmod 666 "$rt/control"
check "root may read" "$ctl" status
check "nobody may read" $nobody "$ctl" status

# --- user namespaces ----------------------------------------------------------
unchanged() {
	"$ctl" status >"$tmp/st" 2>&1 || return 1
	! grep -q "dry run" "$tmp/st" || return 1
	! "$ctl" explain 37 | grep -q "pinned at run time" || return 1
	! grep -q "capturing" "$tmp/st" || return 1
	[ -z "$(ls -A "$state")" ]
}
if [ "$userns" = yes ]; then
	for who in root nobody; do
		pre=""
		[ "$who" = nobody ] && pre=$nobody
		for verb in "dry-run on" "pin 37 0" "unpin 37" "reload" "capture $state/ns" "ban 5" "unban 5"; do
			# shellcheck disable=SC2086
			refused "$who in a user namespace: $verb is refused" "another user namespace" \
				$pre unshare -U -r "$ctl" $verb
		done
		check "$who in a user namespace may still read" $pre unshare -U -r "$ctl" status
	done
	check "... and the daemon's state is unchanged" unchanged
	check "... and the refusals are logged" grep -q "refused pid .* another user namespace" "$log"
else
	skip "user namespace clients: 'unshare -U -r' does not work here (unprivileged user namespaces disabled?)"
fi
refused "nobody may not write: dry-run on" "only root may do that" $nobody "$ctl" dry-run on
refused "nobody may not capture" "only root may do that" $nobody "$ctl" capture "$state/x"
refused "nobody may not ban" "only root may do that" $nobody "$ctl" ban 5
refused "nobody may not unban" "only root may do that" $nobody "$ctl" unban 5
check "... state unchanged" unchanged

# --- admin_group ---------------------------------------------------------------
printf '[daemon]\ninterval = 0.3\n[control]\nadmin_group = no-such-group-zz\n' >"$conf"
check "reload with an unknown admin_group is refused" sh -c "! '$ctl' reload 2>'$tmp/out'"
check "... naming it and the file" grep -qF "$conf: [control] admin_group: no-such-group-zz is not a group of this machine" "$tmp/out"
printf '[daemon]\ninterval = 0.3\n[control]\nadmin_group = nogroup\n' >"$conf"
check "reload with admin_group = nogroup" "$ctl" reload
check "a member by its gid may write" $nobody "$ctl" dry-run on
check "... and it is done" sh -c "'$ctl' status | grep -q 'dry run'"
check "a member by a supplementary group may write" \
	setpriv --reuid=nobody --regid=users --groups=nogroup "$ctl" dry-run off
check "... and it is done" sh -c "! '$ctl' status | grep -q 'dry run'"
refused "a uid outside the group may not" "only root or members of group nogroup" \
	as_uid 4242 "$ctl" dry-run on
if [ "$userns" = yes ]; then
	refused "a member inside a user namespace may not" "another user namespace" \
		$nobody unshare -U -r "$ctl" dry-run on
fi
check "... state unchanged" unchanged
# A member's connection made before a reload names another group: it was
# judged by the old group for as long as it lasted, and a client that
# keeps asking is never cut off.
rm -f "$tmp/go"
$nobody "$raw" "$rt/control" --then "$tmp/go" "v1 dry-run on" >"$tmp/held" 2>&1 &
held=$!
pids="$pids $held"
check "a member of nogroup holds a connection" wait_for "$limit" grep -q '"ok":true' "$tmp/held"
printf '[daemon]\ninterval = 0.3\n[control]\nadmin_group = users\n' >"$conf"
check "reload with admin_group = users" "$ctl" reload
touch "$tmp/go"
wait "$held"
check "... and its connection may no longer write" grep -q "only root or members of group users" "$tmp/held"
check "... state unchanged" unchanged
printf '[daemon]\ninterval = 0.3\n' >"$conf"
check "reload without admin_group" "$ctl" reload
refused "... and the group may no longer write" "only root may do that" $nobody "$ctl" dry-run on

# --- connection table ------------------------------------------------------------
# The holders report as soon as the daemon has left what it should (8 of 64;
# later none of each user's 8), or at their limit: 60 s here, 20 s below,
# which is under the 30 s a reader may idle while the table has room.
$nobody "$raw" "$rt/control" --hold-many 64 60 8 >"$tmp/hold64" 2>&1 &
h=$!
pids="$pids $h"
check "nobody makes 64 connections" wait_for "$limit" grep -q "connected 64" "$tmp/hold64"
if ms "$ctl" status && [ "$elapsed" -lt 1000 ]; then
	ok "root's status still answers within a second (${elapsed} ms)"
else
	bad "root's status still answers within a second (${elapsed} ms)"
	cat "$tmp/out"
fi
check "another user still gets in" as_uid 4242 "$ctl" status
wait_for "$limit" grep -q "^open:" "$tmp/hold64"
# refused, a connection was closed unanswered: irqctl could only say that
# the daemon closed it, not why
fails_saying any "... and a ninth is told why" "connections per uid are limited to 8" $nobody "$ctl" status
kill "$h" 2>/dev/null
wait "$h" 2>/dev/null
check "nobody kept 8 of them (the per-uid cap)" grep -q "open: 8 of 64" "$tmp/hold64"
check "... and the refusals are logged" grep -q "connections per uid are limited to 8" "$log"

# four users, eight each: the table (32) is full of idle readers
for u in 4001 4002 4003 4004; do
	as_uid "$u" "$raw" "$rt/control" --hold-many 8 20 0 >"$tmp/hold-$u" 2>&1 &
	pids="$pids $!"
done
check "four users fill the table" wait_for "$limit" sh -c "cat '$tmp'/hold-* | grep -c 'connected 8' | grep -qx 4"
if ms "$ctl" status && [ "$elapsed" -lt 1000 ]; then
	ok "with the table full root's status answers within a second (${elapsed} ms)"
else
	bad "with the table full root's status answers within a second (${elapsed} ms)"
	cat "$tmp/out"
fi
check "... by closing the oldest idle reader" grep -q "closed the oldest idle one" "$log"
wait_for "$limit" sh -c "[ \$(cat '$tmp'/hold-* | grep -c '^open:') -eq 4 ]"
check "a full table cuts idle readers well before the 30 s a reader may idle" \
	sh -c "[ \$(cat '$tmp'/hold-* | grep -c '^open: 0 of 8') -eq 4 ]"
check "afterwards everyone may connect again" $nobody "$ctl" status

# --- malformed and oversized -------------------------------------------------------
"$raw" "$rt/control" --junk 9000 >"$tmp/out" 2>&1
check "an oversized request is refused" grep -q '"ok":false' "$tmp/out"
"$raw" "$rt/control" --junk 3000 >"$tmp/out" 2>&1
check "junk is refused and the client cut off" grep -q "after: closed" "$tmp/out"
$nobody "$raw" "$rt/control" "v1 pin 37" >"$tmp/out" 2>&1
check "a request missing an argument is refused" grep -q '"ok":false' "$tmp/out"
$nobody "$raw" "$rt/control" "v1  status" >"$tmp/out" 2>&1
check "bad spacing is refused" grep -q '"ok":false' "$tmp/out"
# recv() reads an empty SEQPACKET message as 0 bytes, as it reads the end
"$raw" "$rt/control" "" >"$tmp/out" 2>&1
check "an empty request is refused" grep -q '"error":"empty request"' "$tmp/out"
check "... and the client cut off" grep -q "after: closed" "$tmp/out"
check "the daemon still answers" "$ctl" status

# --- out of file descriptors -------------------------------------------------------
# A daemon whose descriptors are all in use: accept4() fails with EMFILE and
# leaves the connection queued, the socket stays readable, and the loop
# called on_accept again at once, a whole CPU for as long as a client stayed
# queued, while every client waited out its timeout. Connections fill all
# but the last descriptor (one taken then has no pidfd to tell its peer by,
# and is refused); lowering the limit by one stands for the sampler or a
# capture taking that one.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
frt=$tmp/run-nofile
# few enough that root's connections use them all up before the table (32)
# is full, which refuses and closes the next ones
nofile=40
(ulimit -n "$nofile" && exec "$bin" --root "$root" --runtime-dir "$frt" --config "$conf" --foreground \
	--dry-run) >"$tmp/flog" 2>&1 &
fdaemon=$!
pids="$pids $fdaemon"
if ! command -v prlimit >/dev/null 2>&1; then
	skip "out of file descriptors: needs prlimit"
elif wait_for "$limit" test -S "$frt/control"; then
	used=$(ls "/proc/$fdaemon/fd" | awk -v n="$nofile" '$1 < n' | wc -l)
	many=$((nofile - used + 4))
	[ "$many" -lt 32 ] || bad "the daemon keeps only $used descriptors open below $nofile: too few to fill"
	"$raw" "$frt/control" --hold-many "$many" 30 >"$tmp/holdfd" 2>&1 &
	fholder=$!
	pids="$pids $fholder"
	check "root's connections fill the daemon's descriptors" \
		wait_for "$limit" grep -q "connected $many" "$tmp/holdfd"
	check "... but the last one, which is refused" wait_for "$limit" grep -q "cannot tell who connected" "$tmp/flog"
	prlimit --pid "$fdaemon" --nofile=$((nofile - 1)):$((nofile - 1))
	"$raw" "$frt/control" --hold 30 >/dev/null 2>&1 &
	pids="$pids $!"
	hz=$(getconf CLK_TCK)
	sleep 0.5
	t0=$(cpu_ticks "$fdaemon")
	sleep 2
	spent=$(($(cpu_ticks "$fdaemon") - t0))
	check "with none left the daemon does not spin on a queued client ($spent ticks of $((2 * hz)))" \
		test "$spent" -lt "$((hz / 2))"
	fails_saying any "... a client is told it has no descriptor left" "no file descriptor left" \
		env IRQPILOT_SOCKET="$frt/control" "$ctl" status
	check "... and it is logged" grep -q "cannot take a connection: Too many open files" "$tmp/flog"
	kill "$fholder"
	wait "$fholder" 2>/dev/null
	check "once they are closed, status answers again" \
		wait_for "$limit" env IRQPILOT_SOCKET="$frt/control" "$ctl" status
	kill "$fdaemon"
	wait "$fdaemon"
else
	bad "a daemon limited to $nofile descriptors starts"
	sed 's/^/    /' "$tmp/flog"
fi

# --- capture ------------------------------------------------------------------------
ln -s "$tmp/outside" "$state/link"
mkdir -p "$state/real"
ln -s "$tmp/outside" "$state/real/leaf"
capture_refused() { # description pattern dir
	fails_saying any "$1" "$2" "$ctl" capture "$3" 1
}
capture_refused "capture through a symlink is refused" "a symlink or not a directory" "$state/link/x"
capture_refused "capture into a symlink is refused" "a symlink or not a directory" "$state/real/leaf"
capture_refused "capture with '..' is refused" "'..' is not allowed" "$state/real/../../outside"
capture_refused "capture outside the state directory is refused" "is not below $state" "$tmp/outside/x"
capture_refused "capture into a sibling with the same prefix is refused" "is not below" "${state}x/y"
check "... nothing was written outside" test -z "$(ls -A "$tmp/outside")"
check "capture below the state directory is accepted" "$ctl" capture "$state/series/one" 2
check "... and records its samples there" wait_for "$limit" test -d "$state/series/one/0001/proc"

# --- runtime directory --------------------------------------------------------------
# A runtime directory another user may write is refused, and before the lock
# in it is opened: the lock is truncated and written, and a link planted
# under its name had root truncate the file it names, then refuse.
printf 'precious\n' >"$tmp/victim"
for mode in owned sticky; do
	hrun=$tmp/run-$mode
	mkdir "$hrun"
	if [ "$mode" = owned ]; then chown nobody:nogroup "$hrun"; else chmod 1777 "$hrun"; fi
	$nobody ln -s "$tmp/victim" "$hrun/irqpilotd.lock"
	fails_saying 3 "a runtime directory $mode by another user is refused" "writable by no one else" \
		"$bin" --root "$root" --runtime-dir "$hrun" --config "$conf" --foreground
	check "... and the file its planted lock names is untouched" grep -qx precious "$tmp/victim"
done

# A runtime directory whose parent another user may write: checked at start,
# it can be swapped for a link later, and the socket was removed at the stop
# by its path, that is, a file named "control" wherever the link led.
mkdir "$tmp/userdir" "$tmp/other"
chown nobody:nogroup "$tmp/userdir"
printf 'important\n' >"$tmp/other/control"
"$bin" --root "$root" --runtime-dir "$tmp/userdir/run" --config "$conf" --foreground --dry-run \
	>"$tmp/ulog" 2>&1 &
udaemon=$!
pids="$pids $udaemon"
if wait_for "$limit" test -S "$tmp/userdir/run/control"; then
	$nobody sh -c 'mv "$1/run" "$1/old" && ln -s "$2" "$1/run"' sh "$tmp/userdir" "$tmp/other"
	kill "$udaemon"
	wait "$udaemon"
	check "a swapped runtime directory: the stop removes no file the link leads to" \
		grep -qx important "$tmp/other/control"
	check "... and removes its own socket" test ! -e "$tmp/userdir/old/control"
else
	bad "a daemon with its runtime directory in another user's starts"
	sed 's/^/    /' "$tmp/ulog"
fi

# The socket's mode was set with chmod(2) on its path after bind(2): a
# runtime directory swapped for a link in between had root chmod the file
# named "control" wherever the link led. strace holds the daemon in bind()
# once the socket is made (delay_exit) for the swap to land in that window,
# and lists the daemon's chmod and chown calls: none may go by a path that
# can be a link.
if command -v strace >/dev/null 2>&1 &&
	strace -qq -o /dev/null -e trace=bind -e inject=bind:delay_exit=1 true 2>/dev/null; then
	mkdir "$tmp/sockdir" "$tmp/other2"
	chown nobody:nogroup "$tmp/sockdir"
	printf 'important\n' >"$tmp/other2/control"
	chmod 600 "$tmp/other2/control"
	strace -f -qq -e signal=none -o "$tmp/strace" -e 'trace=bind,/^[fl]?ch(mod|own)' \
		-e inject=bind:delay_exit=3000000 \
		"$bin" --root "$root" --runtime-dir "$tmp/sockdir/run" --config "$conf" --foreground --dry-run \
		>"$tmp/slog" 2>&1 &
	straced=$!
	pids="$pids $straced"
	if wait_for "$limit" test -S "$tmp/sockdir/run/control"; then
		$nobody sh -c 'mv "$1/run" "$1/old" && ln -s "$2" "$1/run"' sh "$tmp/sockdir" "$tmp/other2"
		wait_for "$limit" grep -q "control socket" "$tmp/slog"
		check "a runtime directory swapped during bind(): the file the link leads to keeps its mode" \
			test "$(stat -c %a "$tmp/other2/control")" = 600
		check "... and the socket has mode 0660" test "$(stat -c %a "$tmp/sockdir/old/control")" = 660
		check "... and no chmod or chown of the daemon's goes by a path that follows links" \
			sh -c '! grep -E "(^|[^a-z_])(l?ch(mod|own)|f?ch(mod|own)at2?)\(" "$1" |
				grep -v AT_SYMLINK_NOFOLLOW' sh "$tmp/strace"
		kill "$(cat "$tmp/sockdir/old/irqpilotd.lock")"
	else
		bad "a daemon under strace starts"
		sed 's/^/    /' "$tmp/slog"
	fi
	wait "$straced"
else
	skip "the runtime directory swapped during bind(): needs strace with syscall delays"
fi

# --- irqpilotd --capture into a directory another user made -------------------------
# (/var/tmp/cap made beforehand by anyone): the links planted in it had root
# truncate the file one names and write a series into the directory another
# names.
mkdir -m 1777 "$tmp/vartmp" "$tmp/elsewhere"
chmod 755 "$tmp/elsewhere"
printf 'precious\n' >"$tmp/victim"
$nobody sh -c 'mkdir -p "$1/cap/0000/irqpilot" && ln -s "$2" "$1/cap/0000/irqpilot/time_ns" &&
	ln -s "$3" "$1/cap/0000/proc"' sh "$tmp/vartmp" "$tmp/victim" "$tmp/elsewhere"
fails_saying any "--capture into a directory of another user's is refused" "writable by no one else" \
	"$bin" --root "$root" --capture "$tmp/vartmp/cap" --samples 1
check "... the file a link there names is untouched" grep -qx precious "$tmp/victim"
check "... and nothing was written where another names" test -z "$(ls -A "$tmp/elsewhere")"
check "--capture into a new directory is accepted" "$bin" --root "$root" --capture "$tmp/vartmp/mine" --samples 1

# --- irqctl capture with a state directory another user may write -------------------
# Its subdirectories, where the daemon opens each component O_NOFOLLOW, are
# that user's too: a link planted in one (series/0000/proc) had the capture
# write where it names. A second daemon, a dry run, has such a directory.
nstate=$tmp/nstate
nrun=$tmp/run-nstate
mkdir -p "$nstate" "$tmp/elsewhere2"
chown nobody:nogroup "$nstate"
$nobody sh -c 'mkdir -p "$1/series/0000" && ln -s "$2" "$1/series/0000/proc"' sh "$nstate" "$tmp/elsewhere2"
STATE_DIRECTORY=$nstate "$bin" --root "$root" --runtime-dir "$nrun" --config "$conf" --foreground --dry-run \
	>"$tmp/nlog" 2>&1 &
pids="$pids $!"
if wait_for "$limit" test -S "$nrun/control"; then
	fails_saying any "capture below a state directory of another user's is refused" "writable by no one else" \
		env IRQPILOT_SOCKET="$nrun/control" "$ctl" capture "$nstate/series" 1
	if wait_for 5 sh -c 'test -n "$(ls -A "$1")"' sh "$tmp/elsewhere2"; then
		bad "... and nothing is written where a link there names"
	else
		ok "... and nothing is written where a link there names"
	fi
else
	bad "a daemon with another state directory starts"
	sed 's/^/    /' "$tmp/nlog"
fi

if [ "$fail" -ne 0 ]; then
	echo "--- daemon log"
	cat "$log"
	exit 1
fi
if [ "$userns" != yes ]; then
	echo "SKIP: the user namespace checks could not run ('unshare -U -r' fails here)"
	exit 77
fi
exit 0
