/*
 * test_dnsstub.c: proxy/dnsstub.c, the sandbox's DNS stub.
 *
 * The reader of queries on hand-made messages (A, AAAA, TXT, bad labels,
 * compression pointers, truncated, oversized, responses, counts), the
 * answer it builds, TCP framing; then the server on loopback sockets of
 * this process (UDP and TCP, ephemeral ports: nothing leaves loopback),
 * with its audit log in a scratch file: one "dns" record and one call
 * per name, however many queries.  Each loop run is bounded by a timer.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

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

#include "audit/audit.h"
#include "proxy/dnsstub.h"

/* Builds a query for NAME (dotted) of TYPE into BUF; returns its length. */
static size_t
query(uint8_t *buf, uint16_t id, const char *name, uint16_t type)
{
	size_t n = 12, len;
	const char *dot;

	memset(buf, 0, 12);
	buf[0] = (uint8_t)(id >> 8);
	buf[1] = (uint8_t)id;
	buf[2] = 0x01; /* RD */
	buf[5] = 1; /* one question */
	while (*name != '\0') {
		dot = strchr(name, '.');
		len = dot ? (size_t)(dot - name) : strlen(name);
		buf[n++] = (uint8_t)len;
		memcpy(buf + n, name, len);
		n += len;
		name += len + (dot != NULL);
	}
	buf[n++] = 0;
	buf[n++] = (uint8_t)(type >> 8);
	buf[n++] = (uint8_t)type;
	buf[n++] = 0;
	buf[n++] = 1; /* IN */
	return n;
}

static void
test_parse_types(void **state)
{
	static const uint16_t types[] = {1, 28, 16};
	struct dnsstub_query q;
	uint8_t b[600];
	size_t n, i;

	(void)state;
	for (i = 0; i < 3; i++) {
		n = query(b, 0x1234, "Some.Name.TEST", types[i]);
		assert_int_equal(dnsstub_parse(b, n, &q), DNSSTUB_OK);
		assert_int_equal(q.id, 0x1234);
		assert_int_equal(q.qtype, types[i]);
		assert_int_equal(q.qclass, 1);
		assert_int_equal(q.qend, n);
		assert_string_equal(q.host.name, "some.name.test");
	}
	/* underscores (SRV-style) and a trailing EDNS OPT record */
	n = query(b, 1, "_http._tcp.x.test", 33);
	b[11] = 1;
	memcpy(b + n, "\0\0\x29\x04\xd0\0\0\0\0\0\0", 11);
	assert_int_equal(dnsstub_parse(b, n + 11, &q), DNSSTUB_OK);
	assert_string_equal(q.host.name, "_http._tcp.x.test");
	assert_int_equal(q.qend, n);
}

/*
 * dnsstub_parse's verdict on the query B (N bytes) with byte AT set to
 * BYTE; B is left as it was.
 */
static int
poke(uint8_t *b, size_t n, size_t at, uint8_t byte)
{
	struct dnsstub_query q;
	uint8_t was = b[at];
	int r;

	b[at] = byte;
	r = dnsstub_parse(b, n, &q);
	b[at] = was;
	return r;
}

/* dnsstub_parse's verdict on an A query for NAME. */
static int
parse_name(const char *name)
{
	struct dnsstub_query q;
	uint8_t b[1200];

	return dnsstub_parse(b, query(b, 7, name, 1), &q);
}

static void
test_parse_bad(void **state)
{
	struct dnsstub_query q;
	char name[400];
	uint8_t b[1200];
	size_t n;

	(void)state;
	n = query(b, 7, "a.test", 1);
	/* truncated anywhere */
	for (size_t i = 0; i < n; i++)
		assert_int_not_equal(dnsstub_parse(b, i, &q), DNSSTUB_OK);
	assert_int_equal(dnsstub_parse(b, 5, &q), DNSSTUB_E_SHORT);
	assert_int_equal(dnsstub_parse(b, n - 1, &q), DNSSTUB_E_SHORT);
	/* trailing bytes without an additional record */
	assert_int_equal(dnsstub_parse(b, n + 1, &q), DNSSTUB_E_COUNTS);
	/* a response, another opcode, two questions, an answer */
	assert_int_equal(poke(b, n, 2, 0x81), DNSSTUB_E_RESPONSE);
	assert_int_equal(poke(b, n, 2, 0x01 | (2 << 3)), DNSSTUB_E_OPCODE);
	assert_int_equal(poke(b, n, 5, 2), DNSSTUB_E_COUNTS);
	assert_int_equal(poke(b, n, 7, 1), DNSSTUB_E_COUNTS);
	/* a compression pointer, to itself or forward: never followed */
	b[13] = 12;
	assert_int_equal(poke(b, n, 12, 0xc0), DNSSTUB_E_POINTER);
	assert_int_equal(poke(b, n, 12, 0x40), DNSSTUB_E_LABEL);
	/* bad bytes in a label: space, dot, NUL, non-ASCII */
	assert_int_equal(parse_name("a b.test"), DNSSTUB_E_LABEL);
	n = query(b, 7, "ab.test", 1);
	assert_int_equal(poke(b, n, 14, '.'), DNSSTUB_E_LABEL);
	assert_int_equal(poke(b, n, 14, 0), DNSSTUB_E_LABEL);
	assert_int_equal(poke(b, n, 14, 0xc3), DNSSTUB_E_LABEL);
	/* the root, an address, a name over 253 bytes */
	assert_int_equal(parse_name(""), DNSSTUB_E_NAME);
	assert_int_equal(parse_name("127.0.0.1"), DNSSTUB_E_NAME);
	/* a label of 64 bytes, a name of 5 x 63 */
	memset(name, 'a', 64);
	strcpy(name + 64, ".test");
	assert_int_equal(parse_name(name), DNSSTUB_E_LABEL);
	for (size_t i = 0; i < 5; i++) {
		memset(name + i * 64, 'a', 63);
		name[i * 64 + 63] = '.';
	}
	name[5 * 64 - 1] = '\0';
	assert_int_equal(parse_name(name), DNSSTUB_E_NAME);
	/* oversized */
	n = query(b, 7, "a.test", 1);
	assert_int_equal(
	    dnsstub_parse(b, DNSSTUB_QUERY_MAX + 1, &q), DNSSTUB_E_LONG);
	assert_int_equal(q.id, 7);
}

static void
test_respond(void **state)
{
	struct dnsstub_query q;
	uint8_t b[600], out[DNSSTUB_ANSWER_MAX];
	size_t n, len;
	int err;

	(void)state;
	n = query(b, 0xbeef, "X.test", 28);
	err = dnsstub_parse(b, n, &q);
	assert_int_equal(dnsstub_decide(&q), DNSSTUB_REFUSED);
	assert_string_equal(dnsstub_rcode_name(DNSSTUB_REFUSED), "refused");
	len = dnsstub_respond(b, n, err, &q, out);
	assert_int_equal(len, n);
	assert_int_equal(out[0], 0xbe);
	assert_int_equal(out[1], 0xef);
	assert_int_equal(out[2], 0x81); /* QR, RD */
	assert_int_equal(out[3] & 0x0f, DNSSTUB_REFUSED);
	assert_int_equal(out[5], 1);
	assert_int_equal(out[7] | out[9] | out[11], 0);
	assert_memory_equal(
	    out + 12, b + 12, n - 12); /* the question, as asked */
	/* a bad label: FORMERR, header only */
	n = query(b, 9, "a b.test", 1);
	err = dnsstub_parse(b, n, &q);
	len = dnsstub_respond(b, n, err, &q, out);
	assert_int_equal(len, 12);
	assert_int_equal(out[3] & 0x0f, DNSSTUB_FORMERR);
	assert_int_equal(out[5], 0);
	/* a response, or no header: nothing */
	n = query(b, 9, "a.test", 1);
	b[2] |= 0x80;
	err = dnsstub_parse(b, n, &q);
	assert_int_equal(dnsstub_respond(b, n, err, &q, out), 0);
	err = dnsstub_parse(b, 11, &q);
	assert_int_equal(dnsstub_respond(b, 11, err, &q, out), 0);
}

static void
test_names(void **state)
{
	char buf[12];

	(void)state;
	assert_string_equal(dnsstub_qtype_name(1, buf), "A");
	assert_string_equal(dnsstub_qtype_name(28, buf), "AAAA");
	assert_string_equal(dnsstub_qtype_name(16, buf), "TXT");
	assert_string_equal(dnsstub_qtype_name(65535, buf), "TYPE65535");
}

static void
test_tcp_len(void **state)
{
	static const uint8_t ok[2] = {0, 40}, zero[2] = {0, 0},
	                     small[2] = {0, 11}, big[2] = {0x02, 0x01},
	                     huge[2] = {0xff, 0xff}, max[2] = {0x02, 0x00};

	(void)state;
	assert_int_equal(dnsstub_tcp_len(ok), 40);
	assert_int_equal(dnsstub_tcp_len(max), DNSSTUB_QUERY_MAX);
	assert_int_equal(dnsstub_tcp_len(zero), 0);
	assert_int_equal(dnsstub_tcp_len(small), 0);
	assert_int_equal(dnsstub_tcp_len(big), 0);
	assert_int_equal(dnsstub_tcp_len(huge), 0);
}

/* --- the server ----------------------------------------------------------- */

struct seen {
	int calls;
	char last[256];
};

static void
looked_up(void *arg, const char *name, const char *qtype)
{
	struct seen *s = arg;

	(void)qtype;
	s->calls++;
	snprintf(s->last, sizeof(s->last), "%s", name);
}

/* A loopback socket of TYPE on an ephemeral port; its port in *PORT. */
static int
loopback(int type, uint16_t *port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	socklen_t len = sizeof(sin);
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	if (type == SOCK_STREAM)
		assert_int_equal(listen(fd, 16), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	*port = ntohs(sin.sin_port);
	return fd;
}

/* A client socket of TYPE connected to PORT, with a 5 s receive bound. */
static int
client(int type, uint16_t port)
{
	struct sockaddr_in sin = {.sin_family = AF_INET};
	struct timeval tv = {5, 0};
	int fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);

	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	return fd;
}

/* Runs the loop until FD is readable (bounded: 5 s). */
static void
spin_until_readable(struct event_base *base, int fd)
{
	uint8_t c;
	int i;

	for (i = 0; i < 500; i++) {
		if (recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) >= 0)
			return;
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		usleep(10000);
	}
	fail_msg("no answer within 5 s");
}

/* Counts the lines of PATH holding NEEDLE. */
static int
count_lines(const char *path, const char *needle)
{
	char line[4096];
	FILE *f = fopen(path, "r");
	int n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f) != NULL)
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

/* A stub on a loopback UDP port, its audit log in a scratch directory. */
struct stub {
	char dir[32], path[64];
	struct event_base *base;
	struct seen seen;
	struct audit *a;
	struct dnsstub *s;
	uint16_t uport;
};

/* Starts T's stub (OWN_NAME: its own host name, or NULL). */
static void
stub_start(struct stub *t, const char *own_name)
{
	struct dnsstub_config cf = {0};
	char err[256];

	memset(t, 0, sizeof(*t));
	snprintf(t->dir, sizeof(t->dir), "/tmp/test_dnsstub.XXXXXX");
	assert_non_null(mkdtemp(t->dir));
	snprintf(t->path, sizeof(t->path), "%s/audit.jsonl", t->dir);
	assert_non_null(
	    t->a = audit_open(t->path, "0123456789abcdef", err, sizeof(err)));
	assert_non_null(t->base = event_base_new());
	cf.audit = t->a;
	cf.looked_up = looked_up;
	cf.arg = &t->seen;
	cf.own_name = own_name;
	assert_non_null(t->s = dnsstub_new(t->base, &cf));
	assert_int_equal(
	    dnsstub_listen_fd(t->s, loopback(SOCK_DGRAM, &t->uport)), 0);
}

/* Frees T's stub and closes its audit log (to be read after). */
static void
stub_stop(struct stub *t)
{
	dnsstub_free(t->s);
	audit_close(t->a);
}

/* Removes T's audit log and directory. */
static void
stub_clean(struct stub *t)
{
	unlink(t->path);
	rmdir(t->dir);
	event_base_free(t->base);
}

/*
 * Sends the query Q (QN bytes) on the UDP socket U and reads the answer,
 * as long as the query, into R (RLEN bytes).
 */
static void
udp_ask(
    struct stub *t, int u, const uint8_t *q, size_t qn, uint8_t *r, size_t rlen)
{
	assert_int_equal(send(u, q, qn, 0), (ssize_t)qn);
	spin_until_readable(t->base, u);
	assert_int_equal(recv(u, r, rlen, 0), (ssize_t)qn);
}

static void
test_server(void **state)
{
	struct stub st;
	uint8_t q[600], r[600];
	uint16_t tport;
	ssize_t n;
	size_t qn;
	int u, t, i;

	(void)state;
	stub_start(&st, "myself");
	assert_int_equal(
	    dnsstub_listen_fd(st.s, loopback(SOCK_STREAM, &tport)), 0);
	/* UDP: A and AAAA of one name, three times: one record; localhost
	 * and the own name answered but neither logged nor told */
	u = client(SOCK_DGRAM, st.uport);
	for (i = 0; i < 9; i++) {
		qn = query(q, (uint16_t)i,
		    i == 6       ? "localhost"
		        : i == 7 ? "a.localhost"
		        : i == 8 ? "MySelf"
		                 : "one.test",
		    i % 2 ? 28 : 1);
		udp_ask(&st, u, q, qn, r, sizeof(r));
		assert_int_equal(r[1], i);
		assert_int_equal(r[3] & 0x0f, DNSSTUB_REFUSED);
	}
	close(u);
	/* TCP: two framed queries in one write, a second name */
	t = client(SOCK_STREAM, tport);
	qn = query(q + 2, 0x55, "two.test", 16);
	q[0] = 0;
	q[1] = (uint8_t)qn;
	memcpy(q + 2 + qn, q, 2 + qn);
	assert_int_equal(send(t, q, 2 * (2 + qn), 0), (ssize_t)(2 * (2 + qn)));
	for (i = 0; i < 2; i++) {
		spin_until_readable(st.base, t);
		assert_int_equal(recv(t, r, 2, MSG_WAITALL), 2);
		assert_int_equal(r[1], qn);
		assert_int_equal(recv(t, r + 2, qn, MSG_WAITALL), (ssize_t)qn);
		assert_int_equal(r[2 + 3] & 0x0f, DNSSTUB_REFUSED);
	}
	/* a frame too long: the connection is closed */
	q[0] = 0xff;
	assert_int_equal(send(t, q, 2, 0), 2);
	spin_until_readable(st.base, t);
	assert_int_equal(recv(t, r, 1, 0), 0);
	close(t);
	assert_int_equal(st.seen.calls, 2);
	assert_string_equal(st.seen.last, "two.test");
	assert_true(dnsstub_queries(st.s) >= 11);
	stub_stop(&st);
	assert_int_equal(count_lines(st.path, "\"event\":\"dns\""), 2);
	assert_int_equal(count_lines(st.path, "\"host\":\"one.test\""), 1);
	n = count_lines(st.path, "\"qtype\":\"TXT\",\"answer\":\"refused\"");
	assert_int_equal(n, 1);
	stub_clean(&st);
}

/* Past DNSSTUB_NAMES_MAX names, one record counts the rest. */
static void
test_many_names(void **state)
{
	char nm[32];
	struct stub st;
	uint8_t q[600], r[600];
	size_t qn;
	int u, i;

	(void)state;
	stub_start(&st, NULL);
	u = client(SOCK_DGRAM, st.uport);
	for (i = 0; i < DNSSTUB_NAMES_MAX + 10; i++) {
		snprintf(nm, sizeof(nm), "n%d.test", i);
		qn = query(q, (uint16_t)i, nm, 1);
		udp_ask(&st, u, q, qn, r, sizeof(r));
	}
	close(u);
	stub_stop(&st);
	assert_int_equal(st.seen.calls, DNSSTUB_NAMES_MAX);
	assert_int_equal(
	    count_lines(st.path, "\"event\":\"dns\""), DNSSTUB_NAMES_MAX + 1);
	assert_int_equal(count_lines(st.path, "\"count\":10"), 1);
	stub_clean(&st);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse_types),
	    cmocka_unit_test(test_parse_bad),
	    cmocka_unit_test(test_respond),
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_tcp_len),
	    cmocka_unit_test(test_server),
	    cmocka_unit_test(test_many_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
