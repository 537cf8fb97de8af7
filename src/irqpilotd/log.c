// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <systemd/sd-journal.h>

#include "irqpilot/log.h"
#include "irqpilot/macro.h"

#define RATE_WINDOW_NS (60ULL * 1000000000ULL)

/*
 * systemd sets $JOURNAL_STREAM to "DEVICE:INODE" of the stream it connects
 * a service's stdout/stderr to (systemd.exec(5)). Only a match counts: a
 * child whose stderr was redirected inherits the variable, not the stream.
 */
static bool stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;
	char end;

	if (!e || sscanf(e, "%llu:%llu%c", &dev, &ino, &end) != 2)
		return false;
	return fstat(STDERR_FILENO, &st) == 0 && (unsigned long long)st.st_dev == dev &&
	       (unsigned long long)st.st_ino == ino;
}

void ip_log_init(struct ip_log *l, bool to_stderr, int level)
{
	memset(l, 0, sizeof(*l));
	l->to_stderr = to_stderr;
	/* Tests run the daemon on fixtures and keep the host's journal clean. */
	l->to_journal = !getenv("IRQPILOT_NO_JOURNAL");
	l->stderr_is_journal = stderr_is_journal();
	l->level = level;
}

static const char *prio_name(int prio)
{
	switch (prio) {
	case LOG_EMERG:
	case LOG_ALERT:
	case LOG_CRIT:
	case LOG_ERR:
		return "error";
	case LOG_WARNING:
		return "warning";
	case LOG_NOTICE:
		return "notice";
	case LOG_INFO:
		return "info";
	default:
		return "debug";
	}
}

/* __FILE__ is the path the compiler was given: "../src/x.c" in a build
 * directory. CODE_FILE names the file in the source tree either way. */
static const char *source_path(const char *file)
{
	for (;;) {
		if (strncmp(file, "./", 2) == 0)
			file += 2;
		else if (strncmp(file, "../", 3) == 0)
			file += 3;
		else
			return file;
	}
}

void ip_log_at(struct ip_log *l, bool tell, int prio, const char *message_id,
	       const char *const *fields, const char *file, int line, const char *func,
	       const char *fmt, ...)
{
	char msg[1024], mfield[1040], pfield[16], idfield[48], ffield[256], lfield[32];
	/* four of ours, and room for a plan record's (report.h's IP_JOURNAL_FIELDS) */
	struct iovec iov[48];
	int n = 0;
	va_list ap;

	if (prio > l->level)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* Under systemd stderr is the journal: the native entry has the fields. */
	if ((l->to_stderr || tell) && !(l->to_journal && l->stderr_is_journal)) {
		fprintf(stderr, "irqpilotd: %s: %s\n", prio_name(prio), msg);
		fflush(stderr);
	}
	if (!l->to_journal)
		return;
	snprintf(mfield, sizeof(mfield), "MESSAGE=%s", msg);
	snprintf(pfield, sizeof(pfield), "PRIORITY=%d", prio);
	snprintf(ffield, sizeof(ffield), "CODE_FILE=%s", source_path(file));
	snprintf(lfield, sizeof(lfield), "CODE_LINE=%d", line);
	iov[n++] = (struct iovec){ mfield, strlen(mfield) };
	iov[n++] = (struct iovec){ pfield, strlen(pfield) };
	iov[n++] = (struct iovec){ (void *)"SYSLOG_IDENTIFIER=irqpilotd", strlen("SYSLOG_IDENTIFIER=irqpilotd") };
	if (message_id) {
		snprintf(idfield, sizeof(idfield), "MESSAGE_ID=%s", message_id);
		iov[n++] = (struct iovec){ idfield, strlen(idfield) };
	}
	for (int i = 0; fields && fields[i] && n < (int)ARRAY_SIZE(iov); i++)
		iov[n++] = (struct iovec){ (void *)fields[i], strlen(fields[i]) };
	/* Without a journal (a container, a CI box) there is nowhere to say
	 * that logging failed; stderr already has it in the foreground.
	 * sd_journal_sendv() is a macro that adds this line of log.c as
	 * CODE_*: the caller's location goes in its place. */
	(void)sd_journal_sendv_with_location(ffield, lfield, func, iov, n);
}

bool ip_log_ratelimit(struct ip_log *l, const char *key, uint64_t now_ns, unsigned burst,
		      unsigned *suppressed)
{
	struct ip_log_limit *e = NULL;

	*suppressed = 0;
	for (size_t i = 0; i < ARRAY_SIZE(l->limits); i++)
		if (strcmp(l->limits[i].key, key) == 0) {
			e = &l->limits[i];
			break;
		}
	if (!e) {
		/* Oldest slot out: a key forgotten this way may log again. */
		e = &l->limits[l->next++ % ARRAY_SIZE(l->limits)];
		memset(e, 0, sizeof(*e));
		snprintf(e->key, sizeof(e->key), "%s", key);
		e->window_start_ns = now_ns;
	}
	if (now_ns - e->window_start_ns >= RATE_WINDOW_NS) {
		*suppressed = e->suppressed;
		e->window_start_ns = now_ns;
		e->count = 0;
		e->suppressed = 0;
	}
	if (e->count < burst) {
		e->count++;
		return true;
	}
	e->suppressed++;
	return false;
}
