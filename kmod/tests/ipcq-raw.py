#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""Malformed irqpilot_cq requests, built byte by byte (libnl would refuse to send most).

  ipcq-raw.py MAJOR MINOR NAME
  ipcq-raw.py unread-dump SECONDS

MAJOR:MINOR is a blk-mq disk that is not attached, NAME its name. Each request must fail with
the errno given, the disk must stay unattached, and the module must keep answering. Prints one
line per case; exit status 1 on the first case that got another answer.

unread-dump sends a LIST dump request, prints "sent", and reads nothing for SECONDS: a client
that leaves its dump unfinished, which may pin the module (the dump holds a reference to it).
"""
import errno
import os
import socket
import struct
import sys
import time

NETLINK_GENERIC = 16
NLMSG_ERROR = 2
NLMSG_DONE = 3
NLM_F_REQUEST, NLM_F_ACK, NLM_F_DUMP = 0x1, 0x4, 0x300
GENL_ID_CTRL, CTRL_CMD_GETFAMILY, CTRL_ATTR_FAMILY_ID, CTRL_ATTR_FAMILY_NAME = 0x10, 3, 1, 2
# include/uapi/irqpilot_cq.h
CMD_ATTACH, CMD_DETACH, CMD_LIST, CMD_EVENT = 1, 2, 3, 4
A_DISK, A_MAJOR, A_MINOR, A_HWQ, A_FLAGS = 2, 3, 4, 5, 17
VERSION = 2

seq = 0


def attr(t, data):
    n = 4 + len(data)
    return struct.pack("=HH", n, t) + data + b"\0" * ((4 - n % 4) % 4)


def u32(t, v):
    return attr(t, struct.pack("=I", v))


def request(sk, family, cmd, attrs=b"", version=VERSION, reserved=0, flags=NLM_F_ACK):
    """Sends one message; returns the errno of its answer (0: ACK or a complete dump)."""
    global seq
    seq += 1
    body = struct.pack("=BBH", cmd, version, reserved) + attrs
    sk.send(struct.pack("=IHHII", 16 + len(body), family, NLM_F_REQUEST | flags, seq, 0) + body)
    while True:
        buf = sk.recv(65536)
        off = 0
        while off + 16 <= len(buf):
            n, typ, _, s, _ = struct.unpack_from("=IHHII", buf, off)
            if s == seq:
                if typ == NLMSG_ERROR:
                    return -struct.unpack_from("=i", buf, off + 16)[0]
                if typ == NLMSG_DONE:
                    # A dump that failed on its first call ends with the errno here.
                    return -struct.unpack_from("=i", buf, off + 16)[0] if n >= 20 else 0
            off += (n + 3) & ~3


def family_id(sk):
    global seq
    seq += 1
    body = struct.pack("=BBH", CTRL_CMD_GETFAMILY, 1, 0) + attr(CTRL_ATTR_FAMILY_NAME, b"irqpilot_cq\0")
    sk.send(struct.pack("=IHHII", 16 + len(body), GENL_ID_CTRL, NLM_F_REQUEST, seq, 0) + body)
    buf = sk.recv(65536)
    off = 20
    while off + 4 <= len(buf):
        n, t = struct.unpack_from("=HH", buf, off)
        if t == CTRL_ATTR_FAMILY_ID:
            return struct.unpack_from("=H", buf, off + 4)[0]
        off += (n + 3) & ~3
    sys.exit("no irqpilot_cq family")


def unread_dump(seconds):
    sk = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
    sk.bind((0, 0))
    fam = family_id(sk)
    body = struct.pack("=BBH", CMD_LIST, VERSION, 0)
    sk.send(struct.pack("=IHHII", 16 + len(body), fam, NLM_F_REQUEST | NLM_F_DUMP, 1, 0) + body)
    print("sent", flush=True)
    time.sleep(seconds)
    return 0


def main():
    if sys.argv[1] == "unread-dump":
        return unread_dump(float(sys.argv[2]))
    major, minor, name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].encode()
    sk = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_GENERIC)
    sk.bind((0, 0))
    fam = family_id(sk)
    dev = u32(A_MAJOR, major) + u32(A_MINOR, minor)
    cases = [
        ("family version 1", CMD_ATTACH, dev, {"version": 1}, errno.EPROTO),
        ("reserved header bytes set", CMD_ATTACH, dev, {"reserved": 1}, errno.EINVAL),
        ("MAJOR of 2 bytes", CMD_ATTACH, attr(A_MAJOR, struct.pack("=H", major)) + u32(A_MINOR, minor),
         {}, errno.EINVAL),
        ("MAJOR of 8 bytes", CMD_ATTACH, attr(A_MAJOR, struct.pack("=Q", major)) + u32(A_MINOR, minor),
         {}, errno.EINVAL),
        ("MINOR missing", CMD_ATTACH, u32(A_MAJOR, major), {}, errno.EINVAL),
        ("an attribute ATTACH does not take (HWQ)", CMD_ATTACH, dev + u32(A_HWQ, 0), {}, errno.EINVAL),
        ("an attribute past the last", CMD_ATTACH, dev + u32(99, 0), {}, errno.EINVAL),
        ("DISK without its NUL", CMD_ATTACH, dev + attr(A_DISK, name), {}, errno.EINVAL),
        ("DISK of 40 characters", CMD_ATTACH, dev + attr(A_DISK, b"n" * 40 + b"\0"), {}, errno.EINVAL),
        ("DISK naming another disk", CMD_ATTACH, dev + attr(A_DISK, b"x" + name + b"\0"), {}, errno.EINVAL),
        ("unknown FLAGS bit", CMD_ATTACH, dev + u32(A_FLAGS, 1 << 1), {}, errno.EINVAL),
        ("FLAGS all ones", CMD_ATTACH, dev + u32(A_FLAGS, 0xffffffff), {}, errno.EINVAL),
        ("MAJOR past 12 bits", CMD_ATTACH, u32(A_MAJOR, major | 1 << 12) + u32(A_MINOR, minor), {},
         errno.EINVAL),
        ("MINOR past 20 bits", CMD_ATTACH, u32(A_MAJOR, major) + u32(A_MINOR, minor | 1 << 20), {},
         errno.EINVAL),
        ("DETACH of a disk not attached", CMD_DETACH, dev, {}, errno.ENOENT),
        ("EVENT sent to the kernel", CMD_EVENT, b"", {}, errno.EOPNOTSUPP),
        ("command 200", 200, b"", {}, errno.EOPNOTSUPP),
        ("LIST dump with an unknown attribute", CMD_LIST, u32(99, 0), {"flags": NLM_F_DUMP}, errno.EINVAL),
        ("LIST dump of version 1", CMD_LIST, b"", {"version": 1, "flags": NLM_F_DUMP}, errno.EPROTO),
        ("LIST dump", CMD_LIST, b"", {"flags": NLM_F_DUMP}, 0),
    ]
    bad = 0
    for what, cmd, attrs, kw, want in cases:
        got = request(sk, fam, cmd, attrs, **kw)
        ok = got == want
        bad += not ok
        print("%s %s: %s%s" % ("ok  " if ok else "FAIL", what, errno.errorcode.get(got, got) if got else "0",
                               "" if ok else " (want %s)" % errno.errorcode.get(want, want)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
