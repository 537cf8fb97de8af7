#!/bin/bash
# Run every VM scenario (tests/vm/scenarios/*.sh, or the ones named) one after another through
# run-vm.sh, each with the VM config in its "# vm:" header line. Prints each scenario's one-line
# summary, a table, and finally "N passed, N failed" (", N skipped" when any were skipped).
# Exit status 1 if any failed, else 0.
#
#   tests/vm/check-vm.sh [SCENARIO...]
#
# Environment: IRQPILOT_VM_OUT  results root (default: a new temp dir; one subdir per scenario)
#              IRQPILOT_VM_ARGS extra run-vm.sh options for every scenario, word-split
#              IRQPILOT_BUILD   build tree to show the guest (see run-vm.sh --build)
# Scenarios run one at a time: under TCG they compete for the host's CPUs, and their timings and
# softirq placements would mean little if they shared them.
set -uo pipefail
# The whole script sits in one block so bash has parsed all of it before running any: a run
# that lasts minutes must not read a copy of this file edited in the meantime.
{
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

if [ $# -gt 0 ]; then
	scenarios=()
	for s in "$@"; do
		if [ -f "$s" ]; then scenarios+=("$s")
		elif [ -f "$here/scenarios/$s.sh" ]; then scenarios+=("$here/scenarios/$s.sh")
		else echo "check-vm: no scenario $s" >&2; exit 2
		fi
	done
else
	scenarios=("$here"/scenarios/*.sh)
fi
[ -e "${scenarios[0]}" ] || { echo "check-vm: no scenarios" >&2; exit 2; }

root=${IRQPILOT_VM_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/irqpilot-check-vm.XXXXXX")}
mkdir -p "$root"
# shellcheck disable=SC2206 # documented as word-split
extra=(${IRQPILOT_VM_ARGS:-})

pass=0 fail=0 skip=0
rows=()
t0=$(date +%s)
for s in "${scenarios[@]}"; do
	name=$(basename "$s" .sh)
	ts=$(date +%s)
	line=$("$here/run-vm.sh" "${extra[@]}" --out "$root/$name" "$s" 2>"$root/$name.stderr" | tail -n1)
	rc=${PIPESTATUS[0]}
	secs=$(( $(date +%s) - ts ))
	case $rc in
	0) st=PASS; pass=$((pass + 1)) ;;
	77) st=SKIP; skip=$((skip + 1)) ;;
	*) st=FAIL; fail=$((fail + 1))
	   [ -n "$line" ] || line="FAIL $name: run-vm.sh exited $rc"
	   sed 's/^/    /' "$root/$name.stderr" ;;
	esac
	echo "$line"
	boot=$(sed -n 's/.* bootwall \([^ ]*\)s .*/\1/p' "$root/$name/result" 2>/dev/null)
	rows+=("$(printf '%-32s %-4s %5ss %6ss' "$name" "$st" "$secs" "${boot:-?}")")
done
total=$(( $(date +%s) - t0 ))

echo
printf '%-32s %-4s %6s %7s\n' scenario res wall boot
printf '%s\n' "${rows[@]}"
echo "total ${total}s, results in $root"
tail="$pass passed, $fail failed"
[ $skip -gt 0 ] && tail+=", $skip skipped"
echo "$tail"
[ $fail -eq 0 ]
exit
}
