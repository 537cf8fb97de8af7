#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The man pages and systemd units against the programs they describe:
#  - every page is clean under mandoc -Tlint -W warning;
#  - the units, with @sbindir@ pointing at the built daemon, pass
#    systemd-analyze verify, and keep the settings irqpilotd(8) explains
#    (a unit that makes /proc/irq read-only or refuses SCHED_FIFO would
#    start and then fail every write);
#  - every long option in irqpilotd --help, and every command, option,
#    exit status and environment variable in irqctl --help, is documented
#    in the program's man page, and every option the pages document is
#    still in --help;
#  - every member of the daemon's status reply is named in irqctl.8;
#  - the journal catalog has an entry for each MESSAGE_ID the daemon
#    sends and journalctl compiles it; the bash completion offers every
#    command and option of irqctl --help.
# Exit 0 pass, 1 fail. Parts whose tools or programs are missing are
# skipped with a message; the grep checks of the units always run.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
man=$top_srcdir/man
units=$top_srcdir/systemd
daemon=$top_builddir/src/irqpilotd/irqpilotd
ctl=$top_builddir/src/irqctl/irqctl
fail=0

tmp=$(mktemp -d "${TMPDIR:-/tmp}/check-docs.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

ok() { echo "ok - $*"; }
not_ok() {
	echo "not ok - $*"
	fail=1
}
skip() { echo "ok - # SKIP $*"; }

# ---- mandoc lint -------------------------------------------------------
if command -v mandoc >/dev/null 2>&1; then
	for page in "$man"/*.5 "$man"/*.8; do
		[ -e "$page" ] || continue
		# mandoc exits non-zero on warnings too; the output is what counts.
		mandoc -Tlint -W warning "$page" >"$tmp/lint" 2>&1
		if [ -s "$tmp/lint" ]; then
			not_ok "mandoc lint ${page##*/}"
			sed 's/^/# /' "$tmp/lint"
		else
			ok "mandoc lint ${page##*/}"
		fi
	done
else
	skip "mandoc not installed: man pages not linted"
fi

# ---- systemd units -----------------------------------------------------
# unit_has FILE REGEX DESCRIPTION
unit_has() {
	if grep -Eq "$2" "$1"; then ok "$3"; else not_ok "$3"; fi
}
unit_lacks() {
	if grep -Eq "$2" "$1"; then not_ok "$3"; else ok "$3"; fi
}

mkdir "$tmp/units"
for u in irqpilotd.service irqpilotd.socket; do
	sed "s|@sbindir@|$top_builddir/src/irqpilotd|g" "$units/$u.in" >"$tmp/units/$u"
done
svc=$tmp/units/irqpilotd.service
sock=$tmp/units/irqpilotd.socket
unit_lacks "$svc" '@[a-z_]+@' "service: every @variable@ substituted"
unit_has "$svc" '^Type=notify$' "service: Type=notify (READY=1 after the first cycle)"
unit_has "$svc" '^ExecStart=.*/irqpilotd$' "service: ExecStart runs irqpilotd in daemon mode"
unit_has "$svc" '^WatchdogSec=' "service: WatchdogSec= set (the daemon sends WATCHDOG=1)"
unit_has "$svc" '^RuntimeDirectoryPreserve=yes$' \
	"service: runtime directory kept, so --restore finds the state file after a crash"
unit_lacks "$svc" '^ProtectKernelTunables=(yes|true|on|1)$' \
	"service: ProtectKernelTunables off (it makes /proc/irq read-only)"
unit_lacks "$svc" '^RestrictRealtime=(yes|true|on|1)$' \
	"service: RestrictRealtime off (it refuses SCHED_FIFO for IRQ threads)"
unit_lacks "$svc" '^PrivateNetwork=(yes|true|on|1)$' \
	"service: host network namespace (the irqpilot_cq netlink family lives there)"
unit_has "$svc" '^RestrictAddressFamilies=.*AF_NETLINK' "service: netlink allowed"
for cap in CAP_SYS_NICE CAP_PERFMON CAP_NET_ADMIN; do
	unit_has "$svc" "^CapabilityBoundingSet=.*$cap" "service: $cap in the bounding set"
done
unit_has "$svc" '^SystemCallFilter=.*perf_event_open' \
	"service: perf_event_open allowed (not in @system-service)"

# The socket the unit creates must be the one the daemon and irqctl use.
sockdef=$(sed -n 's/^#define IP_PROTO_SOCKET_DEFAULT "\(.*\)"$/\1/p' \
	"$top_srcdir/include/irqpilot/protocol.h")
if [ -n "$sockdef" ] && grep -qx "ListenSequentialPacket=$sockdef" "$sock"; then
	ok "socket: listens on $sockdef, the default of irqctl and irqpilotd"
else
	not_ok "socket: ListenSequentialPacket= is not IP_PROTO_SOCKET_DEFAULT ('$sockdef')"
fi
rundir=${sockdef%/*}
if [ -n "$rundir" ] && grep -qx "RuntimeDirectory=${rundir##*/}" "$svc"; then
	ok "service: RuntimeDirectory= is the socket's directory ($rundir)"
else
	not_ok "service: RuntimeDirectory= is not the socket's directory ($rundir)"
fi
unit_has "$sock" '^SocketMode=0660$' "socket: mode 0660, as irqctl(8) documents"

if ! command -v systemd-analyze >/dev/null 2>&1; then
	skip "systemd-analyze not installed: units not verified"
elif [ ! -x "$daemon" ]; then
	skip "$daemon not built: systemd-analyze verify needs ExecStart= to exist"
else
	# --man=no: the pages are not installed yet; they are linted above.
	systemd-analyze verify --man=no "$svc" "$sock" >"$tmp/verify" 2>&1
	rc=$?
	# Only our units' complaints count, not those of the host's units.
	if [ "$rc" -ne 0 ] || grep -q 'irqpilotd' "$tmp/verify"; then
		not_ok "systemd-analyze verify (exit $rc)"
		sed 's/^/# /' "$tmp/verify"
	else
		ok "systemd-analyze verify irqpilotd.service irqpilotd.socket"
	fi
fi

# ---- options and commands against the man pages ------------------------
# The page's text with \- as -, and font escapes and quotes removed, so
# that "\fB\-\-json\fR" is found as "--json".
plain() {
	sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\(dq//g' -e 's/"//g' "$1"
}

# Lines of section $2 (a .SH title) of plain page $1.
section() {
	awk -v want="$2" '
		/^\.SH / { t = substr($0, 5); gsub(/"/, "", t); on = (t == want); next }
		on' "$1"
}

# documented WORD FILE: WORD appears as a whole word (- counts as a letter).
documented() {
	grep -Eq -- "(^|[^A-Za-z0-9_-])$1([^A-Za-z0-9_-]|\$)" "$2"
}

# Long options of a --help text; short ones are handled apart.
long_options() {
	grep -Eo -- '--[a-z][a-z-]*' "$1" | sort -u
}

# Options named in the tags of the OPTIONS section: .TP then a macro line.
tag_options() {
	section "$1" OPTIONS | awk 'tag { print } { tag = ($0 == ".TP") }' |
		grep -Eo -- '(^|[ "])--?[a-zA-Z][a-z-]*' | sed 's/^[ "]//' | sort -u
}

check_help_vs_page() {
	prog=$1 bin=$2 page=$3
	if [ ! -x "$bin" ]; then
		skip "$bin not built: $prog options not checked against $page"
		return
	fi
	if ! "$bin" --help >"$tmp/$prog.help" 2>&1; then
		not_ok "$prog --help exits 0"
		sed 's/^/# /' "$tmp/$prog.help"
		return
	fi
	plain "$man/$page" >"$tmp/$page"
	for opt in $(long_options "$tmp/$prog.help"); do
		if documented "$opt" "$tmp/$page"; then
			ok "$prog $opt is in $page"
		else
			not_ok "$prog $opt is in --help but not in $page"
		fi
	done
	for opt in $(tag_options "$tmp/$page"); do
		if documented "$opt" "$tmp/$prog.help"; then
			ok "$page: $opt is still in $prog --help"
		else
			not_ok "$page documents $opt, which $prog --help does not list"
		fi
	done
}

check_help_vs_page irqpilotd "$daemon" irqpilotd.8
check_help_vs_page irqctl "$ctl" irqctl.8

if [ -x "$ctl" ] && [ -s "$tmp/irqctl.help" ]; then
	page=$tmp/irqctl.8
	# Short options: "  -s, --socket PATH" lines of the help.
	for opt in $(grep -Eo -- '^ +-[a-zA-Z],' "$tmp/irqctl.help" | tr -d ' ,'); do
		if documented "$opt" "$page"; then
			ok "irqctl $opt is in irqctl.8"
		else
			not_ok "irqctl $opt is in --help but not in irqctl.8"
		fi
	done
	# Commands: the first word of each line of the "Commands:" block, and
	# each must be the tag of an entry of the COMMANDS section.
	section "$page" COMMANDS | awk 'tag { print } { tag = ($0 == ".TP") }' |
		awk '{ print $2 }' >"$tmp/tags"
	cmds=$(awk '/^Commands:/ { on = 1; next } on && /^$/ { exit }
		on && /^  [a-z]/ { print $1 }' "$tmp/irqctl.help")
	if [ -z "$cmds" ]; then
		not_ok "irqctl --help lists commands under 'Commands:'"
	fi
	for cmd in $cmds; do
		if grep -qx -- "$cmd" "$tmp/tags"; then
			ok "irqctl command $cmd has an entry in irqctl.8 COMMANDS"
		else
			not_ok "irqctl command $cmd is in --help but not in irqctl.8 COMMANDS"
		fi
	done
	while read -r cmd; do
		if printf '%s\n' $cmds | grep -qx -- "$cmd"; then
			:
		else
			not_ok "irqctl.8 documents command $cmd, which irqctl --help does not list"
		fi
	done <"$tmp/tags"
	# Exit statuses: "  3  irqpilotd is not running" lines.
	section "$page" "EXIT STATUS" | awk 'tag { print $2 } { tag = ($0 == ".TP") }' \
		>"$tmp/codes"
	for code in $(awk '/^Exit status:/ { on = 1; next } on && /^  [0-9]+ / { print $1 }' \
		"$tmp/irqctl.help"); do
		if grep -qx "$code" "$tmp/codes"; then
			ok "irqctl exit status $code is in irqctl.8"
		else
			not_ok "irqctl exit status $code is in --help but not in irqctl.8"
		fi
	done
	# Environment variables the help names.
	section "$page" ENVIRONMENT >"$tmp/env"
	for var in $(grep -Eo '\$[A-Z_]+' "$tmp/irqctl.help" | tr -d '$' | sort -u); do
		if documented "$var" "$tmp/env"; then
			ok "irqctl \$$var is in irqctl.8 ENVIRONMENT"
		else
			not_ok "irqctl \$$var is in --help but not in irqctl.8 ENVIRONMENT"
		fi
	done
fi

# ---- the status reply's members against irqctl.8 -------------------------
# Every member irqpilotd puts into its status reply (control.c: do_status()
# and the helpers it calls first) is named in irqctl.8's COMMANDS section,
# which scripts reading "irqctl status --json" go by. From the source: the
# members that appear only in some states (still_until_written) are named
# there too, where a live reply would leave them out.
control=$top_srcdir/src/irqpilotd/control.c
awk '/^static void status_perf_reads\(/ { on = 1 } on { print } on && /^static void do_status\(/ { ds = 1 }
	ds && /^}/ { exit }' "$control" |
	grep -Eo 'ip_json_[a-z_]+\(&?j, "[a-z_]+"' | sed 's/.*"\([a-z_]*\)"/\1/' | sort -u >"$tmp/status-keys"
if [ ! -s "$tmp/status-keys" ]; then
	not_ok "control.c: the status reply's members found (do_status())"
else
	plain "$man/irqctl.8" >"$tmp/irqctl.8.plain"
	section "$tmp/irqctl.8.plain" COMMANDS >"$tmp/commands"
	while read -r key; do
		if documented "$key" "$tmp/commands"; then
			ok "status member $key is in irqctl.8"
		else
			not_ok "status member $key is in the daemon's reply but not in irqctl.8 COMMANDS"
		fi
	done <"$tmp/status-keys"
fi

# ---- journal message catalog -------------------------------------------
# Every IP_MESSAGE_* of log.h is used by the daemon and has an entry in
# the catalog.
catalog=$top_srcdir/systemd/irqpilot.catalog
sed -n 's/^#define IP_MESSAGE_[A-Z_]* "\([0-9a-f]*\)"$/\1/p' \
	"$top_srcdir/include/irqpilot/log.h" | sort >"$tmp/ids.code"
sed -n 's/^-- \([0-9a-f]*\)$/\1/p' "$catalog" | sort >"$tmp/ids.catalog"
if [ "$(wc -l <"$tmp/ids.code")" -lt 5 ]; then
	not_ok "log.h defines the IP_MESSAGE_* IDs (found $(wc -l <"$tmp/ids.code"))"
fi
for id in $(cat "$tmp/ids.code"); do
	if ! echo "$id" | grep -Eqx '[0-9a-f]{32}'; then
		not_ok "MESSAGE_ID $id is 128 bits in hex"
	elif grep -qx "$id" "$tmp/ids.catalog"; then
		ok "MESSAGE_ID $id is in irqpilot.catalog"
	else
		not_ok "MESSAGE_ID $id of log.h is not in irqpilot.catalog"
	fi
done
# The catalog's other entries are the reason codes' (report.c's table):
# tests/test_catalog checks that each entry belongs to a code or to log.h.
if [ -n "$(sort "$tmp/ids.catalog" | uniq -d)" ]; then
	not_ok "irqpilot.catalog has an ID twice"
fi
for name in $(sed -n 's/^#define \(IP_MESSAGE_[A-Z_]*\) .*/\1/p' "$top_srcdir/include/irqpilot/log.h"); do
	# a plan record's ID is its reason code's, in report.c's table
	if grep -q -- "$name" "$top_srcdir"/src/irqpilotd/*.c "$top_srcdir"/src/lib/report.c; then
		ok "$name is sent by irqpilotd"
	else
		not_ok "$name is defined but no log call in src/irqpilotd sends it"
	fi
done
# journalctl's own parser, on a root that holds only this catalog: it
# fails on an entry it cannot read, and must then list every entry.
if command -v journalctl >/dev/null 2>&1; then
	croot=$tmp/catalog-root
	mkdir -p "$croot/usr/lib/systemd/catalog" "$croot/var/lib/systemd/catalog"
	cp "$catalog" "$croot/usr/lib/systemd/catalog/"
	if journalctl --root="$croot" --update-catalog >"$tmp/catalog.log" 2>&1 &&
		journalctl --root="$croot" --list-catalog >"$tmp/catalog.list" 2>>"$tmp/catalog.log"; then
		awk '{ print $1 }' "$tmp/catalog.list" | sort >"$tmp/ids.compiled"
		if cmp -s "$tmp/ids.compiled" "$tmp/ids.catalog" && [ -s "$tmp/ids.compiled" ] &&
			! grep -q . "$tmp/catalog.log"; then
			ok "journalctl --update-catalog compiles irqpilot.catalog, every entry"
		else
			not_ok "journalctl compiled other entries than irqpilot.catalog has"
			sed 's/^/# /' "$tmp/catalog.log" "$tmp/catalog.list"
		fi
	else
		not_ok "journalctl --update-catalog rejects irqpilot.catalog"
		sed 's/^/# /' "$tmp/catalog.log"
	fi
else
	skip "journalctl not installed: catalog not compiled"
fi

# ---- bash completion ---------------------------------------------------
# Every command and option irqctl --help lists is offered.
completion=$top_srcdir/shell-completion/bash/irqctl
if command -v bash >/dev/null 2>&1 && bash -n "$completion" 2>"$tmp/bash-n"; then
	ok "bash completion for irqctl parses"
else
	not_ok "bash completion for irqctl parses"
	sed 's/^/# /' "$tmp/bash-n" 2>/dev/null
fi
if [ -x "$ctl" ] && [ -s "$tmp/irqctl.help" ]; then
	words=$(sed -n "s/^[[:space:]]*local \(commands\|opts\)='\(.*\)'$/\2/p" "$completion")
	for w in $(awk '/^Commands:/ { on = 1; next } on && /^$/ { exit }
		on && /^  [a-z]/ { print $1 }' "$tmp/irqctl.help") \
		$(long_options "$tmp/irqctl.help") \
		$(grep -Eo -- '^ +-[a-zA-Z],' "$tmp/irqctl.help" | tr -d ' ,'); do
		if printf '%s\n' $words | grep -qx -- "$w"; then
			ok "bash completion offers irqctl $w"
		else
			not_ok "irqctl --help lists $w, which the bash completion does not offer"
		fi
	done
	for obj in $(sed -n 's/^  show \([a-z|]*\)$/\1/p' "$tmp/irqctl.help" | tr '|' ' '); do
		if grep -q "compgen -W '[a-z ]*\\<$obj\\>" "$completion"; then
			ok "bash completion offers show $obj"
		else
			not_ok "irqctl --help lists show $obj, which the bash completion does not offer"
		fi
	done
fi

exit $fail
