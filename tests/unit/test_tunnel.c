/*
 * test_tunnel.c: unit tests of proxy/tunnel.c, both relays: the splice
 * relay of a CONNECT tunnel, and the bufferevent relay after a 101.
 *
 * The client is one end of a socketpair handed to request_new(); the
 * upstream a listener on 127.0.0.1 that the policy's "resolve" line names
 * (no DNS); see fixture_proxy in fixture.h.
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

#include <cmocka.h>
#include <event2/event.h>

#include "policy/policy.h"
#include "proxy/session.h"
#include "tests/unit/fixture.h"

/* Bytes go both ways; each EOF is passed on; then the session ends. */
static void
test_connect_tunnel(void **state)
{
	struct fixture_proxy *f = *state;

	fixture_tunnel(f);
	fixture_send(f->cfd, "ping");
	f->want = "ping";
	assert_true(fixture_pump(f, fixture_upstream_has));
	assert_string_equal(f->ugot, "ping");
	fixture_send(f->ufd, "pong");
	f->want = "pong";
	assert_true(fixture_pump(f, fixture_client_has));
	assert_string_equal(f->got, "pong");
	assert_int_equal(shutdown(f->cfd, SHUT_WR), 0);
	assert_true(fixture_pump(f, fixture_upstream_eof));
	assert_int_equal(f->ctx.nsessions, 1); /* the other way is open */
	fixture_send(f->ufd, "last");
	assert_int_equal(shutdown(f->ufd, SHUT_WR), 0);
	assert_true(fixture_pump(f, fixture_client_eof));
	assert_string_equal(f->got, "ponglast");
	assert_true(fixture_pump(f, fixture_no_session));
	assert_int_equal(f->ended, 1);
}

/* A megabyte each way: backpressure and the splice pipes. */
static void
test_connect_bulk(void **state)
{
	struct fixture_proxy *f = *state;
	static char block[1 << 20];
	size_t sent = 0, got = 0;
	int64_t end;
	ssize_t r;
	char buf[65536];

	memset(block, 'x', sizeof(block));
	fixture_tunnel(f);
	end = fixture_now_ms() + 5000;
	while ((sent < sizeof(block) || got < sizeof(block)) &&
	    fixture_now_ms() < end) {
		if (sent < sizeof(block) &&
		    (r = write(f->cfd, block + sent, sizeof(block) - sent)) > 0)
			sent += (size_t)r;
		event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		while ((r = read(f->ufd, buf, sizeof(buf))) > 0) {
			assert_int_equal(memchr(buf, 'y', (size_t)r), NULL);
			got += (size_t)r;
		}
	}
	assert_int_equal(sent, sizeof(block));
	assert_int_equal(got, sizeof(block));
}

/* After a 101 the bufferevent relay carries bytes both ways. */
static void
test_upgrade_relay(void **state)
{
	struct fixture_proxy *f = *state;

	fixture_client(f);
	fixture_get(f, "/ws", "Connection: upgrade\r\nUpgrade: websocket\r\n");
	assert_non_null(strstr(f->ugot, "Upgrade: websocket\r\n"));
	f->nugot = 0;
	f->ugot[0] = '\0';
	fixture_send(f->ufd,
	    "HTTP/1.1 101 Switching Protocols\r\n"
	    "Connection: upgrade\r\nUpgrade: websocket\r\n\r\n"
	    "hello");
	f->want = "hello";
	assert_true(fixture_pump(f, fixture_client_has));
	assert_non_null(strstr(f->got, "HTTP/1.1 101 "));
	fixture_send(f->cfd, "frame");
	f->want = "frame";
	assert_true(fixture_pump(f, fixture_upstream_has));
	assert_string_equal(f->ugot, "frame");
	close(f->ufd);
	f->ufd = -1;
	assert_true(fixture_pump(f, fixture_client_eof));
	close(f->cfd);
	f->cfd = -1;
	assert_true(fixture_pump(f, fixture_no_session));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    FIXTURE_PROXY_TEST(test_connect_tunnel),
	    FIXTURE_PROXY_TEST(test_connect_bulk),
	    FIXTURE_PROXY_TEST(test_upgrade_relay),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
