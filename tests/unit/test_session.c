/*
 * test_session.c: unit tests of proxy/session.c and the request path it
 * leads (decide.c, upstream.c, tunnel.c, forward.c), with no network.
 *
 * The client is one end of a socketpair handed to session_new(); the
 * upstream is a listener on 127.0.0.1, reached through the policy's
 * "resolve" lines (the static resolver: no DNS).  One libevent base runs
 * the session; pump() turns it until a condition holds, accepting the
 * upstream connection on the way.
 */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>
#include <event2/event.h>

#include "policy/policy.h"
#include "proxy/session.h"
#include "tests/unit/fixture.h"

struct fixture {
	struct event_base *base;
	struct session_ctx ctx;
	int lfd; /* the upstream's listener */
	uint16_t port;
	int cfd; /* the client's end */
	int ufd; /* the upstream's accepted end, or -1 */
	char got[8192]; /* what the client read */
	size_t ngot;
	char ugot[8192]; /* what the upstream read */
	size_t nugot;
	unsigned denied, ended;
	int ceof, ueof;
};

static void
on_denied(void *arg, const char *host, unsigned port)
{
	struct fixture *f = arg;

	(void)host;
	(void)port;
	f->denied++;
}

static void
on_ended(void *arg)
{
	struct fixture *f = arg;

	f->ended++;
}

/* A proxy_policy holding TEXT, with "@PORT@" the upstream's port. */
static struct proxy_policy *
make_policy(struct fixture *f, const char *text)
{
	struct proxy_policy *pp = calloc(1, sizeof(*pp));
	char buf[1024], *at;

	assert_non_null(pp);
	snprintf(buf, sizeof(buf), "%s", text);
	while ((at = strstr(buf, "@PORT@")) != NULL) {
		char rest[1024];

		snprintf(rest, sizeof(rest), "%s", at + 6);
		snprintf(at, sizeof(buf) - (size_t)(at - buf), "%u%s", f->port,
		    rest);
	}
	pp->p = fixture_policy(buf, 0);
	pp->refs = 1;
	return pp;
}

static void
nonblock(int fd)
{
	assert_int_equal(
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK), 0);
}

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct sockaddr_in sin = {0};
	socklen_t len = sizeof(sin);

	if (f == NULL || (f->base = event_base_new()) == NULL)
		return -1;
	*state = f;
	f->cfd = f->ufd = -1;
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((f->lfd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    bind(f->lfd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
	    listen(f->lfd, 8) != 0 ||
	    getsockname(f->lfd, (struct sockaddr *)&sin, &len) != 0)
		return -1;
	nonblock(f->lfd);
	f->port = ntohs(sin.sin_port);
	f->ctx.base = f->base;
	f->ctx.run_id = "test";
	TAILQ_INIT(&f->ctx.sessions);
	f->ctx.head_budget = 1 << 20;
	f->ctx.buf_budget = 64 << 20;
	f->ctx.ended = on_ended;
	f->ctx.ended_arg = f;
	f->ctx.denied = on_denied;
	f->ctx.denied_arg = f;
	f->ctx.policy = make_policy(f,
	    "resolve up.test 127.0.0.1\n"
	    "allow up.test:@PORT@ { private }\n");
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	session_close_all(&f->ctx);
	if (f->ctx.policy != NULL) {
		policy_free(f->ctx.policy->p);
		free(f->ctx.policy);
	}
	if (f->cfd >= 0)
		close(f->cfd);
	if (f->ufd >= 0)
		close(f->ufd);
	close(f->lfd);
	event_base_free(f->base);
	free(f);
	return 0;
}

/* Starts a session on a new socketpair; the client keeps one end. */
static void
connect_client(struct fixture *f)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	nonblock(sv[0]);
	nonblock(sv[1]);
	f->cfd = sv[0];
	assert_non_null(session_new(&f->ctx, sv[1], 1));
}

static void
send_all(int fd, const char *s)
{
	size_t n = strlen(s);

	assert_int_equal(write(fd, s, n), (ssize_t)n);
}

/* Reads what is there from FD into BUF (at *N); sets *EOF at its end. */
static void
drain(int fd, char *buf, size_t *n, size_t max, int *eof)
{
	ssize_t r = -1;

	if (fd < 0 || *eof)
		return;
	while (*n < max - 1 && (r = read(fd, buf + *n, max - 1 - *n)) > 0)
		*n += (size_t)r;
	if (r == 0)
		*eof = 1;
	buf[*n] = '\0';
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Runs the loop, accepting the upstream connection and reading both
 * ends, until DONE(F) or two seconds pass.  Returns DONE(F).
 */
static int
pump(struct fixture *f, int (*done)(struct fixture *))
{
	int64_t end = now_ms() + 2000;

	while (!done(f) && now_ms() < end) {
		event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		if (f->ufd < 0 && (f->ufd = accept(f->lfd, NULL, NULL)) >= 0)
			nonblock(f->ufd);
		drain(f->cfd, f->got, &f->ngot, sizeof(f->got), &f->ceof);
		drain(f->ufd, f->ugot, &f->nugot, sizeof(f->ugot), &f->ueof);
		usleep(1000);
	}
	return done(f);
}

static int
client_has_head(struct fixture *f)
{
	return strstr(f->got, "\r\n\r\n") != NULL || f->ceof;
}

static int
client_eof(struct fixture *f)
{
	return f->ceof;
}

static int
no_session(struct fixture *f)
{
	return f->ctx.nsessions == 0;
}

static const char *want;

static int
client_has(struct fixture *f)
{
	return strstr(f->got, want) != NULL || f->ceof;
}

static int
upstream_has(struct fixture *f)
{
	return strstr(f->ugot, want) != NULL || f->ueof;
}

static int
upstream_eof(struct fixture *f)
{
	return f->ueof;
}

/* Opens a CONNECT tunnel to up.test and checks the 200. */
static void
open_tunnel(struct fixture *f)
{
	char req[128];

	connect_client(f);
	snprintf(req, sizeof(req),
	    "CONNECT up.test:%u HTTP/1.1\r\nHost: up.test\r\n\r\n", f->port);
	send_all(f->cfd, req);
	assert_true(pump(f, client_has_head));
	assert_string_equal(
	    f->got, "HTTP/1.1 200 Connection established\r\n\r\n");
	f->ngot = 0;
	f->got[0] = '\0';
	assert_true(f->ufd >= 0);
}

/* --- CONNECT -------------------------------------------------------------- */

/* Bytes go both ways; each EOF is passed on; then the session ends. */
static void
test_connect_tunnel(void **state)
{
	struct fixture *f = *state;

	open_tunnel(f);
	send_all(f->cfd, "ping");
	want = "ping";
	assert_true(pump(f, upstream_has));
	assert_string_equal(f->ugot, "ping");
	send_all(f->ufd, "pong");
	want = "pong";
	assert_true(pump(f, client_has));
	assert_string_equal(f->got, "pong");
	assert_int_equal(shutdown(f->cfd, SHUT_WR), 0);
	assert_true(pump(f, upstream_eof));
	assert_int_equal(f->ctx.nsessions, 1); /* the other way is open */
	send_all(f->ufd, "last");
	assert_int_equal(shutdown(f->ufd, SHUT_WR), 0);
	assert_true(pump(f, client_eof));
	assert_string_equal(f->got, "ponglast");
	assert_true(pump(f, no_session));
	assert_int_equal(f->ended, 1);
}

/* A megabyte each way: backpressure and the splice pipes. */
static void
test_connect_bulk(void **state)
{
	struct fixture *f = *state;
	static char block[1 << 20];
	size_t sent = 0, got = 0;
	int64_t end;
	ssize_t r;
	char buf[65536];

	memset(block, 'x', sizeof(block));
	open_tunnel(f);
	end = now_ms() + 5000;
	while (
	    (sent < sizeof(block) || got < sizeof(block)) && now_ms() < end) {
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

/* A CONNECT no rule allows: 403 with the reason, and told. */
static void
test_connect_denied(void **state)
{
	struct fixture *f = *state;

	connect_client(f);
	send_all(f->cfd,
	    "CONNECT other.test:443 HTTP/1.1\r\n"
	    "Host: other.test\r\n\r\n");
	assert_true(pump(f, client_eof));
	if (strstr(f->got, "HTTP/1.1 403 ") == NULL)
		fail_msg("got \"%s\"", f->got);
	assert_non_null(strstr(f->got, "X-Pinhole-Reason: "));
	assert_int_equal(f->denied, 1);
	assert_true(f->ufd < 0);
	assert_true(pump(f, no_session));
}

/* Swaps the context's policy for TEXT (no session holds the old one). */
static void
use_policy(struct fixture *f, const char *text)
{
	struct proxy_policy *old = f->ctx.policy;

	f->ctx.policy = make_policy(f, text);
	policy_free(old->p);
	free(old);
}

/* A rule that needs interception, in a proxy without TLS: 501. */
static void
test_connect_needs_intercept(void **state)
{
	struct fixture *f = *state;
	char req[128];

	use_policy(f,
	    "resolve up.test 127.0.0.1\n"
	    "allow up.test:@PORT@ { private paths /a/* }\n");
	connect_client(f);
	snprintf(req, sizeof(req),
	    "CONNECT up.test:%u HTTP/1.1\r\nHost: up.test\r\n\r\n", f->port);
	send_all(f->cfd, req);
	assert_true(pump(f, client_eof));
	assert_non_null(strstr(f->got, "HTTP/1.1 501 "));
	assert_true(f->ufd < 0);
}

/* A reload closes the tunnels the new policy would not open. */
static void
test_reload_closes_tunnel(void **state)
{
	struct fixture *f = *state;
	struct proxy_policy *old = f->ctx.policy;

	open_tunnel(f);
	/* The session holds the old policy: it goes when the session ends. */
	f->ctx.policy = make_policy(f, "allow elsewhere.test\n");
	old->refs--;
	session_policy_reloaded(&f->ctx);
	assert_true(pump(f, client_eof));
	assert_true(pump(f, upstream_eof));
	assert_int_equal(f->ctx.nsessions, 0);
}

/* A reload that still allows the tunnel leaves it open. */
static void
test_reload_keeps_tunnel(void **state)
{
	struct fixture *f = *state;
	struct proxy_policy *old = f->ctx.policy;

	open_tunnel(f);
	f->ctx.policy = make_policy(f,
	    "resolve up.test 127.0.0.1\n"
	    "allow up.test:@PORT@ { private }\n"
	    "allow other.test\n");
	old->refs--;
	session_policy_reloaded(&f->ctx);
	send_all(f->cfd, "still");
	want = "still";
	assert_true(pump(f, upstream_has));
	assert_int_equal(f->ctx.nsessions, 1);
	session_close_all(&f->ctx); /* frees OLD with its last session */
}

/* --- plain HTTP and bad heads --------------------------------------------- */

/* An absolute URL goes upstream in origin form; the response comes back. */
static void
test_forward(void **state)
{
	struct fixture *f = *state;
	char req[160];

	connect_client(f);
	snprintf(req, sizeof(req),
	    "GET http://up.test:%u/a?b HTTP/1.1\r\nHost: up.test\r\n"
	    "Proxy-Connection: keep-alive\r\n\r\n",
	    f->port);
	send_all(f->cfd, req);
	want = "\r\n\r\n";
	assert_true(pump(f, upstream_has));
	assert_non_null(strstr(f->ugot, "GET /a?b HTTP/1.1\r\n"));
	assert_null(strstr(f->ugot, "Proxy-Connection"));
	send_all(f->ufd, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi");
	want = "hi";
	assert_true(pump(f, client_has));
	assert_non_null(strstr(f->got, "HTTP/1.1 200 OK\r\n"));
	assert_int_equal(f->ctx.nsessions, 1); /* keep-alive */
}

/* After a 101 the bufferevent relay carries bytes both ways. */
static void
test_upgrade_relay(void **state)
{
	struct fixture *f = *state;
	char req[192];

	connect_client(f);
	snprintf(req, sizeof(req),
	    "GET http://up.test:%u/ws HTTP/1.1\r\nHost: up.test\r\n"
	    "Connection: upgrade\r\nUpgrade: websocket\r\n\r\n",
	    f->port);
	send_all(f->cfd, req);
	want = "\r\n\r\n";
	assert_true(pump(f, upstream_has));
	assert_non_null(strstr(f->ugot, "Upgrade: websocket\r\n"));
	f->nugot = 0;
	f->ugot[0] = '\0';
	send_all(f->ufd,
	    "HTTP/1.1 101 Switching Protocols\r\n"
	    "Connection: upgrade\r\nUpgrade: websocket\r\n\r\n"
	    "hello");
	want = "hello";
	assert_true(pump(f, client_has));
	assert_non_null(strstr(f->got, "HTTP/1.1 101 "));
	send_all(f->cfd, "frame");
	want = "frame";
	assert_true(pump(f, upstream_has));
	assert_string_equal(f->ugot, "frame");
	close(f->ufd);
	f->ufd = -1;
	assert_true(pump(f, client_eof));
	close(f->cfd);
	f->cfd = -1;
	assert_true(pump(f, no_session));
}

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
	struct fixture *f = *state;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		f->ngot = 0;
		f->got[0] = '\0';
		f->ceof = 0;
		connect_client(f);
		send_all(f->cfd, cases[i].head);
		assert_true(pump(f, client_eof));
		if (strncmp(f->got, cases[i].status, strlen(cases[i].status)) !=
		    0)
			fail_msg("case %zu: got \"%.60s\"", i, f->got);
		close(f->cfd);
		f->cfd = -1;
		assert_true(pump(f, no_session));
	}
	assert_true(f->ufd < 0);
}

/* A client that leaves before a whole head ends the session. */
static void
test_client_leaves(void **state)
{
	struct fixture *f = *state;

	connect_client(f);
	send_all(f->cfd, "GET http://up.te");
	close(f->cfd);
	f->cfd = -1;
	assert_true(pump(f, no_session));
	assert_int_equal(f->ended, 1);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_connect_tunnel),
	    T(test_connect_bulk),
	    T(test_connect_denied),
	    T(test_connect_needs_intercept),
	    T(test_reload_closes_tunnel),
	    T(test_reload_keeps_tunnel),
	    T(test_forward),
	    T(test_upgrade_relay),
	    T(test_bad_heads),
	    T(test_client_leaves),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
