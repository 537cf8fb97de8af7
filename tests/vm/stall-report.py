#!/usr/bin/python3
"""Where a stalled guest's vCPUs are: run-vm.sh calls this when a guest stops printing before
it has booted, so that a boot hang can be told apart (a guest kernel spinning in one function, a
guest halted with nothing to wake it, or QEMU itself no longer answering) instead of being a bare
timeout.

usage: stall-report.py MONITOR_SOCKET SYSTEM_MAP [SAMPLES]

It asks QEMU's human monitor (HMP, -monitor unix:...) for `info registers -a` SAMPLES times a
second apart and names each vCPU's program counter from the kernel's System.map. The guest runs
with nokaslr (run-vm.sh), so System.map's addresses are the running kernel's.
"""
import bisect
import re
import socket
import sys
import time


def hmp(path, command, timeout=10.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    buf = b""

    def until_prompt():
        nonlocal buf
        while not buf.rstrip().endswith(b"(qemu)"):
            chunk = s.recv(65536)
            if not chunk:
                raise EOFError("monitor closed")
            buf += chunk

    until_prompt()
    buf = b""
    s.sendall(command.encode() + b"\n")
    until_prompt()
    s.close()
    # HMP echoes the command with terminal escapes; drop them and the prompt.
    text = re.sub(rb"\x1b\[[0-9;]*[A-Za-z]", b"", buf).decode(errors="replace")
    return text.replace("\r", "")


def load_map(path):
    addrs, names = [], []
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) >= 3 and parts[1] in "tTwW":
                    addrs.append(int(parts[0], 16))
                    names.append(parts[2])
    except OSError:
        pass
    order = sorted(range(len(addrs)), key=addrs.__getitem__)
    return [addrs[i] for i in order], [names[i] for i in order]


def name(pc, addrs, names):
    i = bisect.bisect_right(addrs, pc) - 1
    if i < 0 or pc - addrs[i] > 0x100000:
        return "%#x (not kernel text in System.map)" % pc
    return "%s+0x%x" % (names[i], pc - addrs[i])


def pcs(text):
    """vCPU number -> (pc, halted) from `info registers -a`."""
    out = {}
    cpu = None
    for line in text.splitlines():
        m = re.match(r"CPU#(\d+)", line)
        if m:
            cpu = int(m.group(1))
            continue
        if cpu is None:
            continue
        # x86: "RIP=ffffffff81c3a5d4 (EIP= before long mode) RFL=00000246 [---Z-P-] CPL=0 II=0 A20=1 SMM=0 HLT=1"
        m = re.search(r"\b[RE]IP=([0-9a-f]+)", line)
        if m:
            out[cpu] = [int(m.group(1), 16), None]
        m = re.search(r"\bHLT=(\d)", line)
        if m and cpu in out:
            out[cpu][1] = m.group(1) == "1"
        # aarch64: " PC=ffff800008012345 X00=..."
        m = re.match(r"\s*PC=([0-9a-f]+)", line)
        if m:
            out[cpu] = [int(m.group(1), 16), None]
    return out


def main():
    if len(sys.argv) < 3:
        print("usage: stall-report.py MONITOR_SOCKET SYSTEM_MAP [SAMPLES]", file=sys.stderr)
        return 2
    sock, smap = sys.argv[1], sys.argv[2]
    samples = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    addrs, names = load_map(smap)
    seen = {}
    for n in range(samples):
        try:
            text = hmp(sock, "info registers -a")
        except (OSError, EOFError) as e:
            print("stall: QEMU's monitor did not answer (%s): QEMU itself is stuck" % e)
            return 1
        for cpu, (pc, halted) in sorted(pcs(text).items()):
            seen.setdefault(cpu, []).append((pc, halted))
        if n + 1 < samples:
            time.sleep(1)
    if not seen:
        print("stall: no vCPU registers in the monitor's answer")
        return 1
    for cpu, got in sorted(seen.items()):
        where = ", ".join(sorted({name(pc, addrs, names) for pc, _ in got}))
        halted = [h for _, h in got if h is not None]
        state = ""
        if halted:
            state = " halted" if all(halted) else (" running" if not any(halted) else " mixed")
        print("stall: vCPU %d%s at %s (%d samples)" % (cpu, state, where, len(got)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
