// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Every reason code the daemon journals has its own MESSAGE_ID (report.c's
 * table), the IDs are unique, and systemd/irqpilot.catalog has exactly one
 * entry for each of them and for each daemon event of log.h, in the
 * format journalctl --update-catalog reads, with the fields irqpilot's
 * entries need, quoting only @IRQPILOT_*@ fields an entry of that code
 * carries. tests/check-docs.sh also has journalctl itself compile the file.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/log.h"
#include "irqpilot/report.h"

/*
 * The codes without an ID, each decided in report.c's table: a kept
 * vector's reasons, which only explain, the plan and the JSON say (the
 * daemon journals a kept vector only when it is managed), and details,
 * which the entry of the reason they detail carries as IRQPILOT_DETAIL.
 * A new code is journaled, so it needs an ID, unless it is added here too.
 */
static const enum ip_reason no_id[] = {
	IP_R_BANNED, IP_R_PIN_UNUSABLE, IP_R_PINNED, IP_R_NO_RATES, IP_R_ADMIN_VECTOR,
	IP_R_NO_COUNTS, IP_R_NO_SUBMITTERS, IP_R_NO_HOUSEKEEPING, IP_R_NO_USABLE_CPU,
	IP_R_ALREADY_PLACED, IP_R_BELOW_THRESHOLD, IP_R_TRICKLE, IP_R_IDLE_STAY,
	IP_R_IDLE_EFFICIENT, IP_R_IDLE_GRACE, IP_R_DWELL, IP_R_BUDGET, IP_R_ALTERNATING,
	IP_R_REFUSED,
	/* details */
	IP_R_CQ_NO_SUBMISSIONS, IP_R_CQ_NO_VECTOR_AWAY, IP_R_CQ_BLKMQ_COMPLETES,
	IP_R_CQ_NOT_SLOWER, IP_R_CQ_NEEDED, IP_R_HOLD_TRIAL, IP_R_HOLD_STALL,
};

static bool has_no_id(enum ip_reason r)
{
	for (size_t i = 0; i < sizeof(no_id) / sizeof(no_id[0]); i++)
		if (no_id[i] == r)
			return true;
	return false;
}

static bool is_id128(const char *s)
{
	size_t n = 0;

	for (; s[n]; n++)
		if (!isxdigit((unsigned char)s[n]) || isupper((unsigned char)s[n]))
			return false;
	return n == 32;
}

/* report.c's text is split by families of codes, each ending in default:,
 * so the compiler no longer says when a code has no words: this does. */
static void test_every_code_has_text(void **state)
{
	(void)state;
	for (int r = 1; r < IP_R_COUNT; r++) {
		struct ip_why w = { .code = (enum ip_reason)r };
		char buf[IP_REASON_MAX];

		if (!ip_report_why(buf, sizeof(buf), &w)[0])
			fail_msg("%s has no text in report.c", ip_reason_code((enum ip_reason)r));
	}
}

static void test_every_code_has_a_name_and_an_id(void **state)
{
	(void)state;
	assert_string_equal(ip_reason_code(IP_R_NONE), "none");
	assert_null(ip_reason_message_id(IP_R_NONE));
	for (int r = 1; r < IP_R_COUNT; r++) {
		const char *id = ip_reason_message_id((enum ip_reason)r);

		/* a row out of enum order reads as "unknown" */
		if (strcmp(ip_reason_code((enum ip_reason)r), "unknown") == 0)
			fail_msg("reason %d has no row in report.c's reasons[], or not in enum order", r);
		if (has_no_id((enum ip_reason)r)) {
			if (id)
				fail_msg("%s has ID %s but is listed as never journaled",
					 ip_reason_code((enum ip_reason)r), id);
			continue;
		}
		if (!id)
			fail_msg("%s has no MESSAGE_ID", ip_reason_code((enum ip_reason)r));
		if (!is_id128(id))
			fail_msg("%s: MESSAGE_ID '%s' is not 32 lowercase hex digits",
				 ip_reason_code((enum ip_reason)r), id);
		for (int o = 1; o < r; o++) {
			const char *other = ip_reason_message_id((enum ip_reason)o);

			if (other && strcmp(other, id) == 0)
				fail_msg("%s and %s share MESSAGE_ID %s", ip_reason_code((enum ip_reason)o),
					 ip_reason_code((enum ip_reason)r), id);
		}
	}
	assert_int_equal(ip_reason_code(IP_R_COUNT)[0], 'u'); /* "unknown" */
}

/* ---- the catalog file ---- */

struct entry {
	char id[33];
	char *text; /* header fields and body, as in the file */
	bool subject, defined_by, support;
	int line;
};

struct catalog {
	struct entry e[128];
	int n;
};

static char *append(char *s, const char *line)
{
	size_t a = s ? strlen(s) : 0, b = strlen(line);
	char *t = realloc(s, a + b + 1);

	assert_non_null(t);
	memcpy(t + a, line, b + 1);
	return t;
}

/*
 * The format of systemd's catalog import (src/libsystemd/sd-journal/
 * catalog.c): "-- ID [LANG]" opens an entry; "Key: value" lines until the
 * first empty one are its header; the rest up to the next "-- " line is
 * the body; "#" lines are comments. irqpilot's entries are stricter: no
 * language, a Subject first, Defined-By: irqpilot, a Support line, a body.
 */
static void read_catalog(struct catalog *c)
{
	FILE *f = fopen(TOP_SRCDIR "/systemd/irqpilot.catalog", "re");
	char line[1024];
	struct entry *cur = NULL;
	bool in_header = false, body = false;
	int ln = 0;

	assert_non_null(f);
	memset(c, 0, sizeof(*c));
	while (fgets(line, sizeof(line), f)) {
		size_t len = strlen(line);

		ln++;
		if (len == 0 || line[len - 1] != '\n')
			fail_msg("catalog line %d: too long or no newline", ln);
		if (line[0] == '#')
			continue;
		if (strncmp(line, "-- ", 3) == 0) {
			if (cur && !body)
				fail_msg("catalog entry %s (line %d) has no body", cur->id, cur->line);
			assert_true(c->n < 128);
			cur = &c->e[c->n++];
			cur->line = ln;
			if (len != 3 + 32 + 1)
				fail_msg("catalog line %d: '-- ' and 32 hex digits, nothing else: %s", ln, line);
			memcpy(cur->id, line + 3, 32);
			if (!is_id128(cur->id))
				fail_msg("catalog line %d: '%s' is no 128-bit ID in lowercase hex", ln, cur->id);
			in_header = true;
			body = false;
			continue;
		}
		if (!cur) {
			if (strcmp(line, "\n") != 0)
				fail_msg("catalog line %d: text before the first entry", ln);
			continue;
		}
		cur->text = append(cur->text, line);
		if (in_header) {
			const char *colon = strchr(line, ':');

			if (strcmp(line, "\n") == 0) {
				in_header = false;
				continue;
			}
			if (!colon || colon == line || colon[1] != ' ')
				fail_msg("catalog line %d: a header line is 'Key: value': %s", ln, line);
			if (strncmp(line, "Subject: ", 9) == 0)
				cur->subject = true;
			else if (!cur->subject)
				fail_msg("catalog entry %s: Subject must come first", cur->id);
			if (strcmp(line, "Defined-By: irqpilot\n") == 0)
				cur->defined_by = true;
			if (strncmp(line, "Support: ", 9) == 0)
				cur->support = true;
		} else if (strcmp(line, "\n") != 0) {
			body = true;
		}
	}
	if (cur && !body)
		fail_msg("catalog entry %s (line %d) has no body", cur->id, cur->line);
	fclose(f);
	for (int i = 0; i < c->n; i++) {
		if (!c->e[i].subject || !c->e[i].defined_by || !c->e[i].support)
			fail_msg("catalog entry %s (line %d) lacks Subject, Defined-By: irqpilot or Support",
				 c->e[i].id, c->e[i].line);
		for (int k = 0; k < i; k++)
			if (strcmp(c->e[k].id, c->e[i].id) == 0)
				fail_msg("catalog has %s twice (lines %d and %d)", c->e[i].id, c->e[k].line,
					 c->e[i].line);
	}
}

static void free_catalog(struct catalog *c)
{
	for (int i = 0; i < c->n; i++)
		free(c->e[i].text);
}

static const struct entry *find(const struct catalog *c, const char *id)
{
	for (int i = 0; i < c->n; i++)
		if (strcmp(c->e[i].id, id) == 0)
			return &c->e[i];
	return NULL;
}

/* The daemon's own events: the IP_MESSAGE_* #defines of log.h. */
static int daemon_ids(char ids[][33], int max)
{
	FILE *f = fopen(TOP_SRCDIR "/include/irqpilot/log.h", "re");
	char line[256], name[64], id[64];
	int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "#define IP_MESSAGE_%63s \"%63[^\"]\"", name, id) == 2 && n < max) {
			assert_true(is_id128(id));
			strcpy(ids[n++], id);
		}
	fclose(f);
	return n;
}

static void test_catalog_entries(void **state)
{
	struct catalog *c = calloc(1, sizeof(*c));
	char ids[16][33];
	int nd = daemon_ids(ids, 16);

	(void)state;
	assert_non_null(c);
	read_catalog(c);
	assert_int_equal(nd, 5); /* move, managed, stall, refusal, restore */
	for (int i = 0; i < nd; i++)
		if (!find(c, ids[i]))
			fail_msg("log.h's MESSAGE_ID %s has no catalog entry", ids[i]);
	for (int r = 1; r < IP_R_COUNT; r++) {
		const char *id = ip_reason_message_id((enum ip_reason)r);

		if (id && !find(c, id))
			fail_msg("%s's MESSAGE_ID %s has no catalog entry", ip_reason_code((enum ip_reason)r), id);
	}
	for (int i = 0; i < c->n; i++) {
		bool known = false;

		for (int k = 0; k < nd; k++)
			known |= strcmp(ids[k], c->e[i].id) == 0;
		for (int r = 1; r < IP_R_COUNT; r++) {
			const char *id = ip_reason_message_id((enum ip_reason)r);

			known |= id && strcmp(id, c->e[i].id) == 0;
		}
		if (!known)
			fail_msg("catalog entry %s (line %d) is no reason code's and no daemon event's",
				 c->e[i].id, c->e[i].line);
	}
	free_catalog(c);
	free(c);
}

/* ---- the catalog quotes only fields the entry has ---- */

static void add_fields(char ***seen, size_t *n, const struct ip_journal *jf)
{
	for (int i = 0; i < jf->nr; i++) {
		size_t k = strcspn(jf->fields[i], "=");

		*seen = realloc(*seen, (*n + 1) * sizeof(**seen));
		assert_non_null(*seen);
		(*seen)[(*n)++] = strndup(jf->fields[i], k);
	}
}

/* The details policy.h says a code can hold (none for most). */
static bool may_detail(enum ip_reason code, enum ip_reason d)
{
	switch (code) {
	case IP_R_MANAGED_THREAD: /* a managed vector's thread placed as a vector would be */
		return d == IP_R_PIN || d == IP_R_SUBMITTERS_ELSEWHERE || d == IP_R_HOUSEKEEPING ||
		       d == IP_R_IDLE_RETURN;
	case IP_R_CQ_TRIAL:
	case IP_R_CQ_AUTO_DETACH:
		return d >= IP_R_CQ_NO_SUBMISSIONS && d <= IP_R_CQ_NEEDED;
	case IP_R_NOTE_CQ_HELD:
		return d == IP_R_HOLD_TRIAL || d == IP_R_HOLD_STALL;
	default:
		return d == IP_R_NONE;
	}
}

/* Every field any record of @code can carry, with each detail and source. */
static size_t fields_of(enum ip_reason code, char ***seen)
{
	struct ip_journal *jf = malloc(sizeof(*jf));
	size_t n = 0;

	assert_non_null(jf);
	*seen = NULL;
	for (int d = 0; d < IP_R_COUNT; d++)
		for (int src = IP_FROM_POLICY; src <= IP_FROM_PIN && may_detail(code, (enum ip_reason)d); src++) {
			struct ip_why w = { .code = code, .detail = (enum ip_reason)d,
					    .src = (enum ip_reason_src)src, .irq = 45, .share = 0.8,
					    .trimmed = true, .explained = true };
			struct ip_move m = { .irq = 37, .device = "sda", .why = w };
			struct ip_thread_action t = { .pid = 812, .irq = 37, .completion = true,
						      .device = "sda", .set_affinity = true, .why = w };
			struct ip_kept k = { .irq = 37, .managed = true, .explained = true, .why = w };
			struct ip_rq_action rq = { .device = "sda", .from = 1, .value = 2, .why = w };
			struct ip_cq_action a = { .device = "sda", .attach = true, .why = w };
			struct ip_note no = { .device = "sda", .why = w };

			strcpy(w.rule, "sda");
			strcpy(w.devices, "sda");
			m.why = t.why = k.why = rq.why = a.why = no.why = w;
			ip_report_move_journal(jf, &m);
			add_fields(seen, &n, jf);
			ip_report_thread_journal(jf, &t);
			add_fields(seen, &n, jf);
			ip_report_kept_journal(jf, &k);
			add_fields(seen, &n, jf);
			ip_report_rq_journal(jf, &rq);
			add_fields(seen, &n, jf);
			ip_report_cq_journal(jf, &a);
			add_fields(seen, &n, jf);
			ip_report_note_journal(jf, &no);
			add_fields(seen, &n, jf);
			/* the entry's ID is its code's, whatever the record */
			assert_ptr_equal(jf->message_id, ip_reason_message_id(code));
		}
	free(jf);
	return n;
}

static void test_catalog_quotes_real_fields(void **state)
{
	struct catalog *c = calloc(1, sizeof(*c));
	int checked = 0;

	(void)state;
	assert_non_null(c);
	read_catalog(c);
	for (int r = 1; r < IP_R_COUNT; r++) {
		const char *id = ip_reason_message_id((enum ip_reason)r);
		const struct entry *e = id ? find(c, id) : NULL;
		char **seen, *p;
		size_t n;

		if (!e)
			continue;
		n = fields_of((enum ip_reason)r, &seen);
		for (p = strchr(e->text, '@'); p; p = strchr(p + 1, '@')) {
			char *end = strchr(p + 1, '@');
			bool found = false;

			assert_non_null(end); /* an odd '@' would swallow the text */
			for (size_t i = 0; i < n; i++)
				found |= strlen(seen[i]) == (size_t)(end - p - 1) &&
					 strncmp(seen[i], p + 1, (size_t)(end - p - 1)) == 0;
			if (!found)
				fail_msg("catalog entry of %s quotes @%.*s@, which its entries never carry",
					 ip_reason_code((enum ip_reason)r), (int)(end - p - 1), p + 1);
			checked++;
			p = end;
		}
		for (size_t i = 0; i < n; i++)
			free(seen[i]);
		free(seen);
	}
	assert_true(checked > 50);
	free_catalog(c);
	free(c);
}

/* A record's numbers are fields: what the catalog's texts rest on. */
static void test_numbers_are_fields(void **state)
{
	struct ip_journal *jf = malloc(sizeof(*jf));
	struct ip_move m = { .irq = 37, .device = "sda" };
	struct ip_note n = { .device = "sda" };
	bool share = false, handled = false, reason = false, domain = false;

	(void)state;
	assert_non_null(jf);
	m.why.code = IP_R_SUBMITTERS_ELSEWHERE;
	m.why.share = 0.875;
	m.why.handled = 0;
	cpuset_set(&m.why.domain, 6);
	cpuset_set(&m.why.domain, 7);
	cpuset_set(&m.to, 6);
	ip_report_move_journal(jf, &m);
	assert_string_equal(jf->message_id, IP_MESSAGE_MOVE);
	for (int i = 0; i < jf->nr; i++) {
		share |= strcmp(jf->fields[i], "IRQPILOT_SHARE=0.88") == 0;
		handled |= strcmp(jf->fields[i], "IRQPILOT_HANDLED=0") == 0;
		reason |= strcmp(jf->fields[i], "IRQPILOT_REASON=submitters-elsewhere") == 0;
		domain |= strcmp(jf->fields[i], "IRQPILOT_DOMAIN=6-7") == 0;
	}
	assert_true(share && handled && reason && domain);
	assert_null(jf->fields[jf->nr]);

	/* a detail's numbers come along, named once */
	n.why.code = IP_R_NOTE_CQ_HELD;
	n.why.detail = IP_R_HOLD_STALL;
	n.why.hwq = 3;
	n.why.hold_s = 600;
	ip_report_note_journal(jf, &n);
	share = handled = false;
	for (int i = 0; i < jf->nr; i++) {
		share |= strcmp(jf->fields[i], "IRQPILOT_QUEUE=3") == 0;
		handled |= strcmp(jf->fields[i], "IRQPILOT_HOLD=600") == 0;
	}
	assert_true(share && handled);
	free(jf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_code_has_a_name_and_an_id),
		cmocka_unit_test(test_every_code_has_text),
		cmocka_unit_test(test_catalog_entries),
		cmocka_unit_test(test_catalog_quotes_real_fields),
		cmocka_unit_test(test_numbers_are_fields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
