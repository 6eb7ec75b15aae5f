/*
 * test_request.c: unit tests of proxy/request.c: request heads, the
 * CONNECT decision and its answers, policy reloads, a client that leaves
 * mid-head, the head budget shared by two loops.
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
#include "proxy/request.h"
#include "proxy/session.h"
#include "tests/unit/fixture.h"

/* --- CONNECT ----------------------------------------------------------------- */

/* A CONNECT no rule allows: 403 with the reason, and told. */
static void
test_connect_denied(void **state)
{
	struct fixture_proxy *f = *state;

	fixture_client(f);
	fixture_send(f->cfd,
	    "CONNECT other.test:443 HTTP/1.1\r\n"
	    "Host: other.test\r\n\r\n");
	assert_true(fixture_pump(f, fixture_client_eof));
	if (strstr(f->got, "HTTP/1.1 403 ") == NULL)
		fail_msg("got \"%s\"", f->got);
	assert_non_null(strstr(f->got, "X-Pinhole-Reason: "));
	assert_int_equal(f->denied, 1);
	assert_true(f->ufd < 0);
	assert_true(fixture_pump(f, fixture_no_session));
}

/* A rule that needs interception, in a proxy without TLS: 501. */
static void
test_connect_needs_intercept(void **state)
{
	struct fixture_proxy *f = *state;
	char req[128];

	fixture_proxy_use(f,
	    "resolve up.test 127.0.0.1\n"
	    "allow up.test:@PORT@ { private paths /a/* }\n");
	fixture_client(f);
	snprintf(req, sizeof(req),
	    "CONNECT up.test:%u HTTP/1.1\r\nHost: up.test\r\n\r\n", f->port);
	fixture_send(f->cfd, req);
	assert_true(fixture_pump(f, fixture_client_eof));
	assert_non_null(strstr(f->got, "HTTP/1.1 501 "));
	assert_true(f->ufd < 0);
}

/* --- reload ------------------------------------------------------------------ */

/* A reload closes the tunnels the new policy would not open. */
static void
test_reload_closes_tunnel(void **state)
{
	struct fixture_proxy *f = *state;
	struct proxy_policy *old = f->ctx.policy;

	fixture_tunnel(f);
	/* The session holds the old policy: it goes when the session ends. */
	f->ctx.policy = fixture_proxy_policy(f, "allow elsewhere.test\n");
	old->refs--;
	request_policy_reloaded(&f->ctx);
	assert_true(fixture_pump(f, fixture_client_eof));
	assert_true(fixture_pump(f, fixture_upstream_eof));
	assert_int_equal(f->ctx.nsessions, 0);
}

/* A reload that still allows the tunnel leaves it open. */
static void
test_reload_keeps_tunnel(void **state)
{
	struct fixture_proxy *f = *state;
	struct proxy_policy *old = f->ctx.policy;

	fixture_tunnel(f);
	f->ctx.policy = fixture_proxy_policy(f,
	    "resolve up.test 127.0.0.1\n"
	    "allow up.test:@PORT@ { private }\n"
	    "allow other.test\n");
	old->refs--;
	request_policy_reloaded(&f->ctx);
	fixture_send(f->cfd, "still");
	f->want = "still";
	assert_true(fixture_pump(f, fixture_upstream_has));
	assert_int_equal(f->ctx.nsessions, 1);
	session_close_all(&f->ctx); /* frees OLD with its last session */
}

/* --- heads ------------------------------------------------------------------- */

struct bad_case {
	const char *head;
	const char *status;
};

/* Heads the proxy answers itself, and then closes. */
static void
test_bad_heads(void **state)
{
	static const struct bad_case cases[] = {
	    {"GET /x HTTP/1.1\r\nHost: up.test\r\n\r\n", "HTTP/1.1 400 "},
	    {"CONNECT up.test HTTP/1.1\r\n\r\n", "HTTP/1.1 400 "},
	    {"GET https://up.test/ HTTP/1.1\r\nHost: up.test\r\n\r\n",
	        "HTTP/1.1 400 "},
	    {"GET http://other.test/ HTTP/1.1\r\nHost: other.test\r\n\r\n",
	        "HTTP/1.1 403 "},
	    {"\x01\x02 nonsense\r\n\r\n", "HTTP/1.1 400 "},
	};
	struct fixture_proxy *f = *state;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		f->ngot = 0;
		f->got[0] = '\0';
		f->ceof = 0;
		fixture_client(f);
		fixture_send(f->cfd, cases[i].head);
		assert_true(fixture_pump(f, fixture_client_eof));
		if (strncmp(f->got, cases[i].status, strlen(cases[i].status)) !=
		    0)
			fail_msg("case %zu: got \"%.60s\"", i, f->got);
		close(f->cfd);
		f->cfd = -1;
		assert_true(fixture_pump(f, fixture_no_session));
	}
	assert_true(f->ufd < 0);
}

/* A client that leaves before a whole head ends the session. */
static void
test_client_leaves(void **state)
{
	struct fixture_proxy *f = *state;

	fixture_client(f);
	fixture_send(f->cfd, "GET http://up.te");
	close(f->cfd);
	f->cfd = -1;
	assert_true(fixture_pump(f, fixture_no_session));
	assert_int_equal(f->ended, 1);
}

/* --- the head budget of a process with two loops ----------------------------- */

/* A client of CTX (its end of a socketpair); the session waits for a head. */
static int
client_of(struct session_ctx *ctx)
{
	int sv[2];

	assert_int_equal(
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv), 0);
	assert_non_null(request_new(ctx, sv[1], 1, PROXY_VIA_PROXY));
	return sv[0];
}

/* Sends an unfinished head of LEN bytes on FD. */
static void
send_head(int fd, size_t len)
{
	char buf[8192];
	size_t n = strlen("GET http://up.test/ HTTP/1.1\r\nX-Pad: ");

	assert_true(len <= sizeof(buf) && len > n);
	memset(buf, 'x', len);
	memcpy(buf, "GET http://up.test/ HTTP/1.1\r\nX-Pad: ", n);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
}

/*
 * Runs both loops until the process holds WANT bytes of heads and G has
 * GN sessions (2 s at most).
 */
static int
pump_until(
    struct fixture_proxy *f, struct fixture_proxy *g, size_t want, size_t gn)
{
	int64_t end = fixture_now_ms() + 2000;

	while ((atomic_load(&f->shared.head_bytes) != want ||
	           g->ctx.nsessions != gn) &&
	    fixture_now_ms() < end) {
		event_base_loop(f->base, EVLOOP_NONBLOCK);
		event_base_loop(g->base, EVLOOP_NONBLOCK);
	}
	return atomic_load(&f->shared.head_bytes) == want &&
	    g->ctx.nsessions == gn;
}

/* Has the client at FD been answered 503 (1), or nothing yet (0)? */
static int
refused_503(int fd)
{
	char buf[512];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strncmp(buf, "HTTP/1.1 503 ", 13) == 0;
}

/*
 * Loops F and G share one budget of 10,000 bytes of heads.  F's client
 * holds 6,000; a head of G's that grows past the budget makes G refuse
 * its own slowest heads, itself last, never F's: the total is the exact
 * sum and back within the budget after each step.
 */
static void
test_head_budget_two_loops(void **state)
{
	struct fixture_proxy *f = *state, *g;
	void *gs = NULL;
	int a1, b1, b2, b3;

	assert_int_equal(fixture_proxy_setup(&gs), 0);
	g = gs;
	f->shared.head_max = 10000;
	g->ctx.shared = &f->shared;
	a1 = client_of(&f->ctx);
	send_head(a1, 6000);
	assert_true(pump_until(f, g, 6000, 0));
	b1 = client_of(&g->ctx);
	send_head(b1, 3000);
	assert_true(pump_until(f, g, 9000, 1));
	assert_int_equal(atomic_load(&f->shared.head_said), 0);
	/* Over by 2,000: G's slowest (B1) goes, F's older A1 stays. */
	b2 = client_of(&g->ctx);
	send_head(b2, 3000);
	assert_true(pump_until(f, g, 9000, 1)); /* B1 closed */
	assert_int_equal(g->ctx.head_bytes, 3000);
	assert_int_equal(f->ctx.head_bytes, 6000);
	assert_int_equal(atomic_load(&f->shared.head_said), 1);
	/* Over by 5,000: B2, then B3 itself (G has nothing older left). */
	b3 = client_of(&g->ctx);
	send_head(b3, 5000);
	assert_true(pump_until(f, g, 6000, 0));
	assert_int_equal(g->ctx.head_bytes, 0);
	assert_int_equal(f->ctx.head_bytes, 6000);
	assert_int_equal(f->ctx.nsessions, 1);
	assert_true(refused_503(b1));
	assert_true(refused_503(b2));
	assert_true(refused_503(b3));
	assert_false(refused_503(a1));
	close(b1);
	close(b2);
	close(b3);
	close(a1);
	assert_true(pump_until(f, g, 0, 0));
	assert_int_equal(f->ctx.nsessions, 0);
	fixture_proxy_teardown(&gs);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    FIXTURE_PROXY_TEST(test_connect_denied),
	    FIXTURE_PROXY_TEST(test_connect_needs_intercept),
	    FIXTURE_PROXY_TEST(test_reload_closes_tunnel),
	    FIXTURE_PROXY_TEST(test_reload_keeps_tunnel),
	    FIXTURE_PROXY_TEST(test_bad_heads),
	    FIXTURE_PROXY_TEST(test_client_leaves),
	    FIXTURE_PROXY_TEST(test_head_budget_two_loops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
