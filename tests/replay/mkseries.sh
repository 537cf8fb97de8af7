#!/bin/sh
# Build a replay series from a fixture machine and a workload description.
#
#   mkseries.sh SPEC OUTDIR
#
# SPEC is a small text file (see tests/replay/*.series):
#   base FIXTURE            a tree under tests/fixtures/
#   steps N                 number of samples (0000 .. N-1)
#   interval S              seconds between samples (whole seconds)
#   submit A-B DEV CPU RATE from step A to B, DEV gets RATE submissions/s from CPU
#   irq IRQ DEV CPULIST     IRQ completes DEV's I/O submitted from CPULIST ("all"
#                           for every CPU); its interrupts are counted on the
#                           CPU in the fixture's effective_affinity_list
#   vanish IRQ STEP         from STEP on, IRQ is gone (line and /proc/irq/IRQ)
#
# Every step is a full root tree (a copy of the fixture) with updated
# proc/interrupts, proc/softirqs BLOCK row and irqpilot/{time_ns,submit,complete}.
# Counts are cumulative, as the kernel's are.
set -eu

spec=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
fixtures=$here/../fixtures

base=$(awk '$1 == "base" { print $2 }' "$spec")
steps=$(awk '$1 == "steps" { print $2 }' "$spec")
interval=$(awk '$1 == "interval" { print $2 }' "$spec")
[ -n "$base" ] && [ -n "$steps" ] && [ -n "$interval" ] || {
	echo "mkseries: $spec: needs base, steps and interval" >&2
	exit 2
}
[ -d "$fixtures/$base" ] || { echo "mkseries: no fixture $base" >&2; exit 2; }
mkdir -p "$out"

k=0
while [ "$k" -lt "$steps" ]; do
	dir=$out/$(printf '%04d' "$k")
	rm -rf "$dir"
	# hard links: every file that changes is written anew and renamed over.
	# They change the link count, so the ctime, of the fixture files: git
	# then sees the tree stat-dirty until its index is refreshed (see
	# scripts/build-deb).
	cp -al "$fixtures/$base" "$dir" 2>/dev/null || { rm -rf "$dir"; cp -a "$fixtures/$base" "$dir"; }
	mkdir -p "$dir/irqpilot"
	echo $(( (1000 + k * interval) * 1000000000 )) >"$dir/irqpilot/time_ns"

	# cumulative submissions per DEV CPU up to step k
	awk -v k="$k" -v iv="$interval" '
	$1 == "submit" {
		split($2, r, "-"); a = r[1]; b = (r[2] == "" ? r[1] : r[2])
		for (j = 1; j <= k; j++)	# counts grow over the interval ending at step j
			if (j - 1 >= a && j - 1 <= b)
				n[$3 " " $4] += $5 * iv
		seen[$3 " " $4] = 1
	}
	END { for (x in seen) print x, n[x] + 0 }' "$spec" | sort >"$dir/irqpilot/submit"

	# completions and interrupts: per IRQ, the submissions it serves, counted
	# on its effective CPU
	: >"$dir/irqpilot/complete"
	: >"$dir/irqpilot/irqadd"
	awk '$1 == "irq" { print $2, $3, $4 }' "$spec" | while read -r irq dev cpus; do
		eff=$(cut -d, -f1 <"$fixtures/$base/proc/irq/$irq/effective_affinity_list" | cut -d- -f1)
		total=$(awk -v dev="$dev" -v cpus="$cpus" '
			BEGIN {
				if (cpus != "all") {
					n = split(cpus, parts, ",")
					for (i = 1; i <= n; i++) {
						m = split(parts[i], ab, "-")
						lo = ab[1]; hi = (m > 1 ? ab[2] : ab[1])
						for (c = lo; c <= hi; c++) ok[c] = 1
					}
				}
			}
			$1 == dev && (cpus == "all" || ($2 in ok)) { s += $3 }
			END { print s + 0 }' "$dir/irqpilot/submit")
		echo "$dev $eff $total" >>"$dir/irqpilot/complete"
		echo "$irq $eff $total" >>"$dir/irqpilot/irqadd"
	done

	# add them to the IRQ lines and to the BLOCK softirq row
	awk -v addf="$dir/irqpilot/irqadd" '
	BEGIN { while ((getline l < addf) > 0) { split(l, f, " "); add[f[1]] = f[2] " " f[3]; blk[f[2]] += f[3] } }
	NR == 1 { print; next }
	{
		lab = $1; sub(":", "", lab)
		if (lab in add) {
			split(add[lab], f, " "); col = f[1] + 2
			$col = $col + f[2]
		}
		print
	}' "$dir/proc/interrupts" >"$dir/proc/interrupts.new"
	mv "$dir/proc/interrupts.new" "$dir/proc/interrupts"
	if [ -f "$dir/proc/softirqs" ]; then
		awk -v addf="$dir/irqpilot/irqadd" '
		BEGIN { while ((getline l < addf) > 0) { split(l, f, " "); blk[f[2]] += f[3] } }
		$1 == "BLOCK:" { for (c in blk) { col = c + 2; $col = $col + blk[c] } }
		{ print }' "$dir/proc/softirqs" >"$dir/proc/softirqs.new"
		mv "$dir/proc/softirqs.new" "$dir/proc/softirqs"
	fi
	rm -f "$dir/irqpilot/irqadd"

	awk -v k="$k" '$1 == "vanish" && k >= $3 { print $2 }' "$spec" | while read -r irq; do
		awk -v irq="$irq" '{ lab = $1; sub(":", "", lab); if (lab != irq) print }' \
			"$dir/proc/interrupts" >"$dir/proc/interrupts.new"
		mv "$dir/proc/interrupts.new" "$dir/proc/interrupts"
		rm -rf "$dir/proc/irq/$irq"
	done
	k=$((k + 1))
done
