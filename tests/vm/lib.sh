# shellcheck shell=bash disable=SC2034 # FIO_* are results for the scenarios
# Helpers for scenarios in tests/vm/scenarios/, sourced inside the guest: . "$VM_LIB"
# A scenario ends with vm_pass, vm_fail or vm_skip; each records the one-line summary that
# run-vm.sh prints on the host.

vm_summary() {
	echo "$*" >>"${VM_SUMMARY:-/dev/null}"
	echo "SUMMARY: $*"
}
vm_pass() { vm_summary "$*"; exit 0; }
vm_fail() { vm_summary "$*"; exit 1; }
vm_skip() { vm_summary "$*"; exit 77; }
vm_log() { echo "[$(cut -d' ' -f1 /proc/uptime)] $*"; }

# Number of possible CPUs (columns of /proc/softirqs).
vm_ncpu() { awk 'NR == 1 { print NF; exit }' /proc/softirqs; }

# Per-CPU counts of one /proc/softirqs row, space separated: vm_softirqs BLOCK
vm_softirqs() {
	awk -v row="$1:" '$1 == row { $1 = ""; sub(/^ /, ""); print; exit }' /proc/softirqs
}

# Per-CPU differences of two count lists: vm_delta "$before" "$after"
vm_delta() {
	awk -v a="$1" -v b="$2" 'BEGIN {
		n = split(a, x, " "); split(b, y, " ");
		for (i = 1; i <= n; i++) printf "%s%d", (i > 1 ? " " : ""), y[i] - x[i]; print "" }'
}

# Field i (0-based CPU) of a count list, and the list's sum.
vm_at() { awk -v i="$2" -v l="$1" 'BEGIN { split(l, x, " "); print x[i + 1] + 0 }'; }
vm_sum() {
	awk -v l="$1" 'BEGIN { n = split(l, x, " "); s = 0; for (i = 1; i <= n; i++) s += x[i]
		print s }'
}

# IRQ numbers whose action (last columns of /proc/interrupts) matches an ERE: vm_irqs 'ahci'
vm_irqs() {
	awk -v re="$1" 'NR > 1 && $1 ~ /^[0-9]+:$/ {
		line = $0; sub(/^[^:]*:/, "", line)
		if (line ~ re) { sub(/:$/, "", $1); print $1 } }' /proc/interrupts
}

# Per-online-CPU counts of one IRQ from /proc/interrupts.
vm_irq_counts() {
	local n
	n=$(awk 'NR == 1 { print NF; exit }' /proc/interrupts)
	awk -v irq="$1:" -v n="$n" '$1 == irq { s = ""
		for (i = 2; i <= n + 1; i++) s = s (i > 2 ? " " : "") $i; print s; exit }' /proc/interrupts
}

# Wait up to $2 seconds (default 20) for a path to exist.
vm_wait_path() {
	for _ in $(seq 1 $(( ${2:-20} * 10 ))); do
		[ -e "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# First block device whose driver chain matches: vm_disk sd|nvme|vd -> /dev/NAME
vm_disk() {
	local d
	for _ in $(seq 1 200); do
		for d in /sys/block/"$1"*; do
			[ -e "$d" ] && { echo "/dev/${d##*/}"; return 0; }
		done
		sleep 0.1
	done
	return 1
}

# Run fio with --minimal (terse v3) output; sets FIO_ERR, FIO_RIOPS, FIO_WIOPS. Returns fio's
# status. Terse fields: 5 error, 8 read IOPS, 49 write IOPS.
vm_fio() {
	local outf rc
	outf=$(mktemp /tmp/fio.XXXXXX)
	fio --minimal "$@" >"$outf" 2>"$outf.err"
	rc=$?
	FIO_ERR=$(awk -F';' 'NR == 1 { print $5 }' "$outf")
	FIO_RIOPS=$(awk -F';' '{ s += $8 } END { print s + 0 }' "$outf")
	FIO_WIOPS=$(awk -F';' '{ s += $49 } END { print s + 0 }' "$outf")
	if [ $rc -ne 0 ] || [ "${FIO_ERR:-0}" != 0 ]; then
		echo "fio failed (status $rc, error ${FIO_ERR:-?}):"
		cat "$outf.err" "$outf"
		[ $rc -ne 0 ] || rc=1
	fi
	rm -f "$outf" "$outf.err"
	return $rc
}

# Percentage a/b with one decimal, 0 when b is 0.
vm_pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b > 0 ? 100 * a / b : 0) }'; }
