#!/bin/bash
# Build irqpilot_cq.ko and tests/holder with W=1 against the installed kernel headers and the
# newest Linux headers of several Debian suites; any compiler or modpost warning is a FAIL.
#
#   kmod/tests/build-compat.sh [--refresh | --offline] [TARGET...]
#   kmod/tests/build-compat.sh [--refresh | --offline] --vm KVER=DEBVER INDEX OUTDIR
#
#   TARGET      installed | bookworm | bookworm-rt | bookworm-backports | trixie | trixie-rt |
#               trixie-backports | sid | experimental (default: all). "bookworm" and "trixie"
#               are the release plus its -updates and -security, whichever is newest; a -rt
#               target is the same suites' PREEMPT_RT flavour (linux-headers-rt-amd64).
#   --refresh   re-read the archive indexes now (default: when older than a day)
#   --offline   never touch the network; use what the cache holds
#   --vm        (... OUTDIR [ARCH]) for the VM harness (tests/vm/check-vm.sh): build against exactly
#               linux-headers-KVER=DEBVER of the suite family INDEX (bookworm, trixie, sid),
#               the guest kernel lib-kernel.sh fetched, and copy irqpilot_cq.ko and
#               tests/holder/ipcq_holder.ko to OUTDIR (the layout of kmod/). Warnings are
#               reported but do not stop the copy; a failed make does. ARCH aarch64
#               cross-builds: the arm64 headers package comes from an arm64 index and is
#               unpacked into an amd64 root with its amd64 linux-kbuild and
#               gcc-N-aarch64-linux-gnu, and make runs with ARCH=arm64 CROSS_COMPILE.
#
# Each suite's headers are built with the toolchain that suite builds its kernel with (the
# headers' own dependencies: gcc-N, binutils, pahole, linux-kbuild). Their .config is tied to
# that compiler: trixie's kernels want gcc-14, sid's gcc-16, neither exists for bookworm, and
# bookworm's gcc-12 rejects the flags they pass (-fmin-function-alignment=16). So nothing is
# installed: the packages are resolved with apt-get against a private index, extracted with
# dpkg-deb into a root per target, and make runs there under chroot in an unprivileged user
# and mount namespace (unshare -rm). No root needed. "installed" builds with this host's
# compiler against /lib/modules/*/build.
#
# Output: one line per kernel, "PASS 7.3.4+deb13-amd64 (trixie-backports)", "FAIL ..." with
# the first offending line and the log (kept), or "SKIP VERSION (TARGET): REASON" when this host
# cannot build it (no unprivileged user namespaces, no network and nothing cached). Exit status
# 1 if any build failed, 0 otherwise (SKIPs included).
#
# Environment: IRQPILOT_COMPAT_CACHE (default /var/tmp/ipcq-compat: indexes, .debs and one
# root per target, about 0.6 GiB each; "rm -rf" it at will), IRQPILOT_COMPAT_MIRROR (default
# http://deb.debian.org/debian), IRQPILOT_COMPAT_SECURITY (default
# http://deb.debian.org/debian-security).

set -u
export LC_ALL=C

SRC=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${IRQPILOT_COMPAT_CACHE:-/var/tmp/ipcq-compat}
MIRROR=${IRQPILOT_COMPAT_MIRROR:-http://deb.debian.org/debian}
SECURITY=${IRQPILOT_COMPAT_SECURITY:-http://deb.debian.org/debian-security}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
# What a kbuild run needs besides the headers' own dependencies: W=1 runs kernel-doc (perl;
# 7.x no longer runs it on external modules), and gcc runs "as", which trixie's gcc-N no
# longer pulls in.
TOOLS="make dash bash coreutils sed grep mawk findutils diffutils binutils perl"

# target             apt index  kernel from (suites, newest wins)
# bookworm's 6.1 and its RT flavour are what most machines run; RT builds other code paths
# (hard hrtimer, sleeping spinlocks, no softirq context) and so warns on its own.
TARGETS="
bookworm             bookworm   bookworm,bookworm-updates,bookworm-security
bookworm-rt          bookworm   bookworm,bookworm-updates,bookworm-security
bookworm-backports   bookworm   bookworm-backports
trixie               trixie     trixie,trixie-updates,trixie-security
trixie-rt            trixie     trixie,trixie-updates,trixie-security
trixie-backports     trixie     trixie-backports
sid                  sid        sid
experimental         sid        experimental
"

refresh=auto
want=()
vm=()
while [ $# -gt 0 ]; do
	a=$1
	shift
	case $a in
	--vm)
		[ $# -ge 3 ] || { echo "--vm KVER=DEBVER INDEX OUTDIR [ARCH]" >&2; exit 2; }
		vm=("$1" "$2" "$3")
		shift 3
		case ${1:-} in x86_64|aarch64) vm+=("$1"); shift ;; esac ;;
	--refresh) refresh=yes ;;
	--offline) refresh=no ;;
	-h|--help) sed -n '2,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
	-*) echo "unknown option $a" >&2; exit 2 ;;
	*) want+=("$a") ;;
	esac
done

wanted() {
	[ ${#want[@]} -eq 0 ] && return 0
	local w
	for w in "${want[@]}"; do [ "$w" = "$1" ] && return 0; done
	return 1
}

mkdir -p "$CACHE" || exit 2
[ -w "$CACHE" ] || { echo "$CACHE is not writable (set IRQPILOT_COMPAT_CACHE)" >&2; exit 2; }
exec 9>"$CACHE/lock"
flock -n 9 || { echo "waiting for another build-compat.sh on $CACHE" >&2; flock 9; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ipcq-compat-build.XXXXXX") || exit 2
: >"$WORK/.start"		# --refresh: each index once per run
failed=0
keep_work=0
cleanup() { [ $keep_work -eq 1 ] || rm -rf "$WORK"; }
trap cleanup EXIT

# The sources to build, from the working tree: the files git tracks (no stale objects), or
# outside a git checkout (a release tarball) all but build products.
src_files() {
	local out
	out=$(git -C "$SRC" ls-files kmod include/uapi 2>/dev/null)
	if grep -qx kmod/Kbuild <<<"$out"; then
		printf '%s\n' "$out"
		return
	fi
	(cd "$SRC" && find kmod include/uapi -type f ! -name '*.o' ! -name '*.ko' ! -name '*.mod' \
		! -name '*.mod.c' ! -name '.*.cmd' ! -name Module.symvers ! -name modules.order)
}

stage_src() {
	mkdir -p "$1" && src_files | (cd "$SRC" && xargs -d '\n' cp --parents -t "$1")
}

# PASS or FAIL for one kernel: a failed make, or any warning or error in its log, fails.
# judge LABEL LOG STATUS
judge() {
	local bad
	bad=$(grep -m1 -iE 'warning|error|differs from the one used' "$2")
	if [ "$3" -eq 0 ] && [ -z "$bad" ]; then
		echo "PASS $1"
		return 0
	fi
	[ -n "$bad" ] || bad=$(tail -n1 "$2")
	echo "FAIL $1: $bad (log: $2)"
	failed=1
	keep_work=1
	return 1
}

# The host's own headers, with the host's compiler.
build_installed() {
	local kdir kver dir log st n=0
	for kdir in /lib/modules/*/build; do
		[ -f "$kdir/Makefile" ] || continue
		n=$((n + 1))
		kver=$(basename "$(dirname "$kdir")")
		dir=$WORK/installed-$kver
		log=$WORK/installed-$kver.log
		stage_src "$dir" || { echo "FAIL $kver (installed): cannot copy the sources"; failed=1; continue; }
		{
			make -C "$kdir" M="$dir/kmod" W=1 modules &&
				make -C "$kdir" M="$dir/kmod/tests/holder" W=1 modules
		} >"$log" 2>&1
		st=$?
		judge "$kver (installed)" "$log" $st
	done
	[ $n -gt 0 ] || echo "SKIP installed: no /lib/modules/*/build"
}

# apt-get/apt-cache on the private index of one suite family.
# apt_run INDEX apt-get|apt-cache ARGS...
apt_run() {
	local d=$CACHE/apt-$1 cmd=$2
	shift 2
	"$cmd" -q -c "$d/apt.conf" "$@"
}

# Prepares (and refreshes) the private index INDEX; returns 1 with the reason on stdout.
apt_index() {
	local d=$CACHE/apt-$1${2:+-$2} s sec out
	case $1 in
	sid) s="sid experimental" sec="" ;;
	*) s="$1 $1-updates $1-backports" sec="$1-security" ;;
	esac
	mkdir -p "$d/lists/partial" "$d/cache" "$d/debs/partial" || return 1
	[ -f "$d/status" ] || : >"$d/status"	# nothing installed: resolve everything
	{
		for s in $s; do echo "deb [signed-by=$KEYRING${2:+ arch=$2}] $MIRROR $s main"; done
		for s in $sec; do echo "deb [signed-by=$KEYRING${2:+ arch=$2}] $SECURITY $s main"; done
	} >"$d/sources.list"
	# Read after the host's apt.conf: keep its proxy settings, not its hooks (an
	# "apt-get update" here must not refresh the host's AppStream or PackageKit caches).
	cat >"$d/apt.conf" <<-EOF
	Dir::Etc::SourceList "$d/sources.list";
	Dir::Etc::SourceParts "/dev/null";
	Dir::Etc::Preferences "/dev/null";
	Dir::Etc::PreferencesParts "/dev/null";
	Dir::State::Lists "$d/lists";
	Dir::State::status "$d/status";
	Dir::Cache "$d/cache";
	Dir::Cache::Archives "$d/debs";
	Dir::Cache::pkgcache "pkgcache.bin";
	Dir::Cache::srcpkgcache "srcpkgcache.bin";
	Debug::NoLocking "true";
	${2:+APT::Architecture "$2"; APT::Architectures "$2";}
	APT::Sandbox::User "root";
	APT::Install-Recommends "false";
	Acquire::Languages "none";
	Acquire::IndexTargets::deb::DEP-11::DefaultEnabled "false";
	Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled "false";
	Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled "false";
	Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled "false";
	#clear APT::Update::Pre-Invoke;
	#clear APT::Update::Post-Invoke;
	#clear APT::Update::Post-Invoke-Success;
	#clear DPkg::Pre-Invoke;
	#clear DPkg::Post-Invoke;
	EOF
	case $refresh in
	no)
		[ -e "$d/updated" ] || { echo "no cached index (--offline)"; return 1; }
		return 0 ;;
	auto)
		[ -n "$(find "$d/updated" -mmin -1440 2>/dev/null)" ] && return 0 ;;
	yes)
		[ -n "$(find "$d/updated" -newer "$WORK/.start" 2>/dev/null)" ] && return 0 ;;
	esac
	if out=$(apt_run "$1${2:+-$2}" apt-get update 2>&1) && ! grep -qE '^(W|E):' <<<"$out"; then
		touch "$d/updated"
		return 0
	fi
	# A stale index still builds what is cached.
	if [ -e "$d/updated" ]; then
		echo "warning: apt-get update of $1 failed, using the index of $(date -r "$d/updated" +%F)" >&2
		return 0
	fi
	grep -m1 -E '^(W|E):' <<<"$out" || echo "apt-get update failed"
	return 1
}

# The field FIELD of package PKG=VERSION.
pkg_field() {
	apt_run "$1" apt-cache show --no-all-versions "$2" 2>/dev/null |
		sed -n "s/^$3: //p" | head -n1
}

# Newest version of the headers metapackage META in any of the comma-separated SUITES.
# meta_version INDEX SUITES META
meta_version() {
	apt_run "$1" apt-cache madison "$3" 2>/dev/null |
		awk -F' [|] ' -v suites=",$2," '{
			n = split($3, w, " "); s = w[2]; sub("/.*", "", s)
			if (index(suites, "," s ",")) { gsub(" ", "", $2); print $2; exit }
		}'
}

# Dependencies of the headers package to put in the root: not the kernel image (6.12 headers
# depend on it; 100 MB that kbuild never reads), not linux-base (perl, maintainer scripts).
# "a (= v)" becomes a=v, alternatives keep their first choice.
header_deps() {
	tr ',' '\n' <<<"$1" | sed 's/|.*//; s/^ *//; s/ *$//' |
		awk '$1 ~ /^linux-image-/ || $1 == "linux-base" { next }
			$2 == "(=" { sub(")", "", $3); print $1 "=" $3; next } { print $1 }'
}

# The .deb file names (as apt-get download names them) of PKG=VERSION...
# deb_files INDEX PKG=VERSION...
deb_files() {
	local index=$1
	shift
	apt_run "$index" apt-cache show --no-all-versions "$@" 2>/dev/null | awk '
		/^Package: / { p = $2 } /^Version: / { v = $2; sub(":", "%3a", v) }
		/^Architecture: / { print p "_" v "_" $2 ".deb" }'
}

# Sets up $CACHE/roots/TARGET with the newest headers of SUITES and their toolchain.
# Sets HPKG (linux-headers-KVER) and ROOT, or WHY.
# make_root TARGET INDEX SUITES
make_root() {
	local target=$1 index=$2 suites=$3 d=$CACHE/apt-$2 mver hdr deps sim pkgs files f
	local meta=linux-headers-amd64
	local missing=() rel=()

	HPKG="" ROOT=$CACHE/roots/$1 WHY=""
	if [ -n "${VM_HDR:-}" ]; then
		# --vm: the exact headers of the guest's kernel.
		hdr=$VM_HDR
		[ -n "$(pkg_field "${VM_HDR_INDEX:-$index}" "$hdr" Version)" ] ||
			{ WHY="no $hdr in the ${VM_HDR_INDEX:-$index} index"; return 1; }
	else
		case $target in *-rt) meta=linux-headers-rt-amd64 ;; esac
		mver=$(meta_version "$index" "$suites" "$meta")
		[ -n "$mver" ] || { WHY="no $meta in $suites"; return 1; }
		hdr=$(pkg_field "$index" "$meta=$mver" Depends | tr ',' '\n' |
			sed -n 's/^ *\(linux-headers-[^ ]*\) (= \(.*\))$/\1=\2/p' | head -n1)
		[ -n "$hdr" ] || { WHY="$meta $mver names no headers package"; return 1; }
	fi
	HPKG=${hdr%%=*}
	deps=$(header_deps "$(pkg_field "${VM_HDR_INDEX:-$index}" "$hdr" Depends)")
	if [ -n "${VM_HDR_INDEX:-}" ]; then
		# A foreign arch's headers: their kbuild and -common are the host's (same version, the
		# common part is Architecture: all), their compiler the host's cross compiler.
		deps=$(sed -E 's/^linux-compiler-gcc-([0-9]+)-arm(=.*)?$/gcc-\1-aarch64-linux-gnu/;
			s/^gcc-([0-9]+)(=.*)?$/gcc-\1-aarch64-linux-gnu/' <<<"$deps")
	fi
	# Backports and experimental are installed with -t, so are their dependencies.
	case $suites in *backports*|experimental) rel=(-t "$suites") ;; esac

	sim=$(apt_run "$index" apt-get -s "${rel[@]}" install $deps $TOOLS 2>&1) ||
		{ WHY="cannot resolve its dependencies: $(grep -m1 '^E:' <<<"$sim")"; return 1; }
	pkgs=$( { [ -n "${VM_HDR_INDEX:-}" ] || echo "$hdr"; sed -n 's/^Inst \([^ ]*\) (\([^ ]*\) .*/\1=\2/p' <<<"$sim"; } | sort)
	files=$(deb_files "$index" $pkgs)
	[ "$(wc -l <<<"$files")" -eq "$(wc -l <<<"$pkgs")" ] ||
		{ WHY="apt-cache show lost packages of: ${pkgs//$'\n'/ }"; return 1; }

	for f in $files; do
		[ -s "$d/debs/$f" ] || missing+=("$f")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		[ $refresh = no ] && { WHY="${#missing[@]} packages not cached (--offline)"; return 1; }
		(cd "$d/debs" && apt_run "$index" apt-get download $pkgs) >"$WORK/$target.download" 2>&1 ||
			{ WHY="download failed: $(grep -m1 -E '^(E|W):' "$WORK/$target.download")"; return 1; }
	fi

	if [ -n "${VM_HDR_INDEX:-}" ]; then
		# The foreign headers themselves, from their own index; named relative to $d/debs.
		local ff
		ff=$(deb_files "$VM_HDR_INDEX" "$hdr")
		[ -s "$CACHE/apt-$VM_HDR_INDEX/debs/$ff" ] ||
			(cd "$CACHE/apt-$VM_HDR_INDEX/debs" && apt_run "$VM_HDR_INDEX" apt-get download "$hdr") \
				>>"$WORK/$target.download" 2>&1 ||
			{ WHY="download of $hdr failed: $(grep -m1 -E '^(E|W):' "$WORK/$target.download")"; return 1; }
		files+=$'\n'"../../apt-$VM_HDR_INDEX/debs/$ff"
	fi

	[ "$(cat "$ROOT/.ipcq-debs" 2>/dev/null)" = "$files" ] && return 0
	chmod -R u+w "$ROOT" 2>/dev/null
	rm -rf "$ROOT"
	mkdir -p "$ROOT"/usr/bin "$ROOT"/usr/sbin "$ROOT"/usr/lib "$ROOT"/usr/lib64 \
		"$ROOT"/dev "$ROOT"/proc "$ROOT"/tmp || { WHY="cannot create $ROOT"; return 1; }
	chmod 1777 "$ROOT/tmp"
	# Merged /usr, as every Debian root since bookworm.
	for f in bin sbin lib lib64; do ln -s usr/$f "$ROOT/$f"; done
	for f in $files; do
		dpkg-deb --fsys-tarfile "$d/debs/$f" | tar -x --keep-directory-symlink -C "$ROOT" ||
			{ WHY="cannot extract $f"; return 1; }
	done
	# What maintainer scripts would have made: /bin/sh, the awk alternative.
	[ -e "$ROOT/bin/sh" ] || ln -s dash "$ROOT/usr/bin/sh"
	[ -e "$ROOT/usr/bin/awk" ] || ln -s mawk "$ROOT/usr/bin/awk"
	chmod -R u+w "$ROOT"
	echo "$files" >"$ROOT/.ipcq-debs"
}

# Runs COMMAND... as root of ROOT, inside a user and mount namespace of its own.
in_root() {
	local root=$1
	shift
	# chroot is in /usr/sbin, which a normal user's PATH may lack.
	PATH=$PATH:/usr/sbin:/sbin unshare --map-root-user --mount sh -c \
		'r=$1; shift; mount --rbind /dev "$r/dev" && mount --rbind /proc "$r/proc" &&
		exec chroot "$r" "$@"' \
		sh "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LC_ALL=C "$@"
}

build_suite() {
	local target=$1 index=$2 suites=$3 kver log st why

	why=$(apt_index "$index") || { echo "SKIP $target: $why"; return; }
	# Before downloading anything: can this host run a root of its own at all?
	why=$(unshare --map-root-user --mount true 2>&1) ||
		{ echo "SKIP $target: no unprivileged user namespace (unshare -rm: ${why:-failed})"; return; }
	if ! make_root "$target" "$index" "$suites"; then
		echo "SKIP ${HPKG:+${HPKG#linux-headers-} }($target): $WHY"
		return
	fi
	kver=${HPKG#linux-headers-}
	why=$(in_root "$ROOT" true 2>&1) ||
		{ echo "SKIP $kver ($target): cannot enter its root: $why"; return; }
	rm -rf "$ROOT/build"
	stage_src "$ROOT/build" || { echo "FAIL $kver ($target): cannot copy the sources"; failed=1; return; }
	log=$WORK/$target.log
	in_root "$ROOT" sh -c 'make -C "$1" M=/build/kmod W=1 modules &&
		make -C "$1" M=/build/kmod/tests/holder W=1 modules' sh "/usr/src/$HPKG" >"$log" 2>&1
	st=$?
	judge "$kver ($target)" "$log" $st
	rm -rf "$ROOT/build"
}

# Drops the .debs no root was made from (older uploads).
prune_debs() {
	local f used
	used=$(cat "$CACHE"/roots/*/.ipcq-debs 2>/dev/null)
	for f in "$CACHE"/apt-*/debs/*.deb; do
		[ -e "$f" ] || continue
		grep -qxF "${f##*/}" <<<"$used" || rm -f "$f"
	done
}

# --vm: one build for the VM harness, the modules kept.
build_vm() {
	local kv=$1 index=$2 outdir=$3 arch=${4:-x86_64} why st log suites=$2 mk=""
	VM_HDR=linux-headers-$kv VM_HDR_INDEX=""
	if [ "$arch" = aarch64 ]; then
		VM_HDR_INDEX=$index-arm64
		mk="ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-"
		why=$(apt_index "$index" arm64) || { echo "SKIP ${kv%%=*}: $why"; return 2; }
	fi
	# A backport's toolchain comes from backports too.
	case $kv in *bpo*) suites=$index-backports ;; esac
	why=$(apt_index "$index") || { echo "SKIP ${kv%%=*}: $why"; return 2; }
	if [ -z "$(pkg_field "$index" "$VM_HDR" Version)" ] && [ $refresh = auto ]; then
		# The guest's kernel is newer than this index: read it again.
		refresh=yes
		why=$(apt_index "$index") || { echo "SKIP ${kv%%=*}: $why"; return 2; }
	fi
	why=$(unshare --map-root-user --mount true 2>&1) ||
		{ echo "SKIP ${kv%%=*}: no unprivileged user namespace (unshare -rm: ${why:-failed})"; return 2; }
	make_root "vm-${kv%%=*}" "$index" "$suites" || { echo "FAIL ${kv%%=*} (vm): $WHY"; return 1; }
	rm -rf "$ROOT/build"
	stage_src "$ROOT/build" || { echo "FAIL ${kv%%=*} (vm): cannot copy the sources"; return 1; }
	log=$outdir.log
	mkdir -p "$outdir/tests/holder" || return 1
	# shellcheck disable=SC2086 # $mk is make variables
	in_root "$ROOT" sh -c 'd=$1; shift; make -C "$d" M=/build/kmod W=1 "$@" modules &&
		make -C "$d" M=/build/kmod/tests/holder W=1 "$@" modules' sh "/usr/src/$HPKG" $mk >"$log" 2>&1
	st=$?
	judge "${kv%%=*} (vm)" "$log" $st
	if [ $st -eq 0 ]; then
		cp "$ROOT/build/kmod/irqpilot_cq.ko" "$outdir/" &&
			cp "$ROOT/build/kmod/tests/holder/ipcq_holder.ko" "$outdir/tests/holder/" || st=1
	fi
	rm -rf "$ROOT/build"
	return $st
}
if [ ${#vm[@]} -gt 0 ]; then
	keep_work=0
	build_vm "${vm[@]}"
	st=$?
	keep_work=0
	exit $st
fi

for t in "${want[@]}"; do
	[ "$t" = installed ] || grep -q "^$t " <<<"$TARGETS" ||
		{ echo "unknown target $t" >&2; exit 2; }
done
wanted installed && build_installed
while read -r target index suites; do
	[ -n "$target" ] || continue
	wanted "$target" && build_suite "$target" "$index" "$suites"
done <<<"$TARGETS"
prune_debs
[ $keep_work -eq 1 ] && echo "logs kept in $WORK"
exit $failed
