#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The VM harness's reading of a guest's serial log (tests/vm/lib-kernel.sh,
# vm_console_boot_stall), against consoles the harness itself kept from CI:
# a guest that stopped in its own boot must be told from one that booted, or
# run-vm.sh waits out the scenario's whole timeout and reports a FAIL of the
# scenario instead of booting again.

here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/.." && pwd)}
consoles="$top_srcdir/tests/vm/consoles"
. "$top_srcdir/tests/vm/lib-kernel.sh"
fail=0
scratch=$(mktemp -d) || exit 99
trap 'rm -rf "$scratch"' EXIT

# expect CONSOLE WANT WHY: WANT is the line reported, or "" for none.
expect() {
	local got rc
	got=$(vm_console_boot_stall "$1"); rc=$?
	if [ "$got" != "$2" ]; then
		echo "FAIL: $(basename "$1"): reported '$got' (status $rc), expected '$2' ($3)"
		fail=1
	elif [ -z "$2" ] && [ $rc -ne 1 ]; then
		echo "FAIL: $(basename "$1"): nothing reported but status $rc, expected 1 ($3)"
		fail=1
	else
		echo "ok: $(basename "$1") -> '${got:-none}' ($3)"
	fi
}

# 6.1.0-57-amd64 under thread=multi TCG, CI of 2026-12-06 (cq-starvation): CPU 0's kworker
# waited from ~2.5 s uptime for CPU 3 to answer text_poke_bp_batch's IPI, after the PCI
# bridge's MMCONFIG line, and the watchdog said so every 28 s until the 600 s timeout.
expect "$consoles/x86-6.1-boot-softlockup.console" \
	'[   28.562248] watchdog: BUG: soft lockup - CPU#0 stuck for 26s! [kworker/0:1:17]' \
	'a boot stuck on an IPI'
# The same CI run's irqpilot-capture: booted, ran, powered off.
expect "$consoles/x86-6.1-boot-ok.console" '' 'a boot that reached stage 2'
# A lockup after IRQPILOT-BOOTED is the scenario's: the run must FAIL on it, not boot again.
# (The booted console's first 12 lines, through IRQPILOT-BOOTED, then the lockup's report.)
{ head -n 12 "$consoles/x86-6.1-boot-ok.console"; sed -n '7,$p' "$consoles/x86-6.1-boot-softlockup.console"; } \
	>"$scratch/after-boot.log"
grep -q '^IRQPILOT-BOOTED ' "$scratch/after-boot.log" || { echo "FAIL: the spliced console lacks BOOTED"; fail=1; }
expect "$scratch/after-boot.log" '' 'a lockup after stage 2 is not a boot stall'
# A console still being written, cut inside the boot: nothing said yet.
head -n 6 "$consoles/x86-6.1-boot-softlockup.console" >"$scratch/early.log"
expect "$scratch/early.log" '' 'the boot so far, before the watchdog spoke'
# The report's line is cut to 120 characters, as run-vm.sh quotes it in the verdict.
{ head -n 6 "$consoles/x86-6.1-boot-softlockup.console"
  printf '[   28.562248] watchdog: BUG: soft lockup - CPU#0 stuck for 26s! [%s:17]\n' "$(printf 'k%.0s' $(seq 150))"
} >"$scratch/long.log"
want=$(sed -n '7p' "$scratch/long.log" | cut -c1-120)
expect "$scratch/long.log" "$want" 'a long line, cut'
exit $fail
