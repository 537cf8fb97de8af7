#!/bin/bash
# Run every VM scenario (tests/vm/scenarios/*.sh and the kernel module's kmod/tests/cq-*.sh, or
# the ones named) one after another through run-vm.sh, each with the VM config in its "# vm:"
# header line. Prints each scenario's one-line summary, a table, and finally
# "N passed, N failed" (", N skipped" when any were skipped). Exit status 1 if any failed, else 0.
#
#   tests/vm/check-vm.sh [SCENARIO...]      names are looked up in both directories
#
# Before a cq-* scenario runs, kmod/ is built against the guest kernel's headers (installed with
# apt-get when missing) into BUILD/kmod, where kmod/tests/lib-ipcq.sh looks first; the source tree
# is left alone when BUILD is a separate tree. If that build fails, every cq-* scenario FAILs.
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
src=$(cd "$here/../.." && pwd)
kmodtests="$src/kmod/tests"

if [ $# -gt 0 ]; then
	scenarios=()
	for s in "$@"; do
		if [ -f "$s" ]; then scenarios+=("$s")
		elif [ -f "$here/scenarios/$s.sh" ]; then scenarios+=("$here/scenarios/$s.sh")
		elif [ -f "$kmodtests/$s.sh" ]; then scenarios+=("$kmodtests/$s.sh")
		else echo "check-vm: no scenario $s" >&2; exit 2
		fi
	done
else
	# bench-* are make bench's side-by-side runs, measurements rather than tests
	scenarios=()
	for s in "$here"/scenarios/*.sh; do
		case ${s##*/} in bench-*) ;; *) scenarios+=("$s") ;; esac
	done
	for s in "$kmodtests"/cq-*.sh; do [ -f "$s" ] && scenarios+=("$s"); done
fi
[ -e "${scenarios[0]}" ] || { echo "check-vm: no scenarios" >&2; exit 2; }

root=${IRQPILOT_VM_OUT:-$(mktemp -d "${TMPDIR:-/tmp}/irqpilot-check-vm.XXXXXX")}
mkdir -p "$root"
# shellcheck disable=SC2206 # documented as word-split
extra=(${IRQPILOT_VM_ARGS:-})

# The build tree the guest sees, as run-vm.sh picks it.
build=${IRQPILOT_BUILD:-}
if [ -z "$build" ]; then
	if [ -d "$src/build" ]; then build="$src/build"; else build="$src"; fi
fi
build=$(realpath -e "$build") || { echo "check-vm: no build tree $build" >&2; exit 2; }

. "$here/lib-kernel.sh"

# Build irqpilot_cq.ko (and the test holder module) for the guest kernel into $build/kmod.
# Prints why on failure.
build_kmod() {
	local kver kdir dir=$build/kmod
	kver=$(vm_guest_kernel)
	[ -n "$kver" ] || { echo "no guest kernel in /boot"; return 1; }
	kdir=/lib/modules/$kver/build
	if [ ! -e "$kdir/Makefile" ]; then
		(
			flock 9
			apt-get update -qq &&
				DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
					"linux-headers-$kver"
		) 9>/var/tmp/irqpilot-vm-apt.lock >&2 || { echo "apt-get install linux-headers-$kver failed"; return 1; }
	fi
	[ -e "$kdir/Makefile" ] || { echo "no kernel headers at $kdir"; return 1; }
	if [ "$build" != "$src" ]; then
		# Kbuild builds where the sources are; a copy keeps the source tree clean.
		mkdir -p "$dir/tests/holder" "$dir/uapi" || { echo "cannot create $dir"; return 1; }
		cp "$src/kmod/Makefile" "$src/kmod/Kbuild" "$src/kmod/irqpilot_cq.c" "$src/kmod/compat.h" "$dir/" &&
			cp "$src/kmod/tests/holder/Kbuild" "$src/kmod/tests/holder/ipcq_holder.c" \
				"$dir/tests/holder/" &&
			cp "$src/include/uapi/irqpilot_cq.h" "$dir/uapi/" || { echo "cannot copy kmod/ to $dir"; return 1; }
	else
		dir=$src/kmod
	fi
	make -C "$dir" KDIR="$kdir" >"$root/kmod-build.log" 2>&1 ||
		{ echo "make -C $dir KDIR=$kdir failed: $(grep -m1 -E 'error|Error' "$root/kmod-build.log")"; return 1; }
	echo "built $dir/irqpilot_cq.ko for $kver"
}

kmod_state=""	# "", ok, or the reason the build failed
pass=0 fail=0 skip=0
rows=()
t0=$(date +%s)
for s in "${scenarios[@]}"; do
	name=$(basename "$s" .sh)
	ts=$(date +%s)
	if [[ $name == cq-* ]] && [ -z "$kmod_state" ]; then
		if msg=$(build_kmod); then kmod_state=ok; else kmod_state=${msg:-kmod build failed}; fi
		echo "check-vm: kmod: $msg" >&2
	fi
	if [[ $name == cq-* ]] && [ "$kmod_state" != ok ]; then
		line="FAIL $name: kmod build failed: $kmod_state"
		rc=1
		: >"$root/$name.stderr"
	else
		line=$("$here/run-vm.sh" --build "$build" "${extra[@]}" --out "$root/$name" "$s" \
			2>"$root/$name.stderr" | tail -n1)
		rc=${PIPESTATUS[0]}
	fi
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
	# The figures: the summary without its "STATUS name: " prefix.
	rows+=("$(printf '%-28s %-4s %5ss %6ss  %s' "$name" "$st" "$secs" "${boot:-?}" "${line#*: }")")
done
total=$(( $(date +%s) - t0 ))

echo
printf '%-28s %-4s %6s %7s  %s\n' scenario res wall boot figures
printf '%s\n' "${rows[@]}"
echo "total ${total}s, results in $root"
tail="$pass passed, $fail failed"
[ $skip -gt 0 ] && tail+=", $skip skipped"
echo "$tail"
[ $fail -eq 0 ]
exit
}
