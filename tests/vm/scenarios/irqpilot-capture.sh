#!/bin/bash
# vm: --disk ahci --append threadirqs --smp 4,sockets=2,cores=2
# host-check: bash tests/vm/scenarios/irqpilot-capture.sh --host
# A capture made on a real kernel replays to the same decisions anywhere. In the guest, with the
# AHCI vector on CPU 1 and fio submitting from CPU 3 (LLC domains {0,1} and {2,3}), irqpilotd
# records 6 samples a second apart (--capture), replays them there (--replay --json, which
# simulates its own moves) and must decide at least one move of the vector into 2-3. The capture
# and that replay go to the out dir as capture.tar and replay-guest.json. Then, on the host
# (run-vm.sh runs this script again with --host OUT), the host's build replays the same capture,
# and every step's "moves" and "kept" arrays must be identical to the guest's.
# The capture is written to the guest's tmpfs and tarred to the out dir afterwards: writing its
# thousands of small files over 9p stretched the sampling interval.

if [ "${1:-}" = --host ]; then
	out=${2:?usage: irqpilot-capture.sh --host OUT}
	bin="${IRQPILOT_BUILD:-.}/src/irqpilotd/irqpilotd"
	[ -x "$bin" ] || { echo "no $bin"; exit 2; }
	command -v jq >/dev/null || { echo "jq is not installed on the host"; exit 77; }
	rm -rf "$out/capture" && tar -C "$out" -xf "$out/capture.tar" || { echo "cannot unpack capture.tar"; exit 1; }
	"$bin" --replay "$out/capture" --json >"$out/replay-host.json" 2>"$out/replay-host.err" ||
		{ echo "host replay failed: $(head -c 300 "$out/replay-host.err")"; exit 1; }
	pick='{step, moves, kept}'
	jq -c "$pick" "$out/replay-guest.json" >"$out/decisions-guest.jsonl" || { echo "bad guest JSON"; exit 1; }
	jq -c "$pick" "$out/replay-host.json" >"$out/decisions-host.jsonl" || { echo "bad host JSON"; exit 1; }
	steps=$(wc -l <"$out/decisions-host.jsonl")
	moves=$(jq -s '[.[].moves | length] | add' "$out/decisions-host.jsonl")
	kept=$(jq -s '[.[].kept | length] | add' "$out/decisions-host.jsonl")
	if ! diff -u "$out/decisions-guest.jsonl" "$out/decisions-host.jsonl" >"$out/decisions.diff"; then
		head -c 2000 "$out/decisions.diff"; echo
		echo "host replay differs from the guest's (see decisions.diff)"
		exit 1
	fi
	[ "$steps" -ge 6 ] && [ "$moves" -ge 1 ] || { echo "only $steps steps, $moves moves"; exit 1; }
	echo "host replay of the guest's capture: $steps steps, $moves moves and $kept kept, identical to the guest's"
	exit 0
fi

# shellcheck source=tests/vm/lib.sh
. "$VM_LIB"

disk=$(vm_disk sd) || vm_fail "no AHCI disk (/sys/block/sd*) appeared"
irq=$(vm_irqs 'ahci' | head -n1)
[ -n "$irq" ] || vm_fail "no ahci vector in /proc/interrupts"
echo 1 >/proc/irq/"$irq"/smp_affinity_list || vm_fail "cannot put irq $irq on cpu 1"
vm_fio_bg 3 --name=rr --filename="$disk" --direct=1 --ioengine=libaio --iodepth=16 --bs=4k \
	--rw=randread --size=64M
vm_wait_io "$disk" || vm_fail "no I/O from fio on $disk"
t0=$SECONDS
"$IRQPILOTD" --capture /tmp/capture --samples 6 --interval 1 || vm_fail "irqpilotd --capture failed"
tcap=$((SECONDS - t0))
vm_fio_bg_stop
[ "$(vm_aff "$irq")" = 1 ] || vm_fail "--capture changed irq $irq's affinity to $(vm_aff "$irq")"
n=$(find /tmp/capture -mindepth 1 -maxdepth 1 -name '[0-9]*' | wc -l)
[ "$n" -eq 6 ] || vm_fail "capture has $n steps, want 6"
"$IRQPILOTD" --replay /tmp/capture --json >"$VM_OUT/replay-guest.json" 2>/tmp/replay.err ||
	vm_fail "guest replay failed: $(head -c 300 /tmp/replay.err)"
tar -C /tmp -cf "$VM_OUT/capture.tar" capture || vm_fail "cannot tar the capture to the out dir"
moves=$(jq -s --argjson irq "$irq" '[.[].moves[] | select(.irq == $irq)] | length' "$VM_OUT/replay-guest.json")
to=$(jq -r -s --argjson irq "$irq" '[.[].moves[] | select(.irq == $irq) | .to] | first // ""' "$VM_OUT/replay-guest.json")
jq -c '{step, moves: [.moves[].reason], kept: [.kept[].reason]}' "$VM_OUT/replay-guest.json"
[ "$moves" -ge 1 ] || vm_fail "the guest replay decided no move of irq $irq"
vm_cpus_in "$to" 2-3 || vm_fail "the guest replay moved irq $irq to '$to', not into 2-3"
vm_pass "capture of 6 samples in ${tcap}s ($(du -sh /tmp/capture | cut -f1)); guest replay moves irq $irq 1 -> $to ($moves move(s))"
