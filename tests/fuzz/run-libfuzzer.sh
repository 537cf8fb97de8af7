#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Builds the fuzz targets with clang's libFuzzer, ASan and UBSan and runs
# each for SECONDS (default 10) over a scratch copy of its seed corpus.
# make check runs it briefly through tests/run-fuzz.sh; run it by hand for
# longer: tests/fuzz/run-libfuzzer.sh 600
#
# Exit: 0 all ran clean, 77 clang/libFuzzer unavailable, 1 a target crashed.

seconds=${1:-10}
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/../.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
# every tests/fuzz/fuzz_NAME.c is a target; its seeds are in corpus/NAME
targets=$(cd "$top_srcdir/tests/fuzz" && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//')
CLANG=${CLANG:-clang}

if ! command -v "$CLANG" >/dev/null 2>&1; then
	echo "libFuzzer: $CLANG not found, skipping"
	exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/irqpilot-fuzz.XXXXXX") || exit 1
keep=0
# shellcheck disable=SC2317 # called by the trap
cleanup() {
	[ "$keep" = 1 ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' \
	>"$tmp/probe.c"
if ! "$CLANG" -fsanitize=fuzzer,address,undefined "$tmp/probe.c" -o "$tmp/probe" >/dev/null 2>&1; then
	echo "libFuzzer: $CLANG does not support -fsanitize=fuzzer, skipping"
	exit 77
fi

# Without a configured tree (a manual run) fall back to the defaults.
config=""
[ -f "$top_builddir/config.h" ] && config="-include $top_builddir/config.h"

lib="$top_srcdir/src/lib"
pkgs="inih libnl-genl-3.0 libnl-3.0 libsystemd json-c"
# shellcheck disable=SC2086 # a list of packages
pkglibs=$(pkg-config --libs $pkgs 2>/dev/null)
# shellcheck disable=SC2086 # a list of packages
cflags="-std=gnu11 -g -O1 -fno-sanitize-recover=undefined -DIP_LIBFUZZER -D_GNU_SOURCE $config \
	-I$top_srcdir/include -I$top_srcdir/src/irqctl $(pkg-config --cflags $pkgs 2>/dev/null)"
export CLANG cflags tmp
# The whole library, so any target may use any module, compiled once with
# coverage (fuzzer-no-link) and linked into every target: compiling it again
# per target took 20 s a target, twice the fuzzing itself.
# irqctl's reply.c, which only the protocol target links, goes beside it.
mkdir -p "$tmp/obj" "$tmp/obj-irqctl"
# shellcheck disable=SC2016 # expanded by the inner shell
if ! printf '%s\0' "$lib"/*.c "$top_srcdir/src/irqctl/reply.c" | xargs -0 -P "$(nproc 2>/dev/null || echo 1)" -n 1 sh -c '
	out=$tmp/obj
	case $1 in */src/irqctl/*) out=$tmp/obj-irqctl ;; esac
	# shellcheck disable=SC2086
	"$CLANG" $cflags -fsanitize=fuzzer-no-link,address,undefined -c "$1" \
		-o "$out/$(basename "$1" .c).o"' sh; then
	echo "FAIL: the library does not build with $CLANG -fsanitize=fuzzer-no-link"
	exit 1
fi
fail=0
for t in $targets; do
	bin="$tmp/fuzz_$t"
	# the protocol target also reads replies as irqctl does
	extra=""
	[ "$t" = protocol ] && extra="$tmp/obj-irqctl/reply.o"
	echo "libFuzzer: building fuzz_$t"
	# shellcheck disable=SC2086
	if ! "$CLANG" $cflags -fsanitize=fuzzer,address,undefined "$here/fuzz_$t.c" "$tmp"/obj/*.o $extra \
		$pkglibs -lm -o "$bin"; then
		echo "FAIL: fuzz_$t does not build with $CLANG"
		fail=1
		continue
	fi
	mkdir -p "$tmp/corpus-$t" "$tmp/crash-$t"
	cp "$top_srcdir/tests/fuzz/corpus/$t"/* "$tmp/corpus-$t/"
	echo "libFuzzer: fuzz_$t -max_total_time=$seconds over corpus/$t"
	if ! "$bin" -max_total_time="$seconds" -rss_limit_mb=1024 -print_final_stats=1 \
		-artifact_prefix="$tmp/crash-$t/" "$tmp/corpus-$t" >"$tmp/log-$t" 2>&1; then
		tail -n 40 "$tmp/log-$t"
		echo "FAIL: fuzz_$t crashed; input and log kept in $tmp/crash-$t/ and $tmp/log-$t"
		keep=1
		fail=1
	else
		grep -E '^stat::number_of_executed_units|^Done' "$tmp/log-$t" | tr '\n' ' '
		echo
	fi
done
exit $fail
