// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * The daemon's replies, read with json-c (as nvme-cli reads its own JSON):
 * a well-kept parser instead of one of our own.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include <json-c/json.h>

#include "irqctl.h"

/* Deeper than any reply the daemon writes, shallow enough for the stack. */
#define REPLY_MAX_DEPTH 64

static const char *type_name(json_object *v)
{
	return json_type_to_name(json_object_get_type(v));
}

static int parse_json(const char *buf, size_t len, json_object **out, struct ip_diag *d)
{
	json_tokener *tok;
	json_object *v;
	enum json_tokener_error e;
	size_t end;

	*out = NULL;
	if (len > IP_PROTO_REPLY_MAX)
		return ip_diag_set(d, -EPROTO, "malformed reply: %zu bytes exceed the %u byte limit", len,
				   IP_PROTO_REPLY_MAX);
	tok = json_tokener_new_ex(REPLY_MAX_DEPTH);
	if (!tok)
		return -ENOMEM;
	/* Strict: what the daemon writes is RFC 8259 JSON in UTF-8, so
	 * anything looser is a reply from something else. */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	v = json_tokener_parse_ex(tok, buf, (int)len);
	e = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	if (!v || e != json_tokener_success) {
		json_object_put(v);
		if (e == json_tokener_continue)
			return ip_diag_set(d, -EPROTO, "malformed reply: unexpected end of input");
		return ip_diag_set(d, -EPROTO, "malformed reply at byte %zu: %s", end,
				   json_tokener_error_desc(e));
	}
	for (; end < len; end++)
		if (!strchr(" \t\r\n", buf[end])) {
			json_object_put(v);
			return ip_diag_set(d, -EPROTO,
					   "malformed reply: trailing characters at byte %zu", end);
		}
	*out = v;
	return 0;
}

static json_object *get(json_object *o, const char *key)
{
	json_object *v = NULL;

	return json_object_object_get_ex(o, key, &v) ? v : NULL;
}

int ctl_reply_parse(const char *buf, size_t len, struct ctl_reply *out, struct ip_diag *d)
{
	struct ctl_reply r = { 0 };
	json_object *v;
	int64_t x;
	int err;

	memset(out, 0, sizeof(*out));
	err = parse_json(buf, len, &r.root, d);
	if (err < 0)
		return err;
	if (!json_object_is_type(r.root, json_type_object)) {
		err = ip_diag_set(d, -EPROTO, "malformed reply: not a JSON object");
		goto fail;
	}
	v = get(r.root, "v");
	if (!json_object_is_type(v, json_type_int)) {
		err = ip_diag_set(d, -EPROTO, "malformed reply: no protocol version \"v\"");
		goto fail;
	}
	x = json_object_get_int64(v);
	if (x != IP_PROTO_VERSION) {
		err = ip_diag_set(d, -EPROTO, "reply has protocol version %lld, expected %d", (long long)x,
				  IP_PROTO_VERSION);
		goto fail;
	}
	v = get(r.root, "ok");
	if (!json_object_is_type(v, json_type_boolean)) {
		err = ip_diag_set(d, -EPROTO, "malformed reply: no boolean \"ok\"");
		goto fail;
	}
	r.ok = json_object_get_boolean(v);
	if (!r.ok) {
		v = get(r.root, "errno");
		x = json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : 0;
		if (x < 1 || x > 4095) {
			err = ip_diag_set(d, -EPROTO, "malformed error reply: no errno");
			goto fail;
		}
		r.err = (int)x;
		v = get(r.root, "error");
		if (!json_object_is_type(v, json_type_string)) {
			err = ip_diag_set(d, -EPROTO, "malformed error reply: no \"error\" string");
			goto fail;
		}
		r.error = json_object_get_string(v);
	} else {
		v = get(r.root, "text");
		if (v && !json_object_is_type(v, json_type_string)) {
			err = ip_diag_set(d, -EPROTO, "malformed reply: \"text\" is a %s", type_name(v));
			goto fail;
		}
		r.text = v ? json_object_get_string(v) : NULL;
		r.data = get(r.root, "data");
		if (r.data && !json_object_is_type(r.data, json_type_object)) {
			err = ip_diag_set(d, -EPROTO, "malformed reply: \"data\" is a %s", type_name(r.data));
			goto fail;
		}
	}
	*out = r;
	return 0;
fail:
	json_object_put(r.root);
	return err;
}

void ctl_reply_free(struct ctl_reply *r)
{
	if (!r)
		return;
	json_object_put(r->root);
	memset(r, 0, sizeof(*r));
}

void ctl_print_json(FILE *f, json_object *v)
{
	fputs(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
							JSON_C_TO_STRING_NOSLASHESCAPE),
	      f);
	fputc('\n', f);
}
