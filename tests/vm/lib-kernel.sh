# shellcheck shell=bash disable=SC2034 # VM_* are results for run-vm.sh and check-vm.sh
# Sourced on the host by run-vm.sh and check-vm.sh, which must agree on the guest: which
# architecture and which kernel. Debian's kernels are fetched, never installed: apt-get download
# against a private index, dpkg-deb -x into a cache, depmod -b there. The host keeps its own
# kernel, /boot and /lib/modules untouched.
#
#   vm_kernel_select ARCH SPEC    sets VM_ARCH, VM_KVER (the guest's `uname -r`), VM_KROOT (a
#                                 tree holding boot/vmlinuz-VM_KVER and lib/modules/VM_KVER; "/"
#                                 for an installed kernel), VM_KINDEX (the apt suite family its
#                                 headers come from; "" when installed), VM_KDEBVER (its Debian
#                                 version). Returns 1 with the reason in VM_KWHY.
#
# ARCH: x86_64 (default) | aarch64.
# SPEC: ""|default  the newest linux-image-FLAVOUR of bookworm (its -updates and -security)
#       rt          the newest linux-image-rt-FLAVOUR of bookworm: PREEMPT_RT
#       SUITE[-rt]  the same from SUITE: bookworm-backports, trixie, trixie-backports, sid
#       installed   the newest /boot/vmlinuz-V that has /lib/modules/V/kernel/drivers
#       VERSION     that `uname -r`: /boot/vmlinuz-VERSION if installed, else linux-image-VERSION
#                   from bookworm, then trixie
# FLAVOUR is amd64 for x86_64, arm64 for aarch64.
#
# Environment: XDG_CACHE_HOME (cache root, default /var/tmp; everything is under
# irqpilot-vm/), IRQPILOT_VM_MIRROR, IRQPILOT_VM_SECURITY (Debian mirrors), IRQPILOT_VM_OFFLINE=1
# (never refresh the indexes; use what is cached).

VM_CACHE=${XDG_CACHE_HOME:-/var/tmp}/irqpilot-vm
VM_MIRROR=${IRQPILOT_VM_MIRROR:-http://deb.debian.org/debian}
VM_SECURITY=${IRQPILOT_VM_SECURITY:-http://deb.debian.org/debian-security}

# The newest installed kernel (the harness's old default, kept for hosts that have one).
vm_installed_kernel() {
	local f v best=""
	for f in /boot/vmlinuz-*; do
		[ -e "$f" ] || continue
		v=${f#/boot/vmlinuz-}
		[ -d "/lib/modules/$v/kernel/drivers" ] || continue
		best=$(printf '%s\n%s\n' "$best" "$v" | sed '/^$/d' | sort -V | tail -n1)
	done
	printf '%s' "$best"
}

vm_flavour() { case $1 in x86_64) echo amd64 ;; aarch64) echo arm64 ;; *) return 1 ;; esac; }

# apt-get/apt-cache on the private index of a suite family and architecture.
# vm_apt INDEX DEBARCH apt-get|apt-cache ARGS...
vm_apt() {
	local d=$VM_CACHE/apt/$1-$2 cmd=$3
	shift 3
	"$cmd" -q -c "$d/apt.conf" "$@"
}

# Makes and, once a day, refreshes the private index INDEX (bookworm, trixie, sid) for DEBARCH.
# Prints the reason on failure.
vm_apt_index() {
	local index=$1 arch=$2 d=$VM_CACHE/apt/$1-$2 s out suites sec
	case $index in
	sid) suites="sid experimental" sec="" ;;
	*) suites="$index $index-updates $index-backports" sec="$index-security" ;;
	esac
	mkdir -p "$d/lists/partial" "$d/cache" "$d/debs/partial" || { echo "cannot create $d"; return 1; }
	[ -f "$d/status" ] || : >"$d/status"
	{
		for s in $suites; do
			echo "deb [arch=$arch signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $VM_MIRROR $s main"
		done
		for s in $sec; do
			echo "deb [arch=$arch signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $VM_SECURITY $s main"
		done
	} >"$d/sources.list"
	# The host's apt.conf is read first (its proxy), then this; none of its hooks run.
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
	APT::Architecture "$arch";
	APT::Architectures "$arch";
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
	if [ -n "${IRQPILOT_VM_OFFLINE:-}" ] || [ -n "$(find "$d/updated" -mmin -1440 2>/dev/null)" ]; then
		[ -e "$d/updated" ] || { echo "no cached index of $index/$arch (IRQPILOT_VM_OFFLINE)"; return 1; }
		return 0
	fi
	if out=$(vm_apt "$index" "$arch" apt-get update 2>&1) && ! grep -qE '^(W|E):' <<<"$out"; then
		touch "$d/updated"
		return 0
	fi
	if [ -e "$d/updated" ]; then
		echo "apt-get update of $index/$arch failed, using the index of $(date -r "$d/updated" +%F)" >&2
		return 0
	fi
	grep -m1 -E '^(W|E):' <<<"$out" || echo "apt-get update of $index/$arch failed"
	return 1
}

# Newest "VERSION" of package PKG among the comma-separated SUITES: vm_newest INDEX ARCH PKG SUITES
vm_newest() {
	vm_apt "$1" "$2" apt-cache madison "$3" 2>/dev/null |
		awk -F' [|] ' -v suites=",$4," '{
			n = split($3, w, " "); s = w[2]; sub("/.*", "", s)
			if (index(suites, "," s ",")) { gsub(" ", "", $2); print $2; exit }
		}'
}

# Unpacks linux-image-KVER=DEBVER into $VM_CACHE/kernels/ARCH/KVER (once); prints why not.
vm_kernel_fetch() {
	local index=$1 arch=$2 kver=$3 debver=$4 d=$VM_CACHE/apt/$1-$2 root deb
	root=$VM_CACHE/kernels/$VM_ARCH/$kver
	deb="linux-image-${kver}_${debver/:/%3a}_$arch.deb"
	[ "$(cat "$root/.deb" 2>/dev/null)" = "$deb" ] && return 0
	(
		flock 9
		[ "$(cat "$root/.deb" 2>/dev/null)" = "$deb" ] && exit 0
		if [ ! -s "$d/debs/$deb" ]; then
			(cd "$d/debs" && vm_apt "$index" "$arch" apt-get download "linux-image-$kver=$debver") \
				>"$d/download.log" 2>&1 || { echo "apt-get download linux-image-$kver=$debver failed: $(grep -m1 -E '^(E|W):' "$d/download.log")"; exit 1; }
		fi
		rm -rf "$root"
		mkdir -p "$root" || exit 1
		dpkg-deb -x "$d/debs/$deb" "$root" || { echo "dpkg-deb -x $deb failed"; exit 1; }
		# Merged /usr (trixie's images ship usr/lib/modules only).
		[ -d "$root/lib/modules" ] || { mkdir -p "$root/lib" && ln -s ../usr/lib/modules "$root/lib/modules"; }
		# modules.dep and the alias index come from depmod, which the package's postinst runs.
		command -v depmod >/dev/null || PATH=$PATH:/usr/sbin:/sbin
		command -v depmod >/dev/null || { echo "no depmod to index $kver's modules: install kmod (scripts/deps --test)"; exit 1; }
		depmod -b "$root" "$kver" || { echo "depmod -b $root $kver failed"; exit 1; }
		echo "$deb" >"$root/.deb"
	) 9>"$VM_CACHE/kernels.lock" || return 1
}

vm_kernel_select() {
	local arch=${1:-x86_64} spec=${2:-} flav index suites meta rt="" mver dep v
	VM_ARCH=$arch VM_KVER="" VM_KROOT="" VM_KINDEX="" VM_KDEBVER="" VM_KWHY=""
	flav=$(vm_flavour "$arch") || { VM_KWHY="unknown ARCH $arch (x86_64, aarch64)"; return 1; }
	mkdir -p "$VM_CACHE" || { VM_KWHY="cannot create $VM_CACHE"; return 1; }
	case $spec in
	installed)
		[ "$arch" = x86_64 ] || { VM_KWHY="an installed kernel is the host's arch, x86_64"; return 1; }
		VM_KVER=$(vm_installed_kernel) VM_KROOT=/
		[ -n "$VM_KVER" ] || { VM_KWHY="no /boot/vmlinuz-V with /lib/modules/V/kernel/drivers"; return 1; }
		return 0 ;;
	[0-9]*.*)
		if [ -e "/boot/vmlinuz-$spec" ] && [ -d "/lib/modules/$spec/kernel" ]; then
			VM_KVER=$spec VM_KROOT=/
			return 0
		fi
		for index in bookworm trixie; do
			VM_KWHY=$(vm_apt_index "$index" "$flav") || return 1
			mver=$(vm_apt "$index" "$flav" apt-cache madison "linux-image-$spec" 2>/dev/null |
				awk -F' [|] ' 'NR == 1 { gsub(" ", "", $2); print $2 }')
			[ -n "$mver" ] || continue
			VM_KVER=$spec VM_KINDEX=$index VM_KDEBVER=$mver
			VM_KROOT=$VM_CACHE/kernels/$arch/$spec
			VM_KWHY=$(vm_kernel_fetch "$index" "$flav" "$spec" "$mver") || return 1
			return 0
		done
		VM_KWHY="no /boot/vmlinuz-$spec and no linux-image-$spec in bookworm or trixie"
		return 1 ;;
	esac
	case $spec in
	rt) spec=bookworm rt=rt- ;;
	*-rt) spec=${spec%-rt} rt=rt- ;;
	""|default) spec=bookworm ;;
	esac
	case $spec in
	bookworm) index=bookworm suites=bookworm,bookworm-updates,bookworm-security ;;
	bookworm-backports) index=bookworm suites=bookworm-backports ;;
	trixie) index=trixie suites=trixie,trixie-updates,trixie-security ;;
	trixie-backports) index=trixie suites=trixie-backports ;;
	sid) index=sid suites=sid ;;
	*) VM_KWHY="unknown KERNEL $spec (default, rt, SUITE[-rt], installed or a version)"; return 1 ;;
	esac
	meta=linux-image-$rt$flav
	VM_KWHY=$(vm_apt_index "$index" "$flav") || return 1
	mver=$(vm_newest "$index" "$flav" "$meta" "$suites")
	[ -n "$mver" ] || { VM_KWHY="no $meta in $suites"; return 1; }
	# The metapackage depends on exactly one image: "linux-image-6.1.0-41-rt-amd64 (= 6.1.158-1)".
	dep=$(vm_apt "$index" "$flav" apt-cache show "$meta=$mver" 2>/dev/null | sed -n 's/^Depends: //p' |
		head -n1 | tr ',' '\n' | sed -n 's/^ *linux-image-\([^ ]*\) (= \(.*\))$/\1 \2/p' | head -n1)
	[ -n "$dep" ] || { VM_KWHY="$meta $mver names no image package"; return 1; }
	VM_KVER=${dep% *} v=${dep#* }
	VM_KINDEX=$index VM_KDEBVER=$v VM_KROOT=$VM_CACHE/kernels/$arch/$VM_KVER
	VM_KWHY=$(vm_kernel_fetch "$index" "$flav" "$VM_KVER" "$v") || return 1
}

# Kernel version as a sortable number: 6.12.3 -> 6012003
vm_kver_num() {
	local IFS=.- a b c
	read -r a b c _ <<<"$1"
	[[ $c =~ ^[0-9]+$ ]] || c=0
	echo $(( a * 1000000 + b * 1000 + c ))
}

# Is the selected kernel PREEMPT_RT? From its config, else its name.
vm_kernel_is_rt() {
	local cfg=$VM_KROOT/boot/config-$VM_KVER
	[ "$VM_KROOT" = / ] && cfg=/boot/config-$VM_KVER
	if [ -r "$cfg" ]; then grep -q '^CONFIG_PREEMPT_RT=y' "$cfg"; return; fi
	[[ $VM_KVER == *-rt-* ]]
}

# vm_console_boot_stall CONSOLE: the guest kernel's own word, before IRQPILOT-BOOTED, that it is
# stuck in its boot, as the first such line of the serial log (120 characters); status 1 if it
# said none. Either of RCU's stall reports (kernel/rcu/tree_stall.h: "rcu: INFO: %s detected
# stalls on CPUs/tasks", "INFO: %s self-detected stall on CPU") or the soft-lockup watchdog's
# (kernel/watchdog.c, pr_fmt "watchdog: ": "BUG: soft lockup - CPU#%d stuck for %us! [%s:%d]").
# The watchdog repeats its report every ~28 s, so a guest stuck that way is never silent.
vm_console_boot_stall() {
	local line
	line=$(awk '/^IRQPILOT-BOOTED / { exit }
		/rcu: INFO: .*detected stalls|self-detected stall|watchdog: BUG: soft lockup/ {
			print substr($0, 1, 120); exit }' "$1") || return 1
	[ -n "$line" ] || return 1
	printf '%s\n' "$line"
}

# Kept for callers of the old interface: the guest kernel's version for the default guest.
vm_guest_kernel() {
	if [ -n "${IRQPILOT_VM_KERNEL:-}" ]; then printf '%s' "$IRQPILOT_VM_KERNEL"; return; fi
	vm_installed_kernel
}

# --- a foreign guest's userland -----------------------------------------------------------------
# An aarch64 guest cannot run the host's binaries, so its root is a Debian arm64 tree made from
# .debs (apt-get download against the private index, dpkg-deb -x; nothing is installed or run
# on the host): the same bash, fio, jq and util-linux the x86 scenarios use, so they run
# unchanged, plus the runtime libraries of the cross-built irqpilotd. It lives in the cache, on
# the host's /, and stage 1 switch_roots into it over the same 9p export.
VM_USERLAND_PKGS="bash coreutils util-linux mount procps kmod fio mawk sed grep findutils jq
	hostname libc-bin busybox-static libsystemd0 libnl-3-200 libnl-genl-3-200 libinih1 libjson-c5 dash"

# vm_debroot NAME ARCH PKGS -> a tree of Debian bookworm's packages PKGS of ARCH and their
# dependencies, unpacked (not installed: no maintainer script runs) in $VM_CACHE/NAME/ARCH-bookworm,
# made again when the resolution changes. Sets VM_UROOT, or VM_KWHY and returns 1.
vm_debroot() {
	local name=$1 flav index=bookworm d sim pkgs files f root
	flav=$(vm_flavour "$2") || { VM_KWHY="unknown ARCH $2"; return 1; }
	root=$VM_CACHE/$name/$2-$index
	VM_UROOT=$root
	VM_KWHY=$(vm_apt_index "$index" "$flav") || return 1
	d=$VM_CACHE/apt/$index-$flav
	# shellcheck disable=SC2086 # a word list
	sim=$(vm_apt "$index" "$flav" apt-get -s install $3 2>&1) ||
		{ VM_KWHY="cannot resolve the $2 $name: $(grep -m1 '^E:' <<<"$sim")"; return 1; }
	pkgs=$(sed -n 's/^Inst \([^ ]*\) (\([^ ]*\) .*/\1=\2/p' <<<"$sim" | sort)
	# shellcheck disable=SC2086
	files=$(vm_apt "$index" "$flav" apt-cache show --no-all-versions $pkgs 2>/dev/null | awk '
		/^Package: / { p = $2 } /^Version: / { v = $2; sub(":", "%3a", v) }
		/^Architecture: / { print p "_" v "_" $2 ".deb" }')
	[ "$(cat "$root/.debs" 2>/dev/null)" = "$files" ] && return 0
	VM_KWHY=$( {
		flock 9
		[ "$(cat "$root/.debs" 2>/dev/null)" = "$files" ] && exit 0
		# shellcheck disable=SC2086
		(cd "$d/debs" && vm_apt "$index" "$flav" apt-get download $pkgs) >"$d/$name.log" 2>&1 ||
			{ echo "download of the $2 $name failed: $(grep -m1 -E '^(E|W):' "$d/$name.log")"; exit 1; }
		chmod -R u+w "$root" 2>/dev/null
		rm -rf "$root"
		mkdir -p "$root"/usr/bin "$root"/usr/sbin "$root"/usr/lib "$root"/usr/lib/modules || exit 1
		for f in bin sbin lib; do ln -s usr/$f "$root/$f"; done
		for f in $files; do
			dpkg-deb --fsys-tarfile "$d/debs/$f" | tar -x --keep-directory-symlink -C "$root" ||
				{ echo "cannot extract $f"; exit 1; }
		done
		# What maintainer scripts would have made.
		[ -e "$root/usr/bin/sh" ] || ln -s dash "$root/usr/bin/sh"
		[ -e "$root/usr/bin/awk" ] || ln -s mawk "$root/usr/bin/awk"
		mkdir -p "$root"/proc "$root"/sys "$root"/dev "$root"/run "$root"/tmp "$root"/etc "$root"/var/tmp
		echo "$files" >"$root/.debs"
	} 9>"$VM_CACHE/$name.lock" ) || return 1
}

vm_userland() { vm_debroot userland "$1" "$VM_USERLAND_PKGS"; }

# What cross-building irqpilotd (tests/vm/cross-build.sh) links against: the -dev packages of
# the libraries configure looks for, with the C library's, as a --sysroot.
VM_SYSROOT_PKGS="libc6-dev libsystemd-dev libnl-3-dev libnl-genl-3-dev libinih-dev libjson-c-dev"
vm_sysroot() { vm_debroot sysroot "$1" "$VM_SYSROOT_PKGS"; }
