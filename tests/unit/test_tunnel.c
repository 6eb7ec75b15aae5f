/*
 * test_tunnel.c: unit tests of proxy/tunnel.c, both relays: the splice
 * relay of a CONNECT tunnel, and the bufferevent relay after a 101.
 *
 * The client is one end of a socketpair handed to request_new(); the
 * upstream a listener on 127.0.0.1 that the policy's "resolve" line names
 * (no DNS); see fixture_proxy in fixture.h.
 */
#include <sys/resource.h>
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
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "policy/policy.h"
#include "proxy/pipepool.h"
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

/* Byte I of a transfer: a pattern whose every 64 KiB differ. */
static char
pattern(size_t i, int way)
{
	return (char)((i * 7 + i / 65521 + (size_t)way * 13) & 0xff);
}

/* Sends what fits of the SIZE bytes of WAY on FD; *SENT advances. */
static void
send_some(int fd, size_t size, int way, size_t *sent)
{
	char buf[65536];
	size_t n = size - *sent < sizeof(buf) ? size - *sent : sizeof(buf);
	size_t i;
	ssize_t r;

	for (i = 0; i < n; i++)
		buf[i] = pattern(*sent + i, way);
	if (n > 0 && (r = write(fd, buf, n)) > 0)
		*sent += (size_t)r;
}

/* Reads what FD has of WAY, checking each byte in order; *GOT advances. */
static void
recv_some(int fd, int way, size_t *got)
{
	char buf[65536];
	ssize_t r, i;

	while ((r = read(fd, buf, sizeof(buf))) > 0) {
		for (i = 0; i < r; i++)
			if (buf[i] != pattern(*got + (size_t)i, way))
				fail_msg("way %d: byte %zu differs", way,
				    *got + (size_t)i);
		*got += (size_t)r;
	}
}

/* Takes every free descriptor (up to 256) into SQUAT; returns the count. */
static int
squat(int *fds, int n)
{
	int fd;

	while (n < 256 && (fd = dup(0)) >= 0)
		fds[n++] = fd;
	return n;
}

/*
 * SIZE bytes each way at once through a tunnel whose loop has POOL,
 * every byte checked in order, the readers stalling until the writers are
 * stuck (so that the proxy holds bytes, in pipes or not).  With EMFILE, half-way the descriptor
 * limit is lowered to what is open and every descriptor freed is taken
 * (pipes given back and closed included), so that pipe2() fails.
 */
static void
both_ways(struct fixture_proxy *f, struct pipepool *pool, int emfile)
{
	const size_t size = 3u << 20;
	size_t sent[2] = {0, 0}, got[2] = {0, 0}, before;
	int stuck = 0;
	struct rlimit old, low;
	int squatters[256], nsq = 0, low_set = 0;
	int64_t end;

	f->ctx.pipes = pool;
	fixture_tunnel(f);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	end = fixture_now_ms() + 20000; /* a bound, not a timing check */
	while ((got[0] < size || got[1] < size) && fixture_now_ms() < end) {
		if (emfile && !low_set && got[0] > size / 2) {
			low = old;
			low.rlim_cur = (rlim_t)dup(0); /* the lowest free */
			close((int)low.rlim_cur);
			assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
			low_set = 1;
		}
		if (low_set)
			nsq = squat(squatters, nsq);
		before = sent[0] + sent[1];
		send_some(f->cfd, size, 0, &sent[0]);
		send_some(f->ufd, size, 1, &sent[1]);
		event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		/* Readers stall until the writers are stuck: the proxy then
		 * holds bytes its destination did not take. */
		stuck = sent[0] + sent[1] == before ? stuck + 1 : 0;
		if (stuck < 2 && sent[0] + sent[1] < 2 * size)
			continue;
		recv_some(f->ufd, 0, &got[0]);
		recv_some(f->cfd, 1, &got[1]);
	}
	if (low_set) {
		errno = 0;
		assert_int_equal(pipe((int[2]){0, 0}), -1); /* truly out */
		assert_int_equal(errno, EMFILE);
	}
	while (nsq > 0)
		close(squatters[--nsq]);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(got[0], size);
	assert_int_equal(got[1], size);
	assert_int_equal(pipepool_busy(pool), 0); /* drained: all back */
	/* Both EOFs pass, the session ends, and nothing is left out. */
	assert_int_equal(shutdown(f->cfd, SHUT_WR), 0);
	assert_int_equal(shutdown(f->ufd, SHUT_WR), 0);
	assert_true(fixture_pump(f, fixture_no_session));
	assert_int_equal(pipepool_busy(pool), 0);
	f->ctx.pipes = NULL;
	pipepool_free(pool);
}

/* A pool of none: both ways copy, bytes the peer did not take held. */
static void
test_no_pipes(void **state)
{
	both_ways(*state, pipepool_new(0, 0), 0);
}

/* One pipe for two bulk ways: each falls back while the other has it. */
static void
test_one_pipe(void **state)
{
	struct pipepool *pool = pipepool_new(1, 1);

	both_ways(*state, pool, 0);
}

/*
 * One pipe of one page (as the kernel makes them for a user over
 * pipe-user-pages-soft) for two ways: what it does not take of a copy is
 * held on the heap, behind it.
 */
static void
test_small_pipe(void **state)
{
	struct pipepool *pool = pipepool_new(1, 1);
	int p[2];

	assert_int_equal(pipepool_take(pool, p), 0);
	assert_true(fcntl(p[1], F_SETPIPE_SZ, 4096) >= 0);
	pipepool_give(pool, p, 1);
	both_ways(*state, pool, 0);
}

/*
 * Reads under 16 KiB (no splice yet) into an upstream that does not read:
 * the read the upstream cannot take whole goes into the one-page pipe and
 * the rest behind it on the heap; then every byte arrives in order.
 */
static void
test_kept_behind_pipe(void **state)
{
	struct fixture_proxy *f = *state;
	struct pipepool *pool = pipepool_new(1, 1);
	char buf[16383];
	size_t sent = 0, got = 0, i;
	int p[2], n;
	ssize_t r;
	int64_t end;

	assert_int_equal(pipepool_take(pool, p), 0);
	assert_true(fcntl(p[1], F_SETPIPE_SZ, 4096) >= 0);
	pipepool_give(pool, p, 1);
	f->ctx.pipes = pool;
	fixture_tunnel(f);
	for (n = 0; n < 4000; n++) {
		for (i = 0; i < sizeof(buf); i++)
			buf[i] = pattern(sent + i, 0);
		if ((r = write(f->cfd, buf, sizeof(buf))) <= 0)
			break; /* the proxy stopped reading: bytes wait */
		sent += (size_t)r;
		event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
	}
	assert_true(n < 4000);
	end = fixture_now_ms() + 10000;
	while (got < sent && fixture_now_ms() < end) {
		event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		recv_some(f->ufd, 0, &got);
	}
	assert_int_equal(got, sent);
	assert_int_equal(pipepool_busy(pool), 0);
	session_close_all(&f->ctx);
	f->ctx.pipes = NULL;
	pipepool_free(pool);
}

/* Pooled, then pipe2() fails with EMFILE mid-transfer. */
static void
test_emfile_midway(void **state)
{
	both_ways(*state, pipepool_new(64, 0), 1);
}

/* An idle tunnel after bulk holds no pipe; the pool keeps them. */
static void
test_idle_holds_none(void **state)
{
	struct fixture_proxy *f = *state;
	struct pipepool *pool = pipepool_new(8, 8);
	size_t sent = 0, got = 0;
	int64_t end;

	f->ctx.pipes = pool;
	fixture_tunnel(f);
	end = fixture_now_ms() + 5000;
	while (got < (1u << 20) && fixture_now_ms() < end) {
		send_some(f->cfd, 1u << 20, 0, &sent);
		event_base_loop(f->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		recv_some(f->ufd, 0, &got);
	}
	assert_int_equal(got, 1u << 20);
	assert_int_equal(pipepool_busy(pool), 0);
	assert_true(pipepool_idle(pool) >= 1);
	assert_int_equal(f->ctx.nsessions, 1);
	session_close_all(&f->ctx);
	f->ctx.pipes = NULL;
	pipepool_free(pool);
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
	    FIXTURE_PROXY_TEST(test_no_pipes),
	    FIXTURE_PROXY_TEST(test_one_pipe),
	    FIXTURE_PROXY_TEST(test_small_pipe),
	    FIXTURE_PROXY_TEST(test_kept_behind_pipe),
	    FIXTURE_PROXY_TEST(test_emfile_midway),
	    FIXTURE_PROXY_TEST(test_idle_holds_none),
	    FIXTURE_PROXY_TEST(test_upgrade_relay),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
