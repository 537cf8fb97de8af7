// SPDX-License-Identifier: GPL-2.0-or-later
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "irqpilot/json.h"
#include "irqpilot/report.h"
#include <json-c/json.h>

static char *escaped(const char *in)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ip_json_write_escaped(f, in);
	fclose(f);
	return buf;
}

static void test_escapes(void **state)
{
	char *s = escaped("a\"b\\c\nd\te\x01");

	assert_string_equal(s, "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
	free(s);
	/* valid UTF-8 passes through; a broken byte from a /proc name becomes U+FFFD */
	s = escaped("caf\xc3\xa9 \xff x \xc3");
	assert_string_equal(s, "\"caf\xc3\xa9 \\ufffd x \\ufffd\"");
	free(s);
	/* overlong and surrogate encodings are not UTF-8 either */
	s = escaped("\xc0\xaf\xed\xa0\x80");
	assert_string_equal(s, "\"\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\"");
	free(s);
	/* C1 controls and the Unicode line and paragraph separators go out
	 * escaped: a line reader (Python's splitlines()) split a --json
	 * document at NEL or U+2028, a terminal runs CSI */
	s = escaped("a\xc2\x85" "b\xc2\x9b" "1m\xe2\x80\xa8" "c\xe2\x80\xa9" "d\xc2\xa0" "e\xe2\x80\xa7");
	assert_string_equal(s, "\"a\\u0085b\\u009b1m\\u2028c\\u2029d\xc2\xa0" "e\xe2\x80\xa7\"");
	free(s);
}

/* What the writer produces, json-c's strict reader (irqctl's) accepts, for
 * any bytes. */
static void test_writer_output_parses(void **state)
{
	char *buf = NULL, name[64];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct ip_json j;
	json_tokener *tok = json_tokener_new();
	json_object *v, *move, *rate;

	for (int i = 0; i < 63; i++)
		name[i] = (char)(i * 37 + 1);
	name[63] = '\0';
	ip_json_init(&j, f);
	ip_json_object_begin(&j, NULL);
	ip_json_int(&j, "schema", 1);
	ip_json_array_begin(&j, "moves");
	ip_json_object_begin(&j, NULL);
	ip_json_string(&j, "name", name);
	ip_json_double(&j, "rate", 1.0 / 0.0);
	ip_json_object_end(&j);
	ip_json_array_end(&j);
	ip_json_null(&j, "x");
	ip_json_object_end(&j);
	fclose(f);
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	v = json_tokener_parse_ex(tok, buf, (int)len);
	if (!v || json_tokener_get_parse_end(tok) != len)
		fail_msg("%s in %s", json_tokener_error_desc(json_tokener_get_error(tok)), buf);
	assert_int_equal(json_object_array_length(json_object_object_get(v, "moves")), 1);
	move = json_object_array_get_idx(json_object_object_get(v, "moves"), 0);
	/* infinities are not JSON: written as null */
	assert_true(json_object_object_get_ex(move, "rate", &rate));
	assert_null(rate);
	json_object_put(v);
	json_tokener_free(tok);
	free(buf);
}

/* True when @s is UTF-8 that journalctl prints as text and a terminal
 * shows as it is: no C0 control, DEL or C1 control (CSI is U+009B). */
static bool printable_utf8(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		int n = ip_utf8_len(p);

		if (!n || *p < 0x20 || *p == 0x7f || (*p == 0xc2 && p[1] < 0xa0))
			return false;
		p += n;
	}
	return true;
}

/* The lines of the journal's MESSAGE and of the foreground log carry the
 * drivers' IRQ names: whatever bytes a name has, and wherever the name's
 * buffer or the line is cut, the line stays printable UTF-8. */
static void test_report_line_names(void **state)
{
	struct ip_kept k = { .irq = 38, .why = { .code = IP_R_MANAGED_SPREAD } };
	char line[IP_REASON_MAX], small[12];

	/* C1 CSI, a lone CSI byte, DEL: what drives a terminal or makes the
	 * journal's MESSAGE a blob */
	snprintf(k.name, sizeof(k.name), "a\xc2\x9b" "31mX\x9b" "0m\x7f\"\\ \xc3\xa9");
	ip_report_kept_line(line, sizeof(line), &k);
	assert_true(printable_utf8(line));
	assert_non_null(strstr(line, "kept 38 a?31mX?0m?\"\\ \xc3\xa9: "));
	/* the name cut in its buffer inside an "é", as policy.c copies it */
	memset(k.name, 0, sizeof(k.name));
	k.name[0] = 'a';
	for (int i = 1; i + 1 < (int)sizeof(k.name); i += 2)
		memcpy(k.name + i, "\xc3\xa9", 2);
	k.name[sizeof(k.name) - 2] = '\xc3';
	ip_report_kept_line(line, sizeof(line), &k);
	assert_true(printable_utf8(line));
	/* the line cut inside an "é": the part character is left out */
	ip_report_kept_line(small, sizeof(small), &k);
	assert_string_equal(small, "kept 38 a\xc3\xa9");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_writer_output_parses),
		cmocka_unit_test(test_report_line_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
