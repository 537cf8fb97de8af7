#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# bench/get-irqbalance.sh [DIR]: unpack Debian's irqbalance into DIR
# (default $IRQPILOT_BENCH_CACHE, else /var/tmp/irqpilot-bench) and print the
# path of its binary. `apt-get download` + `dpkg-deb -x`, never
# `apt-get install`: installing would start the service and rebalance this
# machine's own IRQs. Only missing shared libraries are installed.
set -eu
dir=${1:-${IRQPILOT_BENCH_CACHE:-/var/tmp/irqpilot-bench}}
bin=$dir/irqbalance/usr/sbin/irqbalance
mkdir -p "$dir"
if [ ! -x "$bin" ]; then
	(cd "$dir" && rm -f irqbalance_*.deb && apt-get download irqbalance >&2) || {
		echo "$0: apt-get download irqbalance failed" >&2
		exit 1
	}
	rm -rf "$dir/irqbalance"
	dpkg-deb -x "$dir"/irqbalance_*.deb "$dir/irqbalance"
fi
missing=$(ldd "$bin" | awk '/not found/ { print $1 }')
if [ -n "$missing" ]; then
	# libfoo.so.N -> the package that ships it
	pkgs=$(for l in $missing; do apt-file search -l "$l" 2>/dev/null | head -n1; done)
	[ -n "$pkgs" ] || pkgs="libglib2.0-0 libnuma1 libcap-ng0 libsystemd0"
	echo "$0: installing libraries irqbalance needs: $pkgs" >&2
	# shellcheck disable=SC2086
	apt-get install -y --no-install-recommends $pkgs >&2
fi
echo "$bin"
