#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Checks irqpilotd's metrics with the Prometheus client library's parser of
the text exposition format (Debian: python3-prometheus-client), as a user
of them would: prom-check.py FIRST SECOND TEXTFILE, where FIRST and SECOND
are two fetches of "irqctl metrics" some cycles apart and TEXTFILE is the
[daemon] metrics_textfile written after them. TAP lines on stdout; exit 1
when one fails, 77 when the parser is missing."""
import math
import re
import sys

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("1..0 # SKIP python3-prometheus-client is not installed (scripts/deps --test)")
    sys.exit(77)

failed = False


def check(ok, what, detail=""):
    global failed
    print(("ok - " if ok else "not ok - ") + what)
    if not ok:
        failed = True
        if detail:
            print("    " + str(detail).replace("\n", "\n    "))


def parse(path):
    """{family: (type, [(sample name, labels, value)])}, or None."""
    text = open(path, encoding="utf-8").read()
    try:
        fams = {f.name: (f.type, [(s.name, s.labels, s.value) for s in f.samples])
                for f in text_string_to_metric_families(text)}
    except Exception as e:  # the parser raises ValueError and others
        check(False, f"{path} parses as the text format", e)
        return None, text
    check(True, f"{path} parses as the text format")
    return fams, text


def strict(path, text):
    """What the parser forgives but format 0.0.4 and the naming conventions
    ask: a HELP and a TYPE line before each family's samples, one blank-free
    sample line per series, counters named _total, no milliseconds."""
    helped, typed, problems = set(), {}, []
    if not text.endswith("\n"):
        problems.append("does not end with a newline")
    for n, line in enumerate(text.split("\n")[:-1], 1):
        m = re.match(r"# HELP (\S+) \S", line)
        if m:
            helped.add(m.group(1))
            continue
        m = re.match(r"# TYPE (\S+) (counter|gauge)$", line)
        if m:
            typed[m.group(1)] = m.group(2)
            continue
        m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^\n]*\})? (\S+)$', line)
        if not m:
            problems.append(f"line {n} is neither HELP, TYPE nor a sample: {line!r}")
            continue
        name, value = m.group(1), m.group(3)
        if name not in helped or name not in typed:
            problems.append(f"line {n}: {name} has no HELP or TYPE line before it")
        if typed.get(name) == "counter" and not name.endswith("_total"):
            problems.append(f"line {n}: counter {name} is not named *_total")
        if "_ms" in name or "millisec" in name:
            problems.append(f"line {n}: {name} is not in base units")
        if not name.startswith("irqpilot_"):
            problems.append(f"line {n}: {name} is not in the irqpilot_ namespace")
        if value.lower() in ("nan", "+inf", "-inf"):
            problems.append(f"line {n}: {name} is {value}")
    check(not problems, f"{path} follows format 0.0.4 and the naming conventions",
          "\n".join(problems))


def series(fams, family):
    return {tuple(sorted(l.items())): v for (_, l, v) in fams.get(family, (None, []))[1]}


first_path, second_path, textfile_path = sys.argv[1:4]
first, first_text = parse(first_path)
second, second_text = parse(second_path)
textfile, textfile_text = parse(textfile_path)
if first is None or second is None or textfile is None:
    sys.exit(1)
for path, text in ((first_path, first_text), (second_path, second_text), (textfile_path, textfile_text)):
    strict(path, text)

# Every family the issue asks for, with its type and labels.
want = {
    "irqpilot_cycles": ("counter", set()),
    "irqpilot_cycle_duration_seconds": ("gauge", set()),
    "irqpilot_cpu_seconds": ("counter", set()),
    "irqpilot_scans": ("counter", {"kind"}),
    "irqpilot_full_scan_cpu_seconds": ("gauge", set()),
    "irqpilot_full_scan_period_seconds": ("gauge", set()),
    "irqpilot_managed_vectors": ("gauge", set()),
    "irqpilot_moves": ("counter", {"reason"}),
    "irqpilot_apply_errors": ("counter", {"errno"}),
    "irqpilot_completion_locality_ratio": ("gauge", {"device"}),
    "irqpilot_interrupts": ("counter", {"device", "domain"}),
    "irqpilot_submissions": ("counter", {"device", "domain"}),
    "irqpilot_cq_loaded": ("gauge", set()),
    "irqpilot_cq_completions": ("counter", {"device", "queue"}),
    "irqpilot_cq_completions_per_second": ("gauge", {"device", "queue"}),
    "irqpilot_cq_wakeups": ("counter", {"device", "queue"}),
    "irqpilot_cq_stalls": ("counter", {"device", "queue"}),
    "irqpilot_cq_max_wait_seconds": ("gauge", {"device", "queue"}),
}
for name, (typ, labels) in want.items():
    got = second.get(name)
    check(got is not None and got[0] == typ, f"family {name} is there, a {typ}",
          got and got[0])
    bad = [s for s in (got[1] if got else []) if set(s[1]) != labels]
    check(not bad, f"... its samples carry the labels {sorted(labels) or 'none'}", bad)

# What the closed loop over the fixture makes happen.
moves = series(second, "irqpilot_moves")
check(moves.get((("reason", "submitters-elsewhere"),), 0) >= 1,
      "the move to the submitters' domain is counted under its reason code", moves)
ints = series(second, "irqpilot_interrupts")
check(ints.get((("device", "sda"), ("domain", "6-7")), 0) > 0,
      "sda's interrupts handled in the submitters' domain 6-7 are counted", ints)
subs = series(second, "irqpilot_submissions")
check(subs.get((("device", "sda"), ("domain", "6-7")), 0) > 0,
      "sda's submissions from domain 6-7 are counted", subs)
loc = series(second, "irqpilot_completion_locality_ratio")
check(bool(loc) and all(0 <= v <= 1 for v in loc.values()),
      "every completion share is within 0..1", loc)
check(loc.get((("device", "sda"),)) == 1, "sda's completions all land in its submitters' domain once moved", loc)
dur = series(second, "irqpilot_cycle_duration_seconds").get((), -1)
check(0 < dur < 60, f"the cycle duration is in seconds ({dur})")
# Every cycle samples once; the first two read all of /proc/interrupts.
scans = series(second, "irqpilot_scans")
full, fast = scans.get((("kind", "full"),), 0), scans.get((("kind", "fast"),), 0)
cycles = series(second, "irqpilot_cycles").get((), 0)
check(full >= 2 and full + fast >= cycles, f"full and fast samples cover the cycles ({full} + {fast}, {cycles} cycles)")
scan_cpu = series(second, "irqpilot_full_scan_cpu_seconds").get((), -1)
check(0 < scan_cpu < dur + 1, f"the last full scan's CPU time is in seconds ({scan_cpu})")
period = series(second, "irqpilot_full_scan_period_seconds").get((), -1)
check(60 <= period <= 600, f"the full scan's period is a minute to ten ({period} s)")

# Counters never go down between two fetches; the cycles went on.
down = []
for name, (typ, _) in first.items():
    if typ != "counter":
        continue
    later = series(second, name)
    for key, v in series(first, name).items():
        if key not in later or later[key] < v:
            down.append(f"{name}{dict(key)}: {v} -> {later.get(key)}")
check(not down, "no counter goes down or vanishes between two fetches", "\n".join(down))
c1 = series(first, "irqpilot_cycles").get((), 0)
c2 = series(second, "irqpilot_cycles").get((), 0)
check(c2 > c1, f"cycles went on between the fetches ({c1} -> {c2})")

# The textfile is the same text, written after a later cycle.
check({n: f[0] for n, f in textfile.items()} == {n: f[0] for n, f in second.items()},
      "the textfile has the same families and types as irqctl metrics")
ct = series(textfile, "irqpilot_cycles").get((), 0)
check(ct >= c2, f"the textfile is from a cycle no older than the last fetch ({ct} >= {c2})")
sys.exit(1 if failed else 0)
