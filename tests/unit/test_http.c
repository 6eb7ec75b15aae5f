/*
 * test_http.c: request and response heads, framing, chunked bodies.
 *
 * Every input is passed in an exact-size heap copy, so that a read past
 * LEN shows up under AddressSanitizer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proxy/http.h"

#define NELEM(a) (sizeof(a) / sizeof((a)[0]))
/* A literal and its length, NUL bytes included. */
#define S(s) s, sizeof(s) - 1

enum { OK = 0 };

struct req_case {
	const char *in;
	size_t len;
	int ret; /* OK: the whole input is the head */
	const char *why; /* substring of the reason */
	enum http_form form;
	enum http_body body;
	uint64_t cl;
	int minor, keep_alive, expect, upgrade;
};

#define GOOD(s, form, body, cl, minor, ka, ex, up)                             \
	{                                                                      \
		S(s), OK, NULL, form, body, cl, minor, ka, ex, up              \
	}
#define BAD(s, ret, why)                                                       \
	{                                                                      \
		S(s), ret, why, 0, 0, 0, 0, 0, 0, 0                            \
	}
#define H11 " HTTP/1.1\r\nHost: a\r\n"

static const struct req_case req_cases[] = {
    GOOD("GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_NONE, 0, 1, 1, 0, 0),
    GOOD("GET /a/b?c=d&e HTTP/1.1\r\nHost: example.com:8080\r\n"
         "Accept: */*\r\nUser-Agent: curl/8.0\r\n\r\n",
        HTTP_FORM_ORIGIN, HTTP_BODY_NONE, 0, 1, 1, 0, 0),
    GOOD("GET http://example.com:8080/a?b HTTP/1.1\r\n"
         "Host: example.com:8080\r\n\r\n",
        HTTP_FORM_ABSOLUTE, HTTP_BODY_NONE, 0, 1, 1, 0, 0),
    GOOD("GET HTTPS://example.com HTTP/1.1\r\nHost: x\r\n\r\n",
        HTTP_FORM_ABSOLUTE, HTTP_BODY_NONE, 0, 1, 1, 0, 0),
    GOOD("GET http://example.com/ HTTP/1.1\r\nHost:\r\n\r\n",
        HTTP_FORM_ABSOLUTE, HTTP_BODY_NONE, 0, 1, 1, 0, 0),
    GOOD("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
        HTTP_FORM_AUTHORITY, HTTP_BODY_NONE, 0, 1, 1, 0, 0),
    GOOD("CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n",
        HTTP_FORM_AUTHORITY, HTTP_BODY_NONE, 0, 1, 1, 0, 0),
    GOOD("CONNECT 10.0.0.1:65535 HTTP/1.0\r\n\r\n", HTTP_FORM_AUTHORITY,
        HTTP_BODY_NONE, 0, 0, 0, 0, 0),
    GOOD("OPTIONS * HTTP/1.1\r\nHost: example.com\r\n\r\n", HTTP_FORM_ASTERISK,
        HTTP_BODY_NONE, 0, 1, 1, 0, 0),
    GOOD("OPTIONS /x HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_NONE, 0, 1, 1, 0, 0),
    GOOD("PROPFIND /dav HTTP/1.1\r\nHost: a\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_NONE, 0, 1, 1, 0, 0),
    GOOD("GET / HTTP/1.0\r\n\r\n", HTTP_FORM_ORIGIN, HTTP_BODY_NONE, 0, 0, 0, 0,
        0),
    GOOD("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_NONE, 0, 0, 1, 0, 0),
    GOOD("GET / HTTP/1.0\r\nConnection: Keep-Alive, close\r\n\r\n",
        HTTP_FORM_ORIGIN, HTTP_BODY_NONE, 0, 0, 0, 0, 0),
    GOOD("GET /" H11 "Connection: close\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_NONE, 0, 1, 0, 0, 0),
    GOOD("GET /" H11 "Connection: foo\r\nConnection: ,CLOSE ,\r\n\r\n",
        HTTP_FORM_ORIGIN, HTTP_BODY_NONE, 0, 1, 0, 0, 0),
    GOOD("GET /" H11 "Connection: closed\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_NONE, 0, 1, 1, 0, 0),
    GOOD("POST /upload" H11 "Content-Length: 42\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_LENGTH, 42, 1, 1, 0, 0),
    GOOD("POST /" H11 "Content-Length: 0\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_NONE, 0, 1, 1, 0, 0),
    GOOD("POST /" H11 "Content-Length: 007\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_LENGTH, 7, 1, 1, 0, 0),
    GOOD("POST /" H11 "Content-Length: 5\r\nContent-Length: 5\r\n\r\n",
        HTTP_FORM_ORIGIN, HTTP_BODY_LENGTH, 5, 1, 1, 0, 0),
    GOOD("POST /" H11 "Content-Length: 5 , 5\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_LENGTH, 5, 1, 1, 0, 0),
    GOOD("POST /" H11 "Content-Length: 4611686018427387904\r\n\r\n",
        HTTP_FORM_ORIGIN, HTTP_BODY_LENGTH, 1ULL << 62, 1, 1, 0, 0),
    GOOD("POST /" H11 "Transfer-Encoding: chunked\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_CHUNKED, 0, 1, 1, 0, 0),
    GOOD("POST /" H11 "Transfer-Encoding: CHUNKED\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_CHUNKED, 0, 1, 1, 0, 0),
    GOOD("POST /" H11 "Transfer-Encoding: gzip, chunked\r\n\r\n",
        HTTP_FORM_ORIGIN, HTTP_BODY_CHUNKED, 0, 1, 1, 0, 0),
    GOOD("POST /" H11 "Transfer-Encoding: gzip;q=1\r\n"
         "Transfer-Encoding: ,chunked\r\n\r\n",
        HTTP_FORM_ORIGIN, HTTP_BODY_CHUNKED, 0, 1, 1, 0, 0),
    GOOD("PUT /" H11 "Expect: 100-continue\r\nContent-Length: 9\r\n\r\n",
        HTTP_FORM_ORIGIN, HTTP_BODY_LENGTH, 9, 1, 1, 1, 0),
    GOOD("PUT /" H11 "Expect: 100-Continue\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_NONE, 0, 1, 1, 1, 0),
    GOOD("PUT /" H11 "Expect: something-else\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_NONE, 0, 1, 1, 0, 0),
    GOOD("PUT / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_NONE, 0, 0, 0, 0, 0),
    GOOD("GET /chat" H11 "Connection: keep-alive, Upgrade\r\n"
         "Upgrade: websocket\r\n\r\n",
        HTTP_FORM_ORIGIN, HTTP_BODY_NONE, 0, 1, 1, 0, 1),
    GOOD("GET /chat" H11 "Connection: upgrade\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_NONE, 0, 1, 1, 0, 0),
    GOOD("GET /chat" H11 "Upgrade: websocket\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_NONE, 0, 1, 1, 0, 0),
    /* One empty line before the request line is skipped. */
    GOOD("\r\nGET /" H11 "\r\n", HTTP_FORM_ORIGIN, HTTP_BODY_NONE, 0, 1, 1, 0,
        0),
    GOOD("GET /" H11 "X-Empty:\r\nX-Blank: \t \r\nx:y\r\n\r\n",
        HTTP_FORM_ORIGIN, HTTP_BODY_NONE, 0, 1, 1, 0, 0),
    GOOD("GET /" H11 "X-Utf8: caf\xc3\xa9\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_NONE, 0, 1, 1, 0, 0),
    GOOD("GET /" H11 "X-Odd: a \"quoted\" (c) \t v\r\n\r\n", HTTP_FORM_ORIGIN,
        HTTP_BODY_NONE, 0, 1, 1, 0, 0),
    GOOD("GET /%41~!$&'()*+,;=:@[]{}|\\^`\"<> HTTP/1.1\r\nHost: a\r\n\r\n",
        HTTP_FORM_ORIGIN, HTTP_BODY_NONE, 0, 1, 1, 0, 0),

    /* Line syntax. */
    BAD("GET /" H11 "X: a\r\n b\r\n\r\n", -400, "obs-fold"),
    BAD("GET / HTTP/1.1\r\n Host: a\r\n\r\n", -400, "obs-fold"),
    BAD("GET / HTTP/1.1\r\n\tHost: a\r\n\r\n", -400, "obs-fold"),
    BAD("GET / HTTP/1.1\r\nHost : a\r\n\r\n", -400, "whitespace before colon"),
    BAD("GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", -400, "whitespace before colon"),
    BAD("GET / HTTP/1.1\r\nHo st: a\r\n\r\n", -400, "whitespace before colon"),
    BAD("GET / HTTP/1.1\nHost: a\r\n\r\n", -400, "bare LF"),
    BAD("GET /" H11 "X: a\n\r\n", -400, "bare LF"),
    BAD("GET /" H11 "\n", -400, "bare LF"),
    BAD("\nGET /" H11 "\r\n", -400, "bare LF"),
    BAD("GET / HTTP/1.1\r\nHost: a\rb\r\n\r\n", -400, "bare CR"),
    BAD("GET /\r HTTP/1.1\r\nHost: a\r\n\r\n", -400, "bare CR"),
    BAD("GET /" H11 "\r\r\n", -400, "bare CR"),
    BAD("\rGET /" H11 "\r\n", -400, "bare CR"),
    BAD("GET /\0 HTTP/1.1\r\nHost: a\r\n\r\n", -400, "NUL"),
    BAD("GET /" H11 "X: a\0b\r\n\r\n", -400, "NUL"),
    BAD("GET /" H11 "X\0: b\r\n\r\n", -400, "NUL"),
    BAD("GET /" H11 "X(y): z\r\n\r\n", -400, "bad byte in field name"),
    BAD("GET /" H11 "X/y: z\r\n\r\n", -400, "bad byte in field name"),
    BAD("GET /" H11 "X\xc3\xa9: z\r\n\r\n", -400, "bad byte in field name"),
    BAD("GET /" H11 "\"X\": z\r\n\r\n", -400, "bad byte in field name"),
    BAD("GET /" H11 ": z\r\n\r\n", -400, "empty field name"),
    BAD("GET /" H11 "NoColon\r\n\r\n", -400, "without colon"),
    BAD("GET /" H11 "X: a\x01z\r\n\r\n", -400, "control byte"),
    BAD("GET /" H11 "X: a\x7fz\r\n\r\n", -400, "control byte"),
    BAD("GET /" H11 "X: \x1b[1m\r\n\r\n", -400, "control byte"),

    /* Request line. */
    BAD("\r\n\r\nGET /" H11 "\r\n", -400, "empty request line"),
    BAD("GET  /" H11 "\r\n", -400, "empty request target"),
    BAD(" GET /" H11 "\r\n", -400, "bad method"),
    BAD("GET\t/" H11 "\r\n", -400, "bad method"),
    BAD("G(T /" H11 "\r\n", -400, "bad method"),
    BAD("GET\r\nHost: a\r\n\r\n", -400, "bad method"),
    BAD("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456 /" H11 "\r\n", -400,
        "longer than 32"),
    BAD("GET /\r\nHost: a\r\n\r\n", -400, "no HTTP version"),
    BAD("GET / \r\nHost: a\r\n\r\n", -400, "bad HTTP version"),
    BAD("GET / HTTP/1.1 \r\nHost: a\r\n\r\n", -400, "bad HTTP version"),
    BAD("GET /  HTTP/1.1\r\nHost: a\r\n\r\n", -400, "bad HTTP version"),
    BAD("GET / http/1.1\r\nHost: a\r\n\r\n", -400, "bad HTTP version"),
    BAD("GET / HTTP/1.1x\r\nHost: a\r\n\r\n", -400, "bad HTTP version"),
    BAD("GET / HTTP/1.\r\nHost: a\r\n\r\n", -400, "bad HTTP version"),
    BAD("GET / HTTP/\r\nHost: a\r\n\r\n", -400, "bad HTTP version"),
    BAD("GET / HTTP/1.1.1\r\nHost: a\r\n\r\n", -400, "bad HTTP version"),
    BAD("GET / HTTP/2.0\r\nHost: a\r\n\r\n", -505, "unsupported HTTP"),
    BAD("GET / HTTP/2\r\nHost: a\r\n\r\n", -505, "unsupported HTTP"),
    BAD("GET / HTTP/1.2\r\nHost: a\r\n\r\n", -505, "unsupported HTTP"),
    BAD("GET / HTTP/0.9\r\n\r\n", -505, "unsupported HTTP"),
    BAD("GET / HTTP/11.10\r\n\r\n", -505, "unsupported HTTP"),
    BAD("GET /\x80 HTTP/1.1\r\nHost: a\r\n\r\n", -400, "bad byte in request"),
    BAD("GET /\x01 HTTP/1.1\r\nHost: a\r\n\r\n", -400, "bad byte in request"),
    BAD("GET /\t HTTP/1.1\r\nHost: a\r\n\r\n", -400, "bad byte in request"),
    BAD("GET /\x7f HTTP/1.1\r\nHost: a\r\n\r\n", -400, "bad byte in request"),
    BAD("GET /a#b HTTP/1.1\r\nHost: a\r\n\r\n", -400, "fragment"),

    /* Target forms. */
    BAD("CONNECT / HTTP/1.1\r\nHost: a\r\n\r\n", -400, "not host:port"),
    BAD("CONNECT example.com HTTP/1.1\r\nHost: a\r\n\r\n", -400,
        "not host:port"),
    BAD("CONNECT example.com: HTTP/1.1\r\nHost: a\r\n\r\n", -400,
        "not host:port"),
    BAD("CONNECT example.com:0 HTTP/1.1\r\nHost: a\r\n\r\n", -400,
        "not host:port"),
    BAD("CONNECT example.com:65536 HTTP/1.1\r\nHost: a\r\n\r\n", -400,
        "not host:port"),
    BAD("CONNECT example.com:443/ HTTP/1.1\r\nHost: a\r\n\r\n", -400,
        "not host:port"),
    BAD("CONNECT user@example.com:443 HTTP/1.1\r\nHost: a\r\n\r\n", -400,
        "not host:port"),
    BAD("CONNECT http://example.com:443 HTTP/1.1\r\nHost: a\r\n\r\n", -400,
        "not host:port"),
    BAD("CONNECT ::1:443 HTTP/1.1\r\nHost: a\r\n\r\n", -400, "not host:port"),
    BAD("CONNECT [::1]x:443 HTTP/1.1\r\nHost: a\r\n\r\n", -400,
        "not host:port"),
    BAD("CONNECT []:443 HTTP/1.1\r\nHost: a\r\n\r\n", -400, "not host:port"),
    BAD("CONNECT :443 HTTP/1.1\r\nHost: a\r\n\r\n", -400, "not host:port"),
    BAD("CONNECT * HTTP/1.1\r\nHost: a\r\n\r\n", -400, "not host:port"),
    BAD("GET example.com:443 HTTP/1.1\r\nHost: a\r\n\r\n", -400,
        "no allowed form"),
    BAD("GET example.com/ HTTP/1.1\r\nHost: a\r\n\r\n", -400,
        "no allowed form"),
    BAD("GET ftp://example.com/ HTTP/1.1\r\nHost: a\r\n\r\n", -400,
        "no allowed form"),
    BAD("GET http:/example.com/ HTTP/1.1\r\nHost: a\r\n\r\n", -400,
        "no allowed form"),
    BAD("GET http:// HTTP/1.1\r\nHost: a\r\n\r\n", -400, "no allowed form"),
    BAD("GET http:///x HTTP/1.1\r\nHost: a\r\n\r\n", -400, "no allowed form"),
    BAD("GET * HTTP/1.1\r\nHost: a\r\n\r\n", -400, "only for OPTIONS"),
    BAD("connect example.com:443 HTTP/1.1\r\nHost: a\r\n\r\n", -400,
        "no allowed form"),

    /* Host. */
    BAD("GET / HTTP/1.1\r\n\r\n", -400, "no Host"),
    BAD("GET / HTTP/1.1\r\nHost: a\r\nHOST: a\r\n\r\n", -400,
        "more than one Host"),
    BAD("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n", -400,
        "more than one Host"),
    BAD("GET / HTTP/1.1\r\nHost:\r\n\r\n", -400, "empty Host"),
    BAD("OPTIONS * HTTP/1.1\r\nHost:\r\n\r\n", -400, "empty Host"),
    BAD("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", -400, "bad byte in Host"),
    BAD("GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", -400, "bad byte in Host"),
    BAD("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n", -400, "bad byte in Host"),

    /* Content-Length. */
    BAD("POST /" H11 "Content-Length: 5\r\nContent-Length: 6\r\n\r\n", -400,
        "conflicting Content-Length"),
    BAD("POST /" H11 "Content-Length: 5, 6\r\n\r\n", -400,
        "conflicting Content-Length"),
    BAD("POST /" H11 "Content-Length: +5\r\n\r\n", -400, "bad Content-Length"),
    BAD("POST /" H11 "Content-Length: -5\r\n\r\n", -400, "bad Content-Length"),
    BAD("POST /" H11 "Content-Length: 5 5\r\n\r\n", -400, "bad Content-Length"),
    BAD("POST /" H11 "Content-Length: 5a\r\n\r\n", -400, "bad Content-Length"),
    BAD("POST /" H11 "Content-Length: 0x10\r\n\r\n", -400,
        "bad Content-Length"),
    BAD("POST /" H11 "Content-Length: 1.0\r\n\r\n", -400, "bad Content-Length"),
    BAD("POST /" H11 "Content-Length:\r\n\r\n", -400, "bad Content-Length"),
    BAD("POST /" H11 "Content-Length: 5,\r\n\r\n", -400, "bad Content-Length"),
    BAD("POST /" H11 "Content-Length: 5,,5\r\n\r\n", -400,
        "bad Content-Length"),
    BAD("POST /" H11 "Content-Length: 4611686018427387905\r\n\r\n", -400,
        "bad Content-Length"),
    BAD("POST /" H11 "Content-Length: 18446744073709551616\r\n\r\n", -400,
        "bad Content-Length"),
    BAD("POST /" H11 "Content-Length: 00000000000000000001\r\n\r\n", -400,
        "bad Content-Length"),
    BAD("POST /" H11 "Content-Length: 99999999999999999999999\r\n\r\n", -400,
        "bad Content-Length"),

    /* Transfer-Encoding. */
    BAD("POST /" H11 "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n",
        -400, "both Transfer-Encoding and Content-Length"),
    BAD("POST /" H11 "Transfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n",
        -400, "both Transfer-Encoding and Content-Length"),
    BAD("POST /" H11 "Transfer-Encoding: gzip\r\nContent-Length: 3\r\n\r\n",
        -400, "both Transfer-Encoding and Content-Length"),
    BAD("POST /" H11 "Transfer-Encoding: gzip\r\n\r\n", -501,
        "other than chunked"),
    BAD("POST /" H11 "Transfer-Encoding: gzip, deflate\r\n\r\n", -501,
        "other than chunked"),
    BAD("POST /" H11 "Transfer-Encoding: chunked, gzip\r\n\r\n", -400,
        "not the last"),
    BAD("POST /" H11 "Transfer-Encoding: chunked\r\n"
        "Transfer-Encoding: identity\r\n\r\n",
        -400, "not the last"),
    BAD("POST /" H11 "Transfer-Encoding: chunked, chunked\r\n\r\n", -400,
        "more than once"),
    BAD("POST /" H11 "Transfer-Encoding: chunked\r\n"
        "Transfer-Encoding: chunked\r\n\r\n",
        -400, "more than once"),
    BAD("POST /" H11 "Transfer-Encoding: chunked;x=y\r\n\r\n", -400,
        "bad Transfer-Encoding"),
    BAD("POST /" H11 "Transfer-Encoding: chunked x\r\n\r\n", -400,
        "bad Transfer-Encoding"),
    BAD("POST /" H11 "Transfer-Encoding: \"chunked\"\r\n\r\n", -400,
        "bad Transfer-Encoding"),
    BAD("POST /" H11 "Transfer-Encoding: gzip;q=\"1,chunked\"\r\n\r\n", -400,
        "bad Transfer-Encoding"),
    BAD("POST /" H11 "Transfer-Encoding: x\xff, chunked\r\n\r\n", -400,
        "bad Transfer-Encoding"),
    BAD("POST /" H11 "Transfer-Encoding:\r\n\r\n", -400,
        "empty Transfer-Encoding"),
    BAD("POST /" H11 "Transfer-Encoding: , ,\r\n\r\n", -400,
        "empty Transfer-Encoding"),
    BAD("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", -400,
        "HTTP/1.0"),
};

static char *
dup_bytes(const char *s, size_t n)
{
	char *d = malloc(n > 0 ? n : 1);

	assert_non_null(d);
	memcpy(d, s, n);
	return d;
}

/* The head at BUF points into BUF, where the fields match its text. */
static void
check_fields_inside(const struct http_head *h, const char *buf, size_t len)
{
	const struct http_field *f;
	size_t i;

	for (i = 0; i < h->nfields; i++) {
		f = &h->fields[i];
		assert_true(
		    f->name >= buf && f->name + f->name_len <= buf + len);
		assert_true(
		    f->value >= buf && f->value + f->value_len <= buf + len);
		assert_true(f->name_len > 0);
		assert_int_equal(f->name[f->name_len], ':');
		if (f->value_len > 0) {
			assert_true(f->value[0] != ' ' && f->value[0] != '\t');
			assert_true(f->value[f->value_len - 1] != ' ' &&
			    f->value[f->value_len - 1] != '\t');
		}
	}
}

static void
check_request_case(const struct req_case *c)
{
	struct http_head h;
	const char *why = "unset";
	char *buf = dup_bytes(c->in, c->len);
	int r, want = c->ret == OK ? (int)c->len : c->ret;

	r = http_parse_request(buf, c->len, &h, &why);
	if (r != want)
		fail_msg("'%s': got %d (%s), want %d", c->in, r,
		    r < 0 ? why : "-", want);
	if (r < 0) {
		assert_non_null(why);
		if (strstr(why, c->why) == NULL)
			fail_msg(
			    "'%s': reason '%s', want '%s'", c->in, why, c->why);
		assert_null(strchr(why, '\n'));
	} else {
		assert_null(why);
		assert_int_equal(h.head_len, (size_t)r);
		assert_int_equal(h.form, c->form);
		assert_int_equal(h.body, c->body);
		assert_true(h.content_length == c->cl);
		assert_int_equal(h.minor, c->minor);
		if (h.keep_alive != c->keep_alive ||
		    h.expect_continue != c->expect || h.upgrade != c->upgrade)
			fail_msg("'%s': keep-alive %d expect %d upgrade %d",
			    c->in, h.keep_alive, h.expect_continue, h.upgrade);
		check_fields_inside(&h, buf, c->len);
	}
	free(buf);
}

static void
test_request_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(req_cases); i++)
		check_request_case(&req_cases[i]);
}

/* Every proper prefix of a valid head asks for more bytes. */
static void
test_request_prefixes(void **state)
{
	struct http_head h;
	const struct req_case *c;
	const char *why;
	size_t i, n;
	char *buf;

	(void)state;
	for (i = 0; i < NELEM(req_cases); i++) {
		c = &req_cases[i];
		if (c->ret != OK)
			continue;
		for (n = 0; n < c->len; n++) {
			buf = dup_bytes(c->in, n);
			if (http_parse_request(buf, n, &h, &why) != 0)
				fail_msg("'%s': prefix %zu: %s", c->in, n, why);
			free(buf);
		}
	}
}

/* A line already wrong is refused before the head is complete. */
static void
test_request_early_errors(void **state)
{
	static const struct {
		const char *in;
		size_t len;
		const char *why;
	} cases[] = {
	    {S("GET / HTTP/1.1\n"), "bare LF"},
	    {S("GET / HTTP/1.1\r\nHost: a\rX"), "bare CR"},
	    {S("GET / HTTP/1.1\r\nHost: \0"), "NUL"},
	    {S("GET / HTTP/2.0\r\n"), "unsupported"},
	    {S("GARBAGE\r\n"), "bad method"},
	    {S("GET / HTTP/1.1\r\nHost: a\r\n folded\r\n"), "obs-fold"},
	};
	struct http_head h;
	const char *why;
	size_t i;
	char *buf;

	(void)state;
	for (i = 0; i < NELEM(cases); i++) {
		buf = dup_bytes(cases[i].in, cases[i].len);
		assert_true(
		    http_parse_request(buf, cases[i].len, &h, &why) < 0);
		assert_non_null(strstr(why, cases[i].why));
		free(buf);
	}
}

/* Bytes after the head belong to the body or the next request. */
static void
test_request_trailing_bytes(void **state)
{
	static const char in[] = "POST /" H11 "Content-Length: 3\r\n\r\nabc"
	                         "GET /" H11 "\r\n";
	struct http_head h;
	const char *why;
	size_t head = strstr(in, "\r\n\r\n") + 4 - in;
	char *buf = dup_bytes(in, sizeof(in) - 1);

	(void)state;
	assert_int_equal(
	    http_parse_request(buf, sizeof(in) - 1, &h, &why), (int)head);
	assert_int_equal(h.body, HTTP_BODY_LENGTH);
	assert_int_equal(h.content_length, 3);
	assert_int_equal(http_parse_request(buf + head + 3,
	                     sizeof(in) - 1 - head - 3, &h, &why),
	    (int)(sizeof(in) - 1 - head - 3));
	/* A NULL WHY is allowed. */
	assert_int_equal(http_parse_request("GET", 3, &h, NULL), 0);
	assert_int_equal(http_parse_request("GET\n", 4, &h, NULL), -400);
	free(buf);
}

static void
test_request_fields(void **state)
{
	static const char in[] = "GET / HTTP/1.1\r\nHost: a\r\n"
	                         "X-One:  first value \t\r\n"
	                         "x-one: second\r\nEmpty:\r\n\r\n";
	struct http_head h;
	const struct http_field *f;
	const char *why;
	char *buf = dup_bytes(in, sizeof(in) - 1);

	(void)state;
	assert_int_equal(http_parse_request(buf, sizeof(in) - 1, &h, &why),
	    (int)sizeof(in) - 1);
	assert_int_equal(h.nfields, 4);
	assert_int_equal(h.method_len, 3);
	assert_memory_equal(h.method, "GET", 3);
	assert_int_equal(h.target_len, 1);
	assert_non_null(f = http_field_find(&h, "X-ONE"));
	assert_int_equal(f->value_len, 11);
	assert_memory_equal(f->value, "first value", 11);
	assert_non_null(f = http_field_find(&h, "empty"));
	assert_int_equal(f->value_len, 0);
	assert_null(http_field_find(&h, "X-On"));
	assert_null(http_field_find(&h, "X-One-"));
	free(buf);
}

static void
test_list_has(void **state)
{
	(void)state;
	assert_true(http_list_has(S("close"), "close"));
	assert_true(http_list_has(S("Keep-Alive, Upgrade"), "upgrade"));
	assert_true(http_list_has(S(" ,\t, CLOSE\t ,"), "close"));
	assert_true(http_list_has(S("a,,b"), "b"));
	assert_false(http_list_has(S("closed"), "close"));
	assert_false(http_list_has(S("x-close"), "close"));
	assert_false(http_list_has(S("clo se"), "close"));
	assert_false(http_list_has(S(""), "close"));
	assert_false(http_list_has(S(",,"), ""));
	/* The length bounds the list, not a NUL. */
	assert_false(http_list_has("a, close", 4, "close"));
	assert_true(http_list_has("a, close", 8, "close"));
}

#define REQ_START "GET / HTTP/1.1\r\nHost: a\r\n"
#define RESP_START "HTTP/1.1 200 OK\r\nHost: a\r\n"

/* A head of exactly N bytes: START, NFIELDS fields, one padding field. */
static char *
make_head(const char *start, size_t n, size_t nfields)
{
	char *buf = malloc(n), *p = buf;
	size_t i, left;

	assert_non_null(buf);
	memcpy(p, start, strlen(start));
	p += strlen(start);
	for (i = 0; i < nfields; i++) {
		memcpy(p, "X: y\r\n", 6);
		p += 6;
	}
	left = n - (size_t)(p - buf);
	assert_true(left >= 2 + 5);
	memcpy(p, "P: ", 3);
	memset(p + 3, 'v', left - 7);
	memcpy(buf + n - 4, "\r\n\r\n", 4);
	return buf;
}

static void
test_request_limits(void **state)
{
	struct http_head h;
	const char *why;
	char *buf;

	(void)state;
	/* Host, 98 fields, and the padding field: 100 in all. */
	buf = make_head(REQ_START, 1000, 98);
	assert_int_equal(http_parse_request(buf, 1000, &h, &why), 1000);
	assert_int_equal(h.nfields, 100);
	free(buf);
	buf = make_head(REQ_START, 1000, 99);
	assert_int_equal(http_parse_request(buf, 1000, &h, &why), -431);
	assert_non_null(strstr(why, "100 header fields"));
	free(buf);
	/* The 101st field is refused before the head is complete. */
	buf = make_head(REQ_START, 1000, 100);
	assert_int_equal(http_parse_request(buf, 900, &h, &why), -431);
	free(buf);

	buf = make_head(REQ_START, HTTP_HEAD_MAX, 0);
	assert_int_equal(
	    http_parse_request(buf, HTTP_HEAD_MAX, &h, &why), HTTP_HEAD_MAX);
	assert_int_equal(
	    http_parse_request(buf, HTTP_HEAD_MAX - 1, &h, &why), 0);
	free(buf);
	buf = make_head(REQ_START, HTTP_HEAD_MAX + 1, 0);
	assert_int_equal(
	    http_parse_request(buf, HTTP_HEAD_MAX + 1, &h, &why), -431);
	assert_non_null(strstr(why, "64 KiB"));
	assert_int_equal(
	    http_parse_request(buf, HTTP_HEAD_MAX, &h, &why), -431);
	assert_int_equal(
	    http_parse_request(buf, HTTP_HEAD_MAX - 1, &h, &why), 0);
	free(buf);
}

static void
test_request_line_limits(void **state)
{
	static const char pre[] = "GET /",
	                  post[] = " HTTP/1.1\r\nHost: a\r\n\r\n";
	char *buf = malloc(9000);
	struct http_head h;
	const char *why;
	size_t n, t;

	(void)state;
	assert_non_null(buf);
	for (t = 8191; t <= 8192; t++) {
		memcpy(buf, pre, 5);
		memset(buf + 5, 'a', t - 1);
		memcpy(buf + 4 + t, post, sizeof(post) - 1);
		n = 4 + t + sizeof(post) - 1;
		assert_int_equal(http_parse_request(buf, n, &h, &why), (int)n);
		assert_int_equal(h.target_len, t);
	}
	memset(buf + 5, 'a', 8192);
	memcpy(buf + 4 + 8193, post, sizeof(post) - 1);
	n = 4 + 8193 + sizeof(post) - 1;
	assert_int_equal(http_parse_request(buf, n, &h, &why), -400);
	assert_non_null(strstr(why, "8 KiB"));

	n = strlen("ABCDEFGHIJKLMNOPQRSTUVWXYZ012345 /" H11 "\r\n");
	memcpy(buf, "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345 /" H11 "\r\n", n);
	assert_int_equal(http_parse_request(buf, n, &h, &why), (int)n);
	assert_int_equal(h.method_len, 32);
	free(buf);
}

struct resp_case {
	const char *in;
	size_t len;
	const char *method;
	int ret; /* OK or -502 */
	const char *why;
	int status;
	enum http_body body;
	uint64_t cl;
	int keep_alive, upgrade;
};

#define RGOOD(s, m, status, body, cl, ka, up)                                  \
	{                                                                      \
		S(s), m, OK, NULL, status, body, cl, ka, up                    \
	}
#define RBAD(s, m, why)                                                        \
	{                                                                      \
		S(s), m, -502, why, 0, 0, 0, 0, 0                              \
	}

static const struct resp_case resp_cases[] = {
    RGOOD("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "GET", 200,
        HTTP_BODY_LENGTH, 5, 1, 0),
    RGOOD("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "GET", 200,
        HTTP_BODY_CHUNKED, 0, 1, 0),
    RGOOD("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "GET",
        200, HTTP_BODY_CHUNKED, 0, 1, 0),
    RGOOD("HTTP/1.1 200 OK\r\nServer: x\r\n\r\n", "GET", 200, HTTP_BODY_CLOSE,
        0, 0, 0),
    RGOOD("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", "GET", 200,
        HTTP_BODY_CLOSE, 0, 0, 0),
    RGOOD("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", "GET",
        200, HTTP_BODY_CLOSE, 0, 0, 0),
    RGOOD("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", "GET", 200,
        HTTP_BODY_NONE, 0, 1, 0),
    RGOOD("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\n",
        "POST", 200, HTTP_BODY_LENGTH, 5, 0, 0),
    RGOOD(
        "HTTP/1.1 204 No Content\r\n\r\n", "GET", 204, HTTP_BODY_NONE, 0, 1, 0),
    RGOOD("HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n", "GET", 304,
        HTTP_BODY_NONE, 0, 1, 0),
    RGOOD("HTTP/1.1 100 Continue\r\n\r\n", "PUT", 100, HTTP_BODY_NONE, 0, 1, 0),
    RGOOD("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\n"
          "Upgrade: websocket\r\n\r\n",
        "GET", 101, HTTP_BODY_NONE, 0, 1, 1),
    RGOOD("HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n", "HEAD", 200,
        HTTP_BODY_NONE, 0, 1, 0),
    RGOOD("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "HEAD", 200,
        HTTP_BODY_NONE, 0, 1, 0),
    RGOOD("HTTP/1.1 200 Connection established\r\n\r\n", "CONNECT", 200,
        HTTP_BODY_NONE, 0, 1, 0),
    RGOOD("HTTP/1.1 407 Auth\r\nContent-Length: 3\r\n\r\n", "CONNECT", 407,
        HTTP_BODY_LENGTH, 3, 1, 0),
    RGOOD("HTTP/1.1 502 Bad Gateway\r\n\r\n", "CONNECT", 502, HTTP_BODY_CLOSE,
        0, 0, 0),
    RGOOD("HTTP/1.1 200\r\nContent-Length: 1\r\n\r\n", "GET", 200,
        HTTP_BODY_LENGTH, 1, 1, 0),
    RGOOD("HTTP/1.1 200 \r\nContent-Length: 1\r\n\r\n", "GET", 200,
        HTTP_BODY_LENGTH, 1, 1, 0),
    RGOOD("HTTP/1.1 404 Not \xc3\xa9 Found\t\r\nContent-Length: 1\r\n\r\n",
        "GET", 404, HTTP_BODY_LENGTH, 1, 1, 0),
    RGOOD("HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\n", "GET", 200,
        HTTP_BODY_LENGTH, 5, 0, 0),
    RGOOD("HTTP/1.0 200 OK\r\nContent-Length: 5\r\n"
          "Connection: keep-alive\r\n\r\n",
        "GET", 200, HTTP_BODY_LENGTH, 5, 1, 0),
    RGOOD("HTTP/1.1 599 X\r\nContent-Length: 1\r\n\r\n", "GET", 599,
        HTTP_BODY_LENGTH, 1, 1, 0),

    RBAD("HTTP/1.1 20 OK\r\n\r\n", "GET", "bad status code"),
    RBAD("HTTP/1.1 2000 OK\r\n\r\n", "GET", "bad status code"),
    RBAD("HTTP/1.1 abc OK\r\n\r\n", "GET", "bad status code"),
    RBAD("HTTP/1.1  200 OK\r\n\r\n", "GET", "bad status code"),
    RBAD("HTTP/1.1 +20 OK\r\n\r\n", "GET", "bad status code"),
    RBAD("HTTP/1.1 \r\n\r\n", "GET", "bad status code"),
    RBAD("HTTP/1.1\r\n\r\n", "GET", "bad HTTP version"),
    RBAD("HTTP/1.1200 OK\r\n\r\n", "GET", "bad HTTP version"),
    RBAD("http/1.1 200 OK\r\n\r\n", "GET", "bad HTTP version"),
    RBAD("HTTP/2 200 OK\r\n\r\n", "GET", "bad HTTP version"),
    RBAD("HTTP/1.1\t200 OK\r\n\r\n", "GET", "bad HTTP version"),
    RBAD("ICY 200 OK\r\n\r\n", "GET", "bad HTTP version"),
    RBAD("\r\nHTTP/1.1 200 OK\r\n\r\n", "GET", "bad HTTP version"),
    RBAD("HTTP/1.1 600 Nope\r\n\r\n", "GET", "out of range"),
    RBAD("HTTP/1.1 099 Nope\r\n\r\n", "GET", "out of range"),
    RBAD("HTTP/1.1 200 O\x01K\r\n\r\n", "GET", "control byte"),
    RBAD("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
         "Transfer-Encoding: chunked\r\n\r\n",
        "GET", "both Transfer-Encoding and Content-Length"),
    RBAD("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 7\r\n\r\n",
        "GET", "conflicting"),
    RBAD("HTTP/1.1 304 OK\r\nContent-Length: x\r\n\r\n", "GET",
        "bad Content-Length"),
    RBAD("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
        "GET", "more than once"),
    RBAD("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", "GET",
        "HTTP/1.0"),
    RBAD("HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n", "GET", "obs-fold"),
    RBAD("HTTP/1.1 200 OK\nX: a\r\n\r\n", "GET", "bare LF"),
    RBAD("HTTP/1.1 200 OK\r\nX: a\r\r\n\r\n", "GET", "bare CR"),
    RBAD("HTTP/1.1 200 OK\r\nX : a\r\n\r\n", "GET", "whitespace"),
    RBAD("HTTP/1.1 200 OK\r\nX: \0\r\n\r\n", "GET", "NUL"),
};

static void
check_response_case(const struct resp_case *c)
{
	struct http_head h;
	const char *why = "unset";
	char *buf = dup_bytes(c->in, c->len);
	int r, want = c->ret == OK ? (int)c->len : c->ret;

	r = http_parse_response(
	    buf, c->len, c->method, strlen(c->method), &h, &why);
	if (r != want)
		fail_msg("'%s': got %d (%s), want %d", c->in, r,
		    r < 0 ? why : "-", want);
	if (r < 0) {
		if (strstr(why, c->why) == NULL)
			fail_msg(
			    "'%s': reason '%s', want '%s'", c->in, why, c->why);
		goto out;
	}
	assert_null(why);
	assert_int_equal(h.status, c->status);
	if (h.body != c->body || h.content_length != c->cl ||
	    h.keep_alive != c->keep_alive || h.upgrade != c->upgrade)
		fail_msg("'%s': body %d length %llu keep-alive %d upgrade %d",
		    c->in, h.body, (unsigned long long)h.content_length,
		    h.keep_alive, h.upgrade);
	check_fields_inside(&h, buf, c->len);
out:
	free(buf);
}

static void
test_response_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < NELEM(resp_cases); i++)
		check_response_case(&resp_cases[i]);
}

static void
test_response_prefixes(void **state)
{
	const struct resp_case *c;
	struct http_head h;
	const char *why;
	size_t i, n;
	char *buf;

	(void)state;
	for (i = 0; i < NELEM(resp_cases); i++) {
		c = &resp_cases[i];
		if (c->ret != OK)
			continue;
		for (n = 0; n < c->len; n++) {
			buf = dup_bytes(c->in, n);
			if (http_parse_response(buf, n, "GET", 3, &h, &why))
				fail_msg("'%s': prefix %zu: %s", c->in, n, why);
			free(buf);
		}
	}
}

static void
test_response_limits(void **state)
{
	struct http_head h;
	const char *why;
	char *buf;

	(void)state;
	buf = make_head(RESP_START, HTTP_HEAD_MAX, 0);
	assert_int_equal(
	    http_parse_response(buf, HTTP_HEAD_MAX, "GET", 3, &h, &why),
	    HTTP_HEAD_MAX);
	free(buf);
	buf = make_head(RESP_START, HTTP_HEAD_MAX + 1, 0);
	assert_int_equal(
	    http_parse_response(buf, HTTP_HEAD_MAX + 1, "GET", 3, &h, &why),
	    -502);
	assert_non_null(strstr(why, "64 KiB"));
	free(buf);
	buf = make_head(RESP_START, 2000, 99);
	assert_int_equal(
	    http_parse_response(buf, 2000, "GET", 3, &h, &why), -502);
	assert_non_null(strstr(why, "100 header fields"));
	free(buf);
	/* No method known: a body by the fields alone. */
	assert_int_equal(http_parse_response(
	                     S("HTTP/1.1 200 OK\r\n\r\n"), NULL, 0, &h, &why),
	    19);
	assert_int_equal(h.body, HTTP_BODY_CLOSE);
}

struct chunk_case {
	const char *in;
	size_t len;
	ssize_t consumed; /* -1: error */
	int done;
	const char *why;
};

#define CGOOD(s, consumed, done)                                               \
	{                                                                      \
		S(s), consumed, done, NULL                                     \
	}
#define CBAD(s, why)                                                           \
	{                                                                      \
		S(s), -1, 0, why                                               \
	}

static const struct chunk_case chunk_cases[] = {
    CGOOD("5\r\nhello\r\n0\r\n\r\n", 15, 1),
    CGOOD("5\r\nhello\r\n0\r\n\r\nGET / HTTP/1.1\r\n", 15, 1),
    CGOOD("3\r\nabc\r\nA\r\n0123456789\r\n0\r\n\r\n", 28, 1),
    CGOOD("a\r\n0123456789\r\n00\r\n\r\n", 21, 1),
    CGOOD("005\r\nhello\r\n0\r\n\r\n", 17, 1),
    CGOOD("000000000000000\r\n\r\n", 19, 1),
    CGOOD("5;name=value\r\nhello\r\n0;last\r\n\r\n", 31, 1),
    CGOOD("5 ;a=\"x y\"\t; b\r\nhello\r\n0\t;x\r\n\r\n", 31, 1),
    CGOOD("5;\xc3\xa9\r\nhello\r\n0\r\n\r\n", 18, 1),
    CGOOD("0\r\nX-Sum: abc\r\nY:\r\n\r\n", 21, 1),
    CGOOD("0\r\nX-Sum: abc\r\n\r\n\r\n", 17, 1),
    CGOOD("5\r\nhel", 6, 0),
    CGOOD("5\r\nhello\r\n", 10, 0),
    CGOOD("5\r\nhello\r\n0\r\n\r", 14, 0),
    CGOOD("4\r\n\r\n\r\n\r\n0\r\n\r\n", 14, 1),
    CGOOD("", 0, 0),

    CBAD("g\r\nhello\r\n0\r\n\r\n", "not hex"),
    CBAD("0x5\r\nhello\r\n0\r\n\r\n", "not hex"),
    CBAD("-5\r\nhello\r\n0\r\n\r\n", "not hex"),
    CBAD("+5\r\nhello\r\n0\r\n\r\n", "not hex"),
    CBAD(" 5\r\nhello\r\n0\r\n\r\n", "not hex"),
    CBAD("\r\nhello\r\n0\r\n\r\n", "not hex"),
    CBAD(";x\r\nhello\r\n0\r\n\r\n", "not hex"),
    CBAD("5 \r\nhello\r\n0\r\n\r\n", "blank after chunk size"),
    CBAD("5 x\r\nhello\r\n0\r\n\r\n", "blank after chunk size"),
    CBAD("5\r\nhelloX\r\n0\r\n\r\n", "no CRLF after chunk data"),
    CBAD("5\r\nhello\n0\r\n\r\n", "no CRLF after chunk data"),
    CBAD("5\r\nhello\rX0\r\n\r\n", "no CRLF after chunk data"),
    CBAD("5\r\nhello0\r\n\r\n", "no CRLF after chunk data"),
    CBAD("5\nhello\r\n0\r\n\r\n", "bare LF"),
    CBAD("5;x\nhello\r\n0\r\n\r\n", "bare LF"),
    CBAD("5\rhello\r\n0\r\n\r\n", "bare CR"),
    CBAD("5;a\x01\r\nhello\r\n0\r\n\r\n", "control byte"),
    CBAD("5;a\0\r\nhello\r\n0\r\n\r\n", "control byte"),
    CBAD("1000000000000000\r\n", "over 2^60"),
    CBAD("FFFFFFFFFFFFFFFFF\r\n", "over 2^60"),
    CBAD("0000000000000000\r\n\r\n", "over 2^60"),
    CBAD("0\r\nX\r\n\r\n", "bad trailer field name"),
    CBAD("0\r\nX : a\r\n\r\n", "bad trailer field name"),
    CBAD("0\r\n: a\r\n\r\n", "bad trailer field name"),
    CBAD("0\r\nX: a\r\n b\r\n\r\n", "obs-fold"),
    CBAD("0\r\nX: a\n\r\n", "bare LF"),
    CBAD("0\r\nX: a\rb\r\n\r\n", "bare CR in trailer"),
    CBAD("0\r\nX: a\x7f\r\n\r\n", "control byte"),
    CBAD("0\r\n\n", "bare LF"),
    CBAD("0\r\nX\n", "bare LF"),
    CBAD("0\r\n\rX", "bare CR after trailer"),
};

/* Feeds C->in in pieces of at most STEP bytes, as a proxy would. */
static ssize_t
feed(const struct chunk_case *c, size_t step, int *done, const char **why)
{
	struct http_chunked ch;
	size_t off = 0, n;
	ssize_t r, total = 0;
	char *buf;

	http_chunked_init(&ch);
	*done = 0;
	do {
		n = c->len - off < step ? c->len - off : step;
		buf = dup_bytes(c->in + off, n);
		r = http_chunked_scan(&ch, buf, n, done, why);
		free(buf);
		if (r < 0)
			return -1;
		assert_true((size_t)r <= n);
		total += r;
		off += n;
		if (!*done)
			assert_int_equal((size_t)r, n);
	} while (!*done && off < c->len);
	return total;
}

static void
test_chunked_table(void **state)
{
	static const size_t steps[] = {SIZE_MAX, 1, 2, 3, 7};
	const struct chunk_case *c;
	const char *why;
	size_t i, s;
	ssize_t r;
	int done;

	(void)state;
	for (i = 0; i < NELEM(chunk_cases); i++) {
		c = &chunk_cases[i];
		for (s = 0; s < NELEM(steps); s++) {
			why = NULL;
			r = feed(c, steps[s], &done, &why);
			if (r != c->consumed || (r >= 0 && done != c->done))
				fail_msg("'%s' step %zu: got %zd done %d (%s)",
				    c->in, steps[s], r, done,
				    why != NULL ? why : "-");
			if (r < 0 && strstr(why, c->why) == NULL)
				fail_msg("'%s': reason '%s', want '%s'", c->in,
				    why, c->why);
		}
	}
}

/* After the end or an error, the scanner stays where it is. */
static void
test_chunked_sticky(void **state)
{
	struct http_chunked ch;
	const char *why;
	int done;

	(void)state;
	http_chunked_init(&ch);
	assert_int_equal(
	    http_chunked_scan(&ch, S("0\r\n\r\n"), &done, &why), 5);
	assert_true(done);
	assert_int_equal(http_chunked_scan(&ch, S("1\r\nx"), &done, &why), 0);
	assert_true(done);
	http_chunked_init(&ch);
	assert_int_equal(http_chunked_scan(&ch, S("x"), &done, &why), -1);
	assert_int_equal(
	    http_chunked_scan(&ch, S("0\r\n\r\n"), &done, &why), -1);
	assert_false(done);
	assert_int_equal(http_chunked_scan(&ch, S("1"), &done, NULL), -1);
}

/* A size line of LINE bytes (without CRLF), then an empty last chunk. */
static ssize_t
scan_size_line(size_t line, const char **why)
{
	char *buf = malloc(line + 7);
	struct http_chunked ch;
	ssize_t r;
	int done;

	assert_non_null(buf);
	memcpy(buf, "0;", 2);
	memset(buf + 2, 'e', line - 2);
	memcpy(buf + line, "\r\n\r\n", 4);
	http_chunked_init(&ch);
	r = http_chunked_scan(&ch, buf, line + 4, &done, why);
	assert_true(r < 0 || done);
	free(buf);
	return r;
}

/* A trailer of NLINES lines of LINE bytes each (without CRLF). */
static ssize_t
scan_trailer(size_t line, size_t nlines, const char **why)
{
	size_t n = 3 + nlines * (line + 2) + 2, i;
	char *buf = malloc(n), *p = buf;
	struct http_chunked ch;
	ssize_t r;
	int done;

	assert_non_null(buf);
	memcpy(p, "0\r\n", 3);
	p += 3;
	for (i = 0; i < nlines; i++) {
		memcpy(p, "X:", 2);
		memset(p + 2, 'v', line - 2);
		memcpy(p + line, "\r\n", 2);
		p += line + 2;
	}
	memcpy(p, "\r\n", 2);
	http_chunked_init(&ch);
	r = http_chunked_scan(&ch, buf, n, &done, why);
	assert_true(r < 0 || (done && (size_t)r == n));
	free(buf);
	return r;
}

static void
test_chunked_limits(void **state)
{
	const char *why;

	(void)state;
	assert_int_equal(scan_size_line(4096, &why), 4096 + 4);
	assert_int_equal(scan_size_line(4097, &why), -1);
	assert_non_null(strstr(why, "size line over 4 KiB"));
	assert_int_equal(scan_trailer(4096, 1, &why), 3 + 4098 + 2);
	assert_int_equal(scan_trailer(4097, 1, &why), -1);
	assert_non_null(strstr(why, "trailer line over 4 KiB"));
	/* 8 lines of 2046 + 2 bytes and the final CRLF: 16386 bytes. */
	assert_int_equal(scan_trailer(2046, 7, &why), 3 + 7 * 2048 + 2);
	assert_int_equal(scan_trailer(2045, 8, &why), 3 + 8 * 2047 + 2);
	assert_int_equal(scan_trailer(2046, 8, &why), -1);
	assert_non_null(strstr(why, "trailer section over 16 KiB"));
}

/* The largest size is accepted, and the data count goes down from it. */
static void
test_chunked_big_size(void **state)
{
	struct http_chunked ch;
	const char *why;
	int done;

	(void)state;
	http_chunked_init(&ch);
	assert_int_equal(
	    http_chunked_scan(&ch, S("fffffffffffffff\r\nabc"), &done, &why),
	    20);
	assert_false(done);
	assert_true(ch.remaining == 0xfffffffffffffffULL - 3);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_request_table),
	    cmocka_unit_test(test_request_prefixes),
	    cmocka_unit_test(test_request_early_errors),
	    cmocka_unit_test(test_request_trailing_bytes),
	    cmocka_unit_test(test_request_fields),
	    cmocka_unit_test(test_list_has),
	    cmocka_unit_test(test_request_limits),
	    cmocka_unit_test(test_request_line_limits),
	    cmocka_unit_test(test_response_table),
	    cmocka_unit_test(test_response_prefixes),
	    cmocka_unit_test(test_response_limits),
	    cmocka_unit_test(test_chunked_table),
	    cmocka_unit_test(test_chunked_sticky),
	    cmocka_unit_test(test_chunked_limits),
	    cmocka_unit_test(test_chunked_big_size),
	};

	return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
