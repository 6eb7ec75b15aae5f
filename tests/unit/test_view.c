/*
 * test_view.c: unit tests of proxy/view.c, the engine's messages.
 *
 * A whole conversation passes both sides' checks; each way a message can
 * be wrong (type, size, order, count, form, descriptors) is refused and
 * ends the conversation; the decoder waits for a whole message and
 * refuses an oversized header; over a socketpair, messages keep their
 * bounds, descriptors arrive with LISTENERS and a peer that closes
 * mid-message is seen.
 */
#include <sys/socket.h>
#include <sys/stat.h>

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

#include "proxy/view.h"

#define RUN_ID "0123456789abcdef"

static unsigned char buf[VIEW_HDR_SIZE + VIEW_MSG_MAX];

/* A message of TYPE whose payload is P (LEN bytes), no descriptors. */
static struct view_msg
msg(uint32_t type, const void *p, size_t len)
{
	struct view_msg m;

	memset(&m, 0, sizeof(m));
	m.type = type;
	m.len = (uint32_t)len;
	m.data = p;
	return m;
}

static int
check(struct view_order *o, uint32_t type, const void *p, size_t len)
{
	struct view_msg m = msg(type, p, len);

	return view_check(o, &m);
}

static int
check_text(struct view_order *o, uint32_t type, const char *s)
{
	return check(o, type, s, strlen(s) + 1);
}

/* A fresh engine side, after HELLO of ROLE. */
static void
hello(struct view_order *o, uint32_t role)
{
	unsigned char p[64];
	ssize_t n = view_put_hello(p, sizeof(p), role, RUN_ID);

	view_order_init(o, VIEW_FROM_ENGINE);
	assert_int_equal(check(o, VIEW_HELLO, p, (size_t)n), VIEW_OK);
}

/* The engine's side up to READY, as a launcher sees it. */
static void
engine_view(struct view_order *o)
{
	unsigned char p[256];
	ssize_t n;

	view_order_init(o, VIEW_FROM_ENGINE);
	n = view_put_hello(p, sizeof(p), VIEW_ROLE_RUN, RUN_ID);
	assert_int_equal(check(o, VIEW_HELLO, p, (size_t)n), VIEW_OK);
	assert_int_equal(check_text(o, VIEW_ENVSECRET, "GH_TOKEN"), VIEW_OK);
	assert_int_equal(check_text(o, VIEW_CA, "-----BEGIN..."), VIEW_OK);
	n = view_put_standin(p, sizeof(p), "GH_TOKEN", "ph-standin-1");
	assert_int_equal(check(o, VIEW_STANDIN, p, (size_t)n), VIEW_OK);
	assert_int_equal(check_text(o, VIEW_HIDE, "/etc/pinhole/p"), VIEW_OK);
	assert_int_equal(check_text(o, VIEW_TRUST, "-----BEGIN..."), VIEW_OK);
	assert_int_equal(check_text(o, VIEW_LOG, "/var/log/a.jsonl"), VIEW_OK);
	assert_int_equal(check(o, VIEW_READY, NULL, 0), VIEW_OK);
}

static void
test_conversation(void **state)
{
	struct view_order e, u;
	unsigned char p[64];
	uint64_t total = 3;
	uint32_t one = 1, lst[2] = {1, 1};
	struct view_msg m;
	ssize_t n;

	(void)state;
	engine_view(&e);
	view_order_init(&u, VIEW_FROM_USER);
	m = msg(VIEW_LISTENERS, lst, 8);
	m.nfds = 1;
	assert_int_equal(view_check(&u, &m), VIEW_OK);
	assert_int_equal(check(&u, VIEW_STOP, &one, 4), VIEW_OK);
	assert_true(view_order_done(&u));
	assert_false(view_order_done(&e));
	assert_int_equal(check(&e, VIEW_DENIED, &total, 8), VIEW_OK);
	n = view_put_item(p, sizeof(p), 3, "example.com:443");
	assert_int_equal(check(&e, VIEW_DENIED_ITEM, p, (size_t)n), VIEW_OK);
	n = view_put_item(p, sizeof(p), 2, "git.test:443");
	assert_int_equal(check(&e, VIEW_DISTRUST, p, (size_t)n), VIEW_OK);
	assert_int_equal(check(&e, VIEW_BYE, NULL, 0), VIEW_OK);
	assert_true(view_order_done(&e));
	/* Nothing after the end. */
	assert_int_equal(check(&e, VIEW_BYE, NULL, 0), VIEW_E_ORDER);
}

static void
test_order(void **state)
{
	struct view_order o;
	unsigned char p[64];
	ssize_t n;

	(void)state;
	/* Anything before HELLO. */
	view_order_init(&o, VIEW_FROM_ENGINE);
	assert_int_equal(check_text(&o, VIEW_LOG, "/l"), VIEW_E_ORDER);
	assert_true(view_order_done(&o));
	/* An environment secret after the view began. */
	view_order_init(&o, VIEW_FROM_ENGINE);
	n = view_put_hello(p, sizeof(p), VIEW_ROLE_BROKER, RUN_ID);
	assert_int_equal(check(&o, VIEW_HELLO, p, (size_t)n), VIEW_OK);
	assert_int_equal(check_text(&o, VIEW_HIDE, "/h"), VIEW_OK);
	assert_int_equal(check_text(&o, VIEW_ENVSECRET, "X"), VIEW_E_ORDER);
	/* READY without LOG. */
	view_order_init(&o, VIEW_FROM_ENGINE);
	assert_int_equal(check(&o, VIEW_HELLO, p, (size_t)n), VIEW_OK);
	assert_int_equal(check_text(&o, VIEW_HIDE, "/h"), VIEW_OK);
	assert_int_equal(check(&o, VIEW_READY, NULL, 0), VIEW_E_ORDER);
	/* STOP before LISTENERS. */
	view_order_init(&o, VIEW_FROM_USER);
	assert_int_equal(check(&o, VIEW_STOP, "\0\0\0\0", 4), VIEW_E_ORDER);
	/* ERROR ends it, anywhere. */
	engine_view(&o);
	assert_int_equal(check_text(&o, VIEW_ERROR, "no"), VIEW_OK);
	assert_true(view_order_done(&o));
}

static void
test_type_and_side(void **state)
{
	struct view_order o;

	(void)state;
	engine_view(&o);
	/* The user's message from the engine. */
	assert_int_equal(check(&o, VIEW_STOP, "\0\0\0\0", 4), VIEW_E_TYPE);
	engine_view(&o);
	assert_int_equal(check(&o, 0, NULL, 0), VIEW_E_TYPE);
	engine_view(&o);
	assert_int_equal(check(&o, VIEW_TYPE_END, NULL, 0), VIEW_E_TYPE);
	view_order_init(&o, VIEW_FROM_USER);
	assert_int_equal(check_text(&o, VIEW_LOG, "/l"), VIEW_E_TYPE);
}

static void
test_count(void **state)
{
	struct view_order o;
	unsigned char p[64];
	ssize_t n = view_put_hello(p, sizeof(p), VIEW_ROLE_RUN, RUN_ID);

	(void)state;
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check(&o, VIEW_HELLO, p, (size_t)n), VIEW_E_ORDER);
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check_text(&o, VIEW_CA, "pem"), VIEW_OK);
	assert_int_equal(check_text(&o, VIEW_CA, "pem"), VIEW_E_COUNT);
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check_text(&o, VIEW_LOG, "/l"), VIEW_OK);
	assert_int_equal(check_text(&o, VIEW_LOG, "/l"), VIEW_E_COUNT);
	/* TRUST: one per `trust` line, VIEW_TRUST_MAX at most. */
	hello(&o, VIEW_ROLE_RUN);
	for (n = 0; n < VIEW_TRUST_MAX; n++)
		assert_int_equal(check_text(&o, VIEW_TRUST, "pem"), VIEW_OK);
	assert_int_equal(check_text(&o, VIEW_TRUST, "pem"), VIEW_E_COUNT);
}

/* TRUST: a whole PEM text (up to VIEW_MSG_MAX), NUL last, in the view. */
static void
test_trust(void **state)
{
	static unsigned char big[VIEW_MSG_MAX + 1];
	struct view_order o;

	(void)state;
	memset(big, 'A', sizeof(big));
	big[VIEW_MSG_MAX - 1] = '\0';
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check(&o, VIEW_TRUST, big, VIEW_MSG_MAX), VIEW_OK);
	big[VIEW_MSG_MAX - 1] = 'A';
	big[VIEW_MSG_MAX] = '\0';
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(
	    check(&o, VIEW_TRUST, big, VIEW_MSG_MAX + 1), VIEW_E_SIZE);
	/* Two strings in one: malformed. */
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check(&o, VIEW_TRUST, "a\0b", 4), VIEW_E_FORM);
	/* Not before HELLO, not after READY, never from the user. */
	view_order_init(&o, VIEW_FROM_ENGINE);
	assert_int_equal(check_text(&o, VIEW_TRUST, "pem"), VIEW_E_ORDER);
	engine_view(&o);
	assert_int_equal(check_text(&o, VIEW_TRUST, "pem"), VIEW_E_ORDER);
	view_order_init(&o, VIEW_FROM_USER);
	assert_int_equal(check_text(&o, VIEW_TRUST, "pem"), VIEW_E_TYPE);
}

static void
test_sizes(void **state)
{
	static unsigned char big[VIEW_TEXT_MAX + 2];
	struct view_order o;
	uint64_t total = 0;

	(void)state;
	/* DENIED is exactly eight bytes, HELLO twenty-four. */
	engine_view(&o);
	assert_int_equal(check(&o, VIEW_DENIED, &total, 4), VIEW_E_SIZE);
	view_order_init(&o, VIEW_FROM_ENGINE);
	assert_int_equal(check(&o, VIEW_HELLO, RUN_ID, 16), VIEW_E_SIZE);
	/* READY carries nothing. */
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check_text(&o, VIEW_LOG, "/l"), VIEW_OK);
	assert_int_equal(check(&o, VIEW_READY, "x", 1), VIEW_E_SIZE);
	/* A path longer than allowed. */
	memset(big, 'a', sizeof(big));
	big[0] = '/';
	big[sizeof(big) - 1] = '\0';
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check(&o, VIEW_HIDE, big, sizeof(big)), VIEW_E_SIZE);
	/* The encoder refuses what no one may receive. */
	assert_int_equal(
	    view_encode(VIEW_CA, buf, VIEW_MSG_MAX + 1, buf, sizeof(buf)), -1);
	assert_int_equal(view_encode(VIEW_CA, "ab", 3, buf, 10), -1);
}

static void
test_forms(void **state)
{
	struct view_order o;
	unsigned char p[64];
	ssize_t n;

	(void)state;
	/* A run id that is not hex; another version; another role. */
	n = view_put_hello(p, sizeof(p), VIEW_ROLE_RUN, RUN_ID);
	p[8] = 'X';
	view_order_init(&o, VIEW_FROM_ENGINE);
	assert_int_equal(check(&o, VIEW_HELLO, p, (size_t)n), VIEW_E_FORM);
	n = view_put_hello(p, sizeof(p), VIEW_ROLE_RUN, RUN_ID);
	p[0] = VIEW_VERSION + 1;
	view_order_init(&o, VIEW_FROM_ENGINE);
	assert_int_equal(check(&o, VIEW_HELLO, p, (size_t)n), VIEW_E_FORM);
	n = view_put_hello(p, sizeof(p), 7, RUN_ID);
	view_order_init(&o, VIEW_FROM_ENGINE);
	assert_int_equal(check(&o, VIEW_HELLO, p, (size_t)n), VIEW_E_FORM);
	assert_int_equal(view_put_hello(p, sizeof(p), 1, "abc"), -1);
	/* Text: NUL last and only. */
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check(&o, VIEW_LOG, "/a\0b", 5), VIEW_E_FORM);
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check(&o, VIEW_LOG, "/ab", 3), VIEW_E_FORM);
	/* An empty hidden path; variable names with '=' or a digit. */
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check_text(&o, VIEW_HIDE, ""), VIEW_E_SIZE);
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check_text(&o, VIEW_ENVSECRET, "A=B"), VIEW_E_FORM);
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check_text(&o, VIEW_ENVSECRET, "1A"), VIEW_E_FORM);
	/* A stand-in: a name, a value, nothing after. */
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check(&o, VIEW_STANDIN, "A\0v\0x", 6), VIEW_E_FORM);
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check(&o, VIEW_STANDIN, "Av\0\0", 4), VIEW_E_FORM);
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check(&o, VIEW_STANDIN, "abcd", 4), VIEW_E_FORM);
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check(&o, VIEW_STANDIN, "A=\0v\0", 5), VIEW_E_FORM);
	/* A denied item counts at least one. */
	engine_view(&o);
	assert_int_equal(
	    check(&o, VIEW_DENIED, "\0\0\0\0\0\0\0\0", 8), VIEW_OK);
	assert_int_equal(
	    check(&o, VIEW_DENIED_ITEM, "\0\0\0\0a:1", 8), VIEW_E_FORM);
	/* DISTRUST: in the summary only, once, counting at least one. */
	engine_view(&o);
	n = view_put_item(p, sizeof(p), 1, "a:1");
	assert_int_equal(check(&o, VIEW_DISTRUST, p, (size_t)n), VIEW_E_ORDER);
	engine_view(&o);
	assert_int_equal(
	    check(&o, VIEW_DENIED, "\0\0\0\0\0\0\0\0", 8), VIEW_OK);
	assert_int_equal(
	    check(&o, VIEW_DISTRUST, "\0\0\0\0a:1", 8), VIEW_E_FORM);
	engine_view(&o);
	assert_int_equal(
	    check(&o, VIEW_DENIED, "\0\0\0\0\0\0\0\0", 8), VIEW_OK);
	assert_int_equal(check(&o, VIEW_DISTRUST, p, (size_t)n), VIEW_OK);
	assert_int_equal(check(&o, VIEW_DISTRUST, p, (size_t)n), VIEW_E_COUNT);
}

static void
test_fds(void **state)
{
	struct view_order o;
	struct view_msg m;
	uint32_t two[2] = {2, 2}, old[1] = {2};

	(void)state;
	/* Descriptors only with LISTENERS, and as many as it says. */
	engine_view(&o);
	m = msg(VIEW_ERROR, "x", 2);
	m.nfds = 1;
	assert_int_equal(view_check(&o, &m), VIEW_E_FDS);
	view_order_init(&o, VIEW_FROM_USER);
	m = msg(VIEW_LISTENERS, two, 8);
	m.nfds = 1;
	assert_int_equal(view_check(&o, &m), VIEW_E_FDS);
	view_order_init(&o, VIEW_FROM_USER);
	m = msg(VIEW_LISTENERS, two, 8);
	assert_int_equal(view_check(&o, &m), VIEW_E_FDS);
	/* The old form (a count alone) is the wrong size. */
	view_order_init(&o, VIEW_FROM_USER);
	m = msg(VIEW_LISTENERS, old, 4);
	m.nfds = 2;
	assert_int_equal(view_check(&o, &m), VIEW_E_SIZE);
}

/* LISTENERS in batches: the same total each time, never past it. */
static void
test_listener_batches(void **state)
{
	struct view_order o;
	struct view_msg m;
	uint32_t p[2];

	(void)state;
	view_order_init(&o, VIEW_FROM_USER);
	p[0] = 100;
	p[1] = VIEW_FDS_MAX;
	m = msg(VIEW_LISTENERS, p, 8);
	m.nfds = VIEW_FDS_MAX;
	assert_int_equal(view_check(&o, &m), VIEW_OK);
	/* Not all came: no STOP yet. */
	{
		struct view_order early = o;

		assert_int_equal(
		    check(&early, VIEW_STOP, "\0\0\0\0", 4), VIEW_E_ORDER);
	}
	p[1] = 100 - VIEW_FDS_MAX;
	m = msg(VIEW_LISTENERS, p, 8);
	m.nfds = (int)p[1];
	assert_int_equal(view_check(&o, &m), VIEW_OK);
	/* All came: no more LISTENERS, STOP now. */
	p[1] = 1;
	m = msg(VIEW_LISTENERS, p, 8);
	m.nfds = 1;
	{
		struct view_order more = o;

		assert_int_equal(view_check(&more, &m), VIEW_E_ORDER);
	}
	assert_int_equal(check(&o, VIEW_STOP, "\0\0\0\0", 4), VIEW_OK);
	/* A total that changes, one past the total, too many at once. */
	view_order_init(&o, VIEW_FROM_USER);
	p[0] = 3;
	p[1] = 2;
	m = msg(VIEW_LISTENERS, p, 8);
	m.nfds = 2;
	assert_int_equal(view_check(&o, &m), VIEW_OK);
	p[0] = 4;
	p[1] = 1;
	m = msg(VIEW_LISTENERS, p, 8);
	m.nfds = 1;
	assert_int_equal(view_check(&o, &m), VIEW_E_FDS);
	view_order_init(&o, VIEW_FROM_USER);
	p[0] = 3;
	p[1] = 2;
	m = msg(VIEW_LISTENERS, p, 8);
	m.nfds = 2;
	assert_int_equal(view_check(&o, &m), VIEW_OK);
	m.nfds = 2;
	assert_int_equal(view_check(&o, &m), VIEW_E_FDS);
	view_order_init(&o, VIEW_FROM_USER);
	p[0] = VIEW_LISTENERS_MAX;
	p[1] = VIEW_FDS_MAX + 1;
	m = msg(VIEW_LISTENERS, p, 8);
	m.nfds = VIEW_FDS_MAX + 1;
	assert_int_equal(view_check(&o, &m), VIEW_E_FDS);
	view_order_init(&o, VIEW_FROM_USER);
	p[0] = VIEW_LISTENERS_MAX + 1;
	p[1] = 1;
	m = msg(VIEW_LISTENERS, p, 8);
	m.nfds = 1;
	assert_int_equal(view_check(&o, &m), VIEW_E_FDS);
}

/* CAPTURE: the ports, ascending, between HELLO and READY, once. */
static void
test_capture(void **state)
{
	static const uint16_t ports[] = {22, 80, 443};
	struct view_order o;
	unsigned char p[4 + 2 * (VIEW_CAPTURE_MAX + 1)];
	uint16_t got[VIEW_CAPTURE_MAX], many[VIEW_CAPTURE_MAX + 1], bad[2];
	struct view_msg m;
	uint32_t skipped;
	ssize_t n;
	size_t i;

	(void)state;
	hello(&o, VIEW_ROLE_RUN);
	n = view_put_capture(p, sizeof(p), 7, ports, 3);
	assert_int_equal(n, 4 + 6);
	m = msg(VIEW_CAPTURE, p, (size_t)n);
	assert_int_equal(view_check(&o, &m), VIEW_OK);
	assert_int_equal(view_get_capture(&m, &skipped, got), 3);
	assert_int_equal(skipped, 7);
	assert_int_equal(got[0], 22);
	assert_int_equal(got[2], 443);
	/* Once only. */
	assert_int_equal(check(&o, VIEW_CAPTURE, p, (size_t)n), VIEW_E_COUNT);
	/* Before HELLO, after READY. */
	view_order_init(&o, VIEW_FROM_ENGINE);
	assert_int_equal(check(&o, VIEW_CAPTURE, p, (size_t)n), VIEW_E_ORDER);
	engine_view(&o);
	assert_int_equal(check(&o, VIEW_CAPTURE, p, (size_t)n), VIEW_E_ORDER);
	/* No port, an odd length, one port too many. */
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check(&o, VIEW_CAPTURE, p, 4), VIEW_E_SIZE);
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check(&o, VIEW_CAPTURE, p, 7), VIEW_E_FORM);
	for (i = 0; i < VIEW_CAPTURE_MAX + 1; i++)
		many[i] = (uint16_t)(1 + i);
	assert_int_equal(
	    view_put_capture(p, sizeof(p), 0, many, VIEW_CAPTURE_MAX + 1), -1);
	assert_int_equal(
	    view_put_capture(p, sizeof(p), 0, many, VIEW_CAPTURE_MAX),
	    4 + 2 * VIEW_CAPTURE_MAX);
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(
	    check(&o, VIEW_CAPTURE, p, 4 + 2 * VIEW_CAPTURE_MAX), VIEW_OK);
	memcpy(p + 4 + 2 * VIEW_CAPTURE_MAX, "\1\2", 2);
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(
	    check(&o, VIEW_CAPTURE, p, 4 + 2 * (VIEW_CAPTURE_MAX + 1)),
	    VIEW_E_SIZE);
	/* Not ascending; port 0. */
	bad[0] = 443;
	bad[1] = 80;
	n = view_put_capture(p, sizeof(p), 0, bad, 2);
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check(&o, VIEW_CAPTURE, p, (size_t)n), VIEW_E_FORM);
	bad[0] = 80;
	bad[1] = 80;
	n = view_put_capture(p, sizeof(p), 0, bad, 2);
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check(&o, VIEW_CAPTURE, p, (size_t)n), VIEW_E_FORM);
	bad[0] = 0;
	n = view_put_capture(p, sizeof(p), 0, bad, 1);
	hello(&o, VIEW_ROLE_RUN);
	assert_int_equal(check(&o, VIEW_CAPTURE, p, (size_t)n), VIEW_E_FORM);
	/* From the user: not its message. */
	view_order_init(&o, VIEW_FROM_USER);
	n = view_put_capture(p, sizeof(p), 0, ports, 3);
	assert_int_equal(check(&o, VIEW_CAPTURE, p, (size_t)n), VIEW_E_TYPE);
}

static void
test_decode(void **state)
{
	struct view_msg m;
	ssize_t n, i;
	uint32_t hdr[2] = {VIEW_CA, VIEW_MSG_MAX + 1};

	(void)state;
	n = view_encode(VIEW_LOG, "/l", 3, buf, sizeof(buf));
	assert_int_equal(n, VIEW_HDR_SIZE + 3);
	/* Every proper prefix is "not yet". */
	for (i = 0; i < n; i++)
		assert_int_equal(view_decode(buf, (size_t)i, &m), 0);
	assert_int_equal(view_decode(buf, (size_t)n, &m), n);
	assert_int_equal(m.type, VIEW_LOG);
	assert_int_equal(m.len, 3);
	assert_string_equal(view_get_text(&m), "/l");
	memcpy(buf, hdr, sizeof(hdr));
	assert_int_equal(view_decode(buf, sizeof(hdr), &m), VIEW_E_SIZE);
}

static void
test_getters(void **state)
{
	struct view_hello h;
	struct view_msg m;
	unsigned char p[64];
	const char *name, *value;
	uint32_t k;
	ssize_t n;

	(void)state;
	n = view_put_hello(p, sizeof(p), VIEW_ROLE_BROKER, RUN_ID);
	m = msg(VIEW_HELLO, p, (size_t)n);
	view_get_hello(&m, &h);
	assert_int_equal(h.version, VIEW_VERSION);
	assert_int_equal(h.role, VIEW_ROLE_BROKER);
	assert_string_equal(h.run_id, RUN_ID);
	n = view_put_standin(p, sizeof(p), "TOKEN", "standin");
	m = msg(VIEW_STANDIN, p, (size_t)n);
	view_get_standin(&m, &name, &value);
	assert_string_equal(name, "TOKEN");
	assert_string_equal(value, "standin");
	n = view_put_item(p, sizeof(p), 9, "[::1]:80");
	m = msg(VIEW_DENIED_ITEM, p, (size_t)n);
	assert_string_equal(view_get_item(&m, &k), "[::1]:80");
	assert_int_equal(k, 9);
	assert_int_equal(view_put_item(p, 4, 1, "x"), -1);
	assert_int_equal(view_put_standin(p, 3, "A", "b"), -1);
}

static void
test_socket(void **state)
{
	struct view_order e, u;
	struct view_msg m;
	unsigned char p[64];
	uint32_t one = 1, lst[2] = {1, 1};
	struct stat a, b;
	ssize_t n;
	int sv[2], fd;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	view_order_init(&e, VIEW_FROM_ENGINE);
	view_order_init(&u, VIEW_FROM_USER);
	n = view_put_hello(p, sizeof(p), VIEW_ROLE_RUN, RUN_ID);
	assert_int_equal(
	    view_send(sv[0], VIEW_HELLO, p, (size_t)n, NULL, 0), 0);
	assert_int_equal(view_send(sv[0], VIEW_LOG, "/l", 3, NULL, 0), 0);
	assert_int_equal(view_send(sv[0], VIEW_READY, NULL, 0, NULL, 0), 0);
	assert_int_equal(view_recv(sv[1], &e, buf, &m), VIEW_OK);
	assert_int_equal(m.type, VIEW_HELLO);
	assert_int_equal(view_recv(sv[1], &e, buf, &m), VIEW_OK);
	assert_string_equal(view_get_text(&m), "/l");
	assert_int_equal(view_recv(sv[1], &e, buf, &m), VIEW_OK);
	assert_int_equal(m.type, VIEW_READY);
	/* The listener crosses with LISTENERS. */
	fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(view_send(sv[1], VIEW_LISTENERS, lst, 8, &fd, 1), 0);
	assert_int_equal(view_recv(sv[0], &u, buf, &m), VIEW_OK);
	assert_int_equal(m.nfds, 1);
	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(fstat(m.fds[0], &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_int_equal(fcntl(m.fds[0], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	close(m.fds[0]);
	/* A descriptor with STOP is refused, and closed. */
	assert_int_equal(view_send(sv[1], VIEW_STOP, &one, 4, &fd, 1), 0);
	assert_int_equal(view_recv(sv[0], &u, buf, &m), VIEW_E_FDS);
	assert_int_equal(m.nfds, 0);
	close(fd);
	/* The peer closes inside a message. */
	assert_int_equal(write(sv[0], "\1\0\0\0\30\0\0\0abc", 11), 11);
	close(sv[0]);
	view_order_init(&e, VIEW_FROM_ENGINE);
	assert_int_equal(view_recv(sv[1], &e, buf, &m), VIEW_E_TRUNC);
	assert_true(view_order_done(&e));
	close(sv[1]);
}

static void
test_strerror(void **state)
{
	int i;

	(void)state;
	for (i = VIEW_OK; i >= VIEW_E_SYS; i--)
		assert_non_null(view_strerror(i));
	assert_string_equal(
	    view_strerror(VIEW_E_ORDER), "message out of order");
}

/* A broker's client: REQUEST first (0 or 1 descriptor), then as a user. */
static void
test_request(void **state)
{
	struct view_order o;
	struct view_msg m;
	struct view_request rq;
	unsigned char p[512];
	ssize_t n;

	(void)state;
	n = view_put_request(
	    p, sizeof(p), VIEW_REQ_NO_CAPTURE, "git-hub_1.x", "curl\x01x");
	assert_true(n > 0);
	view_order_init(&o, VIEW_FROM_CLIENT);
	assert_int_equal(check(&o, VIEW_REQUEST, p, (size_t)n), VIEW_OK);
	memset(&m, 0, sizeof(m));
	m.type = VIEW_REQUEST;
	m.len = (uint32_t)n;
	m.data = p;
	view_get_request(&m, &rq);
	assert_int_equal(rq.flags, VIEW_REQ_NO_CAPTURE);
	assert_string_equal(rq.policy, "git-hub_1.x");
	assert_string_equal(rq.cmd, "curl?x");
	/* Twice: refused. */
	assert_int_equal(check(&o, VIEW_REQUEST, p, (size_t)n), VIEW_E_COUNT);
	/* LISTENERS before REQUEST: out of order. */
	view_order_init(&o, VIEW_FROM_CLIENT);
	assert_int_equal(check(&o, VIEW_STOP, "\0\0\0\0", 4), VIEW_E_ORDER);
	/* A run's engine never takes a REQUEST. */
	view_order_init(&o, VIEW_FROM_USER);
	assert_int_equal(check(&o, VIEW_REQUEST, p, (size_t)n), VIEW_E_TYPE);
	/* Bad names, flags, versions. */
	assert_int_equal(view_put_request(p, sizeof(p), 0, "a/b", ""), -1);
	assert_int_equal(view_put_request(p, sizeof(p), 0, "", ""), -1);
	n = view_put_request(p, sizeof(p), 0x80, "a", "");
	view_order_init(&o, VIEW_FROM_CLIENT);
	assert_int_equal(check(&o, VIEW_REQUEST, p, (size_t)n), VIEW_E_FORM);
	n = view_put_request(p, sizeof(p), 0, "a", "");
	p[0] = VIEW_VERSION + 1;
	view_order_init(&o, VIEW_FROM_CLIENT);
	assert_int_equal(check(&o, VIEW_REQUEST, p, (size_t)n), VIEW_E_FORM);
	n = view_put_request(p, sizeof(p), 0, "a", "ls");
	p[n - 2] = '\n';
	view_order_init(&o, VIEW_FROM_CLIENT);
	assert_int_equal(check(&o, VIEW_REQUEST, p, (size_t)n), VIEW_E_FORM);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_conversation),
	    cmocka_unit_test(test_order),
	    cmocka_unit_test(test_type_and_side),
	    cmocka_unit_test(test_count),
	    cmocka_unit_test(test_trust),
	    cmocka_unit_test(test_sizes),
	    cmocka_unit_test(test_forms),
	    cmocka_unit_test(test_request),
	    cmocka_unit_test(test_fds),
	    cmocka_unit_test(test_listener_batches),
	    cmocka_unit_test(test_capture),
	    cmocka_unit_test(test_decode),
	    cmocka_unit_test(test_getters),
	    cmocka_unit_test(test_socket),
	    cmocka_unit_test(test_strerror),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
