#!/bin/bash
# vm: --systemd --disk ahci --append threadirqs --smp 4,sockets=2,cores=2 --timeout 900
# host-prep: bash tests/vm/scenarios/irqpilot-systemd.sh --host-prep
# The Debian package under a real systemd: the guest's PID 1 is systemd (run-vm.sh --systemd, the
# root an overlay with a tmpfs upper layer), and the irqpilot .deb that scripts/build-deb makes on
# the host (host-prep) is installed in it with dpkg. Then, with fio submitting from the LLC domain
# the AHCI vector is not in:
#  1. dpkg enables and starts irqpilotd.socket and irqpilotd.service (deb-systemd-helper); the
#     service is Type=notify, so "active" means READY=1 came, and it has a STATUS= text.
#  2. The watchdog restarts a SIGSTOP'd daemon (WatchdogSec shortened by a drop-in).
#  3. A reload with a good file takes (interval 1 s), and the daemon, sandboxed as the unit says
#     (ProtectSystem=strict and the rest), moves the vector and its IRQ thread.
#  4. A SIGHUP reload with a broken file is rejected; the daemon keeps running on the old policy.
#  5. journalctl -o json has the move with its MESSAGE_ID, IRQPILOT_* fields and the real caller
#     in CODE_FILE/CODE_FUNC (not log.c).
#  6. systemctl stop puts back every original: the vector's affinity and the thread's CPUs and
#     scheduling.
#  7. With the service stopped and the socket listening, the first irqctl status starts it.
#  8. dpkg --purge leaves nothing behind: no file of the package, no conffile, no state or runtime
#     directory, no enablement symlink.
set -u
if [ "${1:-}" = --host-prep ]; then
	# On the host, from the source tree: the packages, as CI's package stage builds them.
	out=${2:?--host-prep OUTDIR}
	git rev-parse --git-dir >/dev/null 2>&1 ||
		{ echo "not a git checkout: scripts/build-deb packages git HEAD"; exit 77; }
	for t in dpkg-buildpackage dh dh_dkms lintian; do
		command -v "$t" >/dev/null ||
			{ echo "no $t (scripts/deps --test installs debhelper, dh-dkms, lintian)"; exit 77; }
	done
	DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" scripts/build-deb "$out/debs" || exit 1
	ls "$out"/debs/irqpilot_*.deb >/dev/null || { echo "build-deb made no irqpilot_*.deb"; exit 1; }
	echo "built $(basename "$(ls "$out"/debs/irqpilot_*.deb)")"
	exit 0
fi
# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"
# The installed package's programs, not the build tree's.
# shellcheck disable=SC2034 # lib.sh's vm_irqctl and vm_vec_* read these
IRQCTL=/usr/bin/irqctl
IRQPILOTD=/usr/sbin/irqpilotd
VM_RT=/run/irqpilot
save_journal() { journalctl -b --no-pager -o short-monotonic >"$VM_OUT/journal.txt" 2>&1; }
trap save_journal EXIT

pid1=$(readlink /proc/1/exe)
[[ $pid1 == */systemd ]] || vm_fail "PID 1 is $pid1, not systemd"
vm_log "PID 1: $pid1, $(systemctl --version | head -n1), system $(systemctl is-system-running)"

disk=$(vm_disk sd) || vm_fail "no AHCI disk (/sys/block/sd*) appeared"
irq=$(vm_irqs 'ahci' | head -n1)
[ -n "$irq" ] || vm_fail "no ahci vector in /proc/interrupts"
thread=$(vm_irq_thread "$irq")
[ -n "$thread" ] || vm_fail "no irq/$irq-* thread: forced threading is not in effect"
vm_fio --name=warm --filename="$disk" --direct=1 --ioengine=libaio --bs=4k --rw=randread \
	--size=4M --io_size=1M || vm_fail "warm-up fio failed"
fioargs=(--name=rr --filename="$disk" --direct=1 --ioengine=libaio --iodepth=16 --bs=4k
	--rw=randread --size=64M)
vm_vec_originals

# 1. Install: enabled and started the Debian way; READY and STATUS.
deb=$(ls "$VM_OUT"/debs/irqpilot_*.deb 2>/dev/null | head -n1)
[ -n "$deb" ] || vm_fail "no irqpilot_*.deb in $VM_OUT/debs (host-prep)"
# man-db's trigger re-indexes every manual page, minutes under TCG; the flag is in the overlay.
rm -f /var/lib/man-db/auto-update
DEBIAN_FRONTEND=noninteractive dpkg -i "$deb" >"$VM_OUT/dpkg.log" 2>&1 ||
	{ cat "$VM_OUT/dpkg.log"; vm_fail "dpkg -i $(basename "$deb") failed"; }
vm_log "installed $(dpkg-query -W -f '${Package} ${Version}' irqpilot)"
for u in irqpilotd.socket irqpilotd.service; do
	e=$(systemctl is-enabled "$u"); a=$(systemctl is-active "$u")
	[ "$e" = enabled ] && [ "$a" = active ] || vm_fail "after dpkg -i: $u is $e, $a"
done
status_text() { systemctl show -p StatusText --value irqpilotd.service; }
st=$(status_text)
[[ $st == *devices*vectors* ]] || vm_fail "irqpilotd.service has no STATUS= text: '$st'"
vm_log "READY (active, Type=notify); STATUS: $st"

# 2. The watchdog. 30 s in the unit; 10 s here keeps the run short, and the daemon's event loop
# pings at half of it (sd_event_set_watchdog), well inside a 1 s interval's cycle.
mkdir -p /run/systemd/system/irqpilotd.service.d
printf '[Service]\nWatchdogSec=10s\n' >/run/systemd/system/irqpilotd.service.d/watchdog.conf
systemctl daemon-reload
systemctl restart irqpilotd.service || vm_fail "restart with the watchdog drop-in failed"
main0=$(systemctl show -p MainPID --value irqpilotd.service)
n0=$(systemctl show -p NRestarts --value irqpilotd.service)
kill -STOP "$main0"
vm_log "SIGSTOP to irqpilotd pid $main0 (NRestarts $n0)"
for _ in $(seq 1 600); do
	main1=$(systemctl show -p MainPID --value irqpilotd.service)
	[ "$main1" != "$main0" ] && [ "$main1" != 0 ] &&
		[ "$(systemctl is-active irqpilotd.service)" = active ] && break
	sleep 0.2
done
n1=$(systemctl show -p NRestarts --value irqpilotd.service)
[ "$main1" != "$main0" ] && [ "$main1" != 0 ] && [ "$n1" -gt "$n0" ] ||
	vm_fail "the watchdog did not restart the stopped daemon: pid $main0 -> $main1, NRestarts $n0 -> $n1"
journalctl -b -u irqpilotd.service --no-pager | grep -q 'Watchdog timeout' ||
	vm_fail "no 'Watchdog timeout' in the journal"
vm_log "watchdog: pid $main0 -> $main1, NRestarts $n0 -> $n1"
# The drop-in stays: 10 s is still far above a cycle at the 1 s interval the rest runs at.

# 3. A good reload, then the move under the unit's sandbox.
printf '[daemon]\ninterval = 1\n[policy]\ndwell = 2\n' >/etc/irqpilot/irqpilot.conf
systemctl reload irqpilotd.service || vm_fail "systemctl reload failed"
for _ in $(seq 1 300); do
	s=$(vm_irqctl --json status 2>/dev/null)
	[[ $s =~ \"interval_s\":\ *1(\.0*)?[,}] ]] && break
	sleep 0.1
done
[[ $s =~ \"interval_s\":\ *1(\.0*)?[,}] ]] || vm_fail "the reload did not take: $s"
vm_vec_fio_elsewhere
vm_wait_moves 0 120 >/dev/null || vm_fail "irqpilotd.service made no move in 120 s (fio on cpu $fcpu)"
vm_vec_moved "under systemd"
mv1="$(vm_aff "$irq") thread $(vm_thread_cpus "$thread")"
vm_log "moved: irq $irq to $mv1; STATUS: $(status_text)"

# 4. SIGHUP with a broken file.
cp /etc/irqpilot/irqpilot.conf /tmp/good.conf
printf '[daemon]\ninterval = 1\n[policy]\ndwell = soon\n' >/etc/irqpilot/irqpilot.conf
main0=$(systemctl show -p MainPID --value irqpilotd.service)
systemctl reload irqpilotd.service || vm_fail "systemctl reload (broken file) failed"
for _ in $(seq 1 300); do
	journalctl -b -u irqpilotd.service --no-pager | grep -q 'reload rejected' && break
	sleep 0.2
done
journalctl -b -u irqpilotd.service --no-pager | grep 'reload rejected' ||
	vm_fail "no 'reload rejected' in the journal after the broken reload"
main1=$(systemctl show -p MainPID --value irqpilotd.service)
[ "$(systemctl is-active irqpilotd.service)" = active ] && [ "$main1" = "$main0" ] ||
	vm_fail "after the broken reload: $(systemctl is-active irqpilotd.service), pid $main0 -> $main1"
s=$(vm_irqctl --json status) || vm_fail "irqctl status did not answer after the broken reload"
[[ $s =~ \"interval_s\":\ *1(\.0*)?[,}] ]] || vm_fail "not on the old policy after the broken reload: $s"
cp /tmp/good.conf /etc/irqpilot/irqpilot.conf

# 5. The journal's fields: the move, with its ID and the numbers, from its real caller.
journalctl -b -o json -u irqpilotd.service --no-pager >/tmp/journal.json
jsum=$(python3 - "$irq" /tmp/journal.json /usr/lib/systemd/catalog/irqpilot.catalog 2>&1 <<'PY'
import json, re, sys
irq, path, catalog = sys.argv[1:4]
ids = set(re.findall(r"(?m)^-- ([0-9a-f]{32})$", open(catalog).read()))
vec, thr = [], []
for line in open(path):
    e = json.loads(line)
    if e.get("IRQPILOT_IRQ") == irq and e.get("IRQPILOT_TO"):
        (thr if "IRQPILOT_PID" in e else vec).append(e)
if not vec or not thr:
    sys.exit("IRQ %s: %d journal entries of a vector move, %d of its thread's (IRQPILOT_IRQ, "
             "IRQPILOT_TO, IRQPILOT_PID)" % (irq, len(vec), len(thr)))
out = []
for kind, e, keys in (("vector", vec[-1], ("IRQPILOT_DEVICE",)), ("thread", thr[-1], ("IRQPILOT_PID",))):
    if e.get("MESSAGE_ID") not in ids:
        sys.exit("the %s move's MESSAGE_ID %s is not in the installed catalog" % (kind, e.get("MESSAGE_ID")))
    for k in keys + ("IRQPILOT_REASON", "IRQPILOT_FROM", "CODE_FILE", "CODE_LINE", "CODE_FUNC",
                     "SYSLOG_IDENTIFIER", "_SYSTEMD_UNIT"):
        if not e.get(k):
            sys.exit("the %s move's entry has no %s: %s" % (kind, k, sorted(e)))
    if e["CODE_FILE"].endswith("log.c"):
        sys.exit("CODE_FILE is %s, the logger's own file, not the caller's" % e["CODE_FILE"])
    if e["_SYSTEMD_UNIT"] != "irqpilotd.service":
        sys.exit("_SYSTEMD_UNIT is %s" % e["_SYSTEMD_UNIT"])
    out.append("%s: id %s reason %s to %s from %s:%s %s()" % (kind, e["MESSAGE_ID"][:8],
               e["IRQPILOT_REASON"], e["IRQPILOT_TO"], e["CODE_FILE"], e["CODE_LINE"], e["CODE_FUNC"]))
print("; ".join(out))
PY
) || vm_fail "journal: $jsum"
vm_log "journal: $jsum"

# 6. systemctl stop restores every original.
systemctl stop irqpilotd.service || vm_fail "systemctl stop failed"
vm_fio_bg_stop
vm_vec_restored "after systemctl stop"
[ "$(systemctl is-active irqpilotd.socket)" = active ] || vm_fail "the socket stopped with the service"

# 7. Socket activation on the first irqctl status.
[ "$(systemctl is-active irqpilotd.service)" = inactive ] ||
	vm_fail "irqpilotd.service is $(systemctl is-active irqpilotd.service) after stop"
s=$(vm_irqctl status 2>&1) || vm_fail "the first irqctl status did not start the daemon: $s"
a=$(systemctl is-active irqpilotd.service)
[ "$a" = active ] || vm_fail "irqctl status answered but irqpilotd.service is $a"
vm_log "socket activation: irqctl status answered, irqpilotd.service $a"

# 8. Purge. The postrm removes /run/irqpilot, and this harness keeps its own mounts there
# (src, build, and out: the host's writable 9p export). So dpkg runs in a private mount namespace
# whose /run is a new tmpfs holding only what dpkg and systemctl need (/run/systemd, bound from the
# real one) and a /run/irqpilot with what the service leaves there, for the postrm to remove.
files=$(dpkg-query -L irqpilot) || vm_fail "dpkg-query -L irqpilot failed"
out=$(unshare -m --propagation private bash -c '
	set -e
	mkdir -p /tmp/realrun
	mount --rbind /run /tmp/realrun
	mount -t tmpfs -o mode=0755 run /run
	mkdir -p /run/systemd /run/lock /run/irqpilot
	mount --rbind /tmp/realrun/systemd /run/systemd
	touch /run/irqpilot/state /run/irqpilot/lock
	DEBIAN_FRONTEND=noninteractive dpkg --purge irqpilot
	if [ -e /run/irqpilot ]; then echo "purge left /run/irqpilot: $(ls -A /run/irqpilot)"; exit 1; fi
' 2>&1) || { echo "$out"; vm_fail "dpkg --purge irqpilot failed: $(tail -n1 <<<"$out")"; }
left=""
while read -r f; do
	# directories the package shares with others (/usr/share/man/man8, ...) stay
	[ -e "$f" ] && [ ! -d "$f" ] && left+=" $f"
done <<<"$files"
for d in /etc/irqpilot /var/lib/irqpilot; do [ -e "$d" ] && left+=" $d"; done
for l in /etc/systemd/system/*.wants/irqpilotd.*; do [ -e "$l" ] || [ -L "$l" ] && left+=" $l"; done
[ -z "$left" ] || vm_fail "dpkg --purge left:$left"
st=$(dpkg-query -W -f '${db:Status-Status}' irqpilot 2>/dev/null) || st=not-installed
[ "$st" = not-installed ] || vm_fail "after the purge dpkg says irqpilot is $st"
vm_log "purge: nothing of $(wc -l <<<"$files") paths left, dpkg status $st"

vm_pass "irq $irq orig $aff0 (thread $thr0): dpkg -i enabled+started, READY+STATUS; watchdog restart $n0 -> $n1; moved to $mv1 under the sandbox; broken SIGHUP rejected; journal: $jsum; systemctl stop restored; socket-activated on irqctl status; purge left nothing"
