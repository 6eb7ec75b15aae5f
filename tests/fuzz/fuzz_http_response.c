/*
 * fuzz_http_response.c: libFuzzer target for http_parse_response().
 *
 * The first byte picks the request method (GET, HEAD or CONNECT), the
 * rest is the response head, passed in an exact-size heap copy so that a
 * read past LEN is caught.  A complete head must be sound (inside the
 * input, ending in CRLFCRLF, a status from 100 to 599, the body fitting
 * the method and status) and prefixes must agree with the whole, as in
 * fuzz_http_request.c.  A violation abort()s.
 *
 *	./fuzz_http_response -max_total_time=60 tests/fuzz/corpus/http_response
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define PREFIX_ALL 64

static const char *const methods[] = {"GET", "HEAD", "CONNECT"};

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

static void
check_body(const struct http_head *h, const char *m)
{
	int s = h->status;

	if (strcmp(m, "HEAD") == 0 || s < 200 || s == 204 || s == 304 ||
	    (strcmp(m, "CONNECT") == 0 && s < 300))
		check(h->body == HTTP_BODY_NONE);
	check((h->body == HTTP_BODY_LENGTH) == (h->content_length > 0));
	check(h->body != HTTP_BODY_CLOSE || !h->keep_alive);
	check(h->body != HTTP_BODY_CHUNKED || h->minor == 1);
}

static void
check_head(const struct http_head *h, const char *buf, int r, const char *m)
{
	size_t len = (size_t)r, i;

	check(h->head_len == len && len >= 4 && len <= HTTP_HEAD_MAX);
	check(memcmp(buf + len - 4, "\r\n\r\n", 4) == 0);
	check(memcmp(buf, "HTTP/1.", 7) == 0);
	check(h->status >= 100 && h->status <= 599);
	check(h->minor == 0 || h->minor == 1);
	check(h->nfields <= HTTP_FIELDS_MAX);
	for (i = 0; i < h->nfields; i++) {
		check(
		    inside(h->fields[i].name, h->fields[i].name_len, buf, len));
		check(inside(
		    h->fields[i].value, h->fields[i].value_len, buf, len));
	}
	check_body(h, m);
}

static int
parse(const uint8_t *data, size_t n, const char *m, const char **why)
{
	static struct http_head h;
	char *buf;
	int r;

	if ((buf = malloc(n > 0 ? n : 1)) == NULL)
		abort();
	memcpy(buf, data, n);
	*why = NULL;
	r = http_parse_response(buf, n, m, strlen(m), &h, why);
	check(r >= 0 || r == -502);
	check(r <= (int)n && (r != 0 || n < HTTP_HEAD_MAX));
	check((r < 0) == (*why != NULL));
	if (r > 0)
		check_head(&h, buf, r, m);
	free(buf);
	return r;
}

static void
check_prefix(const uint8_t *data, size_t n, const char *m, int r)
{
	const char *why;
	int p = parse(data, n, m, &why);

	if (r > 0 && n < (size_t)r)
		check(p == 0);
	else if (p != 0)
		check(p == r);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *m, *why;
	size_t n;
	int r;

	if (size == 0)
		return 0;
	m = methods[data[0] % 3];
	data++;
	size--;
	r = parse(data, size, m, &why);
	for (n = 0; n < size && n < PREFIX_ALL; n++)
		check_prefix(data, n, m, r);
	if (r > 0)
		check_prefix(data, (size_t)r - 1, m, r);
	if (size > PREFIX_ALL)
		check_prefix(data, size - 1, m, r);
	return 0;
}
