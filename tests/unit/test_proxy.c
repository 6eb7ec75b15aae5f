/*
 * test_proxy.c: unit tests of proxy/proxy.c's per-client limit.  A real
 * proxy listens on 127.0.0.1; clients connect from 127.0.0.1 and, bound
 * to it first, from 127.0.0.2 (loopback holds the whole 127/8), and the
 * test turns the loop until what it waits for happened (bounded).
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

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

#include "audit/audit.h"
#include "policy/policy.h"
#define PROXY_INTERNAL
#include "proxy/proxy.h"
#include "tests/unit/fixture.h"

#define LIMIT 2

struct px_fixture {
	char dir[256];
	char log[300];
	struct event_base *base;
	struct audit *audit;
	struct proxy *px;
	unsigned port;
};

static int
setup(void **state)
{
	struct px_fixture *t = calloc(1, sizeof(*t));
	struct proxy_config cf = {0};
	char err[256];

	if (t == NULL || fixture_tmpdir(t->dir, sizeof(t->dir), "proxy") != 0)
		return -1;
	snprintf(t->log, sizeof(t->log), "%s/audit.jsonl", t->dir);
	t->base = event_base_new();
	t->audit = audit_open(t->log, "test", err, sizeof(err));
	if (t->base == NULL || t->audit == NULL)
		return -1;
	cf.policy = fixture_policy("allow up.test:80\n", 0);
	cf.audit = t->audit;
	cf.run_id = "test";
	cf.max_sessions = 16;
	cf.max_per_client = LIMIT;
	if ((t->px = proxy_new(t->base, &cf)) == NULL ||
	    proxy_listen(t->px, "127.0.0.1:0", PROXY_VIA_PROXY, &t->port) != 0)
		return -1;
	*state = t;
	return 0;
}

static int
teardown(void **state)
{
	struct px_fixture *t = *state;

	proxy_free(t->px);
	audit_close(t->audit);
	event_base_free(t->base);
	fixture_rmtree(t->dir);
	free(t);
	return 0;
}

/* A client connected from FROM (127.0.0.x), non-blocking. */
static int
client(struct px_fixture *t, const char *from)
{
	struct sockaddr_in src = {.sin_family = AF_INET};
	struct sockaddr_in dst = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(inet_pton(AF_INET, from, &src.sin_addr), 1);
	assert_int_equal(inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr), 1);
	dst.sin_port = htons((uint16_t)t->port);
	assert_int_equal(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&dst, sizeof(dst)), 0);
	fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

/* Turns the loop until the proxy has N sessions (at most 2 s). */
static int
sessions_become(struct px_fixture *t, size_t n)
{
	int64_t end = fixture_now_ms() + 2000;

	while (proxy_session_count(t->px) != n && fixture_now_ms() < end) {
		event_base_loop(t->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		usleep(1000);
	}
	return proxy_session_count(t->px) == n;
}

/* Turns the loop until FD is closed by the proxy; what it read in BUF. */
static int
refused(struct px_fixture *t, int fd, char *buf, size_t len)
{
	int64_t end = fixture_now_ms() + 2000;
	size_t got = 0;
	ssize_t r = -1;

	while (fixture_now_ms() < end) {
		event_base_loop(t->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		while (got < len - 1 &&
		    (r = read(fd, buf + got, len - 1 - got)) > 0)
			got += (size_t)r;
		buf[got] = '\0';
		if (r == 0)
			return 1;
		usleep(1000);
	}
	return 0;
}

/* Turns the loop a little: nothing pending is left undone. */
static void
settle(struct px_fixture *t)
{
	int i;

	for (i = 0; i < 20; i++) {
		event_base_loop(t->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		usleep(1000);
	}
}

static char *
slurp(const char *path)
{
	static char buf[16384];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	return buf;
}

/*
 * LIMIT connections from one address are served; the next ones are
 * answered 503 and closed; another address is still served; a slot freed
 * by one that closes is taken again.
 */
static void
test_per_client(void **state)
{
	struct px_fixture *t = *state;
	int a[LIMIT], over, over2, b;
	char buf[1024];
	const char *log;
	size_t i;

	for (i = 0; i < LIMIT; i++) {
		a[i] = client(t, "127.0.0.1");
		assert_true(sessions_become(t, i + 1));
	}
	over = client(t, "127.0.0.1");
	fixture_send(over, "GET http://up.test/ HTTP/1.1\r\nHost: up.test\r\n");
	assert_true(refused(t, over, buf, sizeof(buf)));
	if (strncmp(buf, "HTTP/1.1 503 ", 13) != 0)
		fail_msg("got \"%.80s\"", buf);
	assert_non_null(strstr(buf,
	    "X-Pinhole-Reason: per-client limit: "
	    "client 127.0.0.1 has 2 connections open"));
	over2 = client(t, "127.0.0.1");
	assert_true(refused(t, over2, buf, sizeof(buf)));
	assert_int_equal(proxy_session_count(t->px), LIMIT);

	b = client(t, "127.0.0.2");
	assert_true(sessions_become(t, LIMIT + 1));

	close(a[0]);
	assert_true(sessions_become(t, LIMIT));
	a[0] = client(t, "127.0.0.1");
	assert_true(sessions_become(t, LIMIT + 1));
	settle(t);
	assert_int_equal(proxy_session_count(t->px), LIMIT + 1);

	/* One record per refusal: the second folded into the first. */
	assert_int_equal(audit_flush(t->audit), 0);
	log = slurp(t->log);
	assert_non_null(strstr(log,
	    "\"reason\":\"per-client limit: client "
	    "127.0.0.1 has 2 connections open\""));
	assert_non_null(strstr(log, "\"status\":503"));
	assert_non_null(strstr(log, "\"count\":1"));
	for (i = 0; i < LIMIT; i++)
		close(a[i]);
	close(over);
	close(over2);
	close(b);
	assert_true(sessions_become(t, 0));
}

/*
 * A client told about on stderr, back at its limit at once after all its
 * connections closed, is not told about again within the interval; what
 * was refused meanwhile is said when the proxy lets go of it.
 */
static void
test_said_once(void **state)
{
	struct px_fixture *t = *state;
	int a[LIMIT + 1], i, round, err = dup(2), fd;
	char path[300], buf[1024];
	const char *said;

	snprintf(path, sizeof(path), "%s/stderr", t->dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0 && err >= 0);
	dup2(fd, 2);
	close(fd);
	for (round = 0; round < 2; round++) {
		for (i = 0; i < LIMIT; i++) {
			a[i] = client(t, "127.0.0.1");
			assert_true(sessions_become(t, (size_t)i + 1));
		}
		a[LIMIT] = client(t, "127.0.0.1");
		assert_true(refused(t, a[LIMIT], buf, sizeof(buf)));
		for (i = 0; i <= LIMIT; i++)
			close(a[i]);
		assert_true(sessions_become(t, 0));
	}
	said = slurp(path);
	proxy_free(t->px);
	t->px = NULL;
	dup2(err, 2);
	close(err);
	if (strstr(said, "reached its limit") == NULL ||
	    strstr(strstr(said, "reached its limit") + 1,
	        "reached its "
	        "limit") != NULL ||
	    strstr(said, "more connections refused") != NULL)
		fail_msg("before: %s", said);
	said = slurp(path);
	assert_non_null(strstr(said,
	    "client 127.0.0.1: 1 more connections "
	    "refused with 503"));
}

static void
name_of(int family, const char *addr, char *name, size_t len)
{
	struct sockaddr_storage ss = {0};
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	void *dst =
	    family == AF_INET ? (void *)&s4->sin_addr : (void *)&s6->sin6_addr;

	ss.ss_family = (sa_family_t)family;
	assert_int_equal(inet_pton(family, addr, dst), 1);
	assert_int_equal(
	    proxy_client_name((struct sockaddr *)&ss,
	        family == AF_INET ? sizeof(*s4) : sizeof(*s6), name, len),
	    0);
}

/* IPv6 clients count per /64; an IPv4-mapped one is its IPv4 address. */
static void
test_client_keys(void **state)
{
	struct sockaddr_storage un = {.ss_family = AF_UNIX};
	char name[64];

	(void)state;
	name_of(AF_INET, "192.0.2.7", name, sizeof(name));
	assert_string_equal(name, "192.0.2.7");
	name_of(AF_INET6, "2001:db8:1:2::1", name, sizeof(name));
	assert_string_equal(name, "2001:db8:1:2::/64");
	name_of(AF_INET6, "2001:db8:1:2:ffff:1:2:3", name, sizeof(name));
	assert_string_equal(name, "2001:db8:1:2::/64");
	name_of(AF_INET6, "2001:db8:1:3::1", name, sizeof(name));
	assert_string_equal(name, "2001:db8:1:3::/64");
	name_of(AF_INET6, "::ffff:192.0.2.7", name, sizeof(name));
	assert_string_equal(name, "192.0.2.7");
	assert_int_equal(proxy_client_name((struct sockaddr *)&un, sizeof(un),
	                     name, sizeof(name)),
	    -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_per_client, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_said_once, setup, teardown),
	    cmocka_unit_test(test_client_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
