// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The policy file. inih splits "key = value" lines; everything about lines
 * and sections is done here, in the reader that feeds inih, because:
 *  - the handler needs line numbers for "FILE:LINE:" messages, and inih
 *    only passes them when built with INI_HANDLER_LINENO, which Debian's
 *    libinih is not (and cannot be detected from <ini.h>): inih calls the
 *    reader once per line and the handler before the next read, so a
 *    counting reader always knows the handler's line;
 *  - a glob may contain ']' ([device "sd[ab]"]; inih ends a header at the
 *    first one) and be longer than inih's 50-byte section buffer, and a
 *    rule with no keys yet is still a rule, which inih (without
 *    INI_CALL_HANDLER_ON_NEW_SECTION, Debian's libinih 55) never reports:
 *    so section headers are parsed here, inih sees a blank line in their
 *    place, and the handler ignores inih's section argument;
 *  - inih's comment and continuation rules are build options (inline ';'
 *    only, multi-line values on), so the reader strips comments itself and
 *    removes leading blanks, which keeps inih from ever seeing a
 *    continuation line: indented keys are ordinary keys.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <sys/stat.h>
#include <unistd.h>

#include "irqpilot/config.h"
#include "irqpilot/macro.h"

#define CONFIG_MAX_SIZE (1 << 20)

/* ---- enums and their names -------------------------------------------- */

static const char *const log_level_names[] = { "err", "warning", "notice", "info", "debug" };
static const int log_level_values[] = { LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG };
static const struct ip_config_enum log_levels = { log_level_names, log_level_values,
						  ARRAY_SIZE(log_level_names) };

static const char *const granularity_names[] = { [IP_GRAN_CPU] = "cpu",
						 [IP_GRAN_DOMAIN] = "domain" };
static const struct ip_config_enum granularities = { granularity_names, NULL,
						     ARRAY_SIZE(granularity_names) };

static const char *const idle_domain_names[] = { [IP_IDLE_EFFICIENCY] = "efficiency",
						 [IP_IDLE_STAY] = "stay" };
static const struct ip_config_enum idle_domains = { idle_domain_names, NULL,
						    ARRAY_SIZE(idle_domain_names) };

static const char *const completion_names[] = { [IP_COMPLETION_AUTO] = "auto",
						[IP_COMPLETION_YES] = "yes",
						[IP_COMPLETION_NO] = "no" };
static const struct ip_config_enum completions = { completion_names, NULL,
						   ARRAY_SIZE(completion_names) };

/* ENUM values are read and written as int. */
_Static_assert(sizeof(enum ip_granularity) == sizeof(int), "enum size");
_Static_assert(sizeof(enum ip_idle_domain) == sizeof(int), "enum size");
_Static_assert(sizeof(enum ip_completion_threads) == sizeof(int), "enum size");

/* ---- the table ---------------------------------------------------------- */

/* Seconds settings share one range: a day is longer than any sensible
 * dwell or grace period and keeps typos like "3600000" out. */
#define SECONDS_MAX 86400.0
#define RATE_MAX 1e9
#define WAKEUPS_MAX 1e6

#define B(s) IP_SECT_BIT(IP_SECT_##s)
#define RULES (B(DEVICE) | B(IRQ))
#define CFG(field) .base = IP_CONF_BASE_CONFIG, .offset = offsetof(struct ip_config, field)
#define RULE(field) .base = IP_CONF_BASE_RULE, .offset = offsetof(struct ip_rule, field)
#define FLAG(base, field) .has_flag = true, .flag_offset = offsetof(base, field)

static bool check_class(struct ip_config_parser *p, const struct ip_config_key *k,
			const void *val);
static bool check_pin(struct ip_config_parser *p, const struct ip_config_key *k, const void *val);
static bool check_ban(struct ip_config_parser *p, const struct ip_config_key *k, const void *val);

/*
 * In the order of ip_config_dump() and of the "known:" list of an unknown
 * key; sections in the order they are dumped.
 */
static const struct ip_config_key keys[] = {
	{ B(DAEMON), "interval", IP_CONF_NUMBER, .min = 0.1, .max = 3600, .def = "2",
	  CFG(daemon.interval_s), .doc = "sampling period in seconds" },
	{ B(DAEMON), "dry_run", IP_CONF_BOOL, .def = "no", CFG(daemon.dry_run),
	  .doc = "decide and log, write nothing" },
	{ B(DAEMON), "restore_on_exit", IP_CONF_BOOL, .def = "yes", CFG(daemon.restore_on_exit),
	  .doc = "put back the original settings when the daemon stops" },
	{ B(DAEMON), "log_level", IP_CONF_ENUM, .choices = &log_levels, .def = "info",
	  CFG(daemon.log_level), .doc = "least important syslog priority logged" },
	{ B(DAEMON), "coexist", IP_CONF_BOOL, .def = "no", CFG(daemon.coexist),
	  .doc = "start even when irqbalance is active" },
	{ B(DAEMON), "top_wakeups_per_irq", IP_CONF_NUMBER, .min = 0, .max = WAKEUPS_MAX,
	  .def = "10", CFG(daemon.top_wakeups_per_irq),
	  .doc = "warn of an IRQ thread waking more often per interrupt (0 = never)" },
	{ B(DAEMON), "top_thread_cpu", IP_CONF_NUMBER, .min = 0, .max = 100, .def = "20",
	  CFG(daemon.top_thread_cpu),
	  .doc = "warn of an IRQ thread using more percent of a CPU (0 = never)" },
	{ B(DAEMON), "metrics_textfile", IP_CONF_PATH, .optional = true, CFG(daemon.metrics_textfile),
	  .doc = "file the metrics are written to each cycle, for node_exporter's textfile collector" },

	{ B(CONTROL), "admin_group", IP_CONF_GROUP, .optional = true,
	  CFG(control.admin_group), .doc = "group whose members may change the daemon's state" },

	{ B(CPUS), "banned", IP_CONF_CPUS, .allow_empty = true, .def = "", CFG(policy.banned),
	  .doc = "CPUs never given storage interrupts, threads or completions" },
	{ B(CPUS), "performance", IP_CONF_CPUS, CFG(overrides.performance),
	  FLAG(struct ip_config, overrides.have_performance), .optional = true,
	  .check = check_class, .doc = "CPUs of the highest capacity class, overriding detection" },
	{ B(CPUS), "efficiency", IP_CONF_CPUS, CFG(overrides.efficiency),
	  FLAG(struct ip_config, overrides.have_efficiency), .optional = true,
	  .check = check_class, .doc = "CPUs of the lowest capacity class, overriding detection" },

	{ B(POLICY), "granularity", IP_CONF_ENUM, .choices = &granularities, .def = "cpu",
	  CFG(policy.granularity), .doc = "a vector goes to one CPU or the whole domain" },
	{ B(POLICY), "move_threshold", IP_CONF_NUMBER, .min = 1, .max = 100, .scale = 100,
	  .def = "20", CFG(policy.move_threshold),
	  .doc = "percentage points of locality a move must gain" },
	{ B(POLICY), "dwell", IP_CONF_NUMBER, .min = 0, .max = SECONDS_MAX, .def = "10",
	  CFG(policy.dwell_s), .doc = "seconds before a vector moves again" },
	{ B(POLICY), "max_moves", IP_CONF_INT, .min = 1, .max = 1000, .def = "4",
	  CFG(policy.max_moves), .doc = "moves per sampling interval" },
	{ B(POLICY), "min_rate", IP_CONF_NUMBER, .min = 0, .max = RATE_MAX, .def = "200",
	  CFG(policy.min_rate), .doc = "interrupts/s below which no move to higher capacity" },
	{ B(POLICY), "idle_domain", IP_CONF_ENUM, .choices = &idle_domains, .def = "efficiency",
	  CFG(policy.idle_domain), .doc = "where an idle device's vectors go" },
	{ B(POLICY), "idle_grace", IP_CONF_NUMBER, .min = 0, .max = SECONDS_MAX, .def = "30",
	  CFG(policy.idle_grace_s), .doc = "seconds without submissions, or below min_rate, before a device is idle" },
	{ B(POLICY), "return_window", IP_CONF_NUMBER, .min = 0, .max = SECONDS_MAX, .def = "60",
	  CFG(policy.return_window_s),
	  .doc = "seconds in which moving back needs twice the threshold" },
	{ B(POLICY), "window", IP_CONF_INT, .min = 1, .max = 1000, .def = "8",
	  CFG(policy.window), .doc = "cycles the shares a move is judged by are averaged over" },
	{ B(POLICY), "rt_priority", IP_CONF_INT, .min = 0, .max = 99,
	  .note = " (0 leaves the threads' priority alone)", .def = "50", CFG(policy.rt_priority),
	  .doc = "SCHED_FIFO priority of storage IRQ threads" },
	{ B(POLICY), "completion_threads", IP_CONF_ENUM, .choices = &completions, .def = "auto",
	  CFG(policy.completion_threads),
	  .doc = "block completions in irqpilot_cq's per-queue threads" },

	{ RULES, "pin", IP_CONF_CPUS, RULE(pin), FLAG(struct ip_rule, have_pin), .optional = true,
	  .check = check_pin, .doc = "CPUs the matching vectors always go to" },
	{ RULES, "ban", IP_CONF_BOOL, RULE(ban), .optional = true, .check = check_ban,
	  .doc = "never touch the matching vectors or their threads" },
	{ RULES, "rt_priority", IP_CONF_INT, .min = 1, .max = 99, RULE(rt_priority),
	  .optional = true, .doc = "SCHED_FIFO priority of the matching IRQ threads" },
	{ B(DEVICE), "rq_affinity", IP_CONF_INT, .min = 0, .max = 2, RULE(rq_affinity),
	  .optional = true, .doc = "value for the device's queue/rq_affinity" },
	{ B(DEVICE), "completion_threads", IP_CONF_ENUM, .choices = &completions,
	  RULE(completion_threads), .optional = true,
	  .doc = "the [policy] completion_threads for the matching devices" },
};

#define NKEYS ARRAY_SIZE(keys)

const struct ip_config_key *ip_config_keys(size_t *n)
{
	*n = NKEYS;
	return keys;
}

static const char *const sect_names[IP_SECT_MAX] = {
	[IP_SECT_NONE] = "",	     [IP_SECT_DAEMON] = "daemon", [IP_SECT_CONTROL] = "control",
	[IP_SECT_CPUS] = "cpus",     [IP_SECT_POLICY] = "policy", [IP_SECT_DEVICE] = "device",
	[IP_SECT_IRQ] = "irq",
};

const char *ip_config_section_name(enum ip_config_section s)
{
	return s < IP_SECT_MAX ? sect_names[s] : "";
}

/* The entry for @name in section @s, or NULL. */
static const struct ip_config_key *find_key(const char *name, enum ip_config_section s)
{
	for (size_t i = 0; i < NKEYS; i++)
		if ((keys[i].sections & IP_SECT_BIT(s)) && !strcmp(keys[i].key, name))
			return &keys[i];
	return NULL;
}

static struct ip_rule *rule_at(const struct ip_config *c, enum ip_config_section s, int i)
{
	return s == IP_SECT_DEVICE ? &c->policy.dev_rules[i] : &c->policy.irq_rules[i];
}

/* Where key @k of @c lives: in the configuration itself, or in rule @i of
 * section kind @s. */
static void *key_field(const struct ip_config *c, const struct ip_config_key *k,
		       enum ip_config_section s, int i)
{
	char *base = k->base == IP_CONF_BASE_RULE ? (char *)rule_at(c, s, i) : (char *)c;

	return base + k->offset;
}

static bool *key_flag(const struct ip_config_key *k, void *field)
{
	return (bool *)((char *)field - k->offset + k->flag_offset);
}

/* ---- defaults and lifetime ---------------------------------------------- */

static bool parse_value(struct ip_config_parser *p, const struct ip_config_key *k, const char *v,
			void *out);
static void store_value(const struct ip_config_key *k, const void *val, void *field);

union value {
	bool b;
	double d;
	int i;
	ip_cpuset set;
	char group[IP_GROUP_NAME_MAX];
	char path[IP_CONF_PATH_MAX];
};

void ip_config_init(struct ip_config *c)
{
	memset(c, 0, sizeof(*c));
	ip_policy_config_init(&c->policy);
	for (size_t i = 0; i < NKEYS; i++) {
		union value v;

		if (!keys[i].def)
			continue;
		/* A default that does not parse is a bug in the table, which
		 * test_config's test_table_defaults catches. */
		if (!parse_value(NULL, &keys[i], keys[i].def, &v))
			abort();
		store_value(&keys[i], &v, key_field(c, &keys[i], IP_SECT_NONE, 0));
	}
}

void ip_config_free(struct ip_config *c)
{
	ip_policy_config_free(&c->policy);
}

/* ---- the parser ------------------------------------------------------- */

/* Past the real sections: a header that was already reported; its keys
 * are skipped. */
#define SECT_BAD IP_SECT_MAX

struct ip_config_parser {
	const char *name; /* for messages */
	struct ip_config *cfg;

	const char *text; /* the input */
	size_t pos;
	int line;

	int sect; /* enum ip_config_section or SECT_BAD */
	/* The value of the line just read, blanks trimmed: inih's own copy
	 * has lost whatever followed a " ;" even inside double quotes, which
	 * this file's syntax (and the reader) keeps. */
	const char *value;
	size_t value_len;
	/* Where each key was set: in [daemon]/[cpus]/[policy]/[control] for
	 * the whole file (a repeated section is the same section), in the
	 * current [device]/[irq] for rule keys. */
	int lines[NKEYS];
	int rule_index; /* current [device]/[irq] rule; an index as rules get realloc'ed */

	int nr_errors;
	int first_line;
	char first[400];
	bool oom;
};

static void perr(struct ip_config_parser *p, const char *fmt, ...) _printf_(2, 3);

/* Keeps the first error; @p is NULL while ip_config_init() parses the
 * table's defaults. */
static void perr(struct ip_config_parser *p, const char *fmt, ...)
{
	va_list ap;

	if (!p || p->nr_errors++)
		return;
	p->first_line = p->line;
	va_start(ap, fmt);
	vsnprintf(p->first, sizeof(p->first), fmt, ap);
	va_end(ap);
	/* The message quotes the file, which reaches a terminal and the
	 * journal: an ESC or a C1 control (CSI, U+009B) in a key or value
	 * drove the terminal of whoever ran --check-config on it. */
	for (unsigned char *c = (unsigned char *)p->first; *c; c++) {
		if (*c < 0x20 || *c == 0x7f)
			*c = '?';
		else if (c[0] == 0xc2 && c[1] >= 0x80 && c[1] <= 0x9f)
			c[0] = c[1] = '?';
	}
}

static int *key_line(struct ip_config_parser *p, const struct ip_config_key *k)
{
	return &p->lines[k - keys];
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Splits "[KIND NAME]" in place into the kind (@klen long, not ended by a
 * NUL) and the name, blanks trimmed. False, the error said, when the
 * closing ']' is missing. */
static bool split_header(struct ip_config_parser *p, char *s, size_t len, char **kind, size_t *klen,
			 char **name)
{
	char *k, *n, *end = s + len;
	size_t l;

	/* s[0] is '['; the header ends at the last ']' so globs may hold one. */
	if (end[-1] != ']' || len < 2) {
		perr(p, "section header '%.*s' lacks its closing ']'", (int)MIN(len, 64), s);
		return false;
	}
	*--end = '\0';
	k = s + 1;
	while (is_blank(*k))
		k++;
	for (l = 0; k[l] && !is_blank(k[l]) && k[l] != '"'; l++)
		;
	n = k + l;
	while (is_blank(*n))
		n++;
	while (end > n && is_blank(end[-1]))
		*--end = '\0';
	*kind = k;
	*klen = l;
	*name = n;
	return true;
}

static int section_kind(const char *kind, size_t klen)
{
	int k = IP_SECT_NONE;

	for (int i = IP_SECT_DAEMON; i < IP_SECT_MAX; i++)
		if (strlen(sect_names[i]) == klen && !strncmp(kind, sect_names[i], klen))
			k = i;
	return k;
}

/* The name of a [device]/[irq] rule, its quotes dropped; NULL, the error
 * said, when it cannot be one. */
static char *rule_name(struct ip_config_parser *p, int k, char *name)
{
	if (*name == '"') {
		size_t n = strlen(name);

		if (n < 2 || name[n - 1] != '"') {
			perr(p, "[%s %.64s]: the quoted name lacks its closing '\"'", sect_names[k], name);
			return NULL;
		}
		name[n - 1] = '\0';
		name++;
	}
	if (strchr(name, '"')) {
		/* It could not be written back quoted (ip_config_dump). */
		perr(p, "[%s %.64s]: a name cannot contain '\"' except around it", sect_names[k],
		     name);
		return NULL;
	}
	if (!*name) {
		perr(p, "[%s] needs a device name or glob, e.g. [%s \"%s\"]", sect_names[k],
		     sect_names[k], k == IP_SECT_DEVICE ? "nvme*" : "nvme*q0");
		return NULL;
	}
	return name;
}

static void start_rule(struct ip_config_parser *p, int k, const char *name)
{
	int idx;

	if (k == IP_SECT_DEVICE) {
		idx = ip_policy_add_dev_rule(&p->cfg->policy, name) ?
			      p->cfg->policy.nr_dev_rules - 1 :
			      -ENOMEM;
	} else {
		idx = ip_policy_add_irq_rule(&p->cfg->policy, name) ?
			      p->cfg->policy.nr_irq_rules - 1 :
			      -ENOMEM;
	}
	if (idx < 0) {
		p->oom = true;
		return;
	}
	p->rule_index = idx;
	p->sect = k;
}

static void start_section(struct ip_config_parser *p, char *s, size_t len)
{
	char *kind, *name;
	size_t klen;
	int k;

	p->sect = SECT_BAD;
	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].sections & (IP_SECT_BIT(IP_SECT_DEVICE) | IP_SECT_BIT(IP_SECT_IRQ)))
			p->lines[i] = 0;
	if (!split_header(p, s, len, &kind, &klen, &name))
		return;
	k = section_kind(kind, klen);
	if (k == IP_SECT_NONE) {
		perr(p,
		     "unknown section [%.*s] (known: [daemon], [cpus], [policy], [control], [device NAME], "
		     "[irq NAME])",
		     (int)MIN(klen, 64), kind);
		return;
	}
	if (k != IP_SECT_DEVICE && k != IP_SECT_IRQ) {
		if (*name) {
			perr(p, "[%s] takes no name, found '%.64s'", sect_names[k], name);
			return;
		}
		p->sect = k;
		return;
	}
	name = rule_name(p, k, name);
	if (name)
		start_rule(p, k, name);
}

/*
 * inih's ini_reader: hands inih one line at a time, normalized (comments
 * and surrounding blanks removed, section headers replaced by a blank
 * line), and counts lines.
 */
static char *reader(char *str, int num, void *stream)
{
	struct ip_config_parser *p = stream;
	const char *s, *e, *nl;
	char *out;
	bool quoted = false;
	size_t len;

	if (!p->text[p->pos] || p->oom)
		return NULL;
	s = p->text + p->pos;
	nl = strchr(s, '\n');
	e = nl ? nl : s + strlen(s);
	p->pos = (size_t)(e - p->text) + (nl ? 1 : 0);
	p->line++;
	str[0] = '\0';

	if (p->line == 1 && e - s >= 3 && !memcmp(s, "\xef\xbb\xbf", 3))
		s += 3;
	while (s < e && is_blank(*s))
		s++;
	/* A comment starts with '#' or ';' at the start of the line or after a
	 * blank, outside double quotes: "0-3 # big cores" is a comment, a
	 * glob like "dm#1" is not. */
	for (const char *c = s; c < e; c++) {
		if (*c == '"')
			quoted = !quoted;
		else if (!quoted && (*c == '#' || *c == ';') && (c == s || is_blank(c[-1]))) {
			e = c;
			break;
		}
	}
	while (e > s && is_blank(e[-1]))
		e--;
	len = (size_t)(e - s);
	if (!len)
		return str;

	if (*s == '[') {
		out = strndup(s, len);
		if (!out) {
			p->oom = true;
			return str;
		}
		start_section(p, out, len);
		free(out);
		return str;
	}
	const char *eq = memchr(s, '=', len), *colon = memchr(s, ':', len);

	if (!eq || (colon && colon < eq))
		eq = colon;
	if (!eq) {
		perr(p, "expected 'key = value' or '[section]', found '%.*s'", (int)MIN(len, 64), s);
		return str;
	}
	if (eq == s) {
		perr(p, "'%.*s' has no key before '%c'", (int)MIN(len, 64), s, *eq);
		return str;
	}
	if (len + 1 > (size_t)num) {
		perr(p, "line too long (more than %d characters without comments)", num - 1);
		return str;
	}
	memcpy(str, s, len);
	str[len] = '\0';
	p->value = eq + 1;
	while (p->value < e && is_blank(*p->value))
		p->value++;
	p->value_len = (size_t)(e - p->value);
	return str;
}

/* ---- values ----------------------------------------------------------- */

/* Shortest decimal (no exponent) that reads back as v * scale / scale. */
static void fmt_num(char *buf, size_t size, double v, double scale)
{
	for (int prec = 0; prec <= 17; prec++) {
		snprintf(buf, size, "%.*f", prec, v * scale);
		if (strtod(buf, NULL) / scale == v)
			return;
	}
	snprintf(buf, size, "%.17g", v * scale);
}

/* Plain decimals only: no sign, exponent, hex, inf or nan, which strtod
 * would take but no one means in a config file. */
static bool parse_decimal(const char *v, double *out)
{
	const char *c = v;
	bool digits = false;

	while (*c >= '0' && *c <= '9')
		c++, digits = true;
	if (*c == '.') {
		c++;
		while (*c >= '0' && *c <= '9')
			c++, digits = true;
	}
	if (*c || !digits)
		return false;
	*out = strtod(v, NULL);
	return true;
}

static bool parse_number(struct ip_config_parser *p, const struct ip_config_key *k,
			 const char *v, double *out)
{
	char a[32], b[32];
	double x;

	if (parse_decimal(v, &x) && x >= k->min && x <= k->max) {
		*out = x / (k->scale ? k->scale : 1);
		return true;
	}
	fmt_num(a, sizeof(a), k->min, 1);
	fmt_num(b, sizeof(b), k->max, 1);
	perr(p, "%s: '%.64s' is not a number from %s to %s%s", k->key, v, a, b,
	     k->note ? k->note : "");
	return false;
}

static bool parse_int(struct ip_config_parser *p, const struct ip_config_key *k, const char *v,
		      int *out)
{
	long x = 0;
	const char *c;

	for (c = v; *c >= '0' && *c <= '9' && c - v < 9; c++)
		x = x * 10 + (*c - '0');
	if (c > v && !*c && x >= k->min && x <= k->max) {
		*out = (int)x;
		return true;
	}
	perr(p, "%s: '%.64s' is not a whole number from %d to %d%s", k->key, v, (int)k->min,
	     (int)k->max, k->note ? k->note : "");
	return false;
}

static bool parse_bool(struct ip_config_parser *p, const char *key, const char *v, bool *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(v, yes[i])) {
			*out = true;
			return true;
		}
		if (!strcasecmp(v, no[i])) {
			*out = false;
			return true;
		}
	}
	perr(p, "%s: '%.64s' is not a boolean (yes, no, true, false, on, off, 1 or 0)", key, v);
	return false;
}

static int enum_value(const struct ip_config_enum *e, size_t i)
{
	return e->values ? e->values[i] : (int)i;
}

static bool parse_choice(struct ip_config_parser *p, const char *key, const char *v,
			 const struct ip_config_enum *e, int *out)
{
	char list[128] = "";
	size_t used = 0;

	for (size_t i = 0; i < e->n; i++) {
		if (!strcmp(v, e->names[i])) {
			*out = enum_value(e, i);
			return true;
		}
	}
	for (size_t i = 0; i < e->n && used < sizeof(list); i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
					 i ? (i + 1 == e->n ? " or " : ", ") : "", e->names[i]);
	perr(p, "%s: '%.64s' is not %s", key, v, list);
	return false;
}

/* The name of value @x, for dump; a value no name has (set outside this
 * file) is written as the first name, which loads. */
static const char *choice_str(const struct ip_config_enum *e, int x)
{
	for (size_t i = 0; i < e->n; i++)
		if (enum_value(e, i) == x)
			return e->names[i];
	return e->names[0];
}

static bool parse_cpus(struct ip_config_parser *p, const char *key, const char *v, bool allow_empty,
		       ip_cpuset *out)
{
	int r;

	if (!*v && !allow_empty) {
		perr(p, "%s: needs a CPU list such as 0-3,8", key);
		return false;
	}
	r = cpuset_parse_list(out, v);
	if (r == -ERANGE) {
		perr(p, "%s: '%.64s' names a CPU above %d", key, v, IP_CPU_MAX - 1);
		return false;
	}
	if (r < 0) {
		perr(p, "%s: '%.64s' is not a CPU list such as 0-3,8", key, v);
		return false;
	}
	return true;
}

/* A name as useradd(8) takes it (its default NAME_REGEX, plus the upper
 * case some sites use), so a typo is an error here and the group itself is
 * looked up by the daemon, which alone knows the machine's groups. */
static bool parse_group(struct ip_config_parser *p, const char *key, const char *v, char *out, size_t size)
{
	size_t n = strlen(v);
	bool ok = n > 0 && n < size && v[0] != '-';

	for (size_t i = 0; ok && i < n; i++)
		ok = isalnum((unsigned char)v[i]) || v[i] == '_' || v[i] == '-' || v[i] == '.' ||
		     (v[i] == '$' && i == n - 1);
	if (!ok) {
		perr(p, "%s: '%.64s' is not a group name (letters, digits, '_', '-', '.', at most %zu)",
		     key, v, size - 1);
		return false;
	}
	memcpy(out, v, n + 1);
	return true;
}

/* A file the daemon writes: absolute, because the daemon's working
 * directory is not the one the file was written in, and nothing a log line
 * or a rename's temporary name could not carry. */
static bool parse_path(struct ip_config_parser *p, const char *key, const char *v, char *out, size_t size)
{
	size_t n = strlen(v);

	if (v[0] != '/') {
		perr(p, "%s: '%.64s' is not an absolute path (it must start with '/')", key, v);
		return false;
	}
	if (n >= size) {
		perr(p, "%s: the path is longer than %zu bytes", key, size - 1);
		return false;
	}
	if (v[n - 1] == '/') {
		perr(p, "%s: '%.64s' names a directory, not a file", key, v);
		return false;
	}
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f) {
			perr(p, "%s: the path has a control character", key);
			return false;
		}
	memcpy(out, v, n + 1);
	return true;
}

/* Parses @v as key @k into *@out (a union value); false after perr(). */
static bool parse_value(struct ip_config_parser *p, const struct ip_config_key *k, const char *v,
			void *out)
{
	union value *val = out;

	switch (k->type) {
	case IP_CONF_BOOL:
		return parse_bool(p, k->key, v, &val->b);
	case IP_CONF_NUMBER:
		return parse_number(p, k, v, &val->d);
	case IP_CONF_INT:
		return parse_int(p, k, v, &val->i);
	case IP_CONF_ENUM:
		return parse_choice(p, k->key, v, k->choices, &val->i);
	case IP_CONF_CPUS:
		return parse_cpus(p, k->key, v, k->allow_empty, &val->set);
	case IP_CONF_GROUP:
		return parse_group(p, k->key, v, val->group, sizeof(val->group));
	case IP_CONF_PATH:
		return parse_path(p, k->key, v, val->path, sizeof(val->path));
	}
	return false;
}

static void store_value(const struct ip_config_key *k, const void *in, void *field)
{
	const union value *val = in;

	switch (k->type) {
	case IP_CONF_BOOL:
		*(bool *)field = val->b;
		break;
	case IP_CONF_NUMBER:
		*(double *)field = val->d;
		break;
	case IP_CONF_INT:
	case IP_CONF_ENUM:
		*(int *)field = val->i;
		break;
	case IP_CONF_CPUS:
		*(ip_cpuset *)field = val->set;
		break;
	case IP_CONF_GROUP:
		memcpy(field, val->group, sizeof(val->group));
		break;
	case IP_CONF_PATH:
		memcpy(field, val->path, sizeof(val->path));
		break;
	}
	if (k->has_flag)
		*key_flag(k, field) = true;
}

/* ---- what one key cannot say alone -------------------------------------- */

/* performance and efficiency: a CPU has one capacity class. */
static bool check_class(struct ip_config_parser *p, const struct ip_config_key *k,
			const void *in)
{
	const union value *val = in;
	const struct ip_config_key *other =
		find_key(!strcmp(k->key, "performance") ? "efficiency" : "performance", IP_SECT_CPUS);
	const ip_cpuset *o = key_field(p->cfg, other, IP_SECT_CPUS, 0);
	ip_cpuset both;

	if (!*key_line(p, other) || !cpuset_intersects(&val->set, o))
		return true;
	cpuset_and(&both, &val->set, o);
	perr(p, "%s: CPUs %s are also %s (line %d); a CPU has one class", k->key, cpuset_str(&both),
	     other->key, *key_line(p, other));
	return false;
}

/* pin and ban = yes: a banned IRQ is never moved, so a pin beside it is a
 * mistake the user should hear about. */
static bool check_pin(struct ip_config_parser *p, const struct ip_config_key *k, const void *in)
{
	const struct ip_config_key *ban = find_key("ban", p->sect);
	const bool *banned = key_field(p->cfg, ban, p->sect, p->rule_index);

	(void)k, (void)in;
	if (*key_line(p, ban) && *banned) {
		perr(p, "pin: conflicts with 'ban = yes' (line %d): a banned IRQ is never moved",
		     *key_line(p, ban));
		return false;
	}
	return true;
}

static bool check_ban(struct ip_config_parser *p, const struct ip_config_key *k, const void *in)
{
	const union value *val = in;
	const struct ip_config_key *pin = find_key("pin", p->sect);
	const bool *have_pin = key_flag(pin, key_field(p->cfg, pin, p->sect, p->rule_index));

	(void)k;
	if (val->b && *have_pin) {
		perr(p, "ban: conflicts with 'pin' (line %d): a banned IRQ is never moved",
		     *key_line(p, pin));
		return false;
	}
	return true;
}

static void unknown_key(struct ip_config_parser *p, const char *name)
{
	char list[256];
	size_t used = 0;

	if (find_key(name, IP_SECT_DEVICE) && !find_key(name, IP_SECT_IRQ)) {
		perr(p, "%s: only in [device] sections%s", name,
		     p->sect == IP_SECT_IRQ ? ", not [irq]" : "");
		return;
	}
	for (size_t i = 0; i < NKEYS && used < sizeof(list); i++)
		if (keys[i].sections & IP_SECT_BIT(p->sect))
			used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
						 used ? ", " : "", keys[i].key);
	perr(p, "unknown key '%.64s' in [%s] (known: %s)", name, sect_names[p->sect], list);
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct ip_config_parser *p = user;
	const struct ip_config_key *k;
	_cleanup_free_ char *v = NULL;
	union value val;
	size_t vlen;
	void *field;

	/* the reader tracks sections (see the top of this file) and keeps
	 * the value whole */
	(void)section, (void)value;
	if (p->oom || p->sect == SECT_BAD)
		return 1;
	if (p->sect == IP_SECT_NONE) {
		perr(p, "'%.64s' is outside any section; put it under [daemon], [cpus], [policy] or [control]",
		     name);
		return 1;
	}
	k = find_key(name, p->sect);
	if (!k) {
		unknown_key(p, name);
		return 1;
	}
	if (*key_line(p, k)) {
		perr(p, "%s: already set at line %d", name, *key_line(p, k));
		return 1;
	}
	/* Quotes around a value are optional, as around section names. */
	vlen = p->value_len;
	if (vlen >= 2 && p->value[0] == '"' && p->value[vlen - 1] == '"')
		v = strndup(p->value + 1, vlen - 2);
	else
		v = strndup(p->value, vlen);
	if (!v) {
		p->oom = true;
		return 1;
	}
	field = key_field(p->cfg, k, p->sect, p->rule_index);
	if (parse_value(p, k, v, &val) && (!k->check || k->check(p, k, &val)))
		store_value(k, &val, field);
	*key_line(p, k) = p->line;
	return 1;
}

int ip_config_load_string(const char *text, const char *name, struct ip_config *out,
			  struct ip_diag *d)
{
	struct ip_config c;
	struct ip_config_parser p = { .name = name ? name : "<string>", .cfg = &c, .text = text };
	int r;

	ip_config_init(&c);
	r = ini_parse_stream(reader, &p, handler, &p);
	if (p.oom || r == -2) {
		ip_config_free(&c);
		return ip_diag_set(d, -ENOMEM, "%s: out of memory", p.name);
	}
	if (!p.nr_errors && r > 0) {
		/* Should not happen: the reader hands inih only well-formed lines. */
		p.line = r;
		perr(&p, "syntax error");
	}
	if (p.nr_errors) {
		ip_config_free(&c);
		if (p.nr_errors > 1)
			return ip_diag_set(d, -EINVAL, "%s:%d: %s (and %d more error%s)", p.name,
					   p.first_line, p.first, p.nr_errors - 1,
					   p.nr_errors > 2 ? "s" : "");
		return ip_diag_set(d, -EINVAL, "%s:%d: %s", p.name, p.first_line, p.first);
	}
	ip_config_free(out);
	*out = c;
	return 0;
}

static int load_file(const char *path, struct ip_config *out, struct ip_diag *d)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t n;
	const char *nul;
	int fd;

	/* O_NONBLOCK: opening a FIFO put in the file's place would otherwise
	 * wait for a writer, and a reload would hang the whole daemon. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return ip_diag_set(d, -errno, "%s: %s", path, strerror(errno));
	f = fdopen(fd, "re");
	if (!f) {
		close(fd);
		return ip_diag_set(d, -ENOMEM, "%s: out of memory", path);
	}
	if (fstat(fd, &st) < 0)
		return ip_diag_set(d, -errno, "%s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return ip_diag_set(d, -EISDIR, "%s: is a directory", path);
	if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))
		return ip_diag_set(d, -EINVAL, "%s: is a pipe or socket, not a file", path);
	buf = malloc(CONFIG_MAX_SIZE + 1);
	if (!buf)
		return ip_diag_set(d, -ENOMEM, "%s: out of memory", path);
	n = fread(buf, 1, CONFIG_MAX_SIZE + 1, f);
	if (ferror(f))
		return ip_diag_set(d, -EIO, "%s: read error", path);
	if (n > CONFIG_MAX_SIZE)
		return ip_diag_set(d, -EFBIG, "%s: larger than %d bytes; not a policy file?", path,
				   CONFIG_MAX_SIZE);
	buf[n] = '\0';
	nul = memchr(buf, '\0', n);
	if (nul) {
		int line = 1;

		for (const char *c = buf; c < nul; c++)
			line += *c == '\n';
		return ip_diag_set(d, -EINVAL, "%s:%d: contains a NUL byte; not a text file?", path,
				   line);
	}
	return ip_config_load_string(buf, path, out, d);
}

int ip_config_load_file(const char *path, bool explicit, struct ip_config *out,
			struct ip_diag *d)
{
	int r = load_file(path, out, d);

	if (r != -ENOENT || explicit)
		return r;
	ip_config_free(out);
	ip_config_init(out);
	return IP_CONFIG_ABSENT;
}

/* ---- dump and compare --------------------------------------------------- */

static bool is_set(const struct ip_config_key *k, const void *field)
{
	if (!k->optional)
		return true;
	if (k->has_flag)
		return *key_flag(k, (void *)field);
	switch (k->type) {
	case IP_CONF_BOOL:
		return *(const bool *)field;
	case IP_CONF_INT:
	case IP_CONF_ENUM:
		return *(const int *)field != -1;
	case IP_CONF_GROUP:
	case IP_CONF_PATH:
		return *(const char *)field != '\0';
	default:
		return true;
	}
}

static void dump_key(FILE *f, const struct ip_config_key *k, const void *field)
{
	char buf[IP_CPULIST_MAX];

	switch (k->type) {
	case IP_CONF_BOOL:
		fprintf(f, "%s = %s\n", k->key, *(const bool *)field ? "yes" : "no");
		break;
	case IP_CONF_NUMBER:
		fmt_num(buf, sizeof(buf), *(const double *)field, k->scale ? k->scale : 1);
		fprintf(f, "%s = %s\n", k->key, buf);
		break;
	case IP_CONF_INT:
		fprintf(f, "%s = %d\n", k->key, *(const int *)field);
		break;
	case IP_CONF_ENUM:
		fprintf(f, "%s = %s\n", k->key, choice_str(k->choices, *(const int *)field));
		break;
	case IP_CONF_CPUS:
		cpuset_format_list(field, buf, sizeof(buf));
		fprintf(f, "%s = %s\n", k->key, buf);
		break;
	case IP_CONF_GROUP:
		fprintf(f, "%s = %s\n", k->key, (const char *)field);
		break;
	case IP_CONF_PATH:
		/* quoted when it has a blank, which could start a comment */
		fprintf(f, strpbrk(field, " \t") ? "%s = \"%s\"\n" : "%s = %s\n", k->key,
			(const char *)field);
		break;
	}
}

/* The keys of rule @i of section kind @s that are set. */
static void dump_rule(FILE *f, const struct ip_config *c, enum ip_config_section s, int i)
{
	fprintf(f, "\n[%s \"%s\"]\n", sect_names[s], rule_at(c, s, i)->match);
	for (size_t j = 0; j < NKEYS; j++) {
		const void *field;

		if (!(keys[j].sections & IP_SECT_BIT(s)))
			continue;
		field = key_field(c, &keys[j], s, i);
		if (is_set(&keys[j], field))
			dump_key(f, &keys[j], field);
	}
}

int ip_config_dump(const struct ip_config *c, FILE *f)
{
	unsigned printed = 0; /* sections with a header already */

	for (size_t i = 0; i < NKEYS; i++) {
		const struct ip_config_key *k = &keys[i];
		const void *field;

		if (k->base != IP_CONF_BASE_CONFIG)
			continue;
		field = key_field(c, k, IP_SECT_NONE, 0);
		if (!is_set(k, field))
			continue;
		if (!(printed & k->sections)) {
			/* a global key has one section */
			fprintf(f, "%s[%s]\n", printed ? "\n" : "",
				sect_names[__builtin_ctz(k->sections)]);
			printed |= k->sections;
		}
		dump_key(f, k, field);
	}
	for (int i = 0; i < c->policy.nr_dev_rules; i++)
		dump_rule(f, c, IP_SECT_DEVICE, i);
	for (int i = 0; i < c->policy.nr_irq_rules; i++)
		dump_rule(f, c, IP_SECT_IRQ, i);
	return ferror(f) ? -EIO : 0;
}

/* Whether key @k is the same in @fa and @fb: both unset (an unset flagged
 * value is not looked at), or equal. */
static bool key_equal(const struct ip_config_key *k, const void *fa, const void *fb)
{
	bool sa = is_set(k, fa), sb = is_set(k, fb);

	if (sa != sb)
		return false;
	if (!sa && k->has_flag)
		return true;
	switch (k->type) {
	case IP_CONF_BOOL:
		return *(const bool *)fa == *(const bool *)fb;
	case IP_CONF_NUMBER:
		return *(const double *)fa == *(const double *)fb;
	case IP_CONF_INT:
	case IP_CONF_ENUM:
		return *(const int *)fa == *(const int *)fb;
	case IP_CONF_CPUS:
		return cpuset_equal(fa, fb);
	case IP_CONF_GROUP:
	case IP_CONF_PATH:
		return !strcmp(fa, fb);
	}
	return false;
}

static bool rules_equal(const struct ip_config *a, const struct ip_config *b,
			enum ip_config_section s, int n)
{
	for (int i = 0; i < n; i++) {
		if (strcmp(rule_at(a, s, i)->match, rule_at(b, s, i)->match) != 0)
			return false;
		for (size_t j = 0; j < NKEYS; j++) {
			const struct ip_config_key *k = &keys[j];

			if ((k->sections & IP_SECT_BIT(s)) &&
			    !key_equal(k, key_field(a, k, s, i), key_field(b, k, s, i)))
				return false;
		}
	}
	return true;
}

bool ip_config_equal(const struct ip_config *a, const struct ip_config *b)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (keys[i].base == IP_CONF_BASE_CONFIG &&
		    !key_equal(&keys[i], key_field(a, &keys[i], IP_SECT_NONE, 0),
			       key_field(b, &keys[i], IP_SECT_NONE, 0)))
			return false;
	return a->policy.nr_dev_rules == b->policy.nr_dev_rules &&
	       a->policy.nr_irq_rules == b->policy.nr_irq_rules &&
	       rules_equal(a, b, IP_SECT_DEVICE, a->policy.nr_dev_rules) &&
	       rules_equal(a, b, IP_SECT_IRQ, a->policy.nr_irq_rules);
}
