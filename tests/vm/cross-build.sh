#!/bin/bash
# Cross-build irqpilotd and irqctl for a foreign VM guest (tests/vm/run-vm.sh ARCH=aarch64):
#
#   tests/vm/cross-build.sh ARCH BUILDDIR
#
# configures this source tree in BUILDDIR with --host=ARCH-linux-gnu and runs make. The
# compiler is Debian's gcc-ARCH-linux-gnu (scripts/deps --test installs it); the libraries are
# Debian bookworm's ARCH -dev packages, unpacked into a --sysroot in the VM cache by
# lib-kernel.sh's vm_sysroot (a private apt index: the host's dpkg architectures are left
# alone). The guest's userland (vm_userland) has the same versions of their runtime libraries.
# Reconfigures only when the sysroot changed or BUILDDIR has no Makefile. Prints the build dir.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
arch=${1:?ARCH}
bdir=${2:?BUILDDIR}
. "$here/lib-kernel.sh"
triplet=$arch-linux-gnu
command -v "$triplet-gcc" >/dev/null || { echo "cross-build: no $triplet-gcc (scripts/deps --test)" >&2; exit 2; }
vm_sysroot "$arch" || { echo "cross-build: $VM_KWHY" >&2; exit 2; }
sys=$VM_UROOT
[ -x "$src/configure" ] || (cd "$src" && ./autogen.sh) >&2
mkdir -p "$bdir"
bdir=$(realpath "$bdir")
stamp=$(cat "$sys/.debs")
if [ ! -f "$bdir/Makefile" ] || [ "$(cat "$bdir/.cross-sysroot" 2>/dev/null)" != "$stamp" ]; then
	(cd "$bdir" && "$src/configure" --quiet --host="$triplet" --disable-tests \
		CC="$triplet-gcc --sysroot=$sys" CFLAGS="-O2 -g" \
		PKG_CONFIG_LIBDIR="$sys/usr/lib/$triplet/pkgconfig:$sys/usr/share/pkgconfig" \
		PKG_CONFIG_SYSROOT_DIR="$sys") >&2
	echo "$stamp" >"$bdir/.cross-sysroot"
fi
make -C "$bdir" -j"${IRQPILOT_CROSS_JOBS:-1}" -s >&2
file "$bdir/src/irqpilotd/irqpilotd" | grep -q "ARM aarch64\|$arch" ||
	{ echo "cross-build: $bdir/src/irqpilotd/irqpilotd is not an $arch binary" >&2; exit 1; }
# kmod/tests' netlink client, which the x86 guest compiles itself: this guest has no compiler.
mkdir -p "$bdir/kmod/tests"
PKG_CONFIG_LIBDIR="$sys/usr/lib/$triplet/pkgconfig:$sys/usr/share/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$sys" \
	sh -c '"$1"-gcc --sysroot="$2" -O2 -Wall -I"$3/include/uapi" $(pkg-config --cflags libnl-genl-3.0) \
		"$3/kmod/tests/ipcq-ctl.c" $(pkg-config --libs libnl-genl-3.0) -o "$4"' \
	sh "$triplet" "$sys" "$src" "$bdir/kmod/tests/ipcq-ctl" >&2
# guest-init.sh's tracepoint holder, for the same reason.
mkdir -p "$bdir/tests/vm"
"$triplet-gcc" --sysroot="$sys" -O2 -Wall "$src/tests/vm/tp-hold.c" -o "$bdir/tests/vm/tp-hold" >&2
echo "$bdir"
