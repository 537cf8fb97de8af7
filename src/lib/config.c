// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The policy file. inih splits "key = value" lines; everything about lines
 * and sections is done here, in the reader that feeds inih, because:
 *  - the handler needs line numbers for "FILE:LINE:" messages, and inih
 *    only passes them when built with INI_HANDLER_LINENO, which Debian's
 *    libinih is not (and cannot be detected from <ini.h>): inih calls the
 *    reader once per line and the handler before the next read, so a
 *    counting reader always knows the handler's line;
 *  - a glob may contain ']' ([device "sd[ab]"]) and be longer than inih's
 *    50-byte section buffer, so section headers are parsed here and inih
 *    sees a blank line in their place;
 *  - inih's comment and continuation rules are build options (inline ';'
 *    only, multi-line values on), so the reader strips comments itself and
 *    removes leading blanks, which keeps inih from ever seeing a
 *    continuation line: indented keys are ordinary keys.
 */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <ini.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <sys/stat.h>

#include "irqpilot/config.h"
#include "irqpilot/macro.h"

#define CONFIG_MAX_SIZE (1 << 20)

/* ---- defaults and lifetime ---------------------------------------------- */

void ip_config_init(struct ip_config *c)
{
	memset(c, 0, sizeof(*c));
	c->daemon.interval_s = 2;
	c->daemon.dry_run = false;
	c->daemon.restore_on_exit = true;
	c->daemon.log_level = LOG_INFO;
	c->daemon.coexist = false;
	c->daemon.top_wakeups_per_irq = 10;
	c->daemon.top_thread_cpu = 20;
	ip_policy_config_init(&c->policy);
	c->completion_threads = IP_COMPLETION_AUTO;
	c->dev_extra = NULL;
}

void ip_config_free(struct ip_config *c)
{
	if (c->dev_extra)
		for (int i = 0; i < c->policy.nr_dev_rules; i++)
			free(c->dev_extra[i].match);
	free(c->dev_extra);
	c->dev_extra = NULL;
	ip_policy_config_free(&c->policy);
}

/* ---- keys ------------------------------------------------------------- */

enum sect {
	S_NONE = 0, /* before the first header */
	S_DAEMON,
	S_CPUS,
	S_POLICY,
	S_DEVICE,
	S_IRQ,
	S_CONTROL,
	S_BAD, /* a header that was already reported; its keys are skipped */
};

#define M(s) (1u << (s))

enum key {
	K_INTERVAL,
	K_DRY_RUN,
	K_RESTORE_ON_EXIT,
	K_LOG_LEVEL,
	K_COEXIST,
	K_TOP_WAKEUPS,
	K_TOP_THREAD_CPU,
	K_BANNED,
	K_PERFORMANCE,
	K_EFFICIENCY,
	K_GRANULARITY,
	K_MOVE_THRESHOLD,
	K_DWELL,
	K_MAX_MOVES,
	K_MIN_RATE,
	K_IDLE_DOMAIN,
	K_IDLE_GRACE,
	K_RETURN_WINDOW,
	K_RT_PRIORITY,
	K_COMPLETION_THREADS,
	K_PIN,
	K_BAN,
	K_RQ_AFFINITY,
	K_ADMIN_GROUP,
	K_MAX,
};

static const struct {
	const char *name;
	unsigned sections;
} keys[K_MAX] = {
	[K_INTERVAL] = { "interval", M(S_DAEMON) },
	[K_DRY_RUN] = { "dry_run", M(S_DAEMON) },
	[K_RESTORE_ON_EXIT] = { "restore_on_exit", M(S_DAEMON) },
	[K_LOG_LEVEL] = { "log_level", M(S_DAEMON) },
	[K_COEXIST] = { "coexist", M(S_DAEMON) },
	[K_TOP_WAKEUPS] = { "top_wakeups_per_irq", M(S_DAEMON) },
	[K_TOP_THREAD_CPU] = { "top_thread_cpu", M(S_DAEMON) },
	[K_BANNED] = { "banned", M(S_CPUS) },
	[K_PERFORMANCE] = { "performance", M(S_CPUS) },
	[K_EFFICIENCY] = { "efficiency", M(S_CPUS) },
	[K_GRANULARITY] = { "granularity", M(S_POLICY) },
	[K_MOVE_THRESHOLD] = { "move_threshold", M(S_POLICY) },
	[K_DWELL] = { "dwell", M(S_POLICY) },
	[K_MAX_MOVES] = { "max_moves", M(S_POLICY) },
	[K_MIN_RATE] = { "min_rate", M(S_POLICY) },
	[K_IDLE_DOMAIN] = { "idle_domain", M(S_POLICY) },
	[K_IDLE_GRACE] = { "idle_grace", M(S_POLICY) },
	[K_RETURN_WINDOW] = { "return_window", M(S_POLICY) },
	[K_RT_PRIORITY] = { "rt_priority", M(S_POLICY) | M(S_DEVICE) | M(S_IRQ) },
	[K_COMPLETION_THREADS] = { "completion_threads", M(S_POLICY) | M(S_DEVICE) },
	[K_PIN] = { "pin", M(S_DEVICE) | M(S_IRQ) },
	[K_BAN] = { "ban", M(S_DEVICE) | M(S_IRQ) },
	[K_RQ_AFFINITY] = { "rq_affinity", M(S_DEVICE) },
	[K_ADMIN_GROUP] = { "admin_group", M(S_CONTROL) },
};

static const char *const sect_names[] = {
	[S_NONE] = "", [S_DAEMON] = "daemon", [S_CPUS] = "cpus", [S_POLICY] = "policy",
	[S_DEVICE] = "device", [S_IRQ] = "irq", [S_CONTROL] = "control", [S_BAD] = "",
};

static const char *const log_levels[] = { "err", "warning", "notice", "info", "debug" };
static const int log_level_values[] = { LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG };
static const char *const granularities[] = { [IP_GRAN_CPU] = "cpu", [IP_GRAN_DOMAIN] = "domain" };
static const char *const idle_domains[] = { [IP_IDLE_EFFICIENCY] = "efficiency",
					    [IP_IDLE_STAY] = "stay" };
static const char *const completions[] = { [IP_COMPLETION_AUTO] = "auto",
					   [IP_COMPLETION_YES] = "yes",
					   [IP_COMPLETION_NO] = "no" };

/* Seconds settings share one range: a day is longer than any sensible
 * dwell or grace period and keeps typos like "3600000" out. */
#define SECONDS_MAX 86400.0
#define RATE_MAX 1e9
#define WAKEUPS_MAX 1e6

/* ---- the parser ------------------------------------------------------- */

struct parser {
	const char *name; /* for messages */
	struct ip_config *cfg;

	const char *text; /* the input */
	size_t pos;
	int line;

	enum sect sect;
	int global_lines[K_MAX]; /* where [daemon]/[cpus]/[policy] keys were set */
	int rule_lines[K_MAX];	 /* ... and keys of the current [device]/[irq] */
	int rule_index; /* current [device]/[irq] rule; an index as rules get realloc'ed */

	int nr_errors;
	int first_line;
	char first[400];
	bool oom;
};

static void perr(struct parser *p, const char *fmt, ...) _printf_(2, 3);

static void perr(struct parser *p, const char *fmt, ...)
{
	va_list ap;

	if (p->nr_errors++)
		return;
	p->first_line = p->line;
	va_start(ap, fmt);
	vsnprintf(p->first, sizeof(p->first), fmt, ap);
	va_end(ap);
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static struct ip_rule *cur_rule(struct parser *p)
{
	if (p->sect == S_DEVICE)
		return &p->cfg->policy.dev_rules[p->rule_index];
	return &p->cfg->policy.irq_rules[p->rule_index];
}

static int add_dev_rule(struct ip_config *c, const char *match)
{
	struct ip_dev_extra *x;
	char *m;
	int n = c->policy.nr_dev_rules;

	x = realloc(c->dev_extra, (size_t)(n + 1) * sizeof(*x));
	if (!x)
		return -ENOMEM;
	c->dev_extra = x;
	m = strdup(match);
	if (!m)
		return -ENOMEM;
	if (!ip_policy_add_dev_rule(&c->policy, match)) {
		free(m);
		return -ENOMEM;
	}
	x[n].match = m;
	x[n].completion_threads = IP_COMPLETION_INHERIT;
	return n;
}

static void start_section(struct parser *p, char *s, size_t len)
{
	char *kind, *name, *end = s + len;
	enum sect k = S_NONE;
	size_t klen;
	int idx;

	p->sect = S_BAD;
	memset(p->rule_lines, 0, sizeof(p->rule_lines));
	/* s[0] is '['; the header ends at the last ']' so globs may hold one. */
	if (end[-1] != ']' || len < 2) {
		perr(p, "section header '%.*s' lacks its closing ']'", (int)MIN(len, 64), s);
		return;
	}
	*--end = '\0';
	kind = s + 1;
	while (is_blank(*kind))
		kind++;
	for (klen = 0; kind[klen] && !is_blank(kind[klen]) && kind[klen] != '"'; klen++)
		;
	name = kind + klen;
	while (is_blank(*name))
		name++;
	while (end > name && is_blank(end[-1]))
		*--end = '\0';
	for (enum sect i = S_DAEMON; i <= S_CONTROL; i++)
		if (strlen(sect_names[i]) == klen && !strncmp(kind, sect_names[i], klen))
			k = i;
	if (k == S_NONE) {
		perr(p,
		     "unknown section [%.*s] (known: [daemon], [cpus], [policy], [control], [device NAME], "
		     "[irq NAME])",
		     (int)MIN(klen, 64), kind);
		return;
	}
	if (k != S_DEVICE && k != S_IRQ) {
		if (*name) {
			perr(p, "[%s] takes no name, found '%.64s'", sect_names[k], name);
			return;
		}
		p->sect = k;
		return;
	}
	if (*name == '"') {
		size_t n = strlen(name);

		if (n < 2 || name[n - 1] != '"') {
			perr(p, "[%s %.64s]: the quoted name lacks its closing '\"'", sect_names[k], name);
			return;
		}
		name[n - 1] = '\0';
		name++;
	}
	if (strchr(name, '"')) {
		/* It could not be written back quoted (ip_config_dump). */
		perr(p, "[%s %.64s]: a name cannot contain '\"' except around it", sect_names[k],
		     name);
		return;
	}
	if (!*name) {
		perr(p, "[%s] needs a device name or glob, e.g. [%s \"%s\"]", sect_names[k],
		     sect_names[k], k == S_DEVICE ? "nvme*" : "nvme*q0");
		return;
	}
	if (k == S_DEVICE) {
		idx = add_dev_rule(p->cfg, name);
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

/*
 * inih's ini_reader: hands inih one line at a time, normalized (comments
 * and surrounding blanks removed, section headers replaced by a blank
 * line), and counts lines.
 */
static char *reader(char *str, int num, void *stream)
{
	struct parser *p = stream;
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

static bool parse_number(struct parser *p, const char *key, const char *v, double min,
			 double max, double *out)
{
	char a[32], b[32];
	double x;

	if (parse_decimal(v, &x) && x >= min && x <= max) {
		*out = x;
		return true;
	}
	fmt_num(a, sizeof(a), min, 1);
	fmt_num(b, sizeof(b), max, 1);
	perr(p, "%s: '%.64s' is not a number from %s to %s", key, v, a, b);
	return false;
}

static bool parse_int(struct parser *p, const char *key, const char *v, int min, int max,
		      const char *note, int *out)
{
	long x = 0;
	const char *c;

	for (c = v; *c >= '0' && *c <= '9' && c - v < 9; c++)
		x = x * 10 + (*c - '0');
	if (c > v && !*c && x >= min && x <= max) {
		*out = (int)x;
		return true;
	}
	perr(p, "%s: '%.64s' is not a whole number from %d to %d%s", key, v, min, max, note);
	return false;
}

static bool parse_bool(struct parser *p, const char *key, const char *v, bool *out)
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

static bool parse_choice(struct parser *p, const char *key, const char *v,
			 const char *const *names, size_t n, int *out)
{
	char list[128] = "";
	size_t used = 0;

	for (size_t i = 0; i < n; i++) {
		if (!strcmp(v, names[i])) {
			*out = (int)i;
			return true;
		}
	}
	for (size_t i = 0; i < n && used < sizeof(list); i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
					 i ? (i + 1 == n ? " or " : ", ") : "", names[i]);
	perr(p, "%s: '%.64s' is not %s", key, v, list);
	return false;
}

static bool parse_cpus(struct parser *p, const char *key, const char *v, bool allow_empty,
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
static bool parse_group(struct parser *p, const char *key, const char *v, char *out, size_t size)
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

static void set_global(struct parser *p, enum key k, const char *key, const char *v)
{
	struct ip_config *c = p->cfg;
	struct ip_policy_config *pc = &c->policy;
	ip_cpuset set;
	double x;
	int i;

	switch (k) {
	case K_INTERVAL:
		parse_number(p, key, v, 0.1, 3600, &c->daemon.interval_s);
		break;
	case K_DRY_RUN:
		parse_bool(p, key, v, &c->daemon.dry_run);
		break;
	case K_RESTORE_ON_EXIT:
		parse_bool(p, key, v, &c->daemon.restore_on_exit);
		break;
	case K_LOG_LEVEL:
		if (parse_choice(p, key, v, log_levels, ARRAY_SIZE(log_levels), &i))
			c->daemon.log_level = log_level_values[i];
		break;
	case K_COEXIST:
		parse_bool(p, key, v, &c->daemon.coexist);
		break;
	case K_TOP_WAKEUPS:
		parse_number(p, key, v, 0, WAKEUPS_MAX, &c->daemon.top_wakeups_per_irq);
		break;
	case K_TOP_THREAD_CPU:
		parse_number(p, key, v, 0, 100, &c->daemon.top_thread_cpu);
		break;
	case K_BANNED:
		parse_cpus(p, key, v, true, &pc->banned);
		break;
	case K_PERFORMANCE:
	case K_EFFICIENCY: {
		bool perf = k == K_PERFORMANCE;
		enum key other = perf ? K_EFFICIENCY : K_PERFORMANCE;
		const ip_cpuset *o = perf ? &c->overrides.efficiency : &c->overrides.performance;

		if (!parse_cpus(p, key, v, false, &set))
			break;
		if (p->global_lines[other] && cpuset_intersects(&set, o)) {
			ip_cpuset both;

			cpuset_and(&both, &set, o);
			perr(p, "%s: CPUs %s are also %s (line %d); a CPU has one class", key,
			     cpuset_str(&both), keys[other].name, p->global_lines[other]);
			break;
		}
		if (perf) {
			c->overrides.have_performance = true;
			c->overrides.performance = set;
		} else {
			c->overrides.have_efficiency = true;
			c->overrides.efficiency = set;
		}
		break;
	}
	case K_GRANULARITY:
		if (parse_choice(p, key, v, granularities, ARRAY_SIZE(granularities), &i))
			pc->granularity = (enum ip_granularity)i;
		break;
	case K_MOVE_THRESHOLD:
		if (parse_number(p, key, v, 1, 100, &x))
			pc->move_threshold = x / 100;
		break;
	case K_DWELL:
		parse_number(p, key, v, 0, SECONDS_MAX, &pc->dwell_s);
		break;
	case K_MAX_MOVES:
		parse_int(p, key, v, 1, 1000, "", &pc->max_moves);
		break;
	case K_MIN_RATE:
		parse_number(p, key, v, 0, RATE_MAX, &pc->min_rate);
		break;
	case K_IDLE_DOMAIN:
		if (parse_choice(p, key, v, idle_domains, ARRAY_SIZE(idle_domains), &i))
			pc->idle_domain = (enum ip_idle_domain)i;
		break;
	case K_IDLE_GRACE:
		parse_number(p, key, v, 0, SECONDS_MAX, &pc->idle_grace_s);
		break;
	case K_RETURN_WINDOW:
		parse_number(p, key, v, 0, SECONDS_MAX, &pc->return_window_s);
		break;
	case K_RT_PRIORITY:
		parse_int(p, key, v, 0, 99, " (0 leaves the threads' priority alone)",
			  &pc->rt_priority);
		break;
	case K_COMPLETION_THREADS:
		if (parse_choice(p, key, v, completions, ARRAY_SIZE(completions), &i))
			c->completion_threads = (enum ip_completion_threads)i;
		break;
	case K_ADMIN_GROUP:
		parse_group(p, key, v, c->control.admin_group, sizeof(c->control.admin_group));
		break;
	default:
		break;
	}
}

static void set_rule(struct parser *p, enum key k, const char *key, const char *v)
{
	struct ip_rule *r = cur_rule(p);
	ip_cpuset set;
	bool b;
	int i;

	switch (k) {
	case K_PIN:
		if (!parse_cpus(p, key, v, false, &set))
			break;
		if (p->rule_lines[K_BAN] && r->ban) {
			perr(p, "pin: conflicts with 'ban = yes' (line %d): a banned IRQ is never moved",
			     p->rule_lines[K_BAN]);
			break;
		}
		r->have_pin = true;
		r->pin = set;
		break;
	case K_BAN:
		if (!parse_bool(p, key, v, &b))
			break;
		if (b && r->have_pin) {
			perr(p, "ban: conflicts with 'pin' (line %d): a banned IRQ is never moved",
			     p->rule_lines[K_PIN]);
			break;
		}
		r->ban = b;
		break;
	case K_RT_PRIORITY:
		parse_int(p, key, v, 1, 99, "", &r->rt_priority);
		break;
	case K_RQ_AFFINITY:
		parse_int(p, key, v, 0, 2, "", &r->rq_affinity);
		break;
	case K_COMPLETION_THREADS:
		if (parse_choice(p, key, v, completions, ARRAY_SIZE(completions), &i))
			p->cfg->dev_extra[p->rule_index].completion_threads =
				(enum ip_completion_threads)i;
		break;
	default:
		break;
	}
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parser *p = user;
	char list[256];
	size_t used = 0, vlen;
	_cleanup_free_ char *v = NULL;
	int *lines;
	enum key k = K_MAX;

	if (p->oom || p->sect == S_BAD)
		return 1;
	if (p->sect == S_NONE) {
		perr(p, "'%.64s' is outside any section; put it under [daemon], [cpus], [policy] or [control]",
		     name);
		return 1;
	}
	for (int i = 0; i < K_MAX; i++)
		if (!strcmp(name, keys[i].name))
			k = (enum key)i;
	if (k == K_MAX || !(keys[k].sections & M(p->sect))) {
		if (k == K_RQ_AFFINITY || k == K_COMPLETION_THREADS) {
			perr(p, "%s: only in [device] sections%s", name,
			     p->sect == S_IRQ ? ", not [irq]" : "");
			return 1;
		}
		for (int i = 0; i < K_MAX && used < sizeof(list); i++)
			if (keys[i].sections & M(p->sect))
				used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
							 used ? ", " : "", keys[i].name);
		perr(p, "unknown key '%.64s' in [%s] (known: %s)", name, sect_names[p->sect], list);
		return 1;
	}
	lines = p->sect == S_DEVICE || p->sect == S_IRQ ? p->rule_lines : p->global_lines;
	if (lines[k]) {
		perr(p, "%s: already set at line %d", name, lines[k]);
		return 1;
	}
	/* Quotes around a value are optional, as around section names. */
	vlen = strlen(value);
	if (vlen >= 2 && value[0] == '"' && value[vlen - 1] == '"')
		v = strndup(value + 1, vlen - 2);
	else
		v = strdup(value);
	if (!v) {
		p->oom = true;
		return 1;
	}
	if (p->sect == S_DEVICE || p->sect == S_IRQ)
		set_rule(p, k, name, v);
	else
		set_global(p, k, name, v);
	lines[k] = p->line;
	return 1;
}

int ip_config_load_string(const char *text, const char *name, struct ip_config *out,
			  struct ip_diag *d)
{
	struct ip_config c;
	struct parser p = { .name = name ? name : "<string>", .cfg = &c, .text = text };
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

int ip_config_load_file(const char *path, struct ip_config *out, struct ip_diag *d)
{
	_cleanup_fclose_ FILE *f = NULL;
	_cleanup_free_ char *buf = NULL;
	struct stat st;
	size_t n;
	const char *nul;

	f = fopen(path, "re");
	if (!f)
		return ip_diag_set(d, -errno, "%s: %s", path, strerror(errno));
	if (fstat(fileno(f), &st) < 0)
		return ip_diag_set(d, -errno, "%s: %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return ip_diag_set(d, -EISDIR, "%s: is a directory", path);
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

/* ---- dump and compare --------------------------------------------------- */

static const char *bool_str(bool b)
{
	return b ? "yes" : "no";
}

static const char *log_level_str(int level)
{
	for (size_t i = 0; i < ARRAY_SIZE(log_level_values); i++)
		if (log_level_values[i] == level)
			return log_levels[i];
	return "info";
}

static const char *choice_str(const char *const *names, size_t n, int i)
{
	return i >= 0 && (size_t)i < n ? names[i] : names[0];
}

static void dump_cpus(FILE *f, const char *key, const ip_cpuset *s)
{
	char buf[IP_CPULIST_MAX];

	cpuset_format_list(s, buf, sizeof(buf));
	fprintf(f, "%s = %s\n", key, buf);
}

static void dump_rule(FILE *f, const char *kind, const struct ip_rule *r,
		      const struct ip_dev_extra *x)
{
	fprintf(f, "\n[%s \"%s\"]\n", kind, r->match);
	if (r->have_pin)
		dump_cpus(f, "pin", &r->pin);
	if (r->ban)
		fprintf(f, "ban = yes\n");
	if (r->rt_priority >= 0)
		fprintf(f, "rt_priority = %d\n", r->rt_priority);
	if (r->rq_affinity >= 0)
		fprintf(f, "rq_affinity = %d\n", r->rq_affinity);
	if (x && x->completion_threads != IP_COMPLETION_INHERIT)
		fprintf(f, "completion_threads = %s\n",
			choice_str(completions, ARRAY_SIZE(completions), x->completion_threads));
}

int ip_config_dump(const struct ip_config *c, FILE *f)
{
	const struct ip_policy_config *pc = &c->policy;
	char a[64];

	fprintf(f, "[daemon]\n");
	fmt_num(a, sizeof(a), c->daemon.interval_s, 1);
	fprintf(f, "interval = %s\n", a);
	fprintf(f, "dry_run = %s\n", bool_str(c->daemon.dry_run));
	fprintf(f, "restore_on_exit = %s\n", bool_str(c->daemon.restore_on_exit));
	fprintf(f, "log_level = %s\n", log_level_str(c->daemon.log_level));
	fprintf(f, "coexist = %s\n", bool_str(c->daemon.coexist));
	fmt_num(a, sizeof(a), c->daemon.top_wakeups_per_irq, 1);
	fprintf(f, "top_wakeups_per_irq = %s\n", a);
	fmt_num(a, sizeof(a), c->daemon.top_thread_cpu, 1);
	fprintf(f, "top_thread_cpu = %s\n", a);

	if (c->control.admin_group[0])
		fprintf(f, "\n[control]\nadmin_group = %s\n", c->control.admin_group);

	fprintf(f, "\n[cpus]\n");
	dump_cpus(f, "banned", &pc->banned);
	if (c->overrides.have_performance)
		dump_cpus(f, "performance", &c->overrides.performance);
	if (c->overrides.have_efficiency)
		dump_cpus(f, "efficiency", &c->overrides.efficiency);

	fprintf(f, "\n[policy]\n");
	fprintf(f, "granularity = %s\n",
		choice_str(granularities, ARRAY_SIZE(granularities), (int)pc->granularity));
	fmt_num(a, sizeof(a), pc->move_threshold, 100);
	fprintf(f, "move_threshold = %s\n", a);
	fmt_num(a, sizeof(a), pc->dwell_s, 1);
	fprintf(f, "dwell = %s\n", a);
	fprintf(f, "max_moves = %d\n", pc->max_moves);
	fmt_num(a, sizeof(a), pc->min_rate, 1);
	fprintf(f, "min_rate = %s\n", a);
	fprintf(f, "idle_domain = %s\n",
		choice_str(idle_domains, ARRAY_SIZE(idle_domains), (int)pc->idle_domain));
	fmt_num(a, sizeof(a), pc->idle_grace_s, 1);
	fprintf(f, "idle_grace = %s\n", a);
	fmt_num(a, sizeof(a), pc->return_window_s, 1);
	fprintf(f, "return_window = %s\n", a);
	fprintf(f, "rt_priority = %d\n", pc->rt_priority);
	fprintf(f, "completion_threads = %s\n",
		choice_str(completions, ARRAY_SIZE(completions), (int)c->completion_threads));

	for (int i = 0; i < pc->nr_dev_rules; i++)
		dump_rule(f, "device", &pc->dev_rules[i], c->dev_extra ? &c->dev_extra[i] : NULL);
	for (int i = 0; i < pc->nr_irq_rules; i++)
		dump_rule(f, "irq", &pc->irq_rules[i], NULL);
	return ferror(f) ? -EIO : 0;
}

static bool rule_equal(const struct ip_rule *a, const struct ip_rule *b)
{
	return !strcmp(a->match, b->match) && a->have_pin == b->have_pin &&
	       (!a->have_pin || cpuset_equal(&a->pin, &b->pin)) && a->ban == b->ban &&
	       a->rt_priority == b->rt_priority && a->rq_affinity == b->rq_affinity;
}

static enum ip_completion_threads extra_ct(const struct ip_config *c, int i)
{
	return c->dev_extra ? c->dev_extra[i].completion_threads : IP_COMPLETION_INHERIT;
}

bool ip_config_equal(const struct ip_config *a, const struct ip_config *b)
{
	const struct ip_daemon_config *da = &a->daemon, *db = &b->daemon;
	const struct ip_cpu_overrides *oa = &a->overrides, *ob = &b->overrides;
	const struct ip_policy_config *pa = &a->policy, *pb = &b->policy;

	if (da->interval_s != db->interval_s || da->dry_run != db->dry_run ||
	    da->restore_on_exit != db->restore_on_exit || da->log_level != db->log_level ||
	    da->coexist != db->coexist || da->top_wakeups_per_irq != db->top_wakeups_per_irq ||
	    da->top_thread_cpu != db->top_thread_cpu)
		return false;
	if (strcmp(a->control.admin_group, b->control.admin_group) != 0)
		return false;
	if (oa->have_performance != ob->have_performance ||
	    oa->have_efficiency != ob->have_efficiency ||
	    (oa->have_performance && !cpuset_equal(&oa->performance, &ob->performance)) ||
	    (oa->have_efficiency && !cpuset_equal(&oa->efficiency, &ob->efficiency)))
		return false;
	if (pa->granularity != pb->granularity || pa->move_threshold != pb->move_threshold ||
	    pa->dwell_s != pb->dwell_s || pa->max_moves != pb->max_moves ||
	    pa->min_rate != pb->min_rate || pa->idle_domain != pb->idle_domain ||
	    pa->idle_grace_s != pb->idle_grace_s || pa->return_window_s != pb->return_window_s ||
	    pa->rt_priority != pb->rt_priority || !cpuset_equal(&pa->banned, &pb->banned) ||
	    a->completion_threads != b->completion_threads)
		return false;
	if (pa->nr_dev_rules != pb->nr_dev_rules || pa->nr_irq_rules != pb->nr_irq_rules)
		return false;
	for (int i = 0; i < pa->nr_dev_rules; i++)
		if (!rule_equal(&pa->dev_rules[i], &pb->dev_rules[i]) ||
		    extra_ct(a, i) != extra_ct(b, i))
			return false;
	for (int i = 0; i < pa->nr_irq_rules; i++)
		if (!rule_equal(&pa->irq_rules[i], &pb->irq_rules[i]))
			return false;
	return true;
}

enum ip_completion_threads ip_config_completion_threads(const struct ip_config *c,
							 const char *device)
{
	for (int i = c->policy.nr_dev_rules - 1; c->dev_extra && i >= 0; i--)
		if (c->dev_extra[i].completion_threads != IP_COMPLETION_INHERIT &&
		    !fnmatch(c->dev_extra[i].match, device, 0))
			return c->dev_extra[i].completion_threads;
	return c->completion_threads;
}
