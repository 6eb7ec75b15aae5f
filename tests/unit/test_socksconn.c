/*
 * test_socksconn.c: the SOCKS5 front of proxy/socksconn.c on a session:
 * a synthetic IPv4 or IPv6 address of the DNS stub is the name it stands
 * for (decided and logged as that name), a synthetic address no longer
 * mapped is refused with reply 2 and the run told, a name no rule allows
 * gets reply 2, BIND reply 7, and bytes sent with the request go up the
 * tunnel after the success reply.
 *
 * The client is one end of a socketpair handed to socksconn_new(); the
 * upstream the fixture's listener (up.test, see fixture_proxy).
 */
#include <sys/socket.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <fcntl.h>

#include <cmocka.h>
#include <event2/event.h>

#include "policy/policy.h"
#include "proxy/session.h"
#include "proxy/socks.h"
#include "proxy/socksconn.h"
#include "proxy/synth.h"
#include "tests/unit/fixture.h"

/* The method reply, then a reply CODE with bound address 0.0.0.0:0. */
#define REPLY(code) "\x05\x00\x05" code "\x00\x01\0\0\0\0\0\0"
#define REPLY_LEN 12

static size_t want_len;

static int
client_got(struct fixture_proxy *f)
{
	return f->ngot >= want_len || f->ceof;
}

/* A SOCKS session on a socketpair, the synthetic map in the context. */
static struct synth *
socks_client(struct fixture_proxy *f)
{
	int sv[2];

	f->ctx.synth = synth_new();
	assert_non_null(f->ctx.synth);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	f->cfd = sv[0];
	assert_non_null(socksconn_new(&f->ctx, sv[1], 1));
	return f->ctx.synth;
}

/* Sends greeting and request: ATYP, the N address bytes at A, the port. */
static void
send_request(struct fixture_proxy *f, uint8_t cmd, uint8_t atyp,
    const uint8_t *a, size_t n, uint16_t port)
{
	uint8_t buf[3 + 4 + 1 + 255 + 2] = {5, 1, 0, 5, cmd, 0, atyp};
	size_t len = 7;

	if (atyp == SOCKS_ATYP_NAME)
		buf[len++] = (uint8_t)n;
	memcpy(buf + len, a, n);
	len += n;
	buf[len++] = port >> 8;
	buf[len++] = port & 0xff;
	assert_int_equal(write(f->cfd, buf, len), (ssize_t)len);
}

static void
expect_reply(struct fixture_proxy *f, const char *reply)
{
	want_len = REPLY_LEN;
	assert_true(fixture_pump(f, client_got));
	assert_true(f->ngot >= REPLY_LEN);
	assert_memory_equal(f->got, reply, REPLY_LEN);
}

static void
teardown_synth(struct fixture_proxy *f)
{
	session_close_all(&f->ctx);
	synth_free(f->ctx.synth);
	f->ctx.synth = NULL;
}

/* A synthetic address is its name: allowed as up.test, bytes go up. */
static void
test_synthetic_v4(void **state)
{
	struct fixture_proxy *f = *state;
	struct synth *sy = socks_client(f);
	uint8_t v4[4], v6[16];

	assert_int_equal(synth_map(sy, "up.test", v4, v6), 0);
	send_request(f, SOCKS_CMD_CONNECT, SOCKS_ATYP_V4, v4, 4, f->port);
	fixture_send(f->cfd, "early");
	expect_reply(f, REPLY("\x00"));
	f->want = "early";
	assert_true(fixture_pump(f, fixture_upstream_has));
	assert_string_equal(f->ugot, "early");
	fixture_send(f->ufd, "back");
	want_len = REPLY_LEN + 4;
	assert_true(fixture_pump(f, client_got));
	assert_memory_equal(f->got + REPLY_LEN, "back", 4);
	assert_int_equal(f->denied, 0);
	teardown_synth(f);
}

static void
test_synthetic_v6(void **state)
{
	struct fixture_proxy *f = *state;
	struct synth *sy = socks_client(f);
	uint8_t v4[4], v6[16];

	assert_int_equal(synth_map(sy, "up.test", v4, v6), 0);
	send_request(f, SOCKS_CMD_CONNECT, SOCKS_ATYP_V6, v6, 16, f->port);
	expect_reply(f, REPLY("\x00"));
	/* Only up.test is allowed: the address was decided as its name. */
	assert_int_equal(f->denied, 0);
	assert_int_equal(f->ctx.nsessions, 1);
	teardown_synth(f);
}

/* Not mapped (any more): refused, never guessed; the run is told. */
static void
test_synthetic_unmapped(void **state)
{
	struct fixture_proxy *f = *state;
	static const uint8_t a[4] = {198, 18, 200, 7};

	socks_client(f);
	send_request(f, SOCKS_CMD_CONNECT, SOCKS_ATYP_V4, a, 4, f->port);
	expect_reply(f, REPLY("\x02"));
	assert_true(fixture_pump(f, fixture_client_eof));
	assert_int_equal(f->denied, 1);
	teardown_synth(f);
}

static void
test_denied_name(void **state)
{
	struct fixture_proxy *f = *state;

	socks_client(f);
	send_request(f, SOCKS_CMD_CONNECT, SOCKS_ATYP_NAME,
	    (const uint8_t *)"evil.test", 9, f->port);
	expect_reply(f, REPLY("\x02"));
	assert_true(fixture_pump(f, fixture_client_eof));
	assert_int_equal(f->denied, 1);
	teardown_synth(f);
}

static void
test_bind(void **state)
{
	struct fixture_proxy *f = *state;

	socks_client(f);
	send_request(f, SOCKS_CMD_BIND, SOCKS_ATYP_NAME,
	    (const uint8_t *)"up.test", 7, f->port);
	expect_reply(f, REPLY("\x07"));
	assert_true(fixture_pump(f, fixture_client_eof));
	assert_true(fixture_pump(f, fixture_no_session));
	teardown_synth(f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    FIXTURE_PROXY_TEST(test_synthetic_v4),
	    FIXTURE_PROXY_TEST(test_synthetic_v6),
	    FIXTURE_PROXY_TEST(test_synthetic_unmapped),
	    FIXTURE_PROXY_TEST(test_denied_name),
	    FIXTURE_PROXY_TEST(test_bind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
