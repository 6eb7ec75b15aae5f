/*
 * test_workers.c: several event loops sharing one proxy group (proxy.h)
 * and the threads of workers.c.  The session limit and the per-client
 * limit are exact across two proxies; a policy shared by two proxies is
 * freed once, by the last; a policy sent to the threads reaches every one
 * before "applied", and a stop ends every thread.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <arpa/inet.h>
#include <netinet/in.h>

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
#include "proxy/proxy.h"
#include "proxy/workers.h"
#include "tests/unit/fixture.h"

#define POLICY "allow example.com\n"

struct two {
	struct event_base *base;
	struct proxy_group *g;
	struct proxy *a, *b;
};

static void
two_open(struct two *t, unsigned max_sessions, unsigned per_client)
{
	struct proxy_config pc = {0};

	t->base = event_base_new();
	assert_non_null(t->base);
	pc.max_sessions = max_sessions;
	pc.max_per_client = per_client;
	t->g = proxy_group_new(2, &pc);
	assert_non_null(t->g);
	pc.group = t->g;
	pc.policy = fixture_policy(POLICY, 0);
	t->a = proxy_new(t->base, &pc);
	pc.policy = fixture_policy(POLICY, 0);
	t->b = proxy_new(t->base, &pc);
	assert_non_null(t->a);
	assert_non_null(t->b);
}

static void
two_close(struct two *t)
{
	proxy_free(t->a);
	proxy_free(t->b);
	proxy_group_free(t->g);
	event_base_free(t->base);
}

/* A connection for PX from SA: the test keeps *PEER.  Returns take's. */
static int
give(struct proxy *px, const struct sockaddr *sa, int len, int *peer)
{
	int sv[2], r;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	*peer = sv[0];
	r = proxy_take_fd(px, sv[1], PROXY_VIA_PROXY, sa, len);
	if (r != 0)
		close(sv[1]);
	return r;
}

/* Runs the loop until PX's group has N sessions (bounded). */
static void
settle(struct two *t, size_t n)
{
	int i;

	for (i = 0; i < 200 && proxy_group_sessions(t->g) != n; i++)
		event_base_loop(t->base, EVLOOP_NONBLOCK);
	assert_int_equal(proxy_group_sessions(t->g), n);
}

static void
test_session_limit_shared(void **state)
{
	struct sockaddr_un un = {.sun_family = AF_UNIX};
	struct two t;
	int p[4], extra;

	(void)state;
	two_open(&t, 3, 0);
	/* 3 in all, whichever proxy takes them. */
	assert_int_equal(
	    give(t.a, (struct sockaddr *)&un, sizeof(un), &p[0]), 0);
	assert_int_equal(
	    give(t.b, (struct sockaddr *)&un, sizeof(un), &p[1]), 0);
	assert_int_equal(
	    give(t.a, (struct sockaddr *)&un, sizeof(un), &p[2]), 0);
	assert_int_equal(proxy_group_sessions(t.g), 3);
	assert_int_equal(proxy_session_count(t.a), 2);
	assert_int_equal(proxy_session_count(t.b), 1);
	assert_int_equal(
	    give(t.b, (struct sockaddr *)&un, sizeof(un), &extra), -1);
	close(extra);
	assert_int_equal(
	    give(t.a, (struct sockaddr *)&un, sizeof(un), &extra), -1);
	close(extra);
	/* One of A's ends: B may take one. */
	close(p[0]);
	settle(&t, 2);
	assert_int_equal(
	    give(t.b, (struct sockaddr *)&un, sizeof(un), &p[3]), 0);
	assert_int_equal(proxy_group_sessions(t.g), 3);
	two_close(&t);
	assert_int_equal(p[1] >= 0 && p[2] >= 0 && p[3] >= 0, 1);
	close(p[1]);
	close(p[2]);
	close(p[3]);
}

static void
test_per_client_shared(void **state)
{
	struct sockaddr_in in = {.sin_family = AF_INET};
	struct sockaddr_in other = {.sin_family = AF_INET};
	struct two t;
	char buf[512] = "";
	ssize_t n;
	int p[4];

	(void)state;
	inet_pton(AF_INET, "192.0.2.1", &in.sin_addr);
	inet_pton(AF_INET, "192.0.2.2", &other.sin_addr);
	two_open(&t, 100, 2);
	assert_int_equal(
	    give(t.a, (struct sockaddr *)&in, sizeof(in), &p[0]), 0);
	assert_int_equal(
	    give(t.b, (struct sockaddr *)&in, sizeof(in), &p[1]), 0);
	/* The third from 192.0.2.1, on either proxy, is over: 503. */
	assert_int_equal(
	    give(t.a, (struct sockaddr *)&in, sizeof(in), &p[2]), 0);
	n = read(p[2], buf, sizeof(buf) - 1);
	assert_true(n > 0);
	assert_non_null(strstr(buf, " 503 "));
	assert_non_null(strstr(buf, "client 192.0.2.1 has 2 connections"));
	assert_int_equal(proxy_group_sessions(t.g), 2);
	/* Another client is served. */
	assert_int_equal(
	    give(t.b, (struct sockaddr *)&other, sizeof(other), &p[3]), 0);
	assert_int_equal(proxy_group_sessions(t.g), 3);
	two_close(&t);
	close(p[0]);
	close(p[1]);
	close(p[2]);
	close(p[3]);
}

static void
test_policy_shared(void **state)
{
	struct two t;
	struct proxy_policy_share *sh;

	(void)state;
	two_open(&t, 10, 0);
	sh = proxy_policy_share_new(fixture_policy(POLICY, 0), 2);
	assert_non_null(sh);
	proxy_set_policy_shared(t.a, sh);
	proxy_set_policy_shared(t.b, sh);
	/* Freed by the last proxy to let go (ASan: no leak, no double). */
	two_close(&t);
}

struct watch {
	int applied, stopped;
};

static void
on_applied(void *arg)
{
	((struct watch *)arg)->applied++;
}

static void
on_stopped(void *arg)
{
	((struct watch *)arg)->stopped++;
}

static void
on_limit(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	*(int *)arg = 1;
}

/*
 * Runs BASE until FLAG is set by the threads' answer (its eventfd wakes
 * the loop), or 5 s have passed.
 */
static void
run_until(struct event_base *base, const int *flag)
{
	struct timeval tv = {5, 0};
	int expired = 0;
	struct event *limit = evtimer_new(base, on_limit, &expired);

	assert_non_null(limit);
	evtimer_add(limit, &tv);
	while (*flag == 0 && !expired)
		event_base_loop(base, EVLOOP_ONCE);
	event_free(limit);
}

static void
test_threads_reload_and_stop(void **state)
{
	struct workers_config wc = {0};
	struct event_base *base = event_base_new();
	struct watch w = {0};
	struct workers *ws;
	struct proxy_group *g =
	    proxy_group_new(3, &(struct proxy_config){.max_sessions = 10});

	(void)state;
	assert_non_null(base);
	assert_non_null(g);
	wc.n = 3;
	wc.base_new = event_base_new;
	wc.dns_timeout_ms = 3000;
	wc.pc.group = g;
	wc.pc.reuseport = 1;
	wc.applied = on_applied;
	wc.stopped = on_stopped;
	wc.arg = &w;
	ws = workers_new(
	    base, &wc, proxy_policy_share_new(fixture_policy(POLICY, 0), 2));
	assert_non_null(ws);
	assert_int_equal(workers_start(ws), 0);
	/* A policy for both threads: applied once both swapped it in. */
	workers_set_policy(
	    ws, proxy_policy_share_new(fixture_policy(POLICY, 0), 2));
	run_until(base, &w.applied);
	assert_int_equal(w.applied, 1);
	workers_stop(ws, 0);
	run_until(base, &w.stopped);
	assert_int_equal(w.stopped, 1);
	assert_int_equal(workers_sessions(ws), 0);
	workers_free(ws);
	proxy_group_free(g);
	event_base_free(base);
}

static void
test_cpus(void **state)
{
	(void)state;
	assert_true(workers_cpus() >= 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_session_limit_shared),
	    cmocka_unit_test(test_per_client_shared),
	    cmocka_unit_test(test_policy_shared),
	    cmocka_unit_test(test_threads_reload_and_stop),
	    cmocka_unit_test(test_cpus),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
