#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# irqctl without a daemon: what a user sees for bad command lines (exit 2)
# and for a daemon that is not there (exit 3, saying so), before anything
# is sent. Runs against temp paths only.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
bin=$top_builddir/src/irqctl/irqctl
fail=0

if [ ! -x "$bin" ]; then
	echo "SKIP: $bin not built"
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/irqctl-test.XXXXXX") || exit 1
trap 'chmod -R u+rwx "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
sock=$tmp/none/control
unset IRQPILOT_PAGER
export IRQPILOT_SOCKET="$sock"

# expect DESCRIPTION EXIT_CODE TEXT_IN_OUTPUT irqctl-args...
expect() {
	desc=$1 want=$2 text=$3
	shift 3
	"$bin" "$@" >"$tmp/out" 2>&1
	got=$?
	if [ "$got" != "$want" ]; then
		echo "not ok - $desc: exit $got, want $want"
		sed 's/^/# /' "$tmp/out"
		fail=1
	elif ! grep -qF -- "$text" "$tmp/out"; then
		echo "not ok - $desc: output lacks '$text'"
		sed 's/^/# /' "$tmp/out"
		fail=1
	else
		echo "ok - $desc"
	fi
}

expect "--help documents the exit codes" 0 "3  irqpilotd is not running" --help
expect "help command" 0 "pin IRQ CPULIST" help
expect "--version" 0 "irqctl " --version
expect "no command" 2 "no command given"
expect "unknown command" 2 "unknown command 'frob'" frob
expect "ambiguous prefix" 2 "'s' is ambiguous" s
expect "ambiguous object" 2 "ambiguous object 'd'" show d
expect "unknown object" 2 "unknown object 'disks'" show disks
expect "unknown option" 2 "unknown option '--frob'" --frob status
expect "--socket needs a value" 2 "needs an argument" status --socket
expect "show needs an object" 2 "usage: irqctl show irqs" show
expect "status takes nothing" 2 "too many arguments" status now
expect "pin needs a CPU list" 2 "usage: irqctl pin IRQ CPULIST" pin 45
expect "bad CPU list" 2 "bad CPU list '3-1'" pin 45 3-1
expect "CPU out of range" 2 "names a CPU above" pin 45 0-99999
expect "bad IRQ" 2 "'../sda' is neither an IRQ number nor a device name" explain ../sda
expect "dry-run on|off" 2 "dry-run takes 'on' or 'off', not 'maybe'" dry-run maybe
expect "capture sample count" 2 "sample count '0' is not a number from 1 to" capture /tmp/x 0
expect "capture an empty directory name" 2 "capture: empty directory name ''" capture ""
expect "capture path with a space" 2 "must not contain spaces" capture "/tmp/a b"
expect "--once is for top" 2 "only apply to top" status --once
expect "bad --interval" 2 "--interval: 'fast'" top --interval fast

expect "no socket" 3 "irqctl: irqpilotd is not running (no socket at $sock)" status
expect "no socket, read with --json" 3 "irqpilotd is not running" show irqs --json
expect "--socket beats the environment" 3 "(no socket at $tmp/other)" \
	--socket "$tmp/other" status
expect "abbreviations reach the socket" 3 "not running" sh ir
: >"$tmp/plain"
expect "not a socket" 3 "irqpilotd is not running (nothing listening on $tmp/plain)" \
	--socket "$tmp/plain" top --once
# help is output as a reply is: a full disk fails it (exit 1), not exit 0
if [ -w /dev/full ]; then
	for args in help --help --version; do
		"$bin" $args >/dev/full 2>"$tmp/out"
		got=$?
		if [ "$got" = 1 ] && grep -q "writing to standard output" "$tmp/out"; then
			echo "ok - $args on a full disk fails"
		else
			echo "not ok - $args on a full disk: exit $got, want 1"
			sed 's/^/# /' "$tmp/out"
			fail=1
		fi
	done
fi
if [ "$(id -u)" != 0 ]; then
	mkdir "$tmp/locked"
	: >"$tmp/locked/control"
	chmod 000 "$tmp/locked"
	expect "unreachable socket directory" 4 "permission denied connecting to" \
		--socket "$tmp/locked/control" status
fi

exit $fail
