/*
 * test_peek.c: the first bytes of a captured connection (proxy/peek.c):
 * real ClientHellos made by OpenSSL through memory BIOs (TLS 1.3 and 1.2,
 * a name, none, an address), each cut at every length; hand-made hellos
 * whose lengths do not add up or whose server_name is not one host_name;
 * HTTP method tokens; other bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "proxy/peek.h"

/*
 * The first flight of an OpenSSL client naming SNI (none when NULL), of
 * at most TLS version MAXVER, into OUT; returns its length.
 */
static size_t
openssl_hello(const char *sni, int maxver, uint8_t *out, size_t outsz)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl;
	BIO *rb, *wb;
	int n;

	assert_non_null(ctx);
	assert_int_equal(SSL_CTX_set_max_proto_version(ctx, maxver), 1);
	assert_non_null(ssl = SSL_new(ctx));
	rb = BIO_new(BIO_s_mem());
	wb = BIO_new(BIO_s_mem());
	assert_true(rb != NULL && wb != NULL);
	SSL_set_bio(ssl, rb, wb);
	if (sni != NULL)
		assert_int_equal(SSL_set_tlsext_host_name(ssl, sni), 1);
	SSL_set_connect_state(ssl);
	assert_int_equal(SSL_do_handshake(ssl), -1);
	assert_int_equal(SSL_get_error(ssl, -1), SSL_ERROR_WANT_READ);
	n = BIO_read(wb, out, (int)outsz);
	assert_true(n > 9);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	ERR_clear_error();
	return (size_t)n;
}

/* Every proper prefix of a whole hello is "more", and TLS from 2 bytes. */
static void
check_prefixes(const uint8_t *p, size_t n)
{
	struct target_host h;
	size_t i;

	for (i = 0; i < n; i++) {
		assert_int_equal(peek_sni(p, i, &h), PEEK_SNI_MORE);
		assert_int_equal(
		    peek_classify(p, i), i < 2 ? PEEK_MORE : PEEK_TLS);
	}
}

static void
test_openssl_hellos(void **state)
{
	static const int versions[] = {TLS1_3_VERSION, TLS1_2_VERSION};
	uint8_t buf[PEEK_MAX + 64];
	struct target_host h;
	size_t n, i;

	(void)state;
	for (i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		n = openssl_hello(
		    "Www.Example.COM.", versions[i], buf, sizeof(buf));
		assert_int_equal(peek_classify(buf, n), PEEK_TLS);
		assert_int_equal(peek_sni(buf, n, &h), PEEK_SNI_FOUND);
		assert_int_equal(h.kind, TARGET_NAME);
		assert_string_equal(h.name, "www.example.com");
		check_prefixes(buf, n);
		/* What follows the first record is not the hello's business. */
		memcpy(buf + n, "\x17\x03\x03\x00\x01x", 6);
		assert_int_equal(peek_sni(buf, n + 6, &h), PEEK_SNI_FOUND);

		n = openssl_hello(NULL, versions[i], buf, sizeof(buf));
		assert_int_equal(peek_sni(buf, n, &h), PEEK_SNI_NONE);
		check_prefixes(buf, n);
	}
}

static void
test_address_sni(void **state)
{
	uint8_t buf[PEEK_MAX];
	struct target_host h;
	size_t n;

	(void)state;
	n = openssl_hello("203.0.113.7", TLS1_3_VERSION, buf, sizeof(buf));
	assert_int_equal(peek_sni(buf, n, &h), PEEK_SNI_FOUND);
	assert_int_equal(h.kind, TARGET_V4);
	assert_string_equal(h.name, "203.0.113.7");
	n = openssl_hello("2001:DB8::7", TLS1_3_VERSION, buf, sizeof(buf));
	assert_int_equal(peek_sni(buf, n, &h), PEEK_SNI_FOUND);
	assert_int_equal(h.kind, TARGET_V6);
	assert_string_equal(h.name, "2001:db8::7");
}

/* Appends the LEN bytes at S. */
static size_t
put(uint8_t *b, size_t at, const void *s, size_t len)
{
	memcpy(b + at, s, len);
	return at + len;
}

static size_t
put16(uint8_t *b, size_t at, size_t v)
{
	b[at] = (uint8_t)(v >> 8);
	b[at + 1] = (uint8_t)v;
	return at + 2;
}

/* A server_name extension holding one name of TYPE (NLEN bytes). */
static size_t
sni_ext(uint8_t *e, int type, const char *name, size_t nlen)
{
	size_t at = put16(e, 0, 0);

	at = put16(e, at, nlen + 5);
	at = put16(e, at, nlen + 3);
	e[at++] = (uint8_t)type;
	at = put16(e, at, nlen);
	return put(e, at, name, nlen);
}

/*
 * A TLS 1.2 ClientHello record with the extension block EXT (EXTLEN
 * bytes; no block at all when EXT is NULL).  Offsets: record length 3,
 * handshake length 6, session id length 43, cipher suites 44, extension
 * block length HELLO_EXTS, extensions from HELLO_EXTS + 2.
 */
#define HELLO_EXTS 50
static size_t
hello(uint8_t *b, const uint8_t *ext, size_t extlen)
{
	static const uint8_t head[] = {
	    0x16, 0x03, 0x01, 0, 0, 0x01, 0, 0, 0, 0x03, 0x03};
	size_t at = put(b, 0, head, sizeof(head));

	memset(b + at, 0x5a, 32);
	at += 32;
	b[at++] = 0; /* session id */
	at = put(b, at, "\x00\x02\x13\x01\x01\x00", 6);
	if (ext != NULL) {
		at = put16(b, at, extlen);
		at = put(b, at, ext, extlen);
	}
	put16(b, 3, at - 5);
	b[6] = 0;
	put16(b, 7, at - 9);
	return at;
}

static int
sni_of(const uint8_t *ext, size_t extlen, struct target_host *h)
{
	uint8_t b[PEEK_MAX];

	return peek_sni(b, hello(b, ext, extlen), h);
}

static void
test_handmade_hellos(void **state)
{
	uint8_t e[600], b[PEEK_MAX];
	struct target_host h;
	size_t n, m;

	(void)state;
	n = sni_ext(e, 0, "a.test", 6);
	assert_int_equal(sni_of(e, n, &h), PEEK_SNI_FOUND);
	assert_string_equal(h.name, "a.test");
	/* Other extensions around it, and an empty one, are read past. */
	m = put(e, n, "\x00\x10\x00\x00\xfe\x0d\x00\x02zz", 10);
	assert_int_equal(sni_of(e, m, &h), PEEK_SNI_FOUND);
	assert_int_equal(sni_of(e + n, m - n, &h), PEEK_SNI_NONE);
	assert_int_equal(sni_of(e, 0, &h), PEEK_SNI_NONE);
	assert_int_equal(sni_of(NULL, 0, &h), PEEK_SNI_NONE);
	/* Two server_name extensions. */
	m = sni_ext(e + n, 0, "b.test", 6);
	assert_int_equal(sni_of(e, n + m, &h), PEEK_SNI_BAD);
	/* A name of another type, none, two, empty, NUL, not a name. */
	assert_int_equal(
	    sni_of(e, sni_ext(e, 1, "a.test", 6), &h), PEEK_SNI_BAD);
	assert_int_equal(sni_of(e, sni_ext(e, 0, "", 0), &h), PEEK_SNI_BAD);
	assert_int_equal(
	    sni_of(e, sni_ext(e, 0, "a\0.test", 7), &h), PEEK_SNI_BAD);
	assert_int_equal(
	    sni_of(e, sni_ext(e, 0, "a..test", 7), &h), PEEK_SNI_BAD);
	assert_int_equal(
	    sni_of(e, sni_ext(e, 0, "caf\xc3\xa9.test", 10), &h), PEEK_SNI_BAD);
	assert_int_equal(
	    sni_of(e, sni_ext(e, 0, "a b.test", 8), &h), PEEK_SNI_BAD);
	assert_int_equal(sni_of(e, 4, &h), PEEK_SNI_BAD);
	n = put(e, 0, "\x00\x00\x00\x00", 4); /* no list at all */
	assert_int_equal(sni_of(e, n, &h), PEEK_SNI_BAD);
	n = put(
	    e, 0, "\x00\x00\x00\x0b\x00\x09\x00\x00\x02xy\x00\x00\x01z", 15);
	assert_int_equal(sni_of(e, n, &h), PEEK_SNI_BAD); /* two names */
	n = put(e, 0, "\x00\x00\x00\x02\x00\x00", 6); /* empty list */
	assert_int_equal(sni_of(e, n, &h), PEEK_SNI_BAD);

	/* Lengths that do not add up, each field in turn. */
	n = sni_ext(e, 0, "a.test", 6);
	m = hello(b, e, n);
	assert_int_equal(peek_sni(b, m, &h), PEEK_SNI_FOUND);
	b[4]++; /* record one byte longer than the hello */
	assert_int_equal(peek_sni(b, m + 1, &h), PEEK_SNI_BAD);
	b[4] -= 2;
	assert_int_equal(peek_sni(b, m, &h), PEEK_SNI_BAD);
	b[4]++;
	b[8]++; /* handshake longer than the record */
	assert_int_equal(peek_sni(b, m, &h), PEEK_SNI_BAD);
	b[8]--;
	b[43] = 33; /* session id */
	assert_int_equal(peek_sni(b, m, &h), PEEK_SNI_BAD);
	b[43] = 0;
	b[45] = 3; /* odd cipher suites */
	assert_int_equal(peek_sni(b, m, &h), PEEK_SNI_BAD);
	b[45] = 0; /* none */
	assert_int_equal(peek_sni(b, m, &h), PEEK_SNI_BAD);
	b[45] = 2;
	b[48] = 0; /* no compression method */
	assert_int_equal(peek_sni(b, m, &h), PEEK_SNI_BAD);
	b[48] = 1;
	b[HELLO_EXTS + 1]++; /* extension block past the hello */
	assert_int_equal(peek_sni(b, m, &h), PEEK_SNI_BAD);
	b[HELLO_EXTS + 1] -= 2; /* a byte after it */
	assert_int_equal(peek_sni(b, m, &h), PEEK_SNI_BAD);
	b[HELLO_EXTS + 1]++;
	b[HELLO_EXTS + 5]++; /* the extension past its block */
	assert_int_equal(peek_sni(b, m, &h), PEEK_SNI_BAD);
	b[HELLO_EXTS + 5]--;
	b[HELLO_EXTS + 7]--; /* the name list shorter than its extension */
	assert_int_equal(peek_sni(b, m, &h), PEEK_SNI_BAD);
	b[HELLO_EXTS + 7]++;
	b[HELLO_EXTS + 10]++; /* the name past its list */
	assert_int_equal(peek_sni(b, m, &h), PEEK_SNI_BAD);
	b[HELLO_EXTS + 10]--;
	assert_int_equal(peek_sni(b, m, &h), PEEK_SNI_FOUND);

	/* Not a ClientHello record. */
	b[2] = 0x05; /* no such record version */
	assert_int_equal(peek_sni(b, m, &h), PEEK_SNI_BAD);
	assert_int_equal(peek_sni(b, 3, &h), PEEK_SNI_BAD);
	assert_int_equal(peek_classify(b, m), PEEK_TLS);
	b[2] = 0x03;
	b[5] = 2; /* a ServerHello */
	assert_int_equal(peek_sni(b, m, &h), PEEK_SNI_BAD);
	assert_int_equal(peek_sni(b, 6, &h), PEEK_SNI_BAD);
	b[5] = 1;
	b[9] = 2; /* legacy_version */
	assert_int_equal(peek_sni(b, m, &h), PEEK_SNI_BAD);
	b[9] = 3;
	b[3] = 0x40; /* a record longer than TLS allows */
	b[4] = 0x01;
	assert_int_equal(peek_sni(b, 5, &h), PEEK_SNI_BAD);
	b[3] = 0;
	b[4] = 3; /* too short for a handshake header */
	assert_int_equal(peek_sni(b, 5, &h), PEEK_SNI_BAD);
	b[0] = 0x17;
	assert_int_equal(peek_sni(b, 1, &h), PEEK_SNI_BAD);
	assert_int_equal(peek_classify(b, m), PEEK_OTHER);
}

/* A hello split over two records is refused, not reassembled. */
static void
test_split_hello(void **state)
{
	uint8_t e[64], b[PEEK_MAX];
	struct target_host h;
	size_t m = hello(b, e, sni_ext(e, 0, "a.test", 6));

	(void)state;
	put16(b, 3, 20);
	assert_int_equal(peek_sni(b, m, &h), PEEK_SNI_BAD);
	assert_int_equal(peek_sni(b, 9, &h), PEEK_SNI_BAD);
}

static void
test_http_methods(void **state)
{
	static const char *const http[] = {"GET / HTTP/1.1\r\n", "POST ",
	    "M-SEARCH * HTTP/1.1", "PROPFIND ", "PRI * HTTP/2.0", "x ",
	    "!#$%&'*+-.^_`|~09azAZ "};
	static const char *const more[] = {
	    "", "G", "GE", "GET", "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEF"};
	static const char *const other[] = {" GET", "GET\t/", "GET\r\n", "GET/",
	    "\r\nGET /", "G\"ET ", "GE(T ", "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFG",
	    "\x80\x2e\x01\x03\x01", "\x00\x00", "\x16\x02\x00", "\x16\x01",
	    "\x15\x03\x03", "\xff", "{\"a\":1}"};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(http) / sizeof(http[0]); i++)
		assert_int_equal(
		    peek_classify((const uint8_t *)http[i], strlen(http[i])),
		    PEEK_HTTP);
	for (i = 0; i < sizeof(more) / sizeof(more[0]); i++)
		assert_int_equal(
		    peek_classify((const uint8_t *)more[i], strlen(more[i])),
		    PEEK_MORE);
	for (i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		assert_int_equal(peek_classify((const uint8_t *)other[i],
		                     strlen(other[i]) + (other[i][0] == '\0')),
		    PEEK_OTHER);
	assert_int_equal(peek_classify((const uint8_t *)"\x16", 1), PEEK_MORE);
	/* A byte past the point of telling changes nothing. */
	assert_int_equal(
	    peek_classify((const uint8_t *)"GET \xff", 5), PEEK_HTTP);
}

static void
test_not_tls(void **state)
{
	struct target_host h;

	(void)state;
	assert_int_equal(peek_sni((const uint8_t *)"", 0, &h), PEEK_SNI_MORE);
	assert_int_equal(
	    peek_sni((const uint8_t *)"\x16", 1, &h), PEEK_SNI_MORE);
	assert_int_equal(
	    peek_sni((const uint8_t *)"GET / HTTP/1.1\r\n", 16, &h),
	    PEEK_SNI_BAD);
	assert_int_equal(
	    peek_sni((const uint8_t *)"\x16\x02", 2, &h), PEEK_SNI_BAD);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_openssl_hellos),
	    cmocka_unit_test(test_address_sni),
	    cmocka_unit_test(test_handmade_hellos),
	    cmocka_unit_test(test_split_hello),
	    cmocka_unit_test(test_http_methods),
	    cmocka_unit_test(test_not_tls),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
