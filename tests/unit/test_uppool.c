/*
 * test_uppool.c: proxy/uppool.c.  Keys (each field alone keeps two
 * connections apart; the CA by its text), the newest taken first, the
 * bounds per key and in all (the oldest closed), the idle time, a
 * parked connection whose server speaks or closes (closed while parked,
 * and caught by the take's peek before the loop has seen it), a reload
 * (flush: the pool empties and the old generation is refused), a
 * connection with bytes buffered refused, and the NULL pool.
 *
 * Each connection is a bufferevent on one end of a socketpair; the test
 * keeps the other end, where the pool's closing shows as an end of file.
 */
#include <sys/socket.h>

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "proxy/uppool.h"

#define LOOPS_MAX 200

struct conn {
	struct bufferevent *bev;
	int peer; /* the "server" end */
};

static struct event_base *base;

static int
setup(void **state)
{
	(void)state;
	base = event_base_new();
	return base == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	(void)state;
	event_base_free(base);
	return 0;
}

static struct conn
conn_new(void)
{
	struct conn c;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(evutil_make_socket_nonblocking(sv[0]), 0);
	c.bev = bufferevent_socket_new(base, sv[0], BEV_OPT_CLOSE_ON_FREE);
	assert_non_null(c.bev);
	c.peer = sv[1];
	return c;
}

/*
 * Has the pool closed C's connection (its peer reads an end)?  A freed
 * bufferevent closes its socket from the loop: one turn first.
 */
static int
closed(const struct conn *c)
{
	char b;

	event_base_loop(base, EVLOOP_NONBLOCK);
	return recv(c->peer, &b, 1, MSG_DONTWAIT) == 0;
}

static void
conn_done(struct conn *c, int free_bev)
{
	if (free_bev)
		bufferevent_free(c->bev);
	close(c->peer);
}

static const struct uppool_key key_a = {.host = "a.test",
    .port = 443,
    .tls = 1,
    .ca = "/ca.pem",
    .client = "4:192.0.2.1"};

/* Each field of the key alone keeps a connection from another key. */
static void
test_keys(void **state)
{
	struct uppool *p = uppool_new(base, 8, 4, 60000);
	struct uppool_key k;
	struct conn c = conn_new();
	char ca[] = "/ca.pem", addr[64] = "";
	int i;

	(void)state;
	assert_int_equal(uppool_put(p, &key_a, c.bev, "127.0.0.1:443"), 1);
	for (i = 0; i < 9; i++) {
		k = key_a;
		switch (i) {
		case 0:
			k.host = "b.test";
			break;
		case 1:
			k.port = 8443;
			break;
		case 2:
			k.tls = 0;
			break;
		case 3:
			k.allow_private = 1;
			break;
		case 4:
			k.ca = NULL;
			break;
		case 5:
			k.ca = "/other.pem";
			break;
		case 6: /* another client: another sandbox */
			k.client = "4:192.0.2.2";
			break;
		case 7:
			k.client = NULL;
			break;
		default:
			k.gen = 1;
			break;
		}
		assert_null(uppool_take(p, &k, addr, sizeof(addr)));
	}
	assert_int_equal(uppool_count(p), 1);
	k = key_a;
	k.ca = ca; /* the same text elsewhere: the same trust */
	assert_ptr_equal(uppool_take(p, &k, addr, sizeof(addr)), c.bev);
	assert_string_equal(addr, "127.0.0.1:443");
	assert_int_equal(uppool_count(p), 0);
	assert_false(closed(&c));
	uppool_free(p);
	conn_done(&c, 1);
}

/* The newest first; per key and in all, the oldest makes room. */
static void
test_bounds(void **state)
{
	struct uppool *p = uppool_new(base, 3, 2, 60000);
	struct uppool_key kb = key_a, kc = key_a;
	struct conn c[5];
	char addr[64];
	int i;

	(void)state;
	kb.host = "b.test";
	kc.host = "c.test";
	for (i = 0; i < 5; i++)
		c[i] = conn_new();
	for (i = 0; i < 3; i++)
		assert_int_equal(uppool_put(p, &key_a, c[i].bev, "x"), 1);
	assert_int_equal(uppool_count(p), 2);
	assert_true(closed(&c[0])); /* over the key's 2 */
	assert_int_equal(uppool_put(p, &kb, c[3].bev, "x"), 1);
	assert_int_equal(uppool_put(p, &kc, c[4].bev, "x"), 1);
	assert_int_equal(uppool_count(p), 3);
	assert_true(closed(&c[1])); /* the oldest of all */
	assert_ptr_equal(uppool_take(p, &key_a, addr, sizeof(addr)), c[2].bev);
	assert_null(uppool_take(p, &key_a, addr, sizeof(addr)));
	assert_ptr_equal(uppool_take(p, &kb, addr, sizeof(addr)), c[3].bev);
	uppool_free(p);
	assert_true(closed(&c[4]));
	conn_done(&c[0], 0);
	conn_done(&c[1], 0);
	conn_done(&c[2], 1);
	conn_done(&c[3], 1);
	conn_done(&c[4], 0);
}

/* Runs the loop until P holds WANT connections (bounded). */
static void
run_until(struct uppool *p, unsigned want)
{
	int i;

	for (i = 0; i < LOOPS_MAX && uppool_count(p) != want; i++)
		event_base_loop(base, EVLOOP_ONCE);
	assert_int_equal(uppool_count(p), want);
}

/* A connection idle for the pool's idle time is closed. */
static void
test_idle(void **state)
{
	struct uppool *p = uppool_new(base, 4, 4, 20);
	struct conn c = conn_new();

	(void)state;
	assert_int_equal(uppool_put(p, &key_a, c.bev, "x"), 1);
	run_until(p, 0);
	assert_true(closed(&c));
	uppool_free(p);
	conn_done(&c, 0);
}

/* A server that speaks or closes while parked: its connection goes. */
static void
test_server_gone(void **state)
{
	struct uppool *p = uppool_new(base, 4, 4, 60000);
	struct conn c = conn_new(), d = conn_new();

	(void)state;
	assert_int_equal(uppool_put(p, &key_a, c.bev, "x"), 1);
	assert_int_equal(uppool_put(p, &key_a, d.bev, "x"), 1);
	assert_int_equal(write(c.peer, "HTTP/1.1 408\r\n", 14), 14);
	shutdown(d.peer, SHUT_WR);
	run_until(p, 0);
	assert_true(closed(&c));
	uppool_free(p);
	conn_done(&c, 0);
	conn_done(&d, 0);
}

/* Bytes the loop has not delivered yet: the take's peek finds them. */
static void
test_take_peeks(void **state)
{
	struct uppool *p = uppool_new(base, 4, 4, 60000);
	struct conn c = conn_new(), d = conn_new();
	char addr[64];

	(void)state;
	assert_int_equal(uppool_put(p, &key_a, c.bev, "c"), 1);
	assert_int_equal(uppool_put(p, &key_a, d.bev, "d"), 1);
	shutdown(d.peer, SHUT_WR); /* the newest: closed by its server */
	assert_ptr_equal(uppool_take(p, &key_a, addr, sizeof(addr)), c.bev);
	assert_string_equal(addr, "c");
	assert_int_equal(uppool_count(p), 0);
	assert_true(closed(&d));
	uppool_free(p);
	conn_done(&c, 1);
	conn_done(&d, 0);
}

/* A reload: all closed, the old generation refused from then on. */
static void
test_flush(void **state)
{
	struct uppool *p = uppool_new(base, 4, 4, 60000);
	struct uppool_key k1 = key_a;
	struct conn c = conn_new(), d = conn_new(), e = conn_new();
	char addr[64];

	(void)state;
	assert_int_equal(uppool_gen(p), 0);
	assert_int_equal(uppool_put(p, &key_a, c.bev, "x"), 1);
	uppool_flush(p);
	assert_int_equal(uppool_count(p), 0);
	assert_true(closed(&c));
	assert_int_equal(uppool_gen(p), 1);
	/* Made under the old policy, parked after the reload: closed. */
	assert_int_equal(uppool_put(p, &key_a, d.bev, "x"), 0);
	assert_true(closed(&d));
	k1.gen = 1;
	assert_int_equal(uppool_put(p, &k1, e.bev, "x"), 1);
	assert_null(uppool_take(p, &key_a, addr, sizeof(addr)));
	assert_ptr_equal(uppool_take(p, &k1, addr, sizeof(addr)), e.bev);
	uppool_free(p);
	conn_done(&c, 0);
	conn_done(&d, 0);
	conn_done(&e, 1);
}

/* Bytes buffered either way, no room at all, no pool: closed. */
static void
test_refused(void **state)
{
	struct uppool *p = uppool_new(base, 4, 4, 60000);
	struct uppool *none = uppool_new(base, 0, 4, 60000);
	struct conn c = conn_new(), d = conn_new(), e = conn_new();
	char addr[64];

	(void)state;
	evbuffer_add(bufferevent_get_output(c.bev), "GET", 3);
	assert_int_equal(uppool_put(p, &key_a, c.bev, "x"), 0);
	assert_int_equal(uppool_put(none, &key_a, d.bev, "x"), 0);
	assert_int_equal(uppool_put(NULL, &key_a, e.bev, "x"), 0);
	assert_int_equal(uppool_count(p), 0);
	assert_true(closed(&c) && closed(&d) && closed(&e));
	assert_null(uppool_take(NULL, &key_a, addr, sizeof(addr)));
	uppool_free(NULL);
	uppool_free(none);
	uppool_free(p);
	conn_done(&c, 0);
	conn_done(&d, 0);
	conn_done(&e, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_keys),
	    cmocka_unit_test(test_bounds),
	    cmocka_unit_test(test_idle),
	    cmocka_unit_test(test_server_gone),
	    cmocka_unit_test(test_take_peeks),
	    cmocka_unit_test(test_flush),
	    cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
