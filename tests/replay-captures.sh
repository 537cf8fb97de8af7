#!/bin/sh
# Replays the real captures from Debian 12's 6.1 kernel through the
# irqpilotd binary and checks what a user would read in its JSON output.
set -u
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}
top_builddir=${top_builddir:-$top_srcdir}
shared=${IRQPILOT_SHARED:-$top_srcdir/../shared}
# A git worktree (../wt/NAME) finds them beside its main checkout.
if [ -z "${IRQPILOT_SHARED:-}" ] && [ ! -d "$shared/captures" ] &&
	common=$(git -C "$top_srcdir" rev-parse --path-format=absolute --git-common-dir 2>/dev/null); then
	shared=$(dirname "$common")/../shared
fi
bin=$top_builddir/src/irqpilotd/irqpilotd
caps=$shared/captures
fail=0

if [ ! -d "$caps/qemu-x86-ahci-threadirqs" ]; then
	echo "SKIP: no captures at $caps (set IRQPILOT_SHARED)"
	exit 77
fi

check() { # description, command...
	desc=$1
	shift
	if "$@"; then
		echo "ok - $desc"
	else
		echo "not ok - $desc"
		fail=1
	fi
}

out=$(mktemp)
err=$(mktemp)
trap 'rm -f "$out" "$err"' EXIT

"$bin" --replay "$caps/qemu-x86-ahci-threadirqs" --json >"$out" 2>"$err"
check "ahci replay exits 0" test $? -eq 0
check "one JSON document per step (4)" test "$(wc -l <"$out")" -eq 4
check "every document has schema 2" test "$(grep -c '^{"schema":2,"step":' "$out")" -eq 4
step1=$(mktemp)
trap 'rm -f "$out" "$err" "$step1"' EXIT
sed -n 2p "$out" >"$step1"
# 8,000 reads from CPU 3 between steps 0 and 1, recorded as such
check "sda submissions come from the recording, all on CPU 3" \
	grep -q '"name":"sda".*"submit":{"source":"replay","total":[0-9.e+]*,"by_cpu":{"3":' "$step1"
check "sda completes on CPU 2, where IRQ 28 fires" \
	grep -q '"complete":{"source":"replay","total":[0-9.e+]*,"by_cpu":{"2":' "$step1"
check "forced IRQ threading is recognised from the threads" \
	grep -q '"forced_threading":true' "$step1"
check "the ahci IRQ thread is listed as FIFO 50" \
	grep -q '"comm":"irq/28-ahci\[0000:00:06.0\]","irq":28,"allowed":"2","policy":"fifo","priority":50' "$step1"

"$bin" --replay "$caps/qemu-x86-nvme-managed" --json >"$out" 2>"$err"
check "nvme replay exits 0" test $? -eq 0
check "all four nvme I/O vectors are managed" \
	test "$(sed -n 2p "$out" | grep -o '"name":"nvme0q[1-4]","unnamed_action":false,"chip":"PCI-MSI","hwirq":"[0-9]*-edge","affinity":"[0-3]","effective":"[0-3]","node":0,"managed":true' | wc -l)" -eq 4

"$bin" --replay /nonexistent/series >"$out" 2>"$err"
check "a missing series fails with exit 1" test $? -eq 1
check "and says why" grep -q "nonexistent/series" "$err"

# A capture comes with a bug report: a link in it that points out of the
# step must not be followed to this machine's files.
bad=$(mktemp -d)
trap 'rm -f "$out" "$err" "$step1"; rm -rf "$bad"' EXIT
cp -a "$caps/qemu-x86-ahci-threadirqs" "$bad/s"
sed 's/ahci/SECRETX/' "$bad/s/0001/proc/interrupts" >"$bad/outside"
rm "$bad/s/0001/proc/interrupts"
ln -s ../../../outside "$bad/s/0001/proc/interrupts"
"$bin" --replay "$bad/s" >"$out" 2>"$err"
check "a link out of the capture fails the replay" test $? -eq 1
check "the step and the file are named" grep -q "proc/interrupts.*No such file\|replay step 0001" "$err"
check "and the file outside is not read" test "$(cat "$out" "$err" | grep -c SECRETX)" -eq 0
ln -sf "$bad/outside" "$bad/s/0001/proc/interrupts"
"$bin" --replay "$bad/s" >"$out" 2>"$err"
check "nor through an absolute link" test "$(cat "$out" "$err" | grep -c SECRETX)" -eq 0

# A FIFO in a capture (tar keeps them) would block the read for good.
cp -a "$caps/qemu-x86-ahci-threadirqs" "$bad/f"
rm "$bad/f/0001/proc/interrupts"
mkfifo "$bad/f/0001/proc/interrupts"
timeout 60 "$bin" --replay "$bad/f" >"$out" 2>"$err"
check "a FIFO in a capture fails the replay, without hanging" test $? -eq 1
check "naming the file" grep -q "proc/interrupts: No such device or address" "$err"

# A recorded count file too large says which file.
cp -a "$caps/qemu-x86-ahci-threadirqs" "$bad/c"
yes 'sda 0 1' | head -c 80000000 >"$bad/c/0001/irqpilot/submit"
"$bin" --replay "$bad/c" >"$out" 2>"$err"
check "a huge irqpilot/submit fails the replay" test $? -eq 1
check "naming it" grep -q "irqpilot/submit: File too large" "$err"

# A step without its clock would run on this machine's.
cp -a "$caps/qemu-x86-ahci-threadirqs" "$bad/t"
rm "$bad/t/0001/irqpilot/time_ns"
"$bin" --replay "$bad/t" >"$out" 2>"$err"
check "a step without irqpilot/time_ns fails the replay" test $? -eq 1
check "that step, naming the file" sh -c 'grep -q "irqpilot/time_ns: missing" "$1" && grep -q "replay step 0001 failed" "$1"' - "$err"

# A step that is a link to / was the live machine, and one out of the
# capture another directory: neither is followed.
cp -a "$caps/qemu-x86-ahci-threadirqs" "$bad/l"
rm -rf "$bad/l/0001"
ln -s / "$bad/l/0001"
"$bin" --replay "$bad/l" >"$out" 2>"$err"
check "a step linked to / fails the replay" test $? -eq 1
check "at that step, which is not read" sh -c 'grep -q "0001: not a directory" "$1" && test "$(grep -c "^== step" "$2")" -eq 1' - "$err" "$out"

# --samples goes to 100000: step 10000 comes after 9999, not after 1000.
cp -a "$caps/qemu-x86-ahci-threadirqs" "$bad/n"
mv "$bad/n/0002" "$bad/n/9999"
mv "$bad/n/0003" "$bad/n/10000"
"$bin" --replay "$bad/n" >"$out" 2>"$err"
check "steps past 9999 replay in their order" test $? -eq 0

exit $fail
