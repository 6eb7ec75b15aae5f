/*
 * test_upstream.c: unit tests of proxy/upstream.c, from a decided target
 * to a connected socket, with no network: addresses come from the
 * policy's "resolve" lines (the static resolver) or are literal, and the
 * only server is a listener on 127.0.0.1.
 */
#include <sys/socket.h>

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "policy/policy.h"
#include "proxy/session.h"
#include "proxy/upstream.h"
#include "tests/unit/fixture.h"

struct fixture {
	struct event_base *base;
	struct session_ctx ctx;
	struct policy *p;
	int lfd;
	uint16_t port;
	/* what the callback got */
	int called;
	struct bufferevent *bev;
	int status;
	char reason[256], addr[64];
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (f == NULL || (f->base = event_base_new()) == NULL)
		return -1;
	*state = f;
	if ((f->lfd = fixture_listen(&f->port)) < 0)
		return -1;
	f->ctx.base = f->base;
	TAILQ_INIT(&f->ctx.sessions);
	f->p = fixture_policy("resolve up.test 127.0.0.1\n"
	                      "resolve two.test 127.0.0.2 127.0.0.1\n"
	                      "resolve pub.test 192.0.2.1\n"
	                      "timeout connect 2s\n"
	                      "allow up.test\n",
	    0);
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	if (f->bev != NULL)
		bufferevent_free(f->bev);
	policy_free(f->p);
	close(f->lfd);
	event_base_free(f->base);
	free(f);
	return 0;
}

static void
done(void *arg, struct bufferevent *bev, int status, const char *reason,
    const char *addr)
{
	struct fixture *f = arg;

	f->called++;
	f->bev = bev;
	f->status = status;
	snprintf(f->reason, sizeof(f->reason), "%s", reason ? reason : "");
	snprintf(f->addr, sizeof(f->addr), "%s", addr ? addr : "");
}

/* Opens HOST:PORT (private allowed or not) and runs until the callback. */
static void
open_to(struct fixture *f, const char *host, uint16_t port, int private)
{
	struct policy_decision d = {0};
	struct target_host h;
	struct upstream *u;
	int i;

	d.allow_private = private;
	assert_int_equal(target_host_parse(host, strlen(host), &h), 0);
	u = upstream_open(&f->ctx, f->p, &d, &h, port, done, f);
	assert_non_null(u);
	assert_int_equal(f->called, 0); /* never from inside the call */
	for (i = 0; i < 3000 && f->called == 0; i++) {
		event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		usleep(1000);
	}
	assert_int_equal(f->called, 1);
}

/* A "resolve" line: connected to that very address. */
static void
test_resolve_line(void **state)
{
	struct fixture *f = *state;
	char want[64];

	open_to(f, "up.test", f->port, 1);
	assert_non_null(f->bev);
	snprintf(want, sizeof(want), "127.0.0.1:%u", f->port);
	assert_string_equal(f->addr, want);
}

/* A literal address needs no lookup. */
static void
test_literal(void **state)
{
	struct fixture *f = *state;

	open_to(f, "127.0.0.1", f->port, 1);
	assert_non_null(f->bev);
}

/* Addresses are tried in turn: the first refuses, the second answers. */
static void
test_next_address(void **state)
{
	struct fixture *f = *state;
	char want[64];

	open_to(f, "two.test", f->port, 1);
	assert_non_null(f->bev);
	snprintf(want, sizeof(want), "127.0.0.1:%u", f->port);
	assert_string_equal(f->addr, want);
}

/* A loopback address without 'private' in the rule: 403, no connect. */
static void
test_private_refused(void **state)
{
	struct fixture *f = *state;

	open_to(f, "up.test", f->port, 0);
	assert_null(f->bev);
	assert_int_equal(f->status, 403);
	assert_non_null(strstr(f->reason, "not allowed without 'private'"));
}

/* Nothing listens: 502 with the address and the error. */
static void
test_refused(void **state)
{
	struct fixture *f = *state;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sin = {0};
	socklen_t len = sizeof(sin);
	uint16_t port;

	/* A port that was just free: bound, never listened on. */
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	port = ntohs(sin.sin_port);
	open_to(f, "up.test", port, 1);
	close(fd);
	assert_null(f->bev);
	assert_int_equal(f->status, 502);
	assert_non_null(strstr(f->reason, "connect to 127.0.0.1:"));
}

/* A cancelled attempt never calls back. */
static void
test_cancel(void **state)
{
	struct fixture *f = *state;
	struct policy_decision d = {0};
	struct target_host h;
	struct upstream *u;
	int i;

	d.allow_private = 1;
	assert_int_equal(target_host_parse("up.test", 7, &h), 0);
	u = upstream_open(&f->ctx, f->p, &d, &h, f->port, done, f);
	assert_non_null(u);
	upstream_cancel(u);
	upstream_cancel(NULL);
	for (i = 0; i < 50; i++)
		event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	assert_int_equal(f->called, 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_resolve_line),
	    T(test_literal),
	    T(test_next_address),
	    T(test_private_refused),
	    T(test_refused),
	    T(test_cancel),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
