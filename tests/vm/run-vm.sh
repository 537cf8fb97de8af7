#!/bin/bash
# Boot Debian's own kernel under QEMU/TCG with this machine's / as the guest's read-only root
# (virtio-9p), run one scenario script inside the guest, and report its verdict.
#
#   tests/vm/run-vm.sh [OPTIONS] SCENARIO_SCRIPT [ARGS...]
#
#   --smp SPEC          -smp value                      (default 4,sockets=2,cores=2)
#   --mem M             -m value                        (default 2G)
#   --append "ARGS"     extra kernel command line (added to the defaults; repeatable)
#   --qemu "ARGS"       extra qemu arguments, word-split (repeatable)
#   --disk KIND         ahci | nvme:N | virtio:N | none  (repeatable; N = I/O queues).
#                       Each disk is a sparse 1 GiB raw file in a temp dir on the host.
#   --disk-size SIZE    size of each disk image         (default 1G)
#   --timeout SECONDS   wall-clock limit for the whole boot; qemu is killed after it (default 300)
#   --stall SECONDS     a guest silent this long before it has booted is stuck: its vCPUs are
#                       reported (stall.txt) and it is booted once more (default 180)
#   --throttle "CPUS:PERCENT[/PERIOD_MS]"
#                       cap the host threads of the listed vCPUs (cpulist) at PERCENT of one
#                       host CPU each, through a cgroup (v2 threaded, else v1 cpu) made and
#                       removed here, with a CFS period of PERIOD_MS (default 100): a capped
#                       vCPU that used its quota stops for the rest of the period.
#                       If no cgroup can be made the run is a SKIP, never a PASS.
#   --out DIR           results dir: console.log (serial, \r stripped), result, and a writable
#                       9p export the guest sees as /run/irqpilot/out (default: a new temp dir)
#   --arch ARCH         guest architecture: x86_64 (default) | aarch64      (also ARCH=)
#   --kernel SPEC       guest kernel (also KERNEL=): default (bookworm's linux-image-amd64),
#                       rt (bookworm's linux-image-rt-amd64), SUITE[-rt] (bookworm-backports,
#                       trixie, trixie-backports, sid), installed (newest /boot/vmlinuz-*), or a
#                       version (`uname -r`). Fetched with apt-get download and unpacked into
#                       ${XDG_CACHE_HOME:-/var/tmp}/irqpilot-vm/kernels, never installed; see
#                       lib-kernel.sh.
#   --llc cluster|shared
#                       aarch64: one L2 per cluster (default), or one cache all CPUs share, as
#                       a DynamIQ phone's L3: little and big CPUs then share their LLC
#   --need-arch LIST    (header) the archs the scenario runs on, comma-separated (default x86_64)
#   --need-rt           (header) the scenario needs a PREEMPT_RT kernel
#   --need-kernel MIN   (header) the scenario needs a kernel >= MIN (e.g. 6.12)
#                       A guest that lacks what the scenario needs is a SKIP with the reason,
#                       decided before booting.
#   --src DIR           source tree seen as /run/irqpilot/src   (default: this checkout)
#   --build DIR         build tree seen as /run/irqpilot/build  (default: $IRQPILOT_BUILD,
#                       else SRC/build if it exists, else SRC)
#   --tcg-threads multi|single
#                       one host thread per vCPU (default), or all vCPUs on one thread. Under
#                       multi, a vCPU can keep running code another vCPU already rewrote (see
#                       kmod/tests/cq-unload.sh); single keeps code writes coherent.
#   --systemd           boot systemd as the guest's PID 1 instead of guest-init.sh: the root is
#                       an overlay (the host's / read-only below, a tmpfs above, as
#                       systemd.volatile=overlay makes it), systemd starts irqpilot-vm.target
#                       (tests/vm/systemd/), whose service runs the scenario. x86_64 only.
#   --no-header         ignore the scenario's "# vm:" header line
#   -v, --verbose       also copy the serial console to stderr while it runs
#
# Environment: ARCH, KERNEL (as --arch, --kernel; IRQPILOT_VM_KERNEL is the old name of
# KERNEL), IRQPILOT_BUILD (as --build), XDG_CACHE_HOME
# (initramfs cache, default /var/tmp), IRQPILOT_VM_NO_CGROUP=1 (act as if no cgroup could be
# made, to test the throttle SKIP path).
#
# A scenario may carry its VM config in a header line, e.g.
#   # vm: --disk ahci --append threadirqs --smp 4,sockets=2,cores=2
# Header options come first; command-line options override them, and a --disk given on the
# command line replaces the header's disks.
#
# A scenario may also name a check to run on the host after a guest PASS, e.g.
#   # host-check: bash tests/vm/scenarios/irqpilot-capture.sh --host
# It runs from the source tree with IRQPILOT_BUILD set to the build tree and the out dir as its
# last argument; its output goes to OUT/host-check.log. Exit 0 keeps the PASS (its last line is
# added to the summary), 77 makes it a SKIP, anything else a FAIL.
#
# And one to run on the host before the boot, e.g. to build what the guest installs:
#   # host-prep: bash tests/vm/scenarios/irqpilot-systemd.sh --host-prep
# Run the same way (the out dir, which the guest sees as /run/irqpilot/out, is its last
# argument; output in OUT/host-prep.log). 77 makes the run a SKIP, anything else but 0 a FAIL,
# both without booting.
#
# Exit status: 0 PASS, 77 SKIP, 1 FAIL (scenario failure, guest panic, Oops, BUG:, WARNING:,
# hung task, RCU stall, or timeout), 2 usage or host setup error. The last line printed is the
# scenario's one-line summary: "PASS|FAIL|SKIP <scenario>: <summary>".
#
# Needs root (9p export of / with security_model=none, cgroups). KVM is never used: it hangs at
# boot on these machines; TCG with one host thread per vCPU (thread=multi) is used instead.
set -uo pipefail
# The whole script sits in one block so bash has parsed all of it before running any: a run
# that lasts minutes must not read a copy of this file edited in the meantime.
{

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
self="$here/run-vm.sh"

die() { echo "run-vm: $*" >&2; exit 2; }
log() { echo "run-vm: $*" >&2; }

# --- options -----------------------------------------------------------------------------------
smp="4,sockets=2,cores=2"
mem="2G"
append=()
qemu_extra=()
disks=()
disk_size="1G"
timeout_s=300
stall_s=180
throttle=""
out=""
kspec="${KERNEL:-${IRQPILOT_VM_KERNEL:-}}"
arch="${ARCH:-x86_64}"
need_arch="x86_64"
need_rt=0
need_kernel=""
llc=cluster
src=""
build="${IRQPILOT_BUILD:-}"
verbose=0
use_header=1
systemd=0
cli_disks=0
tcg_threads=multi

parse_opts() {
	# $1 = "header" or "cli"; remaining args are options. Sets OPTS_REST to the remaining words.
	local origin=$1; shift
	while [ $# -gt 0 ]; do
		case "$1" in
		--smp) smp=${2:?--smp needs a value}; shift 2 ;;
		--mem) mem=${2:?--mem needs a value}; shift 2 ;;
		--append) append+=("${2?--append needs a value}"); shift 2 ;;
		--qemu) qemu_extra+=("${2?--qemu needs a value}"); shift 2 ;;
		--disk)
			[ -n "${2:-}" ] || die "--disk needs a value"
			if [ "$origin" = cli ] && [ $cli_disks -eq 0 ]; then disks=(); cli_disks=1; fi
			disks+=("$2"); shift 2 ;;
		--disk-size) disk_size=${2:?--disk-size needs a value}; shift 2 ;;
		--timeout) timeout_s=${2:?--timeout needs a value}; shift 2 ;;
		--stall) stall_s=${2:?--stall needs a value}; shift 2 ;;
		--throttle) throttle=${2?--throttle needs a value}; shift 2 ;;
		--out) out=${2:?--out needs a value}; shift 2 ;;
		--kernel) kspec=${2:?--kernel needs a value}; shift 2 ;;
		--arch) arch=${2:?--arch needs a value}; shift 2 ;;
		--need-arch) need_arch=${2:?--need-arch needs a value}; shift 2 ;;
		--need-rt) need_rt=1; shift ;;
		--llc)
			case "${2:-}" in cluster|shared) llc=$2 ;; *) die "--llc cluster|shared" ;; esac
			shift 2 ;;
		--need-kernel) need_kernel=${2:?--need-kernel needs a value}; shift 2 ;;
		--src) src=${2:?--src needs a value}; shift 2 ;;
		--build) build=${2:?--build needs a value}; shift 2 ;;
		--tcg-threads)
			case "${2:-}" in multi|single) tcg_threads=$2 ;; *) die "--tcg-threads multi|single" ;; esac
			shift 2 ;;
		--no-header) use_header=0; shift ;;
		--systemd) systemd=1; shift ;;
		-v|--verbose) verbose=1; shift ;;
		-h|--help) sed -n '2,/^set -uo/p' "$self" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
		--) shift; break ;;
		-*) die "unknown option $1 (see --help)" ;;
		*) break ;;
		esac
	done
	OPTS_REST=("$@")
}

# The header is read before the command line so the command line wins; the scenario path is
# found first by skipping the options.
find_scenario() {
	while [ $# -gt 0 ]; do
		case "$1" in
		--no-header|-v|--verbose|-h|--help|--need-rt|--systemd) shift ;;
		--) shift; break ;;
		-*) shift 2 ;;
		*) break ;;
		esac
	done
	printf '%s' "${1:-}"
}

scenario_arg=$(find_scenario "$@")
for a in "$@"; do [ "$a" = --no-header ] && use_header=0; done
host_check=()
host_prep=()
if [ -n "$scenario_arg" ] && [ -f "$scenario_arg" ] && [ $use_header -eq 1 ]; then
	hc=$(sed -n 's/^# host-check:[[:space:]]*//p' "$scenario_arg" | head -n1)
	if [ -n "$hc" ]; then
		eval "host_check=($hc)" || die "bad '# host-check:' header in $scenario_arg"
	fi
	hp=$(sed -n 's/^# host-prep:[[:space:]]*//p' "$scenario_arg" | head -n1)
	if [ -n "$hp" ]; then
		eval "host_prep=($hp)" || die "bad '# host-prep:' header in $scenario_arg"
	fi
	hdr=$(sed -n 's/^# vm:[[:space:]]*//p' "$scenario_arg" | head -n1)
	if [ -n "$hdr" ]; then
		hdr_words=()
		eval "hdr_words=($hdr)" || die "bad '# vm:' header in $scenario_arg"
		parse_opts header "${hdr_words[@]}"
	fi
fi
parse_opts cli "$@"
set -- "${OPTS_REST[@]}"
[ $# -ge 1 ] || die "usage: run-vm.sh [OPTIONS] SCENARIO_SCRIPT [ARGS...] (see --help)"
scenario=$(realpath -e "$1" 2>/dev/null) || die "no such scenario: $1"
shift
scenario_args=("$@")
name=$(basename "$scenario" .sh)

[ "$(id -u)" -eq 0 ] || die "must run as root (9p export of / and cgroups)"
[[ "$timeout_s" =~ ^[0-9]+$ ]] || die "--timeout must be whole seconds"

[ -n "$src" ] || src=$(cd "$here/../.." && pwd)
src=$(realpath -e "$src") || die "no source tree $src"
if [ -z "$build" ]; then
	if [ -d "$src/build" ]; then build="$src/build"; else build="$src"; fi
fi
build=$(realpath -e "$build") || die "no build tree $build"
for p in "$src" "$build"; do
	case "$p" in *[[:space:]]*) die "paths with spaces are not supported: '$p'" ;; esac
done

# On aarch64 a cluster is what shares an L2 (the devicetree below gives each its own), as a
# socket does on the x86 guest: the same --smp header makes the same two LLC domains on both.
if [ "$arch" = aarch64 ] && [[ $smp != *clusters=* ]]; then smp=${smp//sockets=/clusters=}; fi

# --- packages ----------------------------------------------------------------------------------
ensure_packages() {
	local need=() p
	local qpkg=qemu-system-x86
	[ "$arch" = aarch64 ] && qpkg="qemu-system-arm device-tree-compiler"
	# No kernel here: the guest's is fetched into the cache (lib-kernel.sh), never installed.
	for p in $qpkg busybox-static fio cpio kmod; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			need+=("$p")
	done
	[ ${#need[@]} -eq 0 ] && return 0
	log "installing: ${need[*]}"
	# Serialise with other runs (check-vm may start several) and with apt itself.
	(
		flock 9
		apt-get update -qq &&
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
				"${need[@]}"
	) 9>/var/tmp/irqpilot-vm-apt.lock >&2 || die "apt-get install ${need[*]} failed"
}
ensure_packages

# --- kernel ------------------------------------------------------------------------------------
# The host runs its own kernel; the guest's is a Debian kernel fetched into the cache.
. "$here/lib-kernel.sh"
vm_kernel_select "$arch" "$kspec" || die "guest kernel (ARCH=$arch KERNEL=$kspec): $VM_KWHY"
kver=$VM_KVER
kroot=${VM_KROOT%/}
vmlinuz="$kroot/boot/vmlinuz-$kver"
[ -r "$vmlinuz" ] || die "no $vmlinuz"
kmods=$(realpath -e "$kroot/lib/modules/$kver") || die "no $kroot/lib/modules/$kver"
[ -d "$kmods/kernel" ] || die "no $kmods/kernel"

# A foreign guest's userland (lib-kernel.sh): a Debian tree of its arch in the cache, which stage 1
# switch_roots into; its busybox builds the initramfs.
uroot=""
busybox=/bin/busybox
if [ "$arch" != x86_64 ]; then
	vm_userland "$arch" || die "$arch userland: $VM_KWHY"
	uroot=$VM_UROOT
	busybox=$uroot/usr/bin/busybox
	[ -x "$busybox" ] || busybox=$uroot/bin/busybox
	[ -e "$busybox" ] || die "no busybox in $uroot"
fi

# What the scenario needs, against the guest chosen: anything else is a SKIP, before booting.
need_skip=""
case ",$need_arch," in *",$arch,"*) ;; *) need_skip="needs arch $need_arch, guest is $arch" ;; esac
if [ -z "$need_skip" ] && [ $need_rt -eq 1 ] && ! vm_kernel_is_rt; then
	need_skip="needs a PREEMPT_RT kernel, guest runs $kver (KERNEL=rt)"
fi
if [ -z "$need_skip" ] && [ -n "$need_kernel" ] &&
	[ "$(vm_kver_num "$kver")" -lt "$(vm_kver_num "$need_kernel")" ]; then
	need_skip="needs kernel >= $need_kernel, guest runs $kver"
fi
if [ -z "$need_skip" ] && [ $systemd -eq 1 ] && [ -n "$uroot" ]; then
	need_skip="--systemd boots the host's own systemd, which an $arch guest cannot run"
fi
if [ -n "$need_skip" ]; then
	[ -n "$out" ] && mkdir -p "$out" && {
		echo "SKIP $name: $need_skip"
		echo "elapsed 0s boot ?s bootwall ?s kernel $kver arch $arch guest ? out $out"
	} >"$out/result"
	log "$name: not booted: $need_skip"
	echo "SKIP $name: $need_skip"
	exit 77
fi

# --- initramfs ---------------------------------------------------------------------------------
# Only what it takes to reach the 9p root: busybox and the virtio/9p modules. Everything else
# (drivers, fio, the build) comes from the host's / after switch_root.
initramfs_mods="virtio_pci 9pnet_virtio 9p"
# A fetched kernel's modules are not in the host's /lib/modules: the guest puts an overlay on
# /usr/lib (tmpfs over the read-only 9p) and binds the cached tree there.
# So does --systemd, for the whole root.
{ [ "$kroot" != "" ] || [ $systemd -eq 1 ]; } && [ -z "$uroot" ] && initramfs_mods+=" overlay"

init_script() {
	cat <<'EOF'
#!/bin/sh
# irqpilot VM stage 1 (generated by tests/vm/run-vm.sh): reach the host's / over 9p.
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
fail() { echo "IRQPILOT-RESULT: FAIL initramfs: $*"; echo o > /proc/sysrq-trigger; sleep 60; }
for m in $(cat /modules.order); do
	insmod "/lib/modules/$m" || fail "insmod $m"
done
src=; build=; kmods=; uroot=; systemd=
for w in $(cat /proc/cmdline); do
	case "$w" in
	irqpilot.systemd=1) systemd=1 ;;
	irqpilot.uroot=*) uroot=${w#irqpilot.uroot=} ;;
	irqpilot.kmods=*) kmods=${w#irqpilot.kmods=} ;;
	irqpilot.src=*) src=${w#irqpilot.src=} ;;
	irqpilot.build=*) build=${w#irqpilot.build=} ;;
	esac
done
[ -n "$src" ] || fail "no irqpilot.src= on the kernel command line"
[ -n "$build" ] || build=$src
mkdir -p /newroot /host
# cache=loose: the export is read-only and lives for one boot, and TCG makes every 9p round
# trip expensive.
if [ -n "$systemd" ]; then
	# systemd as PID 1 writes to /etc, /var and the rest of /: the host's / goes under an
	# overlay whose upper layer is a tmpfs, as systemd.volatile=overlay would make it, so the
	# guest may install packages and the host's files stay as they are.
	mkdir -p /lower /ovl
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro hostroot /lower ||
		fail "mount 9p hostroot"
	mount -t tmpfs -o mode=0755 ovl /ovl && mkdir -p /ovl/u /ovl/w || fail "tmpfs for the overlay"
	mount -t overlay -o lowerdir=/lower,upperdir=/ovl/u,workdir=/ovl/w overlay /newroot ||
		fail "overlay on /"
	H=/lower
elif [ -z "$uroot" ]; then
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro hostroot /newroot ||
		fail "mount 9p hostroot"
	H=/newroot
else
	# A foreign arch: the host's / only carries the guest's own root (a tree in the cache).
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro hostroot /host ||
		fail "mount 9p hostroot"
	mount --bind "/host$uroot" /newroot || fail "bind $uroot"
	H=/host
fi
# Bind the trees under /run before the guest's tmpfs hides the host's /tmp, where CI clones
# may live.
mount -t tmpfs -o mode=0755 run /newroot/run || fail "tmpfs /run"
if [ -n "$uroot" ]; then
	# Its own usr/lib/modules is empty: the kernel's tree goes on it whole.
	[ -n "$kmods" ] && { mount --bind "/host${kmods%/*}" /newroot/usr/lib/modules || fail "bind $kmods"; }
elif [ -n "$kmods" ] && [ -n "$systemd" ]; then
	# The root is writable already.
	mkdir -p "/newroot/usr/lib/modules/${kmods##*/}" || fail "mkdir /usr/lib/modules"
	mount --bind "/newroot$kmods" "/newroot/usr/lib/modules/${kmods##*/}" || fail "bind $kmods"
elif [ -n "$kmods" ]; then
	# The kernel's modules live in the host's cache, not its /lib/modules: a writable overlay
	# on /usr/lib gets a modules/ directory to bind them on.
	mkdir -p /ovl
	mount -t tmpfs -o mode=0755 ovl /ovl && mkdir -p /ovl/u /ovl/w || fail "tmpfs for the overlay"
	mount -t overlay -o lowerdir=/newroot/usr/lib,upperdir=/ovl/u,workdir=/ovl/w overlay \
		/newroot/usr/lib || fail "overlay on /usr/lib"
	mkdir -p "/newroot/usr/lib/modules/${kmods##*/}" || fail "mkdir /usr/lib/modules"
	mount --bind "/newroot$kmods" "/newroot/usr/lib/modules/${kmods##*/}" || fail "bind $kmods"
fi
mkdir -p /newroot/run/irqpilot/src /newroot/run/irqpilot/build /newroot/run/irqpilot/out
mount --bind "$H$src" /newroot/run/irqpilot/src || fail "bind $src"
mount --bind "$H$build" /newroot/run/irqpilot/build || fail "bind $build"
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 irqout /newroot/run/irqpilot/out ||
	fail "mount 9p irqout"
mount -t tmpfs -o mode=1777 tmp /newroot/tmp || fail "tmpfs /tmp"
mount --move /dev /newroot/dev
if [ -n "$uroot" ]; then mkdir -p /newroot/run/host && mount --move /host /newroot/run/host; fi
umount /proc /sys 2>/dev/null
if [ -n "$systemd" ]; then
	# The target and the service that runs the scenario (systemd.unit= on the command line).
	# The host may be a container image, and the guest would inherit what makes it one:
	# systemd's detect_container() looks for /.dockerenv and /run/.containerenv (the units'
	# ConditionVirtualization=!container would then keep irqpilotd from starting), and a
	# policy-rc.d that exits 101 keeps dpkg from starting any service it installs. The
	# whiteouts are in the tmpfs layer; the host's files stay.
	rm -f /newroot/.dockerenv /newroot/run/.containerenv /newroot/usr/sbin/policy-rc.d
	mkdir -p /newroot/etc/systemd/system || fail "mkdir /etc/systemd/system"
	for u in irqpilot-vm.target irqpilot-vm.service; do
		cp "/newroot/run/irqpilot/src/tests/vm/systemd/$u" /newroot/etc/systemd/system/ ||
			fail "cp $u"
	done
	exec switch_root /newroot /lib/systemd/systemd
fi
exec switch_root /newroot /bin/bash /run/irqpilot/src/tests/vm/guest-init.sh
fail "switch_root"
EOF
}

# Modules in load order (dependencies first), names as modinfo reports them.
module_order() {
	local -A seen=()
	local order=()
	visit() {
		local m=$1 d deps
		m=${m//-/_}
		[ -n "${seen[$m]:-}" ] && return 0
		seen[$m]=1
		if ! modinfo -b "${kroot:-/}" -k "$kver" -F filename "$m" >/dev/null 2>&1; then
			die "module $m not found for $kver"
		fi
		# Built-in modules have no file to load.
		case "$(modinfo -b "${kroot:-/}" -k "$kver" -F filename "$m")" in (builtin*|"(builtin)"|"") return 0 ;; esac
		deps=$(modinfo -b "${kroot:-/}" -k "$kver" -F depends "$m")
		for d in ${deps//,/ }; do visit "$d"; done
		order+=("$m")
	}
	for m in $initramfs_mods; do visit "$m"; done
	printf '%s\n' "${order[@]}"
}

build_initramfs() {
	local cache dest stamp_want tmp m f bn
	cache="${XDG_CACHE_HOME:-/var/tmp}/irqpilot-vm/$arch-$kver"
	dest="$cache/initramfs.cpio.gz"
	stamp_want=$( { sha256sum "$self" "$busybox"; echo "$kver $initramfs_mods"; } |
		sha256sum | cut -d' ' -f1)
	if [ -s "$dest" ] && [ "$(cat "$cache/stamp" 2>/dev/null)" = "$stamp_want" ]; then
		initramfs=$dest
		return 0
	fi
	mkdir -p "$cache" || die "cannot create $cache"
	tmp=$(mktemp -d "$cache/build.XXXXXX") || die "mktemp in $cache"
	mkdir -p "$tmp"/{bin,proc,sys,dev,newroot,lib/modules}
	cp "$busybox" "$tmp/bin/busybox"
	for a in sh mount umount mkdir cat cp rm insmod switch_root sleep echo; do
		ln -s busybox "$tmp/bin/$a"
	done
	: >"$tmp/modules.order"
	for m in $(module_order); do
		f=$(modinfo -b "${kroot:-/}" -k "$kver" -F filename "$m")
		bn=$(basename "$f")
		case "$f" in
		*.ko.xz) xz -dc "$f" >"$tmp/lib/modules/${bn%.xz}"; bn=${bn%.xz} ;;
		*.ko.zst) zstd -qdc "$f" >"$tmp/lib/modules/${bn%.zst}"; bn=${bn%.zst} ;;
		*.ko.gz) gzip -dc "$f" >"$tmp/lib/modules/${bn%.gz}"; bn=${bn%.gz} ;;
		*) cp "$f" "$tmp/lib/modules/$bn" ;;
		esac || die "cannot unpack $f"
		echo "$bn" >>"$tmp/modules.order"
	done
	init_script >"$tmp/init"
	chmod 755 "$tmp/init"
	(cd "$tmp" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet | gzip -1) \
		>"$tmp.cpio.gz" || die "cpio failed"
	mv "$tmp.cpio.gz" "$dest"
	echo "$stamp_want" >"$cache/stamp"
	rm -rf "$tmp"
	log "built $dest ($(du -h "$dest" | cut -f1))"
	initramfs=$dest
}
initramfs=""
(
	# Concurrent runs share the cache; one builds, the others wait and reuse it.
	flock 8
	build_initramfs
) 8>"${XDG_CACHE_HOME:-/var/tmp}/irqpilot-vm.lock" || exit 2
initramfs="${XDG_CACHE_HOME:-/var/tmp}/irqpilot-vm/$arch-$kver/initramfs.cpio.gz"
[ -s "$initramfs" ] || die "no initramfs at $initramfs"

# --- work dirs, disks --------------------------------------------------------------------------
if [ -z "$out" ]; then
	out=$(mktemp -d "${TMPDIR:-/tmp}/irqpilot-vm-$name.XXXXXX") || die "mktemp"
fi
mkdir -p "$out" || die "cannot create $out"
out=$(realpath "$out")
rm -f "$out/console.log" "$out/result" "$out/job.sh" "$out/throttle.txt" "$out/throttle.ready"
scratch=$(mktemp -d "${TMPDIR:-/var/tmp}/irqpilot-vm-disks.XXXXXX") || die "mktemp"

qemu_pid=""
cg_dirs=()
cg_parent=""
cg_v2_home=""
cleanup() {
	if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then
		kill -TERM "$qemu_pid" 2>/dev/null
		sleep 1
		kill -KILL "$qemu_pid" 2>/dev/null
	fi
	throttle_cleanup
	rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

disk_args=()
nd=0
for d in "${disks[@]}"; do
	case "$d" in
	none) continue ;;
	ahci|nvme:[0-9]*|virtio:[0-9]*) ;;
	*) die "unknown --disk $d (ahci, nvme:N, virtio:N, none)" ;;
	esac
	img="$scratch/disk$nd.img"
	truncate -s "$disk_size" "$img" || die "truncate $img"
	drv=(-drive "if=none,id=d$nd,file=$img,format=raw,cache=unsafe")
	case "$d" in
	ahci)
		disk_args+=(-device "ahci,id=ahci$nd" "${drv[@]}" -device "ide-hd,drive=d$nd,bus=ahci$nd.0") ;;
	nvme:*)
		disk_args+=("${drv[@]}" -device "nvme,serial=irqpilot$nd,drive=d$nd,max_ioqpairs=${d#nvme:}") ;;
	virtio:*)
		disk_args+=("${drv[@]}" -device "virtio-blk-pci,drive=d$nd,num-queues=${d#virtio:}") ;;
	esac
	nd=$((nd + 1))
done

# The scenario must be reachable from the guest: through the bound trees, or a copy in out/.
rel_in() { case "$2" in "$1"/*) printf '%s' "${2#"$1"/}" ;; *) return 1 ;; esac; }
if r=$(rel_in "$src" "$scenario"); then
	guest_scenario="/run/irqpilot/src/$r"
elif r=$(rel_in "$build" "$scenario"); then
	guest_scenario="/run/irqpilot/build/$r"
else
	cp "$scenario" "$out/scenario.sh"
	guest_scenario="/run/irqpilot/out/scenario.sh"
fi
{
	printf 'VM_NAME=%q\n' "$name"
	printf 'VM_SCENARIO=%q\n' "$guest_scenario"
	printf 'VM_ARGS=('
	for a in "${scenario_args[@]}"; do printf '%q ' "$a"; done
	printf ')\n'
	printf 'VM_HOST_SRC=%q\nVM_HOST_BUILD=%q\nVM_THROTTLE=%q\nVM_DISKS=%q\n' \
		"$src" "$build" "$throttle" "${disks[*]}"
} >"$out/job.sh"

# guest-init's tracepoint holder (tests/vm/tp-hold.c says why), built here for the guest's arch:
# the host's gcc for its own, cross-build.sh's binary in the build tree for a foreign one. A
# compile inside a TCG guest took 5-6 s of every boot.
rm -f "$out/tp-hold"
if [ "$arch" = "$(uname -m)" ]; then
	gcc -O2 -Wall -o "$out/tp-hold" "$src/tests/vm/tp-hold.c" || die "cannot build tests/vm/tp-hold.c"
elif [ -x "$build/tests/vm/tp-hold" ]; then
	cp "$build/tests/vm/tp-hold" "$out/tp-hold" || die "cannot copy $build/tests/vm/tp-hold"
else
	echo "run-vm: warning: no $arch tp-hold in $build (tests/vm/cross-build.sh builds one): a" \
		"daemon started under I/O may hang this guest" >&2
fi

# The host's half before the boot (# host-prep:): what it makes in $out the guest finds in
# /run/irqpilot/out.
if [ ${#host_prep[@]} -gt 0 ]; then
	(cd "$src" && IRQPILOT_BUILD="$build" "${host_prep[@]}" "$out") >"$out/host-prep.log" 2>&1
	hp_rc=$?
	if [ $hp_rc -ne 0 ]; then
		hp_line=$(tail -n1 "$out/host-prep.log")
		case $hp_rc in
		77) hp_verdict=SKIP; hp_why="host prep skipped: $hp_line" ;;
		*) hp_verdict=FAIL; hp_why="host prep failed (exit $hp_rc): $hp_line" ;;
		esac
		{
			echo "$hp_verdict $name: $hp_why"
			echo "elapsed 0s boot ?s bootwall ?s kernel $kver arch $arch guest ? out $out"
		} >"$out/result"
		log "$name: not booted: $hp_why (see $out/host-prep.log)"
		echo "$hp_verdict $name: $hp_why"
		[ "$hp_verdict" = SKIP ] && exit 77
		exit 1
	fi
	log "$name: host prep done ($out/host-prep.log)"
fi

# --- throttling (host side) --------------------------------------------------------------------
# Each throttled vCPU thread gets its own group so every one is capped at PERCENT of a CPU, as a
# little core would be, instead of sharing one budget.
throttle_v2_setup() {
	local mnt cur base p
	mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
	[ -n "$mnt" ] || return 1
	cur=$(sed -n 's/^0:://p' /proc/self/cgroup)
	base="$mnt${cur%/}"
	grep -qw cpu "$base/cgroup.controllers" 2>/dev/null || return 1
	p="$base/irqpilot-vm-$$"
	mkdir "$p" 2>/dev/null || return 1
	cg_parent=$p
	cg_v2_home="$base"
	# The threaded children must live under the process's own (domain) cgroup.
	echo "+cpu" >"$base/cgroup.subtree_control" 2>/dev/null || return 1
	echo "$qemu_pid" >"$p/cgroup.procs" 2>/dev/null || return 1
	echo "+cpu" >"$p/cgroup.subtree_control" 2>/dev/null || return 1
	local cpu tid
	for cpu in $throttle_cpus; do
		tid=${vcpu_tid[$cpu]}
		mkdir "$p/vcpu$cpu" || return 1
		cg_dirs+=("$p/vcpu$cpu")
		echo threaded >"$p/vcpu$cpu/cgroup.type" || return 1
		echo "$((throttle_pct * throttle_period / 100)) $throttle_period" >"$p/vcpu$cpu/cpu.max" || return 1
		echo "$tid" >"$p/vcpu$cpu/cgroup.threads" || return 1
	done
	throttle_kind=v2
}

throttle_v1_setup() {
	local mnt cur base p cpu tid
	mnt=$(awk '$3 == "cgroup" && $4 ~ /(^|,)cpu(,|$)/ { print $2; exit }' /proc/mounts)
	[ -n "$mnt" ] || return 1
	cur=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ { print $3; exit }' /proc/self/cgroup)
	base="$mnt${cur%/}"
	p="$base/irqpilot-vm-$$"
	mkdir "$p" 2>/dev/null || return 1
	cg_parent=$p
	for cpu in $throttle_cpus; do
		tid=${vcpu_tid[$cpu]}
		mkdir "$p/vcpu$cpu" || return 1
		cg_dirs+=("$p/vcpu$cpu")
		echo "$throttle_period" >"$p/vcpu$cpu/cpu.cfs_period_us" || return 1
		echo "$((throttle_pct * throttle_period / 100))" >"$p/vcpu$cpu/cpu.cfs_quota_us" || return 1
		echo "$tid" >"$p/vcpu$cpu/tasks" || return 1
	done
	throttle_kind=v1
}

throttle_cleanup() {
	local d
	[ -n "$cg_parent" ] || return 0
	# Threads of a dead qemu are gone; a live one is moved back before the groups go.
	for d in "${cg_dirs[@]}"; do
		if [ -f "$d/tasks" ]; then
			local pdir=${cg_parent%/*}
			while read -r t; do echo "$t" >"$pdir/tasks" 2>/dev/null; done <"$d/tasks"
		fi
		rmdir "$d" 2>/dev/null
	done
	if [ -n "$cg_v2_home" ] && [ -f "$cg_parent/cgroup.procs" ]; then
		while read -r t; do echo "$t" >"$cg_v2_home/cgroup.procs" 2>/dev/null; done \
			<"$cg_parent/cgroup.procs"
	fi
	rmdir "$cg_parent" 2>/dev/null || log "could not remove cgroup $cg_parent"
	cg_parent=""
	cg_dirs=()
}

throttle_report() {
	local d
	for d in "${cg_dirs[@]}"; do
		[ -f "$d/cpu.stat" ] || continue
		printf '%s %s\n' "${d##*/}" "$(tr '\n' ' ' <"$d/cpu.stat")"
	done
}

throttle_cpus=""
throttle_pct=0
throttle_period=100000
throttle_kind=""
declare -A vcpu_tid=()
if [ -n "$throttle" ]; then
	[[ "$throttle" =~ ^([0-9,-]+):([0-9]+)(/([0-9]+))?$ ]] ||
		die "--throttle wants CPUS:PERCENT[/PERIOD_MS], e.g. 1,2:30 or 0,1:10/10"
	throttle_pct=${BASH_REMATCH[2]}
	[ "$throttle_pct" -ge 1 ] && [ "$throttle_pct" -le 100 ] || die "--throttle percent 1..100"
	if [ -n "${BASH_REMATCH[4]}" ]; then
		throttle_period=$((10#${BASH_REMATCH[4]} * 1000))
		# The CFS bandwidth limits (kernel/sched/core.c): period 1 ms..1 s, quota >= 1 ms.
		[ "$throttle_period" -ge 1000 ] && [ "$throttle_period" -le 1000000 ] ||
			die "--throttle period 1..1000 ms"
		[ $((throttle_pct * throttle_period / 100)) -ge 1000 ] ||
			die "--throttle $throttle: the quota would be under the kernel's 1 ms minimum"
	fi
	for part in ${BASH_REMATCH[1]//,/ }; do
		if [[ "$part" =~ ^([0-9]+)-([0-9]+)$ ]]; then
			throttle_cpus+=" $(seq -s ' ' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}")"
		else
			throttle_cpus+=" $part"
		fi
	done
fi

throttle_setup() {
	local cpu comm t
	# QEMU names its vCPU threads "CPU n/TCG" (debug-threads=on); they exist before the guest
	# kernel starts its secondaries, but give qemu a moment to create them.
	for _ in $(seq 1 50); do
		vcpu_tid=()
		for t in /proc/"$qemu_pid"/task/*; do
			comm=$(cat "$t/comm" 2>/dev/null) || continue
			[[ "$comm" =~ ^CPU\ ([0-9]+)/TCG$ ]] && vcpu_tid[${BASH_REMATCH[1]}]=${t##*/}
		done
		local ok=1
		for cpu in $throttle_cpus; do [ -n "${vcpu_tid[$cpu]:-}" ] || ok=0; done
		[ $ok -eq 1 ] && break
		sleep 0.1
	done
	for cpu in $throttle_cpus; do
		[ -n "${vcpu_tid[$cpu]:-}" ] || { throttle_msg="no host thread for vCPU $cpu"; return 1; }
	done
	# IRQPILOT_VM_NO_CGROUP=1 pretends no cgroup can be made, to test the SKIP path.
	if [ -z "${IRQPILOT_VM_NO_CGROUP:-}" ]; then
		if throttle_v2_setup; then return 0; fi
		throttle_cleanup
		if throttle_v1_setup; then return 0; fi
		throttle_cleanup
	fi
	throttle_msg="cannot create a cgroup with a CPU quota (no cgroup v2 cpu controller, no v1 cpu)"
	return 1
}

# --- boot --------------------------------------------------------------------------------------
# aarch64: QEMU's own virt devicetree for this -smp/-m, with what a phone's has and virt lacks:
# capacity-dmips-mhz (the first cluster little, 400, the others 1024: drivers/base/arch_topology.c
# makes cpu_capacity from it) and one L2 per cluster (next-level-cache, which cacheinfo turns into
# the LLC the scheduler and irqpilotd group by). QEMU's cpu-map has the clusters already when
# --smp says clusters=N. Cached per -smp and -m.
vm_biglittle_dtb() {
	local d=$VM_CACHE/dtb f
	f=$d/virt-${smp//[^0-9a-z]/_}-$mem-$llc.dtb
	[ -s "$f" ] && [ "$f" -nt "$self" ] && { echo "$f"; return 0; }
	mkdir -p "$d" || return 1
	qemu-system-aarch64 -M "virt,gic-version=3,dumpdtb=$f.raw" -accel tcg -cpu max \
		-smp "$smp" -m "$mem" -nographic >/dev/null 2>&1 || return 1
	dtc -q -I dtb -O dts "$f.raw" >"$f.dts" || return 1
	python3 - "$f.dts" "$llc" <<'PY' || return 1
import re, sys
p = sys.argv[1]
s = open(p).read()
# cluster order from the cpu-map: clusterN { coreM { cpu = <phandle>; } }
m = re.search(r"cpu-map \{(.*?)\n\t\t\};", s, re.S)
if not m:
    sys.exit("no cpu-map in the virt devicetree: give --smp clusters=2")
clusters = []
for c in re.finditer(r"cluster\d+ \{(.*?)\n\t\t\t\t\};", m.group(1), re.S):
    clusters.append(re.findall(r"cpu = <(0x[0-9a-f]+)>", c.group(1)))
if len(clusters) < 2:
    sys.exit("the cpu-map has %d cluster(s); a big.LITTLE guest needs 2" % len(clusters))
shared = sys.argv[2] == "shared"
l2 = ""
for i, cl in enumerate(clusters):
    ph = 0x9000 + (0 if shared else i)
    if not (shared and i > 0):
        l2 += ("\n\t\tl2-cache%d {\n\t\t\tcompatible = \"cache\";\n\t\t\tcache-level = <0x02>;\n"
           "\t\t\tcache-unified;\n\t\t\tphandle = <0x%x>;\n\t\t};\n" % (i, ph))
    for cpu in cl:
        cap = 400 if i == 0 else 1024
        s = re.sub(r"(\n\t\tcpu@[0-9a-f]+ \{\n\t\t\tphandle = <%s>;)" % cpu,
                   r"\1\n\t\t\tcapacity-dmips-mhz = <%d>;\n\t\t\tnext-level-cache = <0x%x>;" % (cap, ph), s)
s = s.replace("\t\tcpu-map {", l2.lstrip("\n") + "\n\t\tcpu-map {", 1)
open(p, "w").write(s)
PY
	dtc -q -I dts -O dtb -o "$f" "$f.dts" || return 1
	rm -f "$f.raw"
	echo "$f"
}

console=ttyS0
[ "$arch" = aarch64 ] && console=ttyAMA0
cmdline="console=$console,115200 loglevel=5 panic=-1 mitigations=off"
# x86's boot-time check that the IO-APIC timer ticks (check_timer()) counts ticks against a
# busy-wait; a vCPU starved by a loaded host misses them and the kernel panics with "IO-APIC +
# timer doesn't work" before anything of ours runs (seen twice here). Virtual machines skip it.
[ "$arch" = x86_64 ] && cmdline+=" no_timer_check"
# nokaslr: a guest that stalls while booting is named from System.map (stall-report.py), which
# holds the addresses of an unrandomised kernel.
cmdline+=" nokaslr"
cmdline+=" irqpilot.src=$src irqpilot.build=$build"
[ -n "$kroot" ] && cmdline+=" irqpilot.kmods=$kmods"
[ -n "$uroot" ] && cmdline+=" irqpilot.uroot=$uroot"
# systemd: only what the scenario needs (basic.target, not the host's multi-user services), and
# no status lines in the middle of the scenario's on the console.
[ $systemd -eq 1 ] && cmdline+=" irqpilot.systemd=1 systemd.unit=irqpilot-vm.target systemd.show_status=error"
[ ${#append[@]} -gt 0 ] && cmdline+=" ${append[*]}"

# shellcheck disable=SC2054 # the commas are qemu's
case $arch in
x86_64) qemu=(qemu-system-x86_64 -accel "tcg,thread=$tcg_threads" -cpu max) ;;
aarch64)
	dtb=$(vm_biglittle_dtb) || die "cannot make the big.LITTLE devicetree"
	# pauth-impdef: QEMU's own pointer-auth hash, much cheaper under TCG than the architected one.
	qemu=(qemu-system-aarch64 -M virt,gic-version=3 -accel "tcg,thread=$tcg_threads"
		-cpu max,pauth-impdef=on -dtb "$dtb") ;;
*) die "ARCH=$arch: no QEMU set-up for it yet" ;;
esac
# shellcheck disable=SC2054 # the commas are qemu's
qemu+=(-smp "$smp" -m "$mem"
	-nographic -no-reboot -name irqpilot-vm,debug-threads=on
	-kernel "$vmlinuz" -initrd "$initramfs" -append "$cmdline"
	-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
	-virtfs "local,path=$out,mount_tag=irqout,security_model=none,multidevs=remap"
	-nic none "${disk_args[@]}"
	-monitor "unix:$scratch/monitor.sock,server=on,wait=off")
for q in "${qemu_extra[@]}"; do
	# shellcheck disable=SC2206 # word splitting is the documented --qemu behaviour
	qemu+=($q)
done
printf '%q ' "${qemu[@]}" >"$out/qemu-cmdline"
echo >>"$out/qemu-cmdline"

t0=$(date +%s.%N)
skip_reason=""
throttle_msg=""
# The throttle goes on once the guest has booted (boot on capped vCPUs is slow and tells
# nothing); the guest waits for out/throttle.ready before it starts the scenario.
throttle_pending=0
[ -n "$throttle_cpus" ] && throttle_pending=1
apply_throttle() {
	throttle_pending=0
	if ! throttle_setup; then
		skip_reason="throttle $throttle: $throttle_msg"
		log "SKIP: $skip_reason"
		kill -TERM "$qemu_pid" 2>/dev/null
		return
	fi
	log "throttled vCPUs$throttle_cpus to $throttle_pct% each of a $((throttle_period / 1000)) ms period ($throttle_kind cgroup $cg_parent)"
	echo "vCPUs$throttle_cpus at $throttle_pct% of $((throttle_period / 1000)) ms ($throttle_kind)" >"$out/throttle.ready"
}

# TERM first, so that QEMU can flush the console; KILL if it is still there 2 s later.
kill_qemu() {
	kill -TERM "$qemu_pid" 2>/dev/null
	sleep 2
	kill -KILL "$qemu_pid" 2>/dev/null
}

# A retried boot starts as the first did: no throttle on, none announced to the guest.
reset_for_reboot() {
	throttle_cleanup
	rm -f "$out/throttle.ready"
	[ -n "$throttle_cpus" ] && throttle_pending=1
}

# QEMU 7.2's multi-threaded TCG has been seen to die of a segfault in a vCPU thread during boot
# (about 1 boot in 15 on a loaded 2-CPU host). Such a crash before the scenario started says
# nothing about irqpilot, so that boot is retried once; a crash later is a FAIL.
boot_once() {
	local tb
	tb=$(date +%s.%N)
	qemu_rc=0
	# Unbuffered (sed -u), so the BOOTED and RESULT lines reach console.log as the guest prints
	# them; the firmware's terminal escapes are dropped too.
	clean='s/\r//g; s/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g'
	if [ $verbose -eq 1 ]; then
		exec {confd}> >(sed -u "$clean" | tee "$out/console.log" >&2)
	else
		exec {confd}> >(sed -u "$clean" >"$out/console.log")
	fi
	con_pid=$!
	"${qemu[@]}" </dev/null >&$confd 2>&1 &
	qemu_pid=$!
	echo "$qemu_pid" >"$out/qemu.pid"

	timed_out=0
	boot_stalled=""
	boot_wall=""
	deadline=$(( $(date +%s) + timeout_s ))
	local con_size=-1 con_since now
	con_since=$(date +%s)
	while kill -0 "$qemu_pid" 2>/dev/null; do
		now=$(date +%s)
		# A guest that prints nothing for stall_s before it has booted is stuck in its own
		# boot: a normal boot here goes quiet for at most a few seconds between the PCI scan
		# and the init script (guest uptime at IRQPILOT-BOOTED: 5 to 51 s in 273 boots).
		if [ -z "$boot_wall" ]; then
			local sz
			sz=$(stat -c %s "$out/console.log" 2>/dev/null || echo 0)
			local last said=""
			if [ "$sz" != "$con_size" ]; then
				con_size=$sz con_since=$now
				# The same stall, told by the guest kernel: an RCU report of a vCPU
				# halted in native_safe_halt whose timer never fired ("timer wakeup
				# didn't happen ... Possible timer handling issue on cpu=N"), or the
				# soft-lockup watchdog's of a CPU waiting for one that never answered
				# an IPI (RIP in smp_call_function_many_cond).
				said=$(vm_console_boot_stall "$out/console.log")
			fi
			if [ -n "$said" ] || [ $((now - con_since)) -ge "$stall_s" ]; then
				last=$(tail -n1 "$out/console.log" | cut -c1-120)
				if [ -n "$said" ]; then
					sleep 5	# the kernel's own report of the stalled CPUs follows
					boot_stalled="guest kernel stalled before booting: $said;"
					boot_stalled+=" $(grep -a -m1 -E 'timer handling issue|NMI backtrace|RIP: ' "$out/console.log" | cut -c1-100)"
				else
					boot_stalled="guest printed nothing for ${stall_s}s before booting, after: ${last:-(an empty console)}"
				fi
				log "boot stalled: $boot_stalled"
				stall_report | tee "$out/stall.txt" | sed 's/^/    run-vm: /' >&2
				kill_qemu
				break
			fi
		fi
		if [ "$now" -ge $deadline ]; then
			timed_out=1
			log "timeout after ${timeout_s}s, killing qemu"
			kill_qemu
			break
		fi
		if [ -z "$boot_wall" ] && grep -q '^IRQPILOT-BOOTED ' "$out/console.log"; then
			boot_wall=$(awk -v a="$tb" -v b="$(date +%s.%N)" \
				'BEGIN { printf "%.1f", b - a }')
			[ $throttle_pending -eq 1 ] && apply_throttle
		fi
		# A guest that has reported and is powering off gets a few seconds, not the full timeout.
		if grep -q '^IRQPILOT-RESULT: ' "$out/console.log" 2>/dev/null &&
			[ $deadline -gt $(( $(date +%s) + 15 )) ]; then
			deadline=$(( $(date +%s) + 15 ))
		fi
		sleep 0.2
	done
	if [ -n "$cg_parent" ]; then
		throttle_report >"$out/throttle.txt"
		log "throttle: $(awk '{ printf "%s%s %s %s", (NR > 1 ? "; " : ""), $1, $4, $5 }' \
			"$out/throttle.txt")"
	fi
	wait "$qemu_pid" 2>/dev/null
	qemu_rc=$?
	exec {confd}>&-
	wait "$con_pid" 2>/dev/null
}

# What each vCPU of a stalled guest is doing, from QEMU's monitor and the kernel's System.map.
stall_report() {
	local map="$kroot/boot/System.map-$kver"
	if command -v python3 >/dev/null; then
		# stall-report.py says itself why it could not report (exit 1); only a
		# timeout or a crash of it needs a word from here.
		local rc=0
		timeout 30 python3 "$here/stall-report.py" "$scratch/monitor.sock" "$map" 3 2>&1 || rc=$?
		[ $rc -eq 0 ] || [ $rc -eq 1 ] || echo "stall: no report from QEMU's monitor (stall-report.py exit $rc)"
	else
		echo "stall: no python3 to ask QEMU's monitor"
	fi
}

qemu_crash=""
for attempt in 1 2; do
	boot_once
	qemu_pid=""
	# A guest kernel that stops in its own boot (3 times in 335 boots of 6.1 under TCG on a loaded
	# 2-CPU host: twice silent after the PCI root bridge's MMCONFIG line, once with an RCU report
	# of a halted vCPU whose timer never fired; once more in CI with soft lockups of a CPU whose
	# IPI was never answered; tests/vm/README.md) has run nothing of irqpilot's
	# yet: that boot is retried once, with what its vCPUs were doing kept in stall.txt and the
	# log. A second stall is a FAIL.
	if [ -n "$boot_stalled" ] && [ $attempt -eq 1 ] && [ -z "$skip_reason" ]; then
		log "$boot_stalled; booting again"
		mv "$out/console.log" "$out/console.stalled.log"
		mv "$out/stall.txt" "$out/stall.first.txt" 2>/dev/null
		reset_for_reboot
		continue
	fi
	[ $qemu_rc -gt 128 ] && [ $timed_out -eq 0 ] && [ -z "$skip_reason" ] && [ -z "$boot_stalled" ] || break
	qemu_crash="qemu died of signal $((qemu_rc - 128))"
	if grep -q '^IRQPILOT-START ' "$out/console.log" || [ $attempt -eq 2 ]; then
		break
	fi
	log "$qemu_crash before the scenario started; booting again"
	mv "$out/console.log" "$out/console.crashed.log"
	reset_for_reboot
	qemu_crash=""
done
t1=$(date +%s.%N)
qemu_pid=""
elapsed=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')

# --- verdict -----------------------------------------------------------------------------------
console="$out/console.log"
result_line=$(grep -a '^IRQPILOT-RESULT: ' "$console" | tail -n1)
status=$(awk '{ print $2 }' <<<"$result_line")
summary=$(sed 's/^IRQPILOT-RESULT: [A-Z]*[[:space:]]*//' <<<"$result_line")
guest_said="$status $summary"
boot_s=$(grep -a '^IRQPILOT-BOOTED ' "$console" | head -n1 | awk '{ print $2 }')
# The guest's own `uname -r`, as guest-init.sh reports it.
guest_uname=$(grep -a '^IRQPILOT-BOOTED ' "$console" | head -n1 | awk '{ print $3 }')

bad_re='Kernel panic|Oops|BUG:|WARNING:|hung_task|blocked for more than'
bad_re+='|rcu_sched self-detected stall|rcu: INFO:|general protection fault|Attempted to kill init'
kernel_bad=$(grep -a -n -E "$bad_re" "$console" | head -n5)

verdict=""
if [ -n "$skip_reason" ]; then
	verdict=SKIP; summary="$skip_reason"
elif [ -n "$boot_stalled" ]; then
	# Before "kernel trouble": a boot that stalled twice is told as such, report and all.
	verdict=FAIL; summary="$boot_stalled (twice; $(head -n1 "$out/stall.txt" 2>/dev/null))"
elif [ -n "$kernel_bad" ]; then
	verdict=FAIL
	summary="kernel trouble on the console: $(head -n1 <<<"$kernel_bad" | cut -c1-160)"
	[ -n "$result_line" ] && summary+=" (scenario said: $guest_said)"
elif [ -n "$qemu_crash" ]; then
	verdict=FAIL; summary="$qemu_crash (host QEMU bug, not the guest)${result_line:+ (scenario said: $guest_said)}"
elif [ $timed_out -eq 1 ]; then
	verdict=FAIL; summary="timeout after ${timeout_s}s${result_line:+ (scenario said: $status)}"
elif [ -z "$result_line" ]; then
	verdict=FAIL; summary="guest stopped without an IRQPILOT-RESULT line"
else
	case "$status" in
	PASS|FAIL|SKIP) verdict=$status ;;
	*) verdict=FAIL; summary="bad result line: $result_line" ;;
	esac
fi

# The host's half of a scenario: only after the guest's PASS, with the guest's files in $out.
if [ "$verdict" = PASS ] && [ ${#host_check[@]} -gt 0 ]; then
	(cd "$src" && IRQPILOT_BUILD="$build" "${host_check[@]}" "$out") >"$out/host-check.log" 2>&1
	hc_rc=$?
	hc_line=$(tail -n1 "$out/host-check.log")
	case $hc_rc in
	0) summary+="; host: $hc_line" ;;
	77) verdict=SKIP; summary="host check skipped: $hc_line (guest: $summary)" ;;
	*) verdict=FAIL; summary="host check failed (exit $hc_rc): $hc_line (guest: $summary)" ;;
	esac
fi

{
	echo "$verdict $name: $summary"
	echo "elapsed ${elapsed}s boot ${boot_s:-?}s bootwall ${boot_wall:-?}s kernel $kver arch $arch guest ${guest_uname:-?} out $out"
} >"$out/result"
[ -n "$kernel_bad" ] && { log "kernel trouble:"; echo "$kernel_bad" >&2; }
if [ "$verdict" = FAIL ]; then
	log "last console lines ($console):"
	tail -n 25 "$console" | sed 's/^/  | /' >&2
fi
log "$name: ${elapsed}s wall; guest reached stage 2 after ${boot_wall:-?}s wall" \
	"(${boot_s:-?}s guest uptime); $arch kernel ${guest_uname:-$kver}; console $console"
echo "$verdict $name: $summary"
case "$verdict" in
PASS) exit 0 ;;
SKIP) exit 77 ;;
*) exit 1 ;;
esac
exit
}
