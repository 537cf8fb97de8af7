#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# What irqpilotd tells the service manager (sd_notify(3), NOTIFY_SOCKET) in
# a closed loop with a stand-in kernel: READY=1 once, with the first
# STATUS=; then a STATUS= only when its text changes (a move, the count of
# steered vectors), never the same text again each cycle, which woke the
# service manager every interval for nothing. Skipped (77) without python3,
# which receives the datagrams here as systemd would.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
# shellcheck source=tests/lib-daemon.sh
. "$top_srcdir/tests/lib-daemon.sh"

if ! command -v python3 >/dev/null 2>&1; then
	echo "1..0 # SKIP python3 is missing (scripts/deps --test installs it)"
	exit 77
fi

daemon_test_dirs notify
sock=$tmp/notify
msgs=$tmp/notify.log
# one line per datagram, its newlines as '|'
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "w") as f:
    while True:
        f.write(s.recv(4096).decode().replace("\n", "|") + "\n")
        f.flush()
' "$sock" "$msgs" &
pids="$pids $!"
wait_for "$limit" test -S "$sock" || { bad "the receiver binds $sock"; exit 1; }

cp -a "$top_srcdir/tests/fixtures/phone-arm64" "$root"
mkdir -p "$root/irqpilot"
printf '[daemon]\ninterval = 0.2\n[policy]\ndwell = 1\n' >"$conf"
standin_kernel "$root" 37 sda 6
pids="$pids $standin_pid"
NOTIFY_SOCKET=$sock "$bin" --root "$root" --runtime-dir "$rt" --config "$conf" --foreground >"$log" 2>&1 &
daemon=$!
pids="$pids $daemon"
wait_for "$limit" test -S "$rt/control" || { bad "the daemon opens its control socket"; cat "$log"; exit 1; }

cycles() { "$ctl" status | sed -n 's/^cycles: \([0-9]*\).*/\1/p'; }
check "the vector moves to the submitter's domain, and STATUS says so" \
	wait_for "$limit" grep -q "STATUS=.*last move: 37 ufshcd → [67]" "$msgs"
c0=$(cycles)
check "twenty cycles more" wait_for "$limit" sh -c "[ \"\$('$ctl' status | sed -n 's/^cycles: \\([0-9]*\\).*/\\1/p')\" -ge $((c0 + 20)) ]"
n=$(wc -l <"$msgs")
check "READY=1 once, in the first message, with a STATUS=" sh -c \
	"[ \$(grep -c READY=1 '$msgs') -eq 1 ] && head -n 1 '$msgs' | grep -q '^READY=1|STATUS=[0-9]* devices'"
check "no STATUS= sent twice in a row ($n messages)" sh -c "[ \$(uniq '$msgs' | wc -l) -eq $n ]"
check "fewer messages ($n) than cycles ($(cycles))" test "$n" -lt "$(($(cycles) / 2))"
check "the daemon is still running" kill -0 "$daemon"
[ "$fail" -eq 0 ] || { echo "# messages:"; sed 's/^/#    /' "$msgs" | tail -n 10; }
exit "$fail"
