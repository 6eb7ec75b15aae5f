/*
 * test_socks.c: the SOCKS5 wire format of proxy/socks.c: greetings (with
 * and without "no authentication", bad version, no method), requests to
 * a name, an IPv4 and an IPv6 address (IPv4-mapped becomes IPv4), every
 * refusal (version, reserved byte, BIND and UDP ASSOCIATE, address
 * type, empty or invalid name, port 0), SOCKS_MORE at every cut of a
 * valid message, and the replies: each code, its name, its bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sys/socket.h>

#include <cmocka.h>

#include "proxy/socks.h"

/* Every proper prefix of the N bytes at P is SOCKS_MORE to the greeting. */
static void
greeting_cuts(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		assert_int_equal(socks_greeting(p, i), SOCKS_MORE);
}

static void
request_cuts(const uint8_t *p, size_t n)
{
	struct socks_request r;
	size_t i;

	for (i = 0; i < n; i++)
		assert_int_equal(socks_request(p, i, &r), SOCKS_MORE);
}

static void
test_greeting(void **state)
{
	static const uint8_t one[] = {5, 1, 0};
	static const uint8_t three[] = {5, 3, 2, 1, 0, 9}; /* + a request */
	static const uint8_t all[2 + 255] = {5, 255};
	static const uint8_t gss[] = {5, 2, 1, 2};
	static const uint8_t none[] = {5, 0};
	static const uint8_t v4[] = {4, 1, 0};
	static const uint8_t http[] = "GET / HTTP/1.1\r\n";
	uint8_t last[2 + 255];

	(void)state;
	assert_int_equal(socks_greeting(one, sizeof(one)), 3);
	greeting_cuts(one, sizeof(one));
	assert_int_equal(socks_greeting(three, sizeof(three)), 5);
	greeting_cuts(three, 5);
	/* 255 methods, none of them "no authentication" (all zero: 0 is). */
	assert_int_equal(socks_greeting(all, sizeof(all)), 257);
	memset(last, 0x80, sizeof(last));
	last[0] = 5;
	last[1] = 255;
	greeting_cuts(last, sizeof(last));
	assert_int_equal(socks_greeting(last, sizeof(last)), SOCKS_E_METHODS);
	last[256] = 0; /* the last one offered */
	assert_int_equal(socks_greeting(last, sizeof(last)), 257);
	assert_int_equal(socks_greeting(gss, sizeof(gss)), SOCKS_E_METHODS);
	assert_int_equal(socks_greeting(none, sizeof(none)), SOCKS_E_METHODS);
	assert_int_equal(socks_greeting(v4, sizeof(v4)), SOCKS_E_VERSION);
	assert_int_equal(socks_greeting(v4, 1), SOCKS_E_VERSION);
	assert_int_equal(
	    socks_greeting(http, sizeof(http) - 1), SOCKS_E_VERSION);
	assert_int_equal(socks_greeting(NULL, 0), SOCKS_MORE);
}

static void
test_request_name(void **state)
{
	static const uint8_t req[] = {5, 1, 0, 3, 11, 'E', 'x', 'a', 'm', 'p',
	    'l', 'e', '.', 'C', 'o', 'm', 0x01, 0xbb, 'x'};
	static const uint8_t dot[] = {
	    5, 1, 0, 3, 6, 'a', '.', 't', 'e', 's', 't', 0, 80};
	struct socks_request r;

	(void)state;
	assert_int_equal(socks_request(req, sizeof(req), &r), 18);
	request_cuts(req, 18);
	assert_int_equal(r.cmd, SOCKS_CMD_CONNECT);
	assert_int_equal(r.atyp, SOCKS_ATYP_NAME);
	assert_int_equal(r.host.kind, TARGET_NAME);
	assert_string_equal(r.host.name, "example.com");
	assert_int_equal(r.port, 443);
	assert_int_equal(socks_request(dot, sizeof(dot), &r), 13);
	assert_string_equal(r.host.name, "a.test");
	assert_int_equal(r.port, 80);
}

static void
test_request_addr(void **state)
{
	static const uint8_t v4[] = {5, 1, 0, 1, 192, 0, 2, 7, 0x1f, 0x90};
	static const uint8_t v6[] = {5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0,
	    0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 22};
	static const uint8_t mapped[] = {5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	    0, 0xff, 0xff, 127, 0, 0, 1, 0, 80};
	static const uint8_t numeric[] = {
	    5, 1, 0, 3, 9, '1', '2', '7', '.', '0', '.', '0', '.', '1', 0, 80};
	struct socks_request r;

	(void)state;
	assert_int_equal(socks_request(v4, sizeof(v4), &r), 10);
	request_cuts(v4, sizeof(v4));
	assert_int_equal(r.host.kind, TARGET_V4);
	assert_string_equal(r.host.name, "192.0.2.7");
	assert_memory_equal(r.host.addr, v4 + 4, 4);
	assert_int_equal(r.port, 8080);
	assert_int_equal(socks_request(v6, sizeof(v6), &r), 22);
	request_cuts(v6, sizeof(v6));
	assert_int_equal(r.host.kind, TARGET_V6);
	assert_string_equal(r.host.name, "2001:db8::1");
	assert_int_equal(r.port, 22);
	assert_int_equal(socks_request(mapped, sizeof(mapped), &r), 22);
	assert_int_equal(r.host.kind, TARGET_V4);
	assert_string_equal(r.host.name, "127.0.0.1");
	/* A name that is an address is that address, as in a policy. */
	assert_int_equal(socks_request(numeric, sizeof(numeric), &r), 16);
	assert_int_equal(r.host.kind, TARGET_V4);
}

static void
test_request_refused(void **state)
{
	static const uint8_t ver[] = {4, 1, 0, 1, 127, 0, 0, 1, 0, 80};
	static const uint8_t bind[] = {5, 2, 0, 1, 127, 0, 0, 1, 0, 80};
	static const uint8_t udp[] = {5, 3, 0, 1, 0, 0, 0, 0, 0, 0};
	static const uint8_t cmd9[] = {5, 9, 0, 1, 127, 0, 0, 1, 0, 80};
	static const uint8_t rsv[] = {5, 1, 1, 1, 127, 0, 0, 1, 0, 80};
	static const uint8_t atyp[] = {5, 1, 0, 9, 127, 0, 0, 1, 0, 80};
	static const uint8_t atyp0[] = {5, 1, 0, 0};
	static const uint8_t empty[] = {5, 1, 0, 3, 0, 0, 80};
	static const uint8_t space[] = {5, 1, 0, 3, 3, 'a', ' ', 'b', 0, 80};
	static const uint8_t nul[] = {5, 1, 0, 3, 3, 'a', 0, 'b', 0, 80};
	static const uint8_t high[] = {5, 1, 0, 3, 2, 0xc3, 0xa9, 0, 80};
	static const uint8_t dots[] = {5, 1, 0, 3, 3, 'a', '.', '.', 0, 80};
	static const uint8_t port0[] = {5, 1, 0, 1, 127, 0, 0, 1, 0, 0};
	static const uint8_t nport0[] = {5, 1, 0, 3, 1, 'a', 0, 0};
	uint8_t longname[5 + 255 + 2];
	struct socks_request r;

	(void)state;
	assert_int_equal(socks_request(ver, sizeof(ver), &r), SOCKS_E_VERSION);
	assert_int_equal(socks_request(ver, 1, &r), SOCKS_E_VERSION);
	assert_int_equal(
	    socks_request(bind, sizeof(bind), &r), SOCKS_E_COMMAND);
	assert_int_equal(socks_request(bind, 2, &r), SOCKS_E_COMMAND);
	assert_int_equal(socks_request(udp, sizeof(udp), &r), SOCKS_E_COMMAND);
	assert_int_equal(
	    socks_request(cmd9, sizeof(cmd9), &r), SOCKS_E_COMMAND);
	assert_int_equal(socks_request(rsv, sizeof(rsv), &r), SOCKS_E_RESERVED);
	assert_int_equal(socks_request(atyp, sizeof(atyp), &r), SOCKS_E_ATYP);
	assert_int_equal(socks_request(atyp0, sizeof(atyp0), &r), SOCKS_E_ATYP);
	assert_int_equal(socks_request(empty, sizeof(empty), &r), SOCKS_E_NAME);
	assert_int_equal(socks_request(empty, 5, &r), SOCKS_E_NAME);
	assert_int_equal(socks_request(space, sizeof(space), &r), SOCKS_E_NAME);
	assert_int_equal(socks_request(nul, sizeof(nul), &r), SOCKS_E_NAME);
	assert_int_equal(socks_request(high, sizeof(high), &r), SOCKS_E_NAME);
	assert_int_equal(socks_request(dots, sizeof(dots), &r), SOCKS_E_NAME);
	assert_int_equal(socks_request(port0, sizeof(port0), &r), SOCKS_E_PORT);
	assert_int_equal(
	    socks_request(nport0, sizeof(nport0), &r), SOCKS_E_PORT);
	/* 255 bytes: longer than a host name may be. */
	memset(longname, 'a', sizeof(longname));
	memcpy(longname, "\x05\x01\x00\x03\xff", 5);
	longname[5 + 255] = 0;
	longname[5 + 255 + 1] = 80;
	request_cuts(longname, sizeof(longname));
	assert_int_equal(
	    socks_request(longname, sizeof(longname), &r), SOCKS_E_NAME);
	assert_int_equal(
	    socks_reply_for_error(SOCKS_E_COMMAND), SOCKS_REP_COMMAND);
	assert_int_equal(socks_reply_for_error(SOCKS_E_ATYP), SOCKS_REP_ATYP);
	assert_int_equal(
	    socks_reply_for_error(SOCKS_E_NAME), SOCKS_REP_HOST_UNREACH);
	assert_int_equal(
	    socks_reply_for_error(SOCKS_E_VERSION), SOCKS_REP_FAILURE);
	assert_int_equal(
	    socks_reply_for_error(SOCKS_E_RESERVED), SOCKS_REP_FAILURE);
	assert_int_equal(
	    socks_reply_for_error(SOCKS_E_PORT), SOCKS_REP_FAILURE);
}

static void
test_replies(void **state)
{
	static const struct {
		enum socks_reply code;
		const char *name;
	} names[] = {
	    {SOCKS_REP_OK, "succeeded"},
	    {SOCKS_REP_FAILURE, "general SOCKS server failure"},
	    {SOCKS_REP_NOT_ALLOWED, "connection not allowed by ruleset"},
	    {SOCKS_REP_NET_UNREACH, "network unreachable"},
	    {SOCKS_REP_HOST_UNREACH, "host unreachable"},
	    {SOCKS_REP_REFUSED, "connection refused"},
	    {SOCKS_REP_TTL, "TTL expired"},
	    {SOCKS_REP_COMMAND, "command not supported"},
	    {SOCKS_REP_ATYP, "address type not supported"},
	};
	static const uint8_t a4[4] = {192, 0, 2, 1};
	static const uint8_t a6[16] = {0x20, 0x01, 0x0d, 0xb8, [15] = 1};
	static const uint8_t none[] = {5, 2, 0, 1, 0, 0, 0, 0, 0, 0};
	static const uint8_t ok4[] = {5, 0, 0, 1, 192, 0, 2, 1, 0x04, 0x38};
	uint8_t out[SOCKS_REPLY_MAX];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_string_equal(
		    socks_reply_name(names[i].code), names[i].name);
	assert_string_equal(socks_reply_name(9), "unassigned");
	assert_int_equal(
	    socks_reply(SOCKS_REP_NOT_ALLOWED, 0, NULL, 99, out), sizeof(none));
	assert_memory_equal(out, none, sizeof(none));
	assert_int_equal(
	    socks_reply(SOCKS_REP_OK, AF_INET, a4, 1080, out), sizeof(ok4));
	assert_memory_equal(out, ok4, sizeof(ok4));
	assert_int_equal(
	    socks_reply(SOCKS_REP_OK, AF_INET6, a6, 443, out), SOCKS_REPLY_MAX);
	assert_int_equal(out[3], SOCKS_ATYP_V6);
	assert_memory_equal(out + 4, a6, 16);
	assert_int_equal(out[20], 1);
	assert_int_equal(out[21], 0xbb);
	assert_int_equal(socks_reply_for_status(200, 0), SOCKS_REP_OK);
	assert_int_equal(socks_reply_for_status(403, 0), SOCKS_REP_NOT_ALLOWED);
	assert_int_equal(
	    socks_reply_for_status(502, 0), SOCKS_REP_HOST_UNREACH);
	assert_int_equal(socks_reply_for_status(502, 1), SOCKS_REP_REFUSED);
	assert_int_equal(socks_reply_for_status(504, 0), SOCKS_REP_TTL);
	assert_int_equal(socks_reply_for_status(501, 0), SOCKS_REP_FAILURE);
	assert_int_equal(socks_reply_for_status(503, 0), SOCKS_REP_FAILURE);
	assert_int_equal(socks_reply_for_status(408, 0), SOCKS_REP_FAILURE);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_greeting),
	    cmocka_unit_test(test_request_name),
	    cmocka_unit_test(test_request_addr),
	    cmocka_unit_test(test_request_refused),
	    cmocka_unit_test(test_replies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
