/*
 * test_session.c: unit tests of proxy/session.c, what every part of the
 * request path does to a session: proxy-made answers (one printable
 * reason line, the 403 told to the context), the close path and the
 * context's callbacks, the relay budget and the head budget, both the
 * process's (several loops' contexts sharing one), when a head is worth
 * parsing again, writes made in the turn that asks for them, and what
 * counts as a clean end of the peer's sending.
 *
 * The session comes from request_new() on one end of a socketpair (see
 * fixture_proxy in fixture.h); the tests then act on it directly.
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
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "policy/policy.h"
#include "proxy/session.h"
#include "tests/unit/fixture.h"

/* The one session of F. */
static struct session *
only_session(struct fixture_proxy *f)
{
	assert_int_equal(f->ctx.nsessions, 1);
	return TAILQ_FIRST(&f->ctx.sessions);
}

/* A 403 made here: status line, reason header made printable, told. */
static void
test_reply_close(void **state)
{
	struct fixture_proxy *f = *state;
	struct target_host host;
	uint16_t port;
	struct session *s;

	fixture_client(f);
	s = only_session(f);
	assert_int_equal(
	    target_authority_parse("up.test:80", 10, &host, &port), 0);
	session_note_target(s, "GET", 3, &host, port);
	session_reply_close(s, 403, "no rule\r\nX-Evil: 1");
	assert_true(fixture_pump(f, fixture_client_eof));
	if (strncmp(f->got, "HTTP/1.1 403 Forbidden\r\n", 24) != 0)
		fail_msg("got \"%.60s\"", f->got);
	assert_non_null(
	    strstr(f->got, "X-Pinhole-Reason: no rule??X-Evil: 1\r\n"));
	assert_null(strstr(f->got, "\r\nX-Evil"));
	assert_int_equal(f->denied, 1);
	assert_true(fixture_pump(f, fixture_no_session));
	assert_int_equal(f->ended, 1);
}

/* Another status is not a denial; the reason phrase follows the status. */
static void
test_reply_close_status(void **state)
{
	struct fixture_proxy *f = *state;

	fixture_client(f);
	session_reply_close(only_session(f), 502, "upstream gone");
	assert_true(fixture_pump(f, fixture_client_eof));
	assert_int_equal(
	    strncmp(f->got, "HTTP/1.1 502 Bad Gateway\r\n", 26), 0);
	assert_non_null(strstr(f->got, "\r\n\r\nupstream gone\n"));
	assert_int_equal(f->denied, 0);
	assert_string_equal(
	    session_status_text(431), "Request Header Fields Too Large");
	assert_string_equal(session_status_text(299), "Error");
}

/* session_close frees the session at once and tells the context. */
static void
test_close(void **state)
{
	struct fixture_proxy *f = *state;

	fixture_client(f);
	session_close(only_session(f), "a test ends it");
	assert_int_equal(f->ctx.nsessions, 0);
	assert_int_equal(f->ended, 1);
	assert_int_equal(f->ctx.head_bytes, 0);
	assert_true(fixture_pump(f, fixture_client_eof));
}

/*
 * The relay budget: 256 KiB at most, never under 16 KiB, and divided by
 * the sessions of the whole process: another loop's context sharing the
 * count and budget gets the same share.
 */
static void
test_buf_high(void **state)
{
	struct fixture_proxy *f = *state;
	struct session_ctx other = {.shared = &f->shared};

	assert_int_equal(f->shared.buf_max, 64 << 20);
	assert_int_equal(session_buf_high(&f->ctx), 256 * 1024);
	atomic_store(&f->shared.sessions, 1);
	assert_int_equal(session_buf_high(&f->ctx), 256 * 1024);
	/* 200 sessions in the process, none of them this loop's. */
	atomic_store(&f->shared.sessions, 200);
	assert_int_equal(session_buf_high(&f->ctx), (64 << 20) / 400);
	assert_int_equal(session_buf_high(&other), (64 << 20) / 400);
	atomic_store(&f->shared.sessions, 100000);
	assert_int_equal(session_buf_high(&f->ctx), 16 * 1024);
	atomic_store(&f->shared.sessions, 0);
}

/*
 * Two loops' contexts share one head budget: the process's total is the
 * exact sum of every session's unfinished head, through growth, shrinking,
 * shedding and release, and each loop's own count stays its own.  A head
 * is shed only while the total is over the budget.
 */
static void
test_head_hold_shared(void **state)
{
	struct fixture_proxy *f = *state, *g;
	void *gs = NULL;
	struct session *a, *b;

	assert_int_equal(fixture_proxy_setup(&gs), 0);
	g = gs;
	g->ctx.shared = &f->shared; /* G is another loop of F's process */
	fixture_client(f);
	fixture_client(g);
	a = only_session(f);
	b = only_session(g);
	assert_int_equal(session_head_hold(a, 1000), 1000);
	assert_int_equal(session_head_hold(b, 500), 1500);
	assert_int_equal(session_head_hold(b, 500), 1500); /* unchanged */
	assert_int_equal(f->ctx.head_bytes, 1000);
	assert_int_equal(g->ctx.head_bytes, 500);
	/* Over a budget of 1,200: one head comes off, the next would not. */
	f->shared.head_max = 1200;
	assert_int_equal(session_head_shed(b), 1);
	assert_int_equal(atomic_load(&f->shared.head_bytes), 1000);
	assert_int_equal(g->ctx.head_bytes, 0);
	assert_int_equal(session_head_shed(a), 0);
	assert_int_equal(session_head_shed(b), 0); /* holds none now */
	assert_int_equal(f->ctx.head_bytes, 1000);
	assert_int_equal(session_head_hold(b, 500), 1500);
	assert_int_equal(session_head_hold(a, 400), 900); /* shrinks */
	session_head_release(b);
	assert_int_equal(atomic_load(&f->shared.head_bytes), 400);
	assert_int_equal(g->ctx.head_bytes, 0);
	session_head_release(b); /* twice: nothing more */
	assert_int_equal(atomic_load(&f->shared.head_bytes), 400);
	/* A session that closes gives its head back. */
	session_close(a, "test");
	assert_int_equal(atomic_load(&f->shared.head_bytes), 0);
	assert_int_equal(f->ctx.head_bytes, 0);
	fixture_proxy_teardown(&gs);
	assert_int_equal(atomic_load(&f->shared.head_bytes), 0);
}

/* A head is parsed again only when new bytes hold a LF. */
static void
test_head_ready(void **state)
{
	struct evbuffer *in = evbuffer_new();
	size_t seen = 0;

	(void)state;
	assert_non_null(in);
	evbuffer_add(in, "GET http://a", 12);
	assert_false(session_head_ready(in, &seen));
	assert_int_equal(seen, 12);
	assert_false(session_head_ready(in, &seen));
	evbuffer_add(in, "/ HTTP/1.1\r", 11);
	assert_false(session_head_ready(in, &seen));
	evbuffer_add(in, "\n", 1);
	assert_true(session_head_ready(in, &seen));
	assert_int_equal(seen, 24);
	evbuffer_free(in);
}

/*
 * session_send_now: the socket's write runs in this turn of the loop (an
 * active event, no EPOLLOUT waited for), and only with something to send
 * on a bufferevent that writes.
 */
static void
test_send_now(void **state)
{
	struct event_base *base = event_base_new();
	struct bufferevent *bev;
	char got[8] = "";
	int sv[2];

	(void)state;
	assert_non_null(base);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	bev = bufferevent_socket_new(base, sv[0], BEV_OPT_CLOSE_ON_FREE);
	assert_non_null(bev);
	bufferevent_enable(bev, EV_WRITE);
	session_send_now(bev); /* nothing to send */
	assert_int_equal(
	    event_base_get_num_events(base, EVENT_BASE_COUNT_ACTIVE), 0);
	bufferevent_disable(bev, EV_WRITE);
	evbuffer_add(bufferevent_get_output(bev), "hello", 5);
	session_send_now(bev); /* not writing */
	assert_int_equal(
	    event_base_get_num_events(base, EVENT_BASE_COUNT_ACTIVE), 0);
	bufferevent_enable(bev, EV_WRITE);
	session_send_now(bev);
	assert_int_equal(
	    event_base_get_num_events(base, EVENT_BASE_COUNT_ACTIVE), 1);
	/* 1: nothing is left registered once the write is done. */
	assert_int_equal(event_base_loop(base, EVLOOP_NONBLOCK), 1);
	assert_int_equal(evbuffer_get_length(bufferevent_get_output(bev)), 0);
	assert_int_equal(read(sv[1], got, sizeof(got)), 5);
	assert_memory_equal(got, "hello", 5);
	bufferevent_free(bev);
	close(sv[1]);
	event_base_free(base);
}

/*
 * A clean EOF is the peer's FIN alone: EOF with ERROR (a write's reset
 * and the read of 0 bytes, folded into one deferred call) is a failure.
 */
static void
test_clean_eof(void **state)
{
	(void)state;
	assert_true(session_clean_eof(BEV_EVENT_EOF));
	assert_true(session_clean_eof(BEV_EVENT_EOF | BEV_EVENT_READING));
	assert_false(session_clean_eof(BEV_EVENT_EOF | BEV_EVENT_ERROR));
	assert_false(session_clean_eof(BEV_EVENT_EOF | BEV_EVENT_ERROR |
	    BEV_EVENT_READING | BEV_EVENT_WRITING));
	assert_false(session_clean_eof(BEV_EVENT_ERROR | BEV_EVENT_WRITING));
	assert_false(session_clean_eof(BEV_EVENT_TIMEOUT | BEV_EVENT_READING));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    FIXTURE_PROXY_TEST(test_reply_close),
	    FIXTURE_PROXY_TEST(test_reply_close_status),
	    FIXTURE_PROXY_TEST(test_close),
	    FIXTURE_PROXY_TEST(test_buf_high),
	    FIXTURE_PROXY_TEST(test_head_hold_shared),
	    cmocka_unit_test(test_head_ready),
	    cmocka_unit_test(test_send_now),
	    cmocka_unit_test(test_clean_eof),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
