/*
 * fuzz_audit.c: libFuzzer target for the audit writer's formatter
 * (audit/audit.c), against the jansson writer it replaced
 * (tests/unit/audit_ref.c).
 *
 * The input's first 24 bytes give the numbers of a record (connection,
 * port, status, bytes, ms, count, rule line, summary, whether each number
 * is present); the rest is cut at each 0xff byte into the record's
 * strings, in turn: event, method, host, path, decision, rule file,
 * reason, addr, qtype, answer, secret, error, policy, ts, and the
 * client's command (then a client is set; 0xff never occurs in UTF-8, so
 * every other byte value reaches the strings).  The line must be the
 * same bytes as jansson's, printable ASCII, and parse back as one JSON
 * object.  The two logs (with and without a client) are opened once: a
 * struct audit holds a 64 KiB line buffer.
 *
 *	./fuzz_audit -max_total_time=60 tests/fuzz/corpus/audit
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#define AUDIT_INTERNAL
#include "audit/audit.h"
#include "tests/unit/audit_ref.h"

#define NSTR 15
#define RUN_ID "run-\\\"\xc3\xa9\xff" /* escaped and sanitised too */
#define NUMS 24
#define LINE (64 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check(int ok)
{
	if (!ok)
		abort();
}

/* Cuts P (N bytes) at 0xff into up to NSTR strings; NULL when absent. */
static char *
split(const uint8_t *p, size_t n, char *s[NSTR])
{
	char *buf = malloc(n + 1), *q;
	size_t i, k = 0;

	if (buf == NULL)
		return NULL;
	memcpy(buf, p, n);
	buf[n] = '\0';
	for (i = 0; i < NSTR; i++)
		s[i] = NULL;
	for (q = buf; k < NSTR && q <= buf + n; k++) {
		s[k] = q;
		if ((q = memchr(q, 0xff, (size_t)(buf + n - q))) == NULL)
			break;
		*q++ = '\0';
	}
	return buf;
}

static int64_t
num(const uint8_t *d, int i, int present)
{
	int64_t v =
	    (int64_t)((uint64_t)d[2 * i] << 56 | (uint64_t)d[2 * i + 1]);

	return present ? v : -1;
}

static void
fill_rec(struct audit_rec *r, const uint8_t *d, char *s[NSTR])
{
	const char **f[] = {&r->event, &r->method, &r->host, &r->path,
	    &r->decision, &r->rule_file, &r->reason, &r->addr, &r->qtype,
	    &r->answer, &r->secret, &r->error, &r->policy};
	uint8_t m = d[20];
	size_t i;

	audit_rec_init(r, NULL, (uint64_t)d[0] << 56 | d[1] << 8 | d[2]);
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		*f[i] = s[i];
	r->via = m & 1 ? "proxy" : NULL;
	r->port = (int)num(d, 2, m & 2);
	r->status = (int)num(d, 3, m & 4);
	r->bytes_up = num(d, 4, m & 8);
	r->bytes_down = num(d, 5, m & 16);
	r->ms = num(d, 6, m & 32);
	r->count = num(d, 7, m & 64);
	r->rule_line = (unsigned)d[21] << 24 | d[22];
	r->summary = m >> 7;
}

/* The two logs, opened once: with no client, and with one. */
static struct audit *
log_for(int client)
{
	static struct audit *a[2];

	if (a[client] == NULL)
		a[client] = audit_open("/dev/null", RUN_ID, NULL, 0);
	return a[client];
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char want[LINE];
	struct audit_ref_ctx c = {RUN_ID, 0, 0, 0, NULL};
	struct audit_rec r;
	struct audit *a;
	const char *line, *ts;
	char *buf, *s[NSTR];
	json_t *o;
	size_t n, m, i;

	if (size < NUMS || (buf = split(data + NUMS, size - NUMS, s)) == NULL)
		return 0;
	fill_rec(&r, data, s);
	ts = s[13] != NULL ? s[13] : "2026-12-02T12:00:00.000Z";
	check((a = log_for(s[14] != NULL)) != NULL);
	if (s[14] != NULL) {
		c.has_client = 1;
		c.client_uid = data[23];
		c.client_pid = data[3];
		c.client_cmd = s[14];
		check(audit_set_client(
		          a, c.client_uid, c.client_pid, c.client_cmd) == 0);
	}
	n = audit_format_ts(a, &r, ts, &line);
	m = audit_ref_format(&c, &r, ts, want, sizeof(want));
	check(n > 0 && n == m && memcmp(line, want, n) == 0);
	for (i = 0; i + 1 < n; i++)
		check(line[i] >= 0x20 && line[i] < 0x7f);
	check(line[n - 1] == '\n');
	o = json_loadb(line, n - 1, 0, NULL);
	check(json_is_object(o));
	json_decref(o);
	free(buf);
	return 0;
}
