// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Both halves of what crosses the control socket: the daemon's request
 * decoder and irqctl's JSON reader. Every input goes to both; what one of
 * them accepts must survive a round trip through its writer unchanged.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/jsonparse.h"
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

static char *print(const struct ip_jv *v, bool indent, size_t *len)
{
	char *s = NULL;
	FILE *f = open_memstream(&s, len);

	if (!f)
		abort();
	ip_jv_print(f, v, indent);
	fclose(f);
	return s;
}

static void fuzz_json(const char *buf, size_t size)
{
	struct ip_jv *v = NULL, *back = NULL;
	struct ip_reply rep;
	struct ip_diag d;
	size_t n1, n2;
	char *one, *two;

	if (ip_proto_reply_parse(buf, size, &rep, &d) == 0)
		ip_proto_reply_free(&rep);
	if (ip_jv_parse(buf, size, &v, &d) != 0)
		return;
	one = print(v, false, &n1);
	if (ip_jv_parse(one, n1, &back, &d) != 0)
		abort();
	two = print(back, true, &n2);
	ip_jv_free(back);
	if (ip_jv_parse(two, n2, &back, &d) != 0)
		abort();
	free(two);
	two = print(back, false, &n2);
	if (n1 != n2 || memcmp(one, two, n1) != 0)
		abort();
	ip_jv_free(back);
	ip_jv_free(v);
	free(one);
	free(two);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_request((const char *)data, size);
	fuzz_json((const char *)data, size);
	return 0;
}
