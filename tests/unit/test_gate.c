/*
 * test_gate.c: the gateway's front (proxy/gate.c): the strict Basic
 * parser (good logins, every malformed kind, limits), the login of a
 * whole head (none, one, two, malformed), gate_pick without grants and
 * on broker blocks (logins with their passwords, `from` limits, address
 * alone), and
 * the front on a loopback socket: a head without a login that no grant
 * admits gets 407 with the Basic challenge, a head sent in two parts is
 * waited for (edge-triggered peek), a picked client whose proxy has no
 * room gets 503, a head that never ends gets 408, and the password
 * reaches the pick but never a reply.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#include "policy/grant.h"
#include "policy/policy.h"
#include "tests/unit/fixture.h"
#define GATE_INTERNAL
#include "proxy/gate.h"

static char user[GATE_USER_MAX + 1], pass[GATE_PASS_MAX + 1];
static size_t passlen;

static int
parse(const char *v)
{
	return gate_basic_parse(v, strlen(v), user, pass, &passlen);
}

static void
test_basic_good(void **state)
{
	(void)state;
	/* alice:PW1 */
	assert_int_equal(parse("Basic YWxpY2U6UFcx"), 0);
	assert_string_equal(user, "alice");
	assert_string_equal(pass, "PW1");
	assert_int_equal(passlen, 3);
	/* any case, several blanks; a:b:c -- the password holds a colon */
	assert_int_equal(parse("bAsIc \t YTpiOmM="), 0);
	assert_string_equal(user, "a");
	assert_string_equal(pass, "b:c");
	/* bob: -- an empty password */
	assert_int_equal(parse("Basic Ym9iOg=="), 0);
	assert_string_equal(user, "bob");
	assert_int_equal(passlen, 0);
}

static void
test_basic_bad(void **state)
{
	static const char *const bad[] = {
	    "",
	    "Basic",
	    "Basic ",
	    "Basic\tYWxpY2U6UFcx=",
	    "Bearer YWxpY2U6UFcx",
	    "BasicYWxpY2U6UFcx",
	    "Basic YWxpY2U6UFcx ", /* trailing blank */
	    "Basic YWxpY2U6UFc", /* not a multiple of 4 */
	    "Basic YWxpY2U6UFcx====",
	    "Basic YW=pY2U6UFcx", /* = inside */
	    "Basic YWxp\nY2U6",
	    "Basic YWxpY2U6UF.x", /* not base64 */
	    "Basic Ym9iOh==", /* non-zero unused bits */
	    "Basic YWxpY2U=", /* alice: no colon */
	    "Basic OnB3", /* :pw: no user */
	    "Basic YQpiOmM=", /* a\nb:c: a control byte */
	    "Digest username=alice",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		strcpy(pass, "x");
		assert_int_equal(parse(bad[i]), -1);
		assert_int_equal(user[0], '\0');
		assert_int_equal(pass[0], '\0');
		assert_int_equal(passlen, 0);
	}
}

/* Base64 of a login with a user of U bytes and a password of P bytes. */
static int
parse_sized(size_t u, size_t p)
{
	static const char tab[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	static uint8_t raw[4096];
	static char v[8192];
	size_t n = 0, i, o;

	memset(raw, 'u', u);
	raw[u] = ':';
	memset(raw + u + 1, 'p', p);
	n = u + 1 + p;
	o = (size_t)sprintf(v, "Basic ");
	for (i = 0; i < n; i += 3) {
		uint32_t acc = (uint32_t)raw[i] << 16 |
		    (i + 1 < n ? (uint32_t)raw[i + 1] << 8 : 0) |
		    (i + 2 < n ? raw[i + 2] : 0);
		v[o++] = tab[acc >> 18 & 63];
		v[o++] = tab[acc >> 12 & 63];
		v[o++] = i + 1 < n ? tab[acc >> 6 & 63] : '=';
		v[o++] = i + 2 < n ? tab[acc & 63] : '=';
	}
	v[o] = '\0';
	return parse(v);
}

static void
test_basic_limits(void **state)
{
	(void)state;
	assert_int_equal(parse_sized(GATE_USER_MAX, GATE_PASS_MAX), 0);
	assert_int_equal(strlen(user), GATE_USER_MAX);
	assert_int_equal(passlen, GATE_PASS_MAX);
	assert_int_equal(parse_sized(GATE_USER_MAX + 1, 1), -1);
	assert_int_equal(parse_sized(1, GATE_PASS_MAX + 1), -1);
}

static int
head(const char *h)
{
	return gate_head_login(h, strlen(h), user, pass, &passlen);
}

static void
test_head_login(void **state)
{
	(void)state;
	assert_int_equal(head("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n"
	                      "\r\n"),
	    0);
	assert_int_equal(user[0], '\0');
	assert_int_equal(head("CONNECT a.test:443 HTTP/1.1\r\nHost: "
	                      "a.test:443\r\nproxy-authorization:   Basic "
	                      "YWxpY2U6UFcx  \r\n\r\n"),
	    1);
	assert_string_equal(user, "alice");
	assert_string_equal(pass, "PW1");
	assert_int_equal(
	    head("CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n"
	         "Proxy-Authorization: Basic YWxpY2U6UFcx\r\n"
	         "Proxy-Authorization: Basic Ym9iOg==\r\n\r\n"),
	    -1);
	assert_int_equal(
	    head("CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n"
	         "Proxy-Authorization: Basic !!\r\n\r\n"),
	    -1);
	assert_int_equal(head("CONNECT a.test:443 HTTP/1.1\r\n"), -1);
}

static void
test_pick_no_grants(void **state)
{
	struct grant_set *g = grant_set_new();
	struct sockaddr_in sin = {.sin_family = AF_INET};
	const char *why = NULL;

	(void)state;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(
	    gate_pick(g, NULL, (struct sockaddr *)&sin, NULL, NULL, 0, &why),
	    -1);
	assert_string_equal(why, GATE_WHY_NONE);
	assert_int_equal(gate_pick(g, NULL, (struct sockaddr *)&sin, "alice",
	                     "PW1", 3, &why),
	    -1);
	assert_string_equal(why, GATE_WHY_AUTH);
	grant_set_free(g);
}

static struct sockaddr_in
v4(const char *addr)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};

	assert_int_equal(inet_pton(AF_INET, addr, &sin.sin_addr), 1);
	return sin;
}

static long
pick_as(const struct policy *p, const char *addr, const char *u, const char *pw,
    const char **why)
{
	struct sockaddr_in sin = v4(addr);

	*why = NULL;
	return gate_pick(policy_grants(p), policy_secrets(p),
	    (struct sockaddr *)&sin, u, pw, pw ? strlen(pw) : 0, why);
}

static void
test_pick_grants(void **state)
{
	struct policy *p;
	const struct grant_set *g;
	const char *why;

	(void)state;
	setenv("GATE_TEST_PA", "PW1", 1);
	setenv("GATE_TEST_PB", "secret-of-bob", 1);
	p = fixture_policy("secret pa env GATE_TEST_PA\n"
	                   "secret pb env GATE_TEST_PB\n"
	                   "broker {\n policy a /a.conf\n login alice pa\n}\n"
	                   "broker {\n policy b /b.conf\n login bob pb\n"
	                   " from 192.0.2.0/24\n}\n"
	                   "broker {\n policy c /c.conf\n"
	                   " from 198.51.100.0/24\n}\n",
	    1);
	g = policy_grants(p);
	assert_non_null(g);
	assert_int_equal(pick_as(p, "203.0.113.1", "alice", "PW1", &why),
	    grant_find(g, "a"));
	/* the same length, another value; another length; none */
	assert_int_equal(pick_as(p, "203.0.113.1", "alice", "PW2", &why), -1);
	assert_string_equal(why, GATE_WHY_AUTH);
	assert_int_equal(pick_as(p, "203.0.113.1", "alice", "PW", &why), -1);
	assert_int_equal(pick_as(p, "203.0.113.1", "alice", "", &why), -1);
	assert_int_equal(pick_as(p, "203.0.113.1", "bob", "PW1", &why), -1);
	/* bob only from his block's addresses */
	assert_int_equal(pick_as(p, "192.0.2.5", "bob", "secret-of-bob", &why),
	    grant_find(g, "b"));
	assert_int_equal(
	    pick_as(p, "203.0.113.1", "bob", "secret-of-bob", &why), -1);
	/* by address alone */
	assert_int_equal(
	    pick_as(p, "198.51.100.7", NULL, NULL, &why), grant_find(g, "c"));
	assert_int_equal(pick_as(p, "203.0.113.1", NULL, NULL, &why), -1);
	assert_string_equal(why, GATE_WHY_NONE);
	/* no secrets to compare with: fail closed */
	{
		struct sockaddr_in sin = v4("203.0.113.1");

		assert_int_equal(gate_pick(g, NULL, (struct sockaddr *)&sin,
		                     "alice", "PW1", 3, &why),
		    -1);
	}
	policy_free(p);
	unsetenv("GATE_TEST_PA");
	unsetenv("GATE_TEST_PB");
}

/* --- the front on a loopback socket --------------------------------------- */

struct front {
	struct event_base *base;
	struct gate *gate;
	unsigned port;
	long answer; /* what pick returns */
	int picks;
	char user[GATE_USER_MAX + 1], pass[GATE_PASS_MAX + 1];
};

static long
fake_pick(void *arg, const struct sockaddr *sa, const char *u, const char *p,
    size_t plen, const char **why)
{
	struct front *f = arg;

	assert_int_equal(sa->sa_family, AF_INET);
	f->picks++;
	snprintf(f->user, sizeof(f->user), "%s", u ? u : "");
	snprintf(f->pass, sizeof(f->pass), "%.*s", (int)plen, p ? p : "");
	*why = u ? GATE_WHY_AUTH : GATE_WHY_NONE;
	return f->answer;
}

static struct proxy *
fake_proxy(void *arg, long i)
{
	(void)arg;
	(void)i;
	return NULL; /* no room: 503 */
}

static void
front_open(struct front *f, unsigned head_ms)
{
	struct gate_config cf = {0};

	memset(f, 0, sizeof(*f));
	f->base = event_base_new();
	assert_non_null(f->base);
	cf.base = f->base;
	cf.head_ms = head_ms;
	cf.pick = fake_pick;
	cf.proxy = fake_proxy;
	cf.arg = f;
	f->answer = -1;
	assert_non_null(f->gate = gate_new(&cf));
	assert_int_equal(
	    gate_listen(f->gate, "127.0.0.1:0", PROXY_VIA_PROXY, &f->port), 0);
	assert_int_not_equal(f->port, 0);
}

static void
front_close(struct front *f)
{
	gate_free(f->gate);
	event_base_free(f->base);
}

static int
dial(const struct front *f)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sin.sin_port = htons((uint16_t)f->port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	return fd;
}

/* Runs the loop until FD has the whole answer (the gate closed); it. */
static char *
answer(struct front *f, int fd)
{
	static char buf[4096];
	size_t got = 0;
	ssize_t n;
	int i;
	struct pollfd pfd = {.fd = fd, .events = POLLIN};

	for (i = 0; i < 5000; i++) {
		event_base_loop(f->base, EVLOOP_NONBLOCK);
		if (poll(&pfd, 1, 1) != 1)
			continue;
		n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return buf;
}

/* Runs the loop a little (nothing should be answered meanwhile). */
static void
spin(struct front *f, int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	int i;

	for (i = 0; i < 50; i++) {
		event_base_loop(f->base, EVLOOP_NONBLOCK);
		assert_int_equal(poll(&pfd, 1, 1), 0);
	}
}

static const char get_head[] =
    "GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n";

static void
test_front_407(void **state)
{
	struct front f;
	char *a;
	int fd;

	(void)state;
	front_open(&f, 30000);
	fd = dial(&f);
	assert_int_equal(
	    write(fd, get_head, strlen(get_head)), strlen(get_head));
	spin(&f, fd); /* half a head: waited for, not answered */
	assert_int_equal(f.picks, 0);
	assert_int_equal(write(fd, "\r\n", 2), 2);
	a = answer(&f, fd);
	assert_int_equal(f.picks, 1);
	assert_string_equal(f.user, "");
	assert_non_null(strstr(a, "HTTP/1.1 407 "));
	assert_non_null(strstr(a,
	    "\r\nProxy-Authenticate: Basic "
	    "realm=\"pinhole\"\r\n"));
	assert_non_null(strstr(a, "\r\nConnection: close\r\n"));
	assert_non_null(strstr(a, "X-Pinhole-Reason: " GATE_WHY_NONE "\r\n"));
	close(fd);
	front_close(&f);
}

static void
test_front_login_503(void **state)
{
	static const char h[] =
	    "CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443"
	    "\r\nProxy-Authorization: Basic YWxpY2U6UFcx\r\n"
	    "\r\n";
	struct front f;
	char *a;
	int fd;

	(void)state;
	front_open(&f, 30000);
	f.answer = 0;
	fd = dial(&f);
	assert_int_equal(write(fd, h, strlen(h)), strlen(h));
	a = answer(&f, fd);
	assert_string_equal(f.user, "alice");
	assert_string_equal(f.pass, "PW1");
	assert_non_null(strstr(a, "HTTP/1.1 503 "));
	assert_null(strstr(a, "PW1"));
	assert_null(strstr(a, "YWxpY2U6UFcx"));
	close(fd);
	front_close(&f);
}

static void
test_front_timeout(void **state)
{
	struct front f;
	char *a;
	int fd;

	(void)state;
	front_open(&f, 100);
	fd = dial(&f);
	assert_int_equal(
	    write(fd, get_head, strlen(get_head)), strlen(get_head));
	a = answer(&f, fd);
	assert_non_null(strstr(a, "HTTP/1.1 408 "));
	assert_int_equal(f.picks, 0);
	close(fd);
	front_close(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_basic_good),
	    cmocka_unit_test(test_basic_bad),
	    cmocka_unit_test(test_basic_limits),
	    cmocka_unit_test(test_head_login),
	    cmocka_unit_test(test_pick_no_grants),
	    cmocka_unit_test(test_pick_grants),
	    cmocka_unit_test(test_front_407),
	    cmocka_unit_test(test_front_login_503),
	    cmocka_unit_test(test_front_timeout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
