#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# No function of the daemon, the client, the library or the module is longer
# than one screen (MAX lines, 80 unless told, from the opening brace in
# column 0 to the closing one). Issue 16: "functions that one screen cannot
# hold are split along what they decide" -- a long function is where a
# second decision hides behind a flag. The tests are left out: a cmocka
# test's table of steps reads best in one piece.
#
#   check-function-length.sh [MAX] [FILE...]
#
# Exit 0 pass, 1 fail (each offender listed as LINES FILE:LINE SIGNATURE).
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
max=${1:-80}
[ $# -gt 0 ] && shift
if [ $# -eq 0 ]; then
	# shellcheck disable=SC2046 # one word per path: the tree has no spaces in names
	set -- $(find "$top_srcdir/src" -name '*.c' | sort) $(find "$top_srcdir/kmod" -maxdepth 1 -name '*.c' | sort)
fi
[ $# -gt 0 ] || { echo "check-function-length: no sources under $top_srcdir"; exit 1; }
# Kernel style: a function's body opens with "{" alone in column 0, after its
# signature (named here by its first line), and closes with "}" in column 0. Initialisers and structs close
# with "};" and are not counted.
long=$(awk -v max="$max" '
	FNR == 1 { start = 0; sig = "" }
	/^\{/ && sig != "" { start = FNR; name = sig }
	/^\}$/ && start { n = FNR - start + 1; if (n > max) printf "%5d %s:%d %s\n", n, FILENAME, start, name; start = 0 }
	/^[A-Za-z_]/ { sig = $0 }' "$@" | sed "s|$top_srcdir/||" | sort -rn)
if [ -n "$long" ]; then
	echo "not ok - functions longer than $max lines:"
	echo "$long"
	exit 1
fi
echo "ok - no function in $# files is longer than $max lines"
