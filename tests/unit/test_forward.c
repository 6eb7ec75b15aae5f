/*
 * test_forward.c: unit tests of proxy/forward.c, plain-HTTP requests
 * rewritten to origin form and their responses relayed by framing.
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

/* An absolute URL goes upstream in origin form; the response comes back. */
static void
test_forward(void **state)
{
	struct fixture_proxy *f = *state;

	fixture_client(f);
	fixture_get(f, "/a?b", "Proxy-Connection: keep-alive\r\n");
	assert_non_null(strstr(f->ugot, "GET /a?b HTTP/1.1\r\n"));
	assert_null(strstr(f->ugot, "Proxy-Connection"));
	fixture_send(f->ufd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi");
	f->want = "hi";
	assert_true(fixture_pump(f, fixture_client_has));
	assert_non_null(strstr(f->got, "HTTP/1.1 200 OK\r\n"));
	assert_int_equal(f->ctx.nsessions, 1); /* keep-alive */
}

/* A second request to the same place reuses the upstream connection. */
static void
test_reuse(void **state)
{
	struct fixture_proxy *f = *state;
	int first;

	fixture_client(f);
	fixture_get(f, "/one", "");
	first = f->ufd;
	fixture_send(f->ufd, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none");
	f->want = "one";
	assert_true(fixture_pump(f, fixture_client_has));
	fixture_get(f, "/two", "");
	assert_int_equal(f->ufd, first);
	assert_non_null(strstr(f->ugot, "GET /two HTTP/1.1\r\n"));
}

/* A chunked response passes with its framing; the session stays. */
static void
test_chunked(void **state)
{
	struct fixture_proxy *f = *state;

	fixture_client(f);
	fixture_get(f, "/c", "");
	fixture_send(f->ufd,
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
	    "\r\n3\r\nabc\r\n0\r\n\r\n");
	f->want = "0\r\n\r\n";
	assert_true(fixture_pump(f, fixture_client_has));
	assert_non_null(strstr(f->got, "\r\n\r\n3\r\nabc\r\n0\r\n\r\n"));
	assert_int_equal(f->ctx.nsessions, 1);
}

/* An upstream that closes before a response head: 502 to the client. */
static void
test_upstream_gone(void **state)
{
	struct fixture_proxy *f = *state;

	fixture_client(f);
	fixture_get(f, "/x", "");
	close(f->ufd);
	f->ufd = -1;
	f->want = "HTTP/1.1 502 ";
	assert_true(fixture_pump(f, fixture_client_has));
	assert_non_null(strstr(f->got, "HTTP/1.1 502 "));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    FIXTURE_PROXY_TEST(test_forward),
	    FIXTURE_PROXY_TEST(test_reuse),
	    FIXTURE_PROXY_TEST(test_chunked),
	    FIXTURE_PROXY_TEST(test_upstream_gone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
