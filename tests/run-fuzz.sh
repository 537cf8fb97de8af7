#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# make check: a short fuzz run of every /proc parser. First the standalone
# builds (any compiler) over their corpus plus deterministic mutations, then,
# when clang has libFuzzer, a coverage-guided run of each target.
#
# Exit: 0 pass, 77 nothing could run, anything else a target crashed.

here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$(cd "$here/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
export top_srcdir top_builddir
# every tests/fuzz/fuzz_NAME.c is a target; its seeds are in corpus/NAME
targets=$(cd "$top_srcdir/tests/fuzz" && ls fuzz_*.c | sed 's/^fuzz_//; s/\.c$//')
iterations=${IP_FUZZ_ITERATIONS:-50000}
seconds=${IP_FUZZ_SECONDS:-10}

fail=0
ran=0
for t in $targets; do
	bin="$top_builddir/tests/fuzz/fuzz_$t"
	corpus="$top_srcdir/tests/fuzz/corpus/$t"
	if [ ! -x "$bin" ]; then
		echo "standalone: $bin not built, skipping it"
		continue
	fi
	echo "standalone: $bin $corpus $iterations"
	if "$bin" "$corpus" "$iterations"; then
		ran=$((ran + 1))
	else
		echo "FAIL: fuzz_$t (standalone, exit $?)"
		fail=1
	fi
done

# CI's second make check, under ASan and UBSan, sets IP_FUZZ_LIBFUZZER=0: the
# libFuzzer run is clang's own ASan and UBSan build, the same as the first
# make check's, so it would only repeat it (two minutes).
if [ "${IP_FUZZ_LIBFUZZER:-1}" = 0 ]; then
	echo "libFuzzer: IP_FUZZ_LIBFUZZER=0, not run"
else
	"$top_srcdir/tests/fuzz/run-libfuzzer.sh" "$seconds"
	case $? in
	0) ran=$((ran + 1)) ;;
	77) ;;
	*) fail=1 ;;
	esac
fi

[ "$fail" = 0 ] || exit 1
[ "$ran" -gt 0 ] || exit 77
exit 0
