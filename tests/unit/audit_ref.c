/*
 * audit_ref.c: the jansson writer of audit/audit.c as it was at 3baebc3
 * (audit_ref.h), copied unchanged but for the struct audit it read its
 * run id and client from.  Do not "fix" it: it is the reference.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "audit/field.h"
#include "tests/unit/audit_ref.h"

#define AUDIT_LINE_MAX (64 * 1024)
#define MARK "..."
#define MARKLEN (sizeof(MARK) - 1)
#define DUMP_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII)
#define NTRIM FIELD_NCUT

struct trim {
	size_t cap[NTRIM]; /* escaped length allowed */
	size_t len[NTRIM]; /* escaped length written last time */
};

/*
 * Returns the length of the valid UTF-8 sequence of two to four bytes at
 * S (N bytes available), or 0.  Overlong forms, surrogates and code
 * points above U+10FFFF are invalid, as RFC 3629 says.
 */
static size_t
utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len = 0, i;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4;
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (len == 0 || n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/*
 * Returns how many bytes of S (N > 0 available) make the next character.
 * *COPY says whether to copy them, or to write one '?' instead: for a
 * control character (C0, DEL, C1) or a byte that is not valid UTF-8.
 */
static size_t
next_char(const unsigned char *s, size_t n, int *copy)
{
	size_t len;

	if (s[0] >= 0x20 && s[0] < 0x7f) {
		*copy = 1;
		return 1;
	}
	len = utf8_seq(s, n);
	*copy = len > 0 && !(s[0] == 0xc2 && s[1] < 0xa0);
	return len > 0 ? len : 1;
}

/* The length of the character at S (LEN bytes) once jansson escapes it. */
static size_t
escaped_len(const unsigned char *s, size_t len)
{
	if (len == 4)
		return 12; /* a surrogate pair: \uXXXX\uXXXX */
	if (len > 1)
		return 6;
	return s[0] == '"' || s[0] == '\\' ? 2 : 1;
}

/*
 * Writes the sanitised form of IN (INLEN bytes) to OUT, which has room for
 * the smaller of INLEN and CAP, plus a NUL.  CAP bounds the length of the
 * value once escaped in the JSON text, stored in *ESC; no character takes
 * fewer bytes there than in OUT.  When IN does not fit, it is cut at a
 * character boundary and ends in MARK, or is empty when CAP is too small
 * even for that.  Returns the length written to OUT.
 */
static size_t
sanitize(char *out, const char *in, size_t inlen, size_t cap, size_t *esc)
{
	const unsigned char *s = (const unsigned char *)in;
	size_t i = 0, o = 0, e = 0, mark_o = 0, mark_e = 0, len, w;
	int copy;

	for (; i < inlen; i += len) {
		len = next_char(s + i, inlen - i, &copy);
		w = copy ? escaped_len(s + i, len) : 1;
		if (e + w > cap)
			break;
		if (copy)
			memcpy(out + o, s + i, len);
		else
			out[o] = '?';
		o += copy ? len : 1;
		if ((e += w) + MARKLEN <= cap) {
			mark_o = o;
			mark_e = e;
		}
	}
	if (i < inlen) {
		o = mark_o;
		e = mark_e;
		if (cap >= MARKLEN) {
			memcpy(out + o, MARK, MARKLEN);
			o += MARKLEN;
			e += MARKLEN;
		}
	}
	out[o] = '\0';
	*esc = e;
	return o;
}

/*
 * Adds KEY with VAL sanitised, cut at the first byte of CUT and to CAP
 * bytes once escaped; a NULL VAL adds nothing.  Stores the escaped length
 * in *ESC when ESC is not NULL.  Returns 0 or -1.
 */
static int
add_str(json_t *o, const char *key, const char *val, const char *cut,
    size_t cap, size_t *esc)
{
	char *s = NULL;
	size_t n, e = 0;
	int r = 0;

	if (val == NULL)
		goto out;
	r = -1;
	n = strcspn(val, cut);
	if ((s = malloc((n < cap ? n : cap) + 1)) == NULL)
		goto out;
	n = sanitize(s, val, n, cap, &e);
	r = json_object_set_new(o, key, json_stringn(s, n));
out:
	free(s);
	if (esc != NULL)
		*esc = e;
	return r;
}

/* Adds KEY with the number V, unless V is negative.  Returns 0 or -1. */
static int
add_int(json_t *o, const char *key, int64_t v)
{
	if (v < 0)
		return 0;
	return json_object_set_new(o, key, json_integer((json_int_t)v));
}

/* Adds "rule": "FILE:LINE", unless FILE is NULL.  Returns 0 or -1. */
static int
add_rule(json_t *o, const char *file, unsigned line)
{
	char *s = NULL;
	size_t n, e;
	int r = 0;

	if (file == NULL)
		goto out;
	r = -1;
	n = strlen(file);
	if ((s = malloc((n < FIELD_CAP ? n : FIELD_CAP) + 1)) == NULL)
		goto out;
	sanitize(s, file, n, FIELD_CAP, &e);
	r = json_object_set_new(
	    o, field_get(FIELD_RULE)->name, json_sprintf("%s:%u", s, line));
out:
	free(s);
	return r;
}

/* The string field ID of R, or NULL when absent or not a plain string. */
static const char *
str_value(const struct audit_ref_ctx *a, const struct audit_rec *r,
    const char *ts, enum field_id id)
{
	switch (id) {
	case FIELD_TS:
		return ts;
	case FIELD_SANDBOX:
		return a->run_id;
	case FIELD_CLIENT_CMD:
		return a->has_client ? a->client_cmd : NULL;
	case FIELD_POLICY:
		return r->policy;
	case FIELD_EVENT:
		return r->event;
	case FIELD_METHOD:
		return r->method;
	case FIELD_VIA:
		return r->via;
	case FIELD_HOST:
		return r->host;
	case FIELD_PATH:
		return r->path;
	case FIELD_DECISION:
		return r->decision;
	case FIELD_REASON:
		return r->reason;
	case FIELD_ADDR:
		return r->addr;
	case FIELD_QTYPE:
		return r->qtype;
	case FIELD_ANSWER:
		return r->answer;
	case FIELD_SECRET:
		return r->secret;
	case FIELD_ERROR:
		return r->error;
	default:
		return NULL;
	}
}

/* The number field ID of R, negative when absent. */
static int64_t
int_value(
    const struct audit_ref_ctx *a, const struct audit_rec *r, enum field_id id)
{
	switch (id) {
	case FIELD_CLIENT_UID:
		return a->has_client ? (int64_t)a->client_uid : -1;
	case FIELD_CLIENT_PID:
		return a->has_client ? (int64_t)a->client_pid : -1;
	case FIELD_PORT:
		return r->port;
	case FIELD_STATUS:
		return r->status;
	case FIELD_BYTES_UP:
		return r->bytes_up;
	case FIELD_BYTES_DOWN:
		return r->bytes_down;
	case FIELD_MS:
		return r->ms;
	case FIELD_COUNT:
		return r->count;
	default:
		return -1;
	}
}

/*
 * Adds field ID of R, unless it is absent.  A FIELD_CUT string takes the
 * next slot of T, *K.  Returns 0 or -1.
 */
static int
add_field(json_t *o, const struct audit_ref_ctx *a, const struct audit_rec *r,
    const char *ts, enum field_id id, struct trim *t, size_t *k)
{
	const struct field *f = field_get(id);
	const char *v;
	int e;

	if (id == FIELD_CONN) /* in every record */
		return json_object_set_new(
		    o, f->name, json_integer((json_int_t)r->conn));
	if (id == FIELD_RULE)
		return add_rule(o, r->rule_file, r->rule_line);
	if (f->type == FIELD_BOOLEAN)
		return r->summary ? json_object_set_new(o, f->name, json_true())
		                  : 0;
	if (f->type != FIELD_STRING)
		return add_int(o, f->name, int_value(a, r, id));
	v = str_value(a, r, ts, id);
	if (!(f->flags & FIELD_CUT))
		return add_str(o, f->name, v, f->stop, FIELD_CAP, NULL);
	e = add_str(o, f->name, v, f->stop, t->cap[*k], &t->len[*k]);
	++*k;
	return e;
}

/* Adds the fields of R in the order of the table.  Returns 0 or -1. */
static int
add_fields(json_t *o, const struct audit_ref_ctx *a, const struct audit_rec *r,
    const char *ts, struct trim *t)
{
	size_t k = 0;
	int id, e = 0;

	for (id = 0; id < FIELD_N; id++)
		e |= add_field(o, a, r, ts, id, t, &k);
	return e;
}

/*
 * Formats the record into A->buf, with the strings cut as T says, and
 * records their lengths in T.  Returns the length of the JSON text, which
 * fits in A->buf only when it is less than AUDIT_LINE_MAX, or 0 with
 * errno set.
 */
static size_t
format(const struct audit_ref_ctx *a, const struct audit_rec *r, const char *ts,
    struct trim *t, char *buf, size_t size)
{
	json_t *o;
	size_t n = 0;

	if ((o = json_object()) == NULL)
		goto out;
	if (add_fields(o, a, r, ts, t) != 0)
		goto out;
	n = json_dumpb(o, buf, size, DUMP_FLAGS);
out:
	json_decref(o);
	if (n == 0)
		errno = ENOMEM;
	return n;
}

/* Returns the sum of the lengths in T, each capped at LEVEL. */
static size_t
sum_capped(const struct trim *t, size_t level)
{
	size_t i, sum = 0;

	for (i = 0; i < NTRIM; i++)
		sum += t->len[i] < level ? t->len[i] : level;
	return sum;
}

/*
 * Shortens the text by OVER bytes at least, cutting the longest strings
 * to a common length, as long as possible: the largest LEVEL whose capped
 * lengths add up to OVER less than the present ones, found by bisection.
 */
static void
trim_shrink(struct trim *t, size_t over)
{
	size_t total = sum_capped(t, SIZE_MAX), lo = 0, hi = 0, mid, i;

	for (i = 0; i < NTRIM; i++)
		hi = t->len[i] > hi ? t->len[i] : hi;
	while (lo < hi) {
		mid = lo + (hi - lo + 1) / 2;
		if (sum_capped(t, mid) + over <= total)
			lo = mid;
		else
			hi = mid - 1;
	}
	for (i = 0; i < NTRIM; i++)
		if (t->len[i] > lo)
			t->cap[i] = lo;
}

/*
 * Formats R as one line in A->buf.  Returns its length, newline
 * included, or 0 with errno set.
 */
size_t
audit_ref_format(const struct audit_ref_ctx *a, const struct audit_rec *r,
    const char *ts, char *buf, size_t size)
{
	struct trim t;
	size_t n = 0, i;

	for (i = 0; i < NTRIM; i++)
		t.cap[i] = FIELD_CAP;
	for (i = 0; i <= NTRIM; i++) {
		if ((n = format(a, r, ts, &t, buf, size)) == 0)
			return 0;
		if (n + 1 < AUDIT_LINE_MAX)
			break;
		trim_shrink(&t, n + 2 - AUDIT_LINE_MAX);
	}
	if (n + 1 >= AUDIT_LINE_MAX) {
		errno = EMSGSIZE;
		return 0;
	}
	buf[n] = '\n';
	return n + 1;
}

size_t
audit_ref_escape(
    char *out, size_t outlen, const char *in, size_t inlen, size_t cap)
{
	char *s = malloc(inlen + 1), *d = NULL;
	json_t *j = NULL;
	size_t n, e, r = (size_t)-1;

	if (s == NULL)
		goto out;
	n = sanitize(s, in, inlen, cap, &e);
	if ((j = json_stringn(s, n)) == NULL ||
	    (d = json_dumps(j, JSON_ENCODE_ANY | DUMP_FLAGS)) == NULL)
		goto out;
	r = strlen(d) - 2;
	if (r != e)
		r = (size_t)-2; /* the old escaped length was wrong */
	else
		memcpy(out, d + 1, r < outlen ? r : outlen);
out:
	free(d);
	json_decref(j);
	free(s);
	return r;
}
