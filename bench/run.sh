#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/run.sh BUILDDIR: time the daemon's sample+derive cycle on a
# generated 256-CPU / 2,048-IRQ server and append the result to
# bench/RESULTS.md. Builds nothing: `make bench` builds
# BUILDDIR/tests/fixturegen and BUILDDIR/bench/bench-cycle first.
#
# Environment: BENCH_CPUS (256), BENCH_IRQS (2048), BENCH_NVME (2),
# BENCH_CYCLES (50), BENCH_SEED (1), BENCH_RESULTS (bench/RESULTS.md),
# TMPDIR (else /dev/shm when writable, else /tmp).
set -eu

if [ $# -ne 1 ]; then
	echo "usage: $0 BUILDDIR" >&2
	exit 2
fi
builddir=$1
srcdir=$(cd "$(dirname "$0")/.." && pwd)
gen=$builddir/tests/fixturegen
cycle=$builddir/bench/bench-cycle
for p in "$gen" "$cycle"; do
	if [ ! -x "$p" ]; then
		echo "$0: $p is missing; run 'make bench' (it builds it first)" >&2
		exit 1
	fi
done

cpus=${BENCH_CPUS:-256}
irqs=${BENCH_IRQS:-2048}
nvme=${BENCH_NVME:-2}
cycles=${BENCH_CYCLES:-50}
seed=${BENCH_SEED:-1}
results=${BENCH_RESULTS:-$srcdir/bench/RESULTS.md}

# A tree of ~33,000 entries: on a busy disk creating it dominates the run,
# and the page cache would hold it anyway once written.
base=${TMPDIR:-}
if [ -z "$base" ]; then
	if [ -d /dev/shm ] && [ -w /dev/shm ]; then base=/dev/shm; else base=/tmp; fi
fi
tmp=$(mktemp -d "$base/irqpilot-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM

gen_cmd="fixturegen --cpus $cpus --irqs $irqs --nvme $nvme --seed $seed"
cycle_cmd="bench-cycle --root TREE --cycles $cycles"
"$gen" --cpus "$cpus" --irqs "$irqs" --nvme "$nvme" --seed "$seed" "$tmp/root"
out=$("$cycle" --root "$tmp/root" --cycles "$cycles")
printf '%s\n' "$out"

fstype=$(stat -f -c %T "$tmp" 2>/dev/null || echo unknown)
model=$(sed -n 's/^model name[[:space:]]*:[[:space:]]*//p' /proc/cpuinfo 2>/dev/null | head -n 1)
[ -n "$model" ] || model=$(uname -m)
commit=$(git -C "$srcdir" rev-parse --short HEAD 2>/dev/null || echo unknown)
if ! git -C "$srcdir" diff --quiet HEAD 2>/dev/null; then commit="$commit (with local changes)"; fi

{
	printf '\n## %s, %s CPUs / %s IRQs\n\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$cpus" "$irqs"
	printf -- '- Machine: `%s`, nproc %s, %s\n' "$(uname -srm)" "$(nproc)" "$model"
	printf -- '- Source: %s\n' "$commit"
	printf -- '- Tree: `%s` on %s\n' "$gen_cmd" "$fstype"
	printf -- '- Command: `%s`\n' "$cycle_cmd"
	printf -- '- Peer: none in this run. These are absolute numbers for our own cycle\n'
	printf -- '  only; no speed or memory comparison may be drawn from them.\n\n'
	printf '```\n%s\n```\n' "$out"
} >>"$results"
echo "appended to $results"
