#!/bin/bash
# Run VM scenarios (tests/vm/scenarios/*.sh and the kernel module's kmod/tests/cq-*.sh, or the
# ones named) one after another through run-vm.sh, each with the VM config in its "# vm:" header
# line, on one guest or a matrix of guests. Prints each scenario's one-line summary, a table with
# the columns scenario, result, arch, kernel (the guest's `uname -r`), wall and figures, and
# finally "N passed, N failed" (", N skipped" when any were skipped). Exit status 1 if any
# failed, else 0.
#
#   tests/vm/check-vm.sh [--guest ARCH:KERNEL[=SCENARIO,...]]... [SCENARIO...]
#
# SCENARIO names are looked up in both directories. Each --guest adds a guest (ARCH and KERNEL
# as run-vm.sh takes them, e.g. x86_64:default, x86_64:rt, x86_64:trixie); after "=" it names
# the scenarios that guest runs, after "=-" the ones it leaves out of all, else it runs the ones
# named on the command line, else all.
# Without --guest: one guest, $ARCH:$KERNEL (default x86_64:default). A scenario that needs
# another arch, an RT kernel or a newer kernel (its "# vm: --need-*" options) is a SKIP there.
#
# Before a cq-* scenario runs on a guest, kmod/ is built against that kernel's headers into
# BUILD/kmod/KVER, where kmod/tests/lib-ipcq.sh looks first: a fetched kernel's headers with
# kmod/tests/build-compat.sh --vm (a private apt index and a root of their own, nothing
# installed), an installed kernel's from /lib/modules/KVER/build. If that build fails, every
# cq-* scenario of that guest FAILs with the reason.
#
# Environment: IRQPILOT_VM_OUT  results root (default: a new temp dir; GUEST/SCENARIO subdirs)
#              IRQPILOT_VM_ARGS extra run-vm.sh options for every scenario, word-split
#              IRQPILOT_BUILD   build tree to show the guest (see run-vm.sh --build)
#              ARCH, KERNEL     the guest when no --guest is given
# Scenarios run one at a time: under TCG they compete for the host's CPUs, and their timings and
# softirq placements would mean little if they shared them.
set -uo pipefail
# The whole script sits in one block so bash has parsed all of it before running any: a run
# that lasts minutes must not read a copy of this file edited in the meantime.
{
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
kmodtests="$src/kmod/tests"

guests=()
while [ $# -gt 0 ]; do
	case $1 in
	--guest) guests+=("${2:?--guest needs ARCH:KERNEL}"); shift 2 ;;
	--guest=*) guests+=("${1#--guest=}"); shift ;;
	*) break ;;
	esac
done
[ ${#guests[@]} -gt 0 ] || guests=("${ARCH:-x86_64}:${KERNEL:-default}")

# scenario_paths NAME... -> paths in SCEN; every scenario when none is named.
scenario_paths() {
	SCEN=()
	local s
	if [ $# -gt 0 ]; then
		for s in "$@"; do
			if [ -f "$s" ]; then SCEN+=("$s")
			elif [ -f "$here/scenarios/$s.sh" ]; then SCEN+=("$here/scenarios/$s.sh")
			elif [ -f "$kmodtests/$s.sh" ]; then SCEN+=("$kmodtests/$s.sh")
			else echo "check-vm: no scenario $s" >&2; exit 2
			fi
		done
		return
	fi
	# bench-* are make bench's side-by-side runs, measurements rather than tests
	for s in "$here"/scenarios/*.sh; do
		case ${s##*/} in bench-*) ;; *) SCEN+=("$s") ;; esac
	done
	for s in "$kmodtests"/cq-*.sh; do [ -f "$s" ] && SCEN+=("$s"); done
}
scenario_paths "$@"
[ -e "${SCEN[0]}" ] || { echo "check-vm: no scenarios" >&2; exit 2; }
default_scen=("${SCEN[@]}")

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

# Build irqpilot_cq.ko (and the test holder module) for the selected guest kernel (VM_*, from
# vm_kernel_select) into $build/kmod/KVER. Prints why on failure.
build_kmod() {
	local kdir dir=$gbuild/kmod/$VM_KVER stage
	if [ "$VM_KROOT" != / ]; then
		rm -rf "$dir"
		"$kmodtests/build-compat.sh" --vm "$VM_KVER=$VM_KDEBVER" "$VM_KINDEX" "$dir" "$VM_ARCH" \
			>"$root/kmod-build-$VM_KVER.out" 2>&1 ||
			{ echo "build-compat.sh --vm $VM_KVER=$VM_KDEBVER: $(tail -n1 "$root/kmod-build-$VM_KVER.out")"; return 1; }
		echo "built $dir/irqpilot_cq.ko for $VM_KVER: $(tail -n1 "$root/kmod-build-$VM_KVER.out")"
		return 0
	fi
	kdir=/lib/modules/$VM_KVER/build
	[ -e "$kdir/Makefile" ] || { echo "no kernel headers at $kdir"; return 1; }
	# Kbuild builds where the sources are; a copy keeps the source tree clean.
	stage=$build/kmod/.src-$VM_KVER
	mkdir -p "$stage/tests/holder" "$stage/uapi" "$dir/tests/holder" || { echo "cannot create $stage"; return 1; }
	cp "$src/kmod/Makefile" "$src/kmod/Kbuild" "$src/kmod/irqpilot_cq.c" "$src/kmod/compat.h" "$stage/" &&
		cp "$src/kmod/tests/holder/Kbuild" "$src/kmod/tests/holder/ipcq_holder.c" \
			"$stage/tests/holder/" &&
		cp "$src/include/uapi/irqpilot_cq.h" "$stage/uapi/" || { echo "cannot copy kmod/ to $stage"; return 1; }
	make -C "$stage" KDIR="$kdir" >"$root/kmod-build-$VM_KVER.log" 2>&1 ||
		{ echo "make -C $stage KDIR=$kdir failed: $(grep -m1 -E 'error|Error' "$root/kmod-build-$VM_KVER.log")"; return 1; }
	cp "$stage/irqpilot_cq.ko" "$dir/" && cp "$stage/tests/holder/ipcq_holder.ko" "$dir/tests/holder/" ||
		{ echo "cannot copy the modules to $dir"; return 1; }
	echo "built $dir/irqpilot_cq.ko for $VM_KVER"
}

pass=0 fail=0 skip=0
rows=()
t0=$(date +%s)
for g in "${guests[@]}"; do
	garch=${g%%:*} gk=${g#*:}
	[ "$garch" != "$g" ] || gk=default
	gscen=("${default_scen[@]}")
	if [[ $gk == *=* ]]; then
		# "=a,b": those scenarios; "=-a,b": every scenario but those. Each named one must
		# exist either way, so a rename cannot go unseen.
		list=${gk#*=}
		gk=${gk%%=*}
		IFS=, read -r -a names <<<"${list#-}"
		scenario_paths "${names[@]}"
		if [ "${list:0:1}" = - ]; then
			gscen=()
			for s in "${default_scen[@]}"; do
				for x in "${SCEN[@]}"; do [ "$s" -ef "$x" ] && continue 2; done
				gscen+=("$s")
			done
		else
			gscen=("${SCEN[@]}")
		fi
	fi
	glabel=$garch-$gk
	mkdir -p "$root/$glabel"
	if ! vm_kernel_select "$garch" "$gk"; then
		for s in "${gscen[@]}"; do
			name=$(basename "$s" .sh)
			echo "FAIL $name: guest $g: $VM_KWHY"
			fail=$((fail + 1))
			rows+=("$(printf '%-28s %-4s %-7s %-26s %5ss  %s' "$name" FAIL "$garch" "$gk?" 0 "guest: $VM_KWHY")")
		done
		continue
	fi
	# A foreign guest runs irqpilotd and irqctl cross-built for it, in BUILD/guest-ARCH.
	gbuild=$build gwhy=""
	if [ "$garch" != x86_64 ]; then
		gbuild=$("$here/cross-build.sh" "$garch" "$build/guest-$garch" 2>"$root/$glabel/cross-build.log") ||
			gwhy="cross-build.sh $garch failed: $(tail -n1 "$root/$glabel/cross-build.log")"
	fi
	kmod_state=""	# "", ok, or the reason the build failed
	for s in "${gscen[@]}"; do
		name=$(basename "$s" .sh)
		out=$root/$glabel/$name
		ts=$(date +%s)
		if [[ $name == cq-* ]] && [ -z "$kmod_state" ]; then
			if msg=$(build_kmod); then kmod_state=ok; else kmod_state=${msg:-kmod build failed}; fi
			echo "check-vm: kmod: $msg" >&2
		fi
		if [ -n "$gwhy" ]; then
			line="FAIL $name: $gwhy"
			rc=1
			mkdir -p "$out"
			: >"$out.stderr"
		elif [[ $name == cq-* ]] && [ "$kmod_state" != ok ]; then
			line="FAIL $name: kmod build failed: $kmod_state"
			rc=1
			mkdir -p "$out"
			: >"$out.stderr"
		else
			line=$("$here/run-vm.sh" --build "$gbuild" --arch "$garch" --kernel "$gk" "${extra[@]}" \
				--out "$out" "$s" 2>"$out.stderr" | tail -n1)
			rc=${PIPESTATUS[0]}
		fi
		secs=$(( $(date +%s) - ts ))
		case $rc in
		0) st=PASS; pass=$((pass + 1)) ;;
		77) st=SKIP; skip=$((skip + 1)) ;;
		*) st=FAIL; fail=$((fail + 1))
		   [ -n "$line" ] || line="FAIL $name: run-vm.sh exited $rc"
		   sed 's/^/    /' "$out.stderr" ;;
		esac
		echo "$line"
		# The guest's own uname -r when it booted, else the kernel it would have booted.
		kern=$(sed -n 's/.* guest \([^ ]*\) out .*/\1/p' "$out/result" 2>/dev/null)
		[ -n "$kern" ] && [ "$kern" != "?" ] || kern="($VM_KVER)"
		# The figures: the summary without its "STATUS name: " prefix.
		rows+=("$(printf '%-28s %-4s %-7s %-26s %5ss  %s' "$name" "$st" "$garch" "$kern" "$secs" "${line#*: }")")
	done
done
total=$(( $(date +%s) - t0 ))

echo
printf '%-28s %-4s %-7s %-26s %6s  %s\n' scenario result arch kernel wall figures
printf '%s\n' "${rows[@]}"
echo "total ${total}s, results in $root"
tail="$pass passed, $fail failed"
[ $skip -gt 0 ] && tail+=", $skip skipped"
echo "$tail"
[ $fail -eq 0 ]
exit
}
