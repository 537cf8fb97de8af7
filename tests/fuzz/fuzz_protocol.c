// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Both halves of what crosses the control socket: the daemon's request
 * decoder and irqctl's reply reader (json-c). Every input goes to both; what
 * one of them accepts must survive a round trip through its writer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irqctl.h"
#include "irqpilot/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_request(const struct ip_request *a, const struct ip_request *b)
{
	if (a->verb != b->verb || a->json != b->json)
		return false;
	switch (a->verb) {
	case IP_VERB_SHOW:
		return a->object == b->object;
	case IP_VERB_PIN:
		if (!cpuset_equal(&a->cpus, &b->cpus))
			return false;
		/* fall through */
	case IP_VERB_EXPLAIN:
	case IP_VERB_UNPIN:
		if (a->target.is_irq != b->target.is_irq)
			return false;
		return a->target.is_irq ? a->target.irq == b->target.irq :
					  strcmp(a->target.name, b->target.name) == 0;
	case IP_VERB_DRY_RUN:
		return a->on == b->on;
	case IP_VERB_CAPTURE:
		return strcmp(a->path, b->path) == 0 && a->samples == b->samples;
	default:
		return true;
	}
}

static void fuzz_request(const char *buf, size_t size)
{
	char out[IP_PROTO_REQ_MAX + 1];
	struct ip_request r, back;
	struct ip_diag d;
	int n;

	if (ip_proto_decode(buf, size, &r, &d) != 0)
		return;
	n = ip_proto_encode(&r, out, sizeof(out));
	if (n < 0 || (size_t)n != strlen(out))
		abort();
	if (ip_proto_decode(out, (size_t)n, &back, &d) != 0 || !same_request(&r, &back))
		abort();
	/* access rules must be total: root of our namespace may do anything */
	{
		struct ip_peer root = { .uid = 0, .same_userns = true };

		if (ip_proto_check_access(&r, &root, NULL, &d) != 0)
			abort();
	}
}

static char *print(json_object *v, size_t *len)
{
	char *s = NULL;
	FILE *f = open_memstream(&s, len);

	if (!f)
		abort();
	ctl_print_json(f, v);
	fclose(f);
	return s;
}

/* irqctl's reader: whatever it accepts, it prints as JSON it accepts
 * again as the same document. */
static void fuzz_reply(const char *buf, size_t size)
{
	struct ctl_reply rep, back;
	struct ip_diag d;
	size_t n1, n2;
	char *one, *two;

	if (ctl_reply_parse(buf, size, &rep, &d) != 0)
		return;
	one = print(rep.root, &n1);
	if (ctl_reply_parse(one, n1, &back, &d) != 0 || back.ok != rep.ok || back.err != rep.err)
		abort();
	two = print(back.root, &n2);
	if (n1 != n2 || memcmp(one, two, n1) != 0)
		abort();
	ctl_reply_free(&back);
	ctl_reply_free(&rep);
	free(one);
	free(two);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_request((const char *)data, size);
	fuzz_reply((const char *)data, size);
	return 0;
}
