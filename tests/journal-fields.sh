#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# What irqpilotd sends to the journal, read from a stand-in journald: in a
# private mount namespace a tmpfs covers /run, and a datagram socket at
# /run/systemd/journal/socket (journald's, sd-journal's only address)
# records each message. The daemon is refused a start (another instance
# holds its lock): the refusal must carry the catalog's MESSAGE_ID and
# CODE_FILE/CODE_LINE/CODE_FUNC of the call in daemon.c, not of log.c.
# Needs root (unshare -m, mount) and python3; skips without them.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
bin=$top_builddir/src/irqpilotd/irqpilotd
fail=0

ok() { echo "ok - $*"; }
not_ok() {
	echo "not ok - $*"
	fail=1
}

[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root for a private mount namespace"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not installed"; exit 77; }
command -v unshare >/dev/null 2>&1 || { echo "SKIP: unshare not installed"; exit 77; }
unshare -m true 2>/dev/null || { echo "SKIP: cannot make a mount namespace here"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/irqpilot-journal.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
cp -a "$top_srcdir/tests/fixtures/phone-arm64" "$tmp/root"
mkdir "$tmp/run"

# The stand-in journald: one datagram per message, fields one a line
# (irqpilotd's values have no newline, so no binary-safe encoding),
# messages separated by a blank line.
cat >"$tmp/journald.py" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/run/systemd/journal/socket")
open(sys.argv[2], "w").close()  # bound: the daemon may start
s.settimeout(60)
with open(sys.argv[1], "wb") as out:
    try:
        while True:
            out.write(s.recv(65536) + b"\n")
            out.flush()
    except socket.timeout:
        pass
PY

unshare -m sh -c '
	mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/journal || exit 1
	python3 "$1/journald.py" "$1/journal" "$1/bound" &
	j=$!
	n=0
	while [ ! -e "$1/bound" ] && [ $n -lt 300 ]; do sleep 0.1; n=$((n + 1)); done
	# another instance: the lock is held while the daemon tries to start
	flock "$1/run/irqpilotd.lock" "$2" --root "$1/root" --runtime-dir "$1/run" \
		>"$1/out" 2>&1
	echo $? >"$1/rc"
	# As a systemd service: stderr is a stream to journald, which
	# $JOURNAL_STREAM names by device and inode (systemd.exec(5)).
	: >"$1/svc-out"
	JOURNAL_STREAM=$(stat -c "%d:%i" "$1/svc-out") flock "$1/run/irqpilotd.lock" \
		"$2" --root "$1/root" --runtime-dir "$1/run" >>"$1/svc-out" 2>&1
	echo $? >"$1/svc-rc"
	# Both refusals read by the stand-in before it goes (a bound, not a pace).
	n=0
	while [ "$(grep -c "^MESSAGE=refusing to start" "$1/journal")" -lt 2 ] && [ $n -lt 100 ]; do
		sleep 0.1
		n=$((n + 1))
	done
	kill $j
' sh "$tmp" "$bin"

rc=$(cat "$tmp/rc" 2>/dev/null)
if [ "$rc" = 3 ]; then ok "a second instance is refused (exit 3)"; else
	not_ok "a second instance is refused (exit $rc, expected 3)"
	sed 's/^/# /' "$tmp/out"
fi
# The refusal's message: the block holding MESSAGE=refusing to start.
awk -v RS= '/(^|\n)MESSAGE=refusing to start/' "$tmp/journal" >"$tmp/msgs" 2>/dev/null
n=$(grep -c '^MESSAGE=refusing to start' "$tmp/msgs")
# One from each run: the terminal's and the service's.
if [ "$n" = 2 ]; then ok "the refusal reached the journal, once per start"; else
	not_ok "the refusal reached the journal $n times from 2 starts"
	sed 's/^/# /' "$tmp/journal" 2>/dev/null
fi
awk -v RS= '/(^|\n)MESSAGE=refusing to start/ { print; exit }' "$tmp/journal" >"$tmp/msg" 2>/dev/null
n=$(grep -c 'refusing to start' "$tmp/out")
if [ "$n" = 1 ]; then ok "on a terminal the refusal is on stderr too, once"; else
	not_ok "on a terminal the refusal is on stderr $n times"
	sed 's/^/# /' "$tmp/out"
fi
if [ "$(cat "$tmp/svc-rc" 2>/dev/null)" = 3 ] && ! grep -q 'refusing to start' "$tmp/svc-out"; then
	ok "as a service (stderr is \$JOURNAL_STREAM) the refusal is not on stderr as well"
else
	not_ok "as a service: exit $(cat "$tmp/svc-rc" 2>/dev/null), stderr has it again"
	sed 's/^/# /' "$tmp/svc-out"
fi
field() { sed -n "s/^$1=//p" "$tmp/msg"; }
id=$(sed -n 's/^#define IP_MESSAGE_REFUSAL "\(.*\)"$/\1/p' "$top_srcdir/include/irqpilot/log.h")
if [ -n "$id" ] && [ "$(field MESSAGE_ID)" = "$id" ]; then
	ok "MESSAGE_ID=$id (IP_MESSAGE_REFUSAL)"
else
	not_ok "MESSAGE_ID is '$(field MESSAGE_ID)', not IP_MESSAGE_REFUSAL '$id'"
fi
if grep -qx -- "-- $id" "$top_srcdir/systemd/irqpilot.catalog"; then
	ok "the catalog explains it"
else
	not_ok "systemd/irqpilot.catalog has no entry $id"
fi
file=$(field CODE_FILE) line=$(field CODE_LINE) func=$(field CODE_FUNC)
if [ "$file" = src/irqpilotd/daemon.c ]; then ok "CODE_FILE=$file"; else
	not_ok "CODE_FILE is '$file', not src/irqpilotd/daemon.c"
fi
if [ -n "$line" ] && sed -n "${line}p" "$top_srcdir/$file" 2>/dev/null | grep -q 'IP_MESSAGE_REFUSAL'; then
	ok "CODE_LINE=$line is the refusal's log call"
else
	not_ok "CODE_LINE '$line' of $file is not the refusal's log call"
fi
# The function that holds that line: the last definition above it.
want=$(head -n "${line:-0}" "$top_srcdir/$file" 2>/dev/null |
	sed -n 's/^[a-z].* \**\([a-z_][a-z0-9_]*\)(.*/\1/p' | tail -1)
if [ -n "$func" ] && [ "$func" = "$want" ]; then ok "CODE_FUNC=$func"; else
	not_ok "CODE_FUNC is '$func', the call is in '$want'"
fi
for f in PRIORITY SYSLOG_IDENTIFIER; do
	[ -n "$(field $f)" ] && ok "$f=$(field $f)" || not_ok "no $f field"
done
exit $fail
