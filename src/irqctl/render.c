// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * irqctl's text view of the daemon's replies. The daemon answers with data
 * only; what a person reads is made here, so the daemon keeps no second
 * renderer of its model and --json is exactly what the daemon said.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irqctl.h"
#include "irqpilot/macro.h"
#include "irqpilot/root.h"

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;

	return o && json_object_object_get_ex(o, key, &v) ? v : NULL;
}

/* @o when it is an object, else NULL: json_object_object_foreach() reads
 * the members of whatever it is given as an object's, and a reply whose
 * "by_cpu" was a number or null crashed irqctl (SIGSEGV). */
static json_object *obj(json_object *o)
{
	return json_object_is_type(o, json_type_object) ? o : NULL;
}

static bool has(json_object *o, const char *key)
{
	return o && json_object_object_get_ex(o, key, NULL);
}

/* A string member, or @def when it is missing or null. */
static const char *str(json_object *o, const char *key, const char *def)
{
	json_object *v = get(o, key);

	return v ? json_object_get_string(v) : def;
}

static double num(json_object *o, const char *key, double def)
{
	json_object *v = get(o, key);

	return json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int) ?
		       json_object_get_double(v) :
		       def;
}

static long long inum(json_object *o, const char *key, long long def)
{
	json_object *v = get(o, key);

	return json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double) ?
		       (long long)json_object_get_int64(v) :
		       def;
}

static bool flag(json_object *o, const char *key)
{
	return json_object_get_boolean(get(o, key));
}

static size_t len(json_object *a)
{
	return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

static json_object *at(json_object *a, size_t i)
{
	return json_object_array_get_idx(a, i);
}

/* The strings of JSON array @a into @v (at most @max): ip_join()'s list. */
static size_t strings(json_object *a, const char **v, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < len(a) && n < max; i++) {
		const char *str = json_object_get_string(at(a, i));

		v[n++] = str ? str : "";
	}
	return n;
}

/* JSON array @a's strings joined as ip_join() joins them, or @empty. */
static const char *listed(json_object *a, char *buf, size_t size, const char *empty, const char *sep,
			  const char *last, const char *prefix)
{
	const char *v[64];
	size_t n = strings(a, v, ARRAY_SIZE(v));

	if (!n)
		snprintf(buf, size, "%s", empty);
	else
		ip_join(buf, size, v, n, sep, last, prefix);
	return buf;
}

/* A list of strings joined by commas, or @empty. */
static const char *joined(json_object *a, char *buf, size_t size, const char *empty)
{
	return listed(a, buf, size, empty, ",", ",", "");
}

/* Paths below the daemon's root as "/a, /b or /c", or @empty. */
static const char *either(json_object *a, char *buf, size_t size, const char *empty)
{
	return listed(a, buf, size, empty, ", ", " or ", "/");
}

/* "fifo" as the kernel's tools write it, "FIFO/50". */
static const char *sched(json_object *policy, json_object *prio, char *buf, size_t size)
{
	char up[16] = "?";
	const char *p = policy ? json_object_get_string(policy) : NULL;

	for (size_t i = 0; p && p[i] && i + 1 < sizeof(up); i++) {
		up[i] = (char)toupper((unsigned char)p[i]);
		up[i + 1] = '\0';
	}
	snprintf(buf, size, "%s/%lld", up, prio ? (long long)json_object_get_int64(prio) : 0LL);
	return buf;
}

/* Any value as one line: strings bare, the rest as JSON. */
static const char *plain(json_object *v)
{
	if (!v)
		return "null";
	if (json_object_is_type(v, json_type_string))
		return json_object_get_string(v);
	return json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* ---- status ------------------------------------------------------------ */

static void render_status(FILE *f, json_object *d)
{
	json_object *w = get(d, "warnings");
	/* what ends an idle wait: "perf", "still", "watch" or "timer"; "" when busy */
	const char *wake = flag(d, "idle") ? str(d, "idle_wakeup", "timer") : "";
	char files[256];

	fprintf(f, "irqpilotd %s (pid %lld), root %s%s\n", str(d, "version", "?"), inum(d, "pid", 0),
		str(d, "root", "?"), flag(d, "dry_run") ? ", dry run: nothing is written" : "");
	fprintf(f, "policy file: %s\n", str(d, "config", "?"));
	if (!strcmp(wake, "perf"))
		fprintf(f, "cycles: %lld, none until I/O (no storage I/O: the first bio wakes irqpilotd)\n",
			inum(d, "cycles", 0));
	else if (!strcmp(wake, "still"))
		fprintf(f,
			"cycles: %lld, none while the tree is still (no storage I/O: a change to the tree's /proc/diskstats or CPU lists starts one; to its %s, a full cycle %.0f s after the last)\n",
			inum(d, "cycles", 0), either(get(d, "still_until_written"), files, sizeof(files), "counts"),
			num(d, "cycle_interval_s", 60));
	else if (!strcmp(wake, "watch"))
		fprintf(f,
			"cycles: %lld, every %.1f s (no storage I/O: a change to the tree's /proc/diskstats or CPU lists starts one)\n",
			inum(d, "cycles", 0), num(d, "cycle_interval_s", num(d, "interval_s", 0)));
	else
		fprintf(f, "cycles: %lld, every %.1f s%s\n", inum(d, "cycles", 0),
			num(d, "cycle_interval_s", num(d, "interval_s", 0)),
			flag(d, "idle")	     ? " (no storage I/O)"
			: flag(d, "holding") ? " (placement held: a bio from another CPU starts one at once)"
					     : "");
	fprintf(f, "devices: %lld; vectors steered: %lld; managed by the kernel: %lld\n",
		inum(d, "devices", 0), inum(d, "vectors_steered", 0), inum(d, "vectors_managed", 0));
	if (get(d, "last_move"))
		fprintf(f, "moves: %lld; last: %s, in cycle %lld\n", inum(d, "moves", 0),
			str(d, "last_move", ""), inum(d, "last_move_cycle", 0));
	else
		fprintf(f, "moves: %lld; last: none\n", inum(d, "moves", 0));
	fprintf(f, "submissions counted by: %s\n", str(d, "submit_source", "?"));
	if (get(d, "perf_groups_read"))
		fprintf(f, "perf counters last cycle: read on %lld CPUs, kept on %lld (no bio there since)\n",
			inum(d, "perf_groups_read", 0), inum(d, "perf_groups_kept", 0));
	if (get(d, "capture"))
		fprintf(f, "capturing into %s: %lld samples to go\n", str(d, "capture", ""),
			inum(d, "capture_samples_left", 0));
	for (size_t i = 0; i < len(w); i++)
		fprintf(f, "warning: %s\n", json_object_get_string(at(w, i)));
}

/* ---- show ------------------------------------------------------------- */

static void show_irqs(FILE *f, json_object *d)
{
	json_object *irqs = get(d, "irqs");
	char devs[256];

	fprintf(f, "%-5s %-24s %-14s %-12s %-9s %10s  %s\n", "IRQ", "NAME", "DEVICES", "AFFINITY",
		"EFFECTIVE", "RATE/s", "MANAGED");
	for (size_t i = 0; i < len(irqs); i++) {
		json_object *q = at(irqs, i);

		fprintf(f, "%-5lld %-24.24s %-14.14s %-12s %-9s %10.0f  %s\n", inum(q, "irq", -1),
			str(q, "name", ""), joined(get(q, "devices"), devs, sizeof(devs), "-"),
			str(q, "affinity", "?"), str(q, "effective", "-"), num(q, "rate", 0),
			flag(q, "managed") ? "yes" : "no");
	}
}

static json_object *domain(json_object *d, long long id)
{
	json_object *doms = get(d, "domains");

	for (size_t i = 0; i < len(doms); i++)
		if (inum(at(doms, i), "id", -1) == id)
			return at(doms, i);
	return NULL;
}

static void show_cpus(FILE *f, json_object *d)
{
	json_object *cpus = get(get(d, "cpus"), "cpu");

	fprintf(f, "%-4s %-7s %-6s %-11s %-8s %-8s %10s %10s\n", "CPU", "ONLINE", "DOMAIN", "CLASS",
		"CAPACITY", "ISOLATED", "IRQ/s", "BLOCK/s");
	for (size_t i = 0; i < len(cpus); i++) {
		json_object *c = at(cpus, i);
		long long dom = inum(c, "domain", -1);

		fprintf(f, "%-4lld %-7s %-6lld %-11s %-8lld %-8s %10.0f %10.0f\n", inum(c, "cpu", -1),
			flag(c, "online") ? "yes" : "no", dom, str(domain(d, dom), "class", "-"),
			inum(c, "capacity", 0), flag(c, "isolated") ? "yes" : "no", num(c, "irq_rate", 0),
			num(c, "block_softirq_rate", 0));
	}
}

static void show_domains(FILE *f, json_object *d)
{
	json_object *doms = get(d, "domains");

	fprintf(f, "%-3s %-11s %-16s %-8s %s\n", "ID", "CLASS", "CPUS", "CAPACITY", "CAPACITY FROM");
	for (size_t i = 0; i < len(doms); i++) {
		json_object *m = at(doms, i);

		fprintf(f, "%-3lld %-11s %-16s %-8lld %s\n", inum(m, "id", -1), str(m, "class", "-"),
			str(m, "cpus", ""), inum(m, "capacity", 0),
			str(get(d, "cpus"), "capacity_source", "?"));
	}
}

/* The domain that submits most of a device's I/O, from its per-CPU rates
 * and the CPUs' domains; -1 when none. */
static long long busiest_domain(json_object *d, json_object *by_cpu, double *share)
{
	json_object *cpus = get(get(d, "cpus"), "cpu");
	size_t n = len(get(d, "domains"));
	double *byd = calloc(n ? n : 1, sizeof(double)), total = 0;
	long long best = -1;

	if (!byd || !obj(by_cpu)) {
		free(byd);
		return -1;
	}
	json_object_object_foreach(by_cpu, key, val) {
		long c = strtol(key, NULL, 10);

		total += json_object_get_double(val);
		for (size_t i = 0; i < len(cpus); i++) {
			long long dom = inum(at(cpus, i), "domain", -1);

			if (inum(at(cpus, i), "cpu", -1) == c && dom >= 0 && (size_t)dom < n)
				byd[dom] += json_object_get_double(val);
		}
	}
	for (size_t k = 0; k < n; k++)
		if (byd[k] > 0 && (best < 0 || byd[k] > byd[best]))
			best = (long long)k;
	*share = best >= 0 && total > 0 ? byd[best] / total : 0;
	free(byd);
	return best;
}

static void show_devices(FILE *f, json_object *d)
{
	json_object *devs = get(d, "devices");

	fprintf(f, "%-10s %-14s %-14s %-6s %-8s %-3s %12s  %s\n", "DEVICE", "DRIVER", "BUS ID", "QUEUES",
		"VECTORS", "RQA", "SUBMIT/s", "SUBMITTED FROM");
	for (size_t i = 0; i < len(devs); i++) {
		json_object *b = at(devs, i), *sub = get(b, "submit");
		double share = 0;
		long long best = busiest_domain(d, get(sub, "by_cpu"), &share);

		fprintf(f, "%-10s %-14.14s %-14.14s %-6zu %-8zu %-3lld %12.0f  ", str(b, "name", ""),
			str(b, "driver", ""), str(b, "bus_id", ""), len(get(b, "queues")),
			len(get(b, "vectors")), inum(b, "rq_affinity", 0), num(sub, "total", 0));
		if (best >= 0)
			fprintf(f, "%s domain %s (%.0f%%, %s)\n", str(domain(d, best), "class", "?"),
				str(domain(d, best), "cpus", "?"), 100 * share, str(sub, "source", "?"));
		else
			fprintf(f, "- (%s)\n", str(sub, "source", "?"));
	}
}

static void show_threads(FILE *f, json_object *d)
{
	json_object *th = get(d, "irq_threads"), *cq = get(d, "completion_threads");
	char sch[32], per[24];

	fprintf(f, "%-7s %-28s %-5s %-12s %-9s %6s %10s %9s\n", "PID", "COMM", "IRQ", "CPUS", "SCHED",
		"CPU%", "WAKEUPS/s", "PER IRQ");
	for (size_t i = 0; i < len(th); i++) {
		json_object *t = at(th, i);

		if (get(t, "wakeups_per_irq"))
			snprintf(per, sizeof(per), "%.2f", num(t, "wakeups_per_irq", 0));
		else
			snprintf(per, sizeof(per), "-");
		fprintf(f, "%-7lld %-28.28s %-5lld %-12s %-9s %6.1f %10.0f %9s\n", inum(t, "pid", 0),
			str(t, "comm", ""), inum(t, "irq", -1), str(t, "allowed", ""),
			sched(get(t, "policy"), get(t, "priority"), sch, sizeof(sch)), num(t, "cpu_pct", 0),
			num(t, "wakeups_per_s", 0), per);
	}
	if (has(d, "cq_loaded") && !flag(d, "cq_loaded")) {
		fprintf(f, "\ncompletion threads: none (irqpilot_cq is not loaded)\n");
		return;
	}
	fprintf(f, "\n%-7s %-10s %-5s %-12s %-9s %13s %11s %12s\n", "PID", "DEVICE", "QUEUE", "CPUS",
		"SCHED", "COMPLETIONS/s", "WAKEUPS/CPL", "MAX WAIT us");
	if (!len(cq))
		fprintf(f, "(no device attached to irqpilot_cq)\n");
	for (size_t i = 0; i < len(cq); i++) {
		json_object *t = at(cq, i);
		char rate[24];

		if (get(t, "completions_per_s"))
			snprintf(rate, sizeof(rate), "%.0f", num(t, "completions_per_s", 0));
		else
			snprintf(rate, sizeof(rate), "-");
		if (get(t, "wakeups_per_completion"))
			snprintf(per, sizeof(per), "%.2f", num(t, "wakeups_per_completion", 0));
		else
			snprintf(per, sizeof(per), "-");
		if (get(t, "policy"))
			sched(get(t, "policy"), get(t, "priority"), sch, sizeof(sch));
		else
			snprintf(sch, sizeof(sch), "?");
		fprintf(f, "%-7lld %-10s %-5lld %-12s %-9s %13s %11s %12.0f\n", inum(t, "pid", 0),
			str(t, "device", ""), inum(t, "queue", 0), str(t, "cpus", ""), sch, rate, per,
			num(t, "max_wait_us", 0));
	}
}

/* ---- explain ----------------------------------------------------------- */

/* Members the layout below shows; any other (a reason "code", its numbers)
 * is printed as "  key: value", so a reply that gains fields shows them. */
static bool known(const char *key, const char *const *keys)
{
	for (; *keys; keys++)
		if (strcmp(key, *keys) == 0)
			return true;
	return false;
}

static void rest(FILE *f, json_object *o, const char *const *keys, const char *indent)
{
	if (!obj(o))
		return;
	json_object_object_foreach(o, key, val) {
		if (!known(key, keys))
			fprintf(f, "%s%s: %s\n", indent, key, plain(val));
	}
}

/* A decision is a record: its line, then its code and numbers. */
static void decision(FILE *f, json_object *v, bool storage)
{
	if (!v) {
		fprintf(f, "  decision: %s\n", storage ? "none yet" : "not a storage vector: untouched");
		return;
	}
	if (!json_object_is_type(v, json_type_object)) {
		fprintf(f, "  decision: %s\n", plain(v));
		return;
	}
	fprintf(f, "  decision: %s", str(v, "text", str(v, "reason", str(v, "code", "?"))));
	{
		bool first = true;

		json_object_object_foreach(v, key, val) {
			/* the text says the reason in full; a bare reason is the heading */
			if (!strcmp(key, "text") || !strcmp(key, "reason"))
				continue;
			fprintf(f, "%s%s=%s", first ? " (" : ", ", key, plain(val));
			first = false;
		}
		if (!first)
			fputc(')', f);
	}
	fputc('\n', f);
}

static void explain_irq(FILE *f, json_object *q)
{
	static const char *const keys[] = { "irq", "name", "chip", "hwirq", "trigger", "devices", "affinity",
					    "effective", "managed_reason", "rate", "busiest_cpu",
					    "busiest_share", "submit_rate", "submit_domains", "locality",
					    "threads", "last_move_ago_s", "last_move_from", "pinned",
					    "decision", "storage", NULL };
	json_object *doms = get(q, "submit_domains"), *th = get(q, "threads");
	char buf[256];

	fprintf(f, "IRQ %lld %s", inum(q, "irq", -1),
		str(q, "name", "")[0] ? str(q, "name", "") : flag(q, "unnamed_action") ? "(unnamed action)" : "(no action)");
	if (str(q, "chip", "")[0])
		fprintf(f, " (%s %s%s%s)", str(q, "chip", ""), str(q, "hwirq", ""),
			str(q, "trigger", "")[0] ? " " : "", str(q, "trigger", ""));
	fputc('\n', f);
	fprintf(f, "  devices: %s\n", joined(get(q, "devices"), buf, sizeof(buf), "-"));
	fprintf(f, "  affinity %s, effective %s\n", str(q, "affinity", "unknown"), str(q, "effective", "unknown"));
	if (get(q, "managed_reason"))
		fprintf(f, "  managed by the kernel: %s\n", str(q, "managed_reason", ""));
	if (has(q, "rate")) {
		fprintf(f, "  interrupts: %.0f/s", num(q, "rate", 0));
		if (get(q, "busiest_cpu"))
			fprintf(f, ", mostly on CPU %lld (%.0f%%)", inum(q, "busiest_cpu", -1),
				100 * num(q, "busiest_share", 0));
		fputc('\n', f);
	}
	if (num(q, "submit_rate", 0) > 0) {
		fprintf(f, "  submissions it completes: %.0f/s\n", num(q, "submit_rate", 0));
		for (size_t k = 0; k < len(doms); k++)
			fprintf(f, "    %s domain %s: %.0f%%\n", str(at(doms, k), "class", "?"),
				str(at(doms, k), "cpus", "?"), 100 * num(at(doms, k), "share", 0));
	} else if (len(get(q, "devices"))) {
		fprintf(f, "  submissions it completes: none seen\n");
	}
	if (get(q, "locality"))
		fprintf(f, "  completion locality: %.0f%% of its I/O is completed in the submitter's domain\n",
			100 * num(q, "locality", 0));
	for (size_t t = 0; t < len(th); t++) {
		json_object *x = at(th, t);
		char sch[32];

		fprintf(f, "  thread %s (pid %lld): cpus %s, %s, %.1f wakeups per interrupt\n", str(x, "comm", ""),
			inum(x, "pid", 0), str(x, "cpus", ""), sched(get(x, "policy"), get(x, "priority"), sch, sizeof(sch)),
			num(x, "wakeups_per_irq", 0));
	}
	if (get(q, "last_move_ago_s"))
		fprintf(f, "  last moved by irqpilotd %.1f s ago, from %s\n", num(q, "last_move_ago_s", 0),
			str(q, "last_move_from", "?"));
	if (get(q, "pinned"))
		fprintf(f, "  pinned at run time to %s (irqctl unpin %lld to release)\n", str(q, "pinned", ""),
			inum(q, "irq", -1));
	rest(f, q, keys, "  ");
	decision(f, get(q, "decision"), flag(q, "storage"));
}

static void render_explain(FILE *f, json_object *d)
{
	static const char *const dev_keys[] = { "name", "driver", "bus_id", "rq_affinity", "queues",
						"submit_source", "discovery", "warning", "irqs", NULL };
	static const char *const top_keys[] = { "devices", "irqs", NULL };
	json_object *devs = get(d, "devices"), *irqs = get(d, "irqs");

	for (size_t i = 0; i < len(devs); i++) {
		json_object *b = at(devs, i), *v = get(b, "irqs");
		long long nq = inum(b, "queues", 0);

		fprintf(f, "%s: %s on %s, rq_affinity %lld, %lld hw queue%s, submissions counted by %s\n",
			str(b, "name", ""), str(b, "driver", ""), str(b, "bus_id", ""), inum(b, "rq_affinity", 0),
			nq, nq == 1 ? "" : "s", str(b, "submit_source", "?"));
		fprintf(f, "  %s%s\n", flag(b, "warning") ? "warning: " : "", str(b, "discovery", ""));
		rest(f, b, dev_keys, "  ");
		for (size_t k = 0; k < len(v); k++)
			explain_irq(f, at(v, k));
	}
	for (size_t k = 0; k < len(irqs); k++)
		explain_irq(f, at(irqs, k));
	rest(f, d, top_keys, "");
}

/* ---- top --------------------------------------------------------------- */

static void render_top(FILE *f, json_object *d)
{
	json_object *v = get(d, "vectors");

	fprintf(f, "%-5s %-22s %10s %-4s %-18s %9s %8s %8s\n", "IRQ", "NAME", "RATE/s", "CPU",
		"SUBMITTER DOMAIN", "LOCALITY", "THR CPU%", "WAKE/IRQ");
	for (size_t i = 0; i < len(v); i++) {
		json_object *q = at(v, i);
		char dom[64] = "-", loc[16] = "-", tcpu[16] = "-", wake[16] = "-";

		if (get(q, "submitter_domain"))
			snprintf(dom, sizeof(dom), "%s %s", str(q, "submitter_class", "?"),
				 str(q, "submitter_domain", ""));
		if (get(q, "locality"))
			snprintf(loc, sizeof(loc), "%.0f%%", 100 * num(q, "locality", 0));
		if (has(q, "thread_cpu_pct"))
			snprintf(tcpu, sizeof(tcpu), "%.1f", num(q, "thread_cpu_pct", 0));
		if (get(q, "thread_wakeups_per_irq") && num(q, "thread_wakeups_per_irq", -1) >= 0)
			snprintf(wake, sizeof(wake), "%.2f", num(q, "thread_wakeups_per_irq", 0));
		fprintf(f, "%-5lld %-22.22s %10.0f %-4lld %-18.18s %9s %8s %8s\n", inum(q, "irq", -1),
			str(q, "name", ""), num(q, "rate", 0), inum(q, "cpu", -1), dom, loc, tcpu, wake);
	}
}

/* ---- changes ----------------------------------------------------------- */

static void render_change(FILE *f, enum ip_verb verb, json_object *d)
{
	switch (verb) {
	case IP_VERB_PIN:
	case IP_VERB_UNPIN: {
		json_object *irqs = get(d, "irqs");
		size_t n = irqs && json_object_is_type(irqs, json_type_array) ? json_object_array_length(irqs) : 0;

		/* one line per IRQ: a name may stand for several */
		for (size_t i = 0; i < (n ? n : 1); i++) {
			json_object *q = n ? json_object_array_get_idx(irqs, i) : d;

			if (verb == IP_VERB_PIN)
				fprintf(f, "IRQ %lld pinned to %s until unpinned or restart\n", inum(q, "irq", -1),
					str(d, "cpus", "?"));
			else if (get(q, "restored"))
				fprintf(f, "IRQ %lld unpinned: back to its original affinity %s\n",
					inum(q, "irq", -1), str(q, "restored", "?"));
			else
				fprintf(f, "IRQ %lld unpinned: the policy places it again\n", inum(q, "irq", -1));
		}
		break;
	}
	case IP_VERB_DRY_RUN:
		fputs(flag(d, "dry_run") ? "dry run on: nothing will be written\n"
					 : "dry run off: the plan is applied from the next cycle\n",
		      f);
		break;
	case IP_VERB_RELOAD:
		fprintf(f, "reloaded %s\n", str(d, "config", "?"));
		break;
	case IP_VERB_CAPTURE:
		fprintf(f, "capturing %lld samples into %s, one per cycle\n", inum(d, "samples", 0),
			str(d, "capture", "?"));
		break;
	case IP_VERB_BAN:
	case IP_VERB_UNBAN: {
		const char *b = str(d, "banned", ""), *already = str(d, "already_banned", "");

		fprintf(f, "CPUs %s %s%s%s%s; banned now: %s (kept across reload, until unbanned or restart)\n",
			str(d, "cpus", "?"), verb == IP_VERB_BAN ? "banned" : "unbanned",
			*already ? " (" : "", already, *already ? " already were)" : "", *b ? b : "none");
		break;
	}
	default:
		break;
	}
}

void ctl_render(FILE *f, const struct ip_request *r, json_object *data)
{
	switch (r->verb) {
	case IP_VERB_STATUS:
		render_status(f, data);
		break;
	case IP_VERB_SHOW:
		switch (r->object) {
		case IP_OBJ_IRQS:
			show_irqs(f, data);
			break;
		case IP_OBJ_CPUS:
			show_cpus(f, data);
			break;
		case IP_OBJ_DOMAINS:
			show_domains(f, data);
			break;
		case IP_OBJ_DEVICES:
			show_devices(f, data);
			break;
		case IP_OBJ_THREADS:
			show_threads(f, data);
			break;
		default:
			ctl_print_json(f, data);
			break;
		}
		break;
	case IP_VERB_EXPLAIN:
		render_explain(f, data);
		break;
	case IP_VERB_TOP:
		render_top(f, data);
		break;
	case IP_VERB_METRICS:
		/* report.c's text as the daemon made it, for a scraper or a pipe */
		fputs(str(data, "text", ""), f);
		break;
	default:
		render_change(f, r->verb, data);
		break;
	}
}
