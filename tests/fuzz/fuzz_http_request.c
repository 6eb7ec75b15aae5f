/*
 * fuzz_http_request.c: libFuzzer target for http_parse_request().
 *
 * The input is a request head, passed in an exact-size heap copy so that
 * a read past LEN is caught.  A complete head must be sound: no longer
 * than the input or HTTP_HEAD_MAX, ending in CRLFCRLF, every pointer
 * inside it, the form and body fitting the method and fields.  Prefixes
 * must agree with the whole: a head found in a prefix is the head of the
 * whole, an error found in a prefix is the error of the whole, and every
 * prefix shorter than a head asks for more.  A violation abort()s.
 *
 *	./fuzz_http_request -max_total_time=60 tests/fuzz/corpus/http_request
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Prefixes tried: all below PREFIX_ALL, then a few far ones. */
#define PREFIX_ALL 64

static void
check(int ok)
{
	if (!ok)
		abort();
}

static int
inside(const char *p, size_t n, const char *buf, size_t len)
{
	return p >= buf && n <= len && p - buf <= (ptrdiff_t)(len - n);
}

static int
is_method(const struct http_head *h, const char *m)
{
	return h->method_len == strlen(m) &&
	    memcmp(h->method, m, h->method_len) == 0;
}

static void
check_head(const struct http_head *h, const char *buf, int r)
{
	size_t len = (size_t)r, i;

	check(h->head_len == len && len >= 4 && len <= HTTP_HEAD_MAX);
	check(memcmp(buf + len - 4, "\r\n\r\n", 4) == 0);
	check(memchr(buf, '\0', len) == NULL);
	check(inside(h->method, h->method_len, buf, len));
	check(inside(h->target, h->target_len, buf, len));
	check(h->method_len > 0 && h->method_len <= 32);
	check(h->target_len > 0 && h->target_len <= 8192);
	check(h->minor == 0 || h->minor == 1);
	check(h->nfields <= HTTP_FIELDS_MAX);
	for (i = 0; i < h->nfields; i++) {
		check(
		    inside(h->fields[i].name, h->fields[i].name_len, buf, len));
		check(inside(
		    h->fields[i].value, h->fields[i].value_len, buf, len));
		check(h->fields[i].name_len > 0);
	}
	check((h->form == HTTP_FORM_AUTHORITY) == is_method(h, "CONNECT"));
	check(h->form != HTTP_FORM_ASTERISK || is_method(h, "OPTIONS"));
	check(h->body != HTTP_BODY_CLOSE);
	check((h->body == HTTP_BODY_LENGTH) == (h->content_length > 0));
	check(h->body != HTTP_BODY_CHUNKED ||
	    (h->minor == 1 && http_field_find(h, "content-length") == NULL));
	check(h->minor == 0 || http_field_find(h, "host") != NULL);
}

static int
parse(const uint8_t *data, size_t n, struct http_head *h, const char **why)
{
	char *buf;
	int r;

	if ((buf = malloc(n > 0 ? n : 1)) == NULL)
		abort();
	memcpy(buf, data, n);
	*why = NULL;
	r = http_parse_request(buf, n, h, why);
	if (r > 0)
		check_head(h, buf, r);
	free(buf);
	return r;
}

static void
check_result(int r, size_t size, const char *why)
{
	check(r >= 0 || r == -400 || r == -431 || r == -501 || r == -505);
	check(r <= (int)size);
	check(r != 0 || size < HTTP_HEAD_MAX);
	check((r < 0) == (why != NULL));
	check(why == NULL || strchr(why, '\n') == NULL);
}

/* A prefix of N bytes agrees with the whole input's result R. */
static void
check_prefix(const uint8_t *data, size_t n, int r)
{
	static struct http_head h;
	const char *why;
	int p = parse(data, n, &h, &why);

	check_result(p, n, why);
	if (r > 0 && n < (size_t)r)
		check(p == 0);
	else if (p != 0)
		check(p == r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct http_head h;
	const char *why;
	size_t n;
	int r;

	r = parse(data, size, &h, &why);
	check_result(r, size, why);
	for (n = 0; n < size && n < PREFIX_ALL; n++)
		check_prefix(data, n, r);
	if (r > 0)
		check_prefix(data, (size_t)r - 1, r);
	if (size > PREFIX_ALL) {
		check_prefix(data, size - 1, r);
		check_prefix(data, size / 2, r);
	}
	return 0;
}
