/*
 * test_field.c: the one table of audit record fields (audit/field.c).
 * The table itself is checked, then both of its users against it: every
 * field the writer (audit.c) emits is in the table, with the table's
 * type, and every field of the table is emitted by some record; the
 * reader (logview.c) accepts a record holding every field of the table,
 * and refuses a field of the wrong type unless the table says it does
 * not check it.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "audit/audit.h"
#include "audit/field.h"
#include "audit/logview.h"

/* Names are unique, found by name, cut fields counted by FIELD_NCUT. */
static void
test_table(void **state)
{
	const struct field *f;
	int id, j, ncut = 0;

	(void)state;
	for (id = 0; id < FIELD_N; id++) {
		f = field_get(id);
		assert_non_null(f->name);
		assert_ptr_equal(field_find(f->name), f);
		for (j = 0; j < id; j++)
			assert_string_not_equal(field_get(j)->name, f->name);
		if (f->flags & FIELD_CUT) {
			assert_int_equal(f->type, FIELD_STRING);
			ncut++;
		}
		if (f->type == FIELD_STRING)
			assert_non_null(f->stop);
		if (f->type == FIELD_INTEGER)
			assert_true(f->max > 0);
	}
	assert_int_equal(ncut, FIELD_NCUT);
	assert_null(field_find("nosuchfield"));
	assert_string_equal(field_get(FIELD_EVENT)->name, "event");
	assert_true(field_get(FIELD_EVENT)->flags & FIELD_REQUIRED);
}

/* Does V have the JSON type the table gives field F? */
static int
type_fits(const struct field *f, const json_t *v)
{
	switch (f->type) {
	case FIELD_STRING:
		return json_is_string(v);
	case FIELD_INTEGER:
		return json_is_integer(v);
	case FIELD_NUMBER:
		return json_is_number(v);
	case FIELD_BOOLEAN:
		return json_is_boolean(v);
	}
	return 0;
}

/* Writes records to PATH that together carry every field. */
static void
write_all(const char *path)
{
	struct audit_rec r;
	struct audit *a;
	char err[256], host[32];
	int i;

	a = audit_open(path, "0123456789abcdef", err, sizeof(err));
	assert_non_null(a);
	/* a broker's records: the client fields, and a "client" record */
	assert_int_equal(audit_set_client(a, 1001, 4242, "git"), 0);
	audit_rec_init(&r, "client", 0);
	r.decision = "deny";
	r.reason = "policy ci is not granted to uid 1001";
	r.policy = "ci";
	assert_int_equal(audit_write(a, &r), 0);
	audit_rec_init(&r, "request", 1);
	r.method = "GET";
	r.host = "example.test";
	r.port = 443;
	r.path = "/a?secret=1";
	r.decision = "allow";
	r.rule_file = "p.conf";
	r.rule_line = 3;
	r.addr = "127.0.0.1:443";
	r.secret = "token";
	r.via = "capture";
	assert_int_equal(audit_write(a, &r), 0);
	audit_rec_init(&r, "end", 1);
	r.status = 200;
	r.bytes_up = 10;
	r.bytes_down = 20;
	r.ms = 5;
	r.error = "reset";
	assert_int_equal(audit_write(a, &r), 0);
	audit_rec_init(&r, "dns", 0);
	r.host = "direct.test";
	r.qtype = "AAAA";
	r.answer = "refused";
	assert_int_equal(audit_write(a, &r), 0);
	/* two identical denials fold into one record with "count"; the
	   others pass the limit and are summed up at close ("summary") */
	audit_set_limit(a, 2000);
	for (i = 0; i < 40; i++) {
		audit_rec_init(&r, "request", 2 + i);
		r.method = "CONNECT";
		snprintf(host, sizeof(host), "h%d.test", i < 2 ? 0 : i);
		r.host = host;
		r.port = 443;
		r.decision = "deny";
		r.reason = "no rule allows deny.test:443";
		audit_write(a, &r);
	}
	audit_close(a); /* the summaries past the limit */
}

static void
test_writer(void **state)
{
	char dir[] = "/tmp/test_field.XXXXXX", path[64], line[70000];
	int seen[FIELD_N] = {0}, id;
	const struct field *f;
	const char *key;
	json_t *o, *v;
	FILE *in;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/audit.jsonl", dir);
	write_all(path);
	assert_non_null(in = fopen(path, "r"));
	while (fgets(line, sizeof(line), in) != NULL) {
		assert_non_null(o = json_loads(line, 0, NULL));
		json_object_foreach(o, key, v)
		{
			f = field_find(key);
			if (f == NULL)
				fail_msg(
				    "the writer emits \"%s\", not in the table",
				    key);
			assert_true(type_fits(f, v));
			seen[f - field_get(0)] = 1;
		}
		json_decref(o);
	}
	fclose(in);
	for (id = 0; id < FIELD_N; id++)
		if (!seen[id])
			fail_msg(
			    "no record carries \"%s\"", field_get(id)->name);
	unlink(path);
	rmdir(dir);
}

/* A valid value for field F, or a value of another type when WRONG. */
static json_t *
value(const struct field *f, int wrong)
{
	if (wrong)
		return f->type == FIELD_STRING ? json_integer(1)
		                               : json_string("x");
	switch (f->type) {
	case FIELD_STRING:
		return json_string(f == field_get(FIELD_EVENT) ? "request"
		        : f == field_get(FIELD_DECISION)       ? "deny"
		                                               : "x");
	case FIELD_INTEGER:
		return json_integer(1);
	case FIELD_NUMBER:
		return json_real(1.5);
	case FIELD_BOOLEAN:
		return json_true();
	}
	return NULL;
}

/* Feeds a record with every field, WRONG (or -1) holding a bad value. */
static int
feed_all(int wrong)
{
	struct logview *lv = logview_new();
	json_t *o = json_object();
	char *s;
	int id, ret;

	assert_non_null(lv);
	for (id = 0; id < FIELD_N; id++)
		json_object_set_new(
		    o, field_get(id)->name, value(field_get(id), id == wrong));
	json_object_set_new(o, "added_later", json_string("ignored"));
	assert_non_null(s = json_dumps(o, JSON_COMPACT));
	ret = logview_feed(lv, s, strlen(s), 1);
	free(s);
	json_decref(o);
	logview_free(lv);
	return ret;
}

static void
test_reader(void **state)
{
	const struct field *f;
	int id;

	(void)state;
	assert_int_equal(feed_all(-1), 0);
	for (id = 0; id < FIELD_N; id++) {
		f = field_get(id);
		assert_int_equal(
		    feed_all(id), (f->flags & FIELD_UNCHECKED) ? 0 : -1);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_writer),
	    cmocka_unit_test(test_reader),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
