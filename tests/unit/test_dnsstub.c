/*
 * test_dnsstub.c: proxy/dnsstub.c, the sandbox's DNS stub.
 *
 * The reader of queries on hand-made messages (A, AAAA, TXT, bad labels,
 * compression pointers, truncated, oversized, responses, counts), the
 * answer it builds, without capture (REFUSED) and with it (synthetic A
 * and AAAA records, NODATA, NXDOMAIN, the question echoed in its case),
 * TCP framing; then the server on loopback sockets of this process (UDP
 * and TCP, ephemeral ports: nothing leaves loopback), with its audit log
 * in a scratch file: one "dns" record and one call per name, however
 * many queries; a flood of random names in bounded memory; and a
 * wildcard socket in a network namespace of a child's own, where every
 * address is local, answering from the address a query was sent to.
 * Each loop run is bounded.
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <sched.h>
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
#include "netns/net.h"
#include "policy/policy.h"
#include "proxy/dnsstub.h"
#include "policy/target.h"
#include "proxy/synth.h"
#include "tests/unit/fixture.h"

/* The name ADDR stands for, copied out (synth_name), or NULL. */
static const char *
name_of(struct synth *s, int family, const uint8_t *addr)
{
	static char name[TARGET_HOST_MAX];

	return synth_name(s, family, addr, name, sizeof(name)) == 0 ? name
	                                                            : NULL;
}

/* The policy of the capture tests. */
static const char capture_policy[] = "allow *.allowed.test\n"
                                     "allow db.test:5432\n"
                                     "allow *.flood.test\n"
                                     "deny bad.allowed.test\n";

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
	struct dnsstub_answer a;
	struct dnsstub_query q;
	uint8_t b[600], out[DNSSTUB_ANSWER_MAX];
	size_t n, len;
	int err;

	(void)state;
	n = query(b, 0xbeef, "X.test", 28);
	err = dnsstub_parse(b, n, &q);
	dnsstub_decide(&q, NULL, NULL, &a);
	assert_int_equal(a.rcode, DNSSTUB_REFUSED);
	assert_string_equal(a.word, "refused");
	assert_string_equal(dnsstub_rcode_name(DNSSTUB_REFUSED), "refused");
	len = dnsstub_respond(b, n, err, &q, &a, out);
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
	len = dnsstub_respond(b, n, err, &q, NULL, out);
	assert_int_equal(len, 12);
	assert_int_equal(out[3] & 0x0f, DNSSTUB_FORMERR);
	assert_int_equal(out[5], 0);
	/* a response, or no header: nothing */
	n = query(b, 9, "a.test", 1);
	b[2] |= 0x80;
	err = dnsstub_parse(b, n, &q);
	assert_int_equal(dnsstub_respond(b, n, err, &q, NULL, out), 0);
	err = dnsstub_parse(b, 11, &q);
	assert_int_equal(dnsstub_respond(b, 11, err, &q, NULL, out), 0);
}

/* --- capture: the answers ------------------------------------------------- */

/*
 * The answer of the capture stub (policy P, map SY) to a query for NAME
 * of TYPE (class IN, or CLASS), in OUT; its length; the decision in *A.
 */
static size_t
ask(const struct policy *p, struct synth *sy, const char *name, uint16_t type,
    uint16_t class, struct dnsstub_answer *a, uint8_t *out, uint8_t *qbuf,
    size_t *qn)
{
	struct dnsstub_query q;

	*qn = query(qbuf, 0x2a2a, name, type);
	qbuf[*qn - 1] = (uint8_t) class;
	assert_int_equal(dnsstub_parse(qbuf, *qn, &q), DNSSTUB_OK);
	dnsstub_decide(&q, p, sy, a);
	return dnsstub_respond(qbuf, *qn, DNSSTUB_OK, &q, a, out);
}

/* Checks the one record of the answer R (of LEN bytes, question QN). */
static void
check_record(
    const uint8_t *r, size_t len, size_t qn, uint16_t type, const uint8_t *addr)
{
	size_t alen = type == 1 ? 4 : 16;

	assert_int_equal(len, qn + 12 + alen);
	assert_int_equal(r[7], 1); /* ANCOUNT */
	assert_int_equal(r[9] | r[11], 0);
	assert_int_equal(r[qn], 0xc0); /* the question's name */
	assert_int_equal(r[qn + 1], 12);
	assert_int_equal(r[qn + 3], type);
	assert_int_equal(r[qn + 5], 1); /* IN */
	assert_int_equal(r[qn + 6] | r[qn + 7] | r[qn + 8], 0);
	assert_int_equal(r[qn + 9], SYNTH_TTL);
	assert_int_equal(r[qn + 11], alen);
	assert_memory_equal(r + qn + 12, addr, alen);
}

static void
test_capture_answers(void **state)
{
	struct policy *p = fixture_policy(capture_policy, 0);
	struct synth *sy = synth_new();
	struct dnsstub_answer a;
	uint8_t b[600], out[DNSSTUB_ANSWER_MAX], v4[4], v6[16];
	size_t n, qn;

	(void)state;
	assert_non_null(sy);
	/* A: an address of 198.18.0.0/15, in a record after the question
	 * echoed in its case; the map knows the name in lower case */
	n = ask(p, sy, "WwW.Allowed.TEST", 1, 1, &a, out, b, &qn);
	assert_int_equal(a.rcode, DNSSTUB_NOERROR);
	assert_string_equal(a.word, "synthetic");
	assert_int_equal(out[2], 0x81); /* QR, RD */
	assert_int_equal(out[3], 0x80); /* RA, NOERROR */
	assert_memory_equal(out + 12, b + 12, qn - 12);
	assert_memory_equal(out + 13, "WwW", 3);
	memcpy(v4, a.addr, 4);
	assert_int_equal(v4[0], 198);
	assert_int_equal(v4[1] & 0xfe, 18);
	check_record(out, n, qn, 1, v4);
	assert_true(synth_is_synthetic(AF_INET, v4));
	assert_string_equal(name_of(sy, AF_INET, v4), "www.allowed.test");
	/* AAAA: 2001:2::/48, the same name's; asked again, the same */
	n = ask(p, sy, "www.allowed.test", 28, 1, &a, out, b, &qn);
	memcpy(v6, a.addr, 16);
	assert_memory_equal(v6, SYNTH_V6_NET, 6);
	check_record(out, n, qn, 28, v6);
	assert_string_equal(name_of(sy, AF_INET6, v6), "www.allowed.test");
	n = ask(p, sy, "www.allowed.test", 1, 1, &a, out, b, &qn);
	check_record(out, n, qn, 1, v4);
	/* another name, another address */
	ask(p, sy, "two.allowed.test", 1, 1, &a, out, b, &qn);
	assert_memory_not_equal(a.addr, v4, 4);
	assert_int_equal(synth_count(sy), 2);
	/* a port of its own is still a name to answer */
	ask(p, sy, "db.test", 1, 1, &a, out, b, &qn);
	assert_string_equal(a.word, "synthetic");
	/* MX, TXT, another class: NODATA (NOERROR, no record) */
	n = ask(p, sy, "www.allowed.test", 15, 1, &a, out, b, &qn);
	assert_string_equal(a.word, "nodata");
	assert_int_equal(n, qn);
	assert_int_equal(out[3], 0x80);
	assert_int_equal(out[7], 0);
	n = ask(p, sy, "www.allowed.test", 16, 1, &a, out, b, &qn);
	assert_string_equal(a.word, "nodata");
	assert_int_equal(n, qn);
	n = ask(p, sy, "www.allowed.test", 1, 3, &a, out, b, &qn);
	assert_string_equal(a.word, "nodata");
	assert_int_equal(n, qn);
	/* denied, unknown, apex of a wildcard: NXDOMAIN, whatever the type */
	n = ask(p, sy, "bad.allowed.test", 1, 1, &a, out, b, &qn);
	assert_string_equal(a.word, "nxdomain");
	assert_int_equal(n, qn);
	assert_int_equal(out[3], 0x80 | DNSSTUB_NXDOMAIN);
	assert_int_equal(out[7], 0);
	ask(p, sy, "other.test", 28, 1, &a, out, b, &qn);
	assert_int_equal(a.rcode, DNSSTUB_NXDOMAIN);
	ask(p, sy, "allowed.test", 16, 1, &a, out, b, &qn);
	assert_int_equal(a.rcode, DNSSTUB_NXDOMAIN);
	assert_int_equal(synth_count(sy), 3); /* none mapped for them */
	/* no policy: refused, as without capture */
	ask(NULL, sy, "www.allowed.test", 1, 1, &a, out, b, &qn);
	assert_int_equal(a.rcode, DNSSTUB_REFUSED);
	assert_int_equal(out[3], DNSSTUB_REFUSED);
	synth_free(sy);
	policy_free(p);
}

/* An EDNS OPT record is allowed in the query, and absent in the answer. */
static void
test_capture_edns(void **state)
{
	struct policy *p = fixture_policy(capture_policy, 0);
	struct synth *sy = synth_new();
	struct dnsstub_answer a;
	struct dnsstub_query q;
	uint8_t b[600], out[DNSSTUB_ANSWER_MAX];
	size_t n, len;

	(void)state;
	n = query(b, 5, "e.allowed.test", 28);
	b[11] = 1;
	memcpy(b + n, "\0\0\x29\x04\xd0\0\0\x80\0\0\0", 11); /* DO */
	assert_int_equal(dnsstub_parse(b, n + 11, &q), DNSSTUB_OK);
	dnsstub_decide(&q, p, sy, &a);
	len = dnsstub_respond(b, n + 11, DNSSTUB_OK, &q, &a, out);
	assert_int_equal(len, n + 12 + 16);
	assert_int_equal(out[11], 0); /* ARCOUNT */
	assert_int_equal(out[7], 1);
	assert_true(len <= 512); /* never truncated */
	synth_free(sy);
	policy_free(p);
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

	for (i = 0; i < 5000; i++) {
		if (recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) >= 0)
			return;
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		if (recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) >= 0)
			return;
		usleep(1000);
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
	struct policy *p; /* capture: the policy, and the map */
	struct synth *sy;
};

static const struct policy *
stub_policy(void *arg)
{
	return ((struct stub *)arg)->p;
}

/*
 * Starts T's stub (OWN_NAME: its own host name, or NULL), with capture
 * when T->p is set (and T->sy, made here).
 */
static void
stub_start_capture(struct stub *t, const char *own_name, struct policy *p)
{
	struct dnsstub_config cf = {0};
	char err[256];

	memset(t, 0, sizeof(*t));
	if ((t->p = p) != NULL) {
		assert_non_null(t->sy = synth_new());
		cf.synth = t->sy;
		cf.policy = stub_policy;
		cf.policy_arg = t;
	}
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

static void
stub_start(struct stub *t, const char *own_name)
{
	stub_start_capture(t, own_name, NULL);
}

/* Frees T's stub and closes its audit log (to be read after). */
static void
stub_stop(struct stub *t)
{
	dnsstub_free(t->s);
	audit_close(t->a);
	synth_free(t->sy);
	policy_free(t->p);
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

/* --- capture: the server ------------------------------------------------- */

/* The record of the name NAME in the audit log has ANSWER (and QTYPE). */
static void
check_logged(
    struct stub *t, const char *name, const char *qtype, const char *answer)
{
	char needle[512];

	snprintf(needle, sizeof(needle),
	    "\"host\":\"%s\",\"qtype\":\"%s\",\"answer\":\"%s\"", name, qtype,
	    answer);
	if (count_lines(t->path, needle) != 1)
		fail_msg("no one record %s in %s", needle, t->path);
}

static void
test_capture_server(void **state)
{
	struct stub st;
	uint8_t q[600], r[600], v4[4];
	uint16_t tport;
	size_t qn;
	int u, t;

	(void)state;
	stub_start_capture(&st, "myself", fixture_policy(capture_policy, 0));
	assert_int_equal(
	    dnsstub_listen_fd(st.s, loopback(SOCK_STREAM, &tport)), 0);
	u = client(SOCK_DGRAM, st.uport);
	/* UDP, A, mixed case: the question as sent, the address mapped */
	qn = query(q, 1, "Mixed.ALLOWED.test", 1);
	assert_int_equal(send(u, q, qn, 0), (ssize_t)qn);
	spin_until_readable(st.base, u);
	assert_int_equal(recv(u, r, sizeof(r), 0), (ssize_t)(qn + 16));
	assert_memory_equal(r + 12, q + 12, qn - 12);
	assert_int_equal(r[3], 0x80);
	memcpy(v4, r + qn + 12, 4);
	assert_string_equal(name_of(st.sy, AF_INET, v4), "mixed.allowed.test");
	/* denied: NXDOMAIN; MX of an allowed name: NODATA */
	qn = query(q, 2, "bad.allowed.test", 1);
	udp_ask(&st, u, q, qn, r, sizeof(r));
	assert_int_equal(r[3] & 0x0f, DNSSTUB_NXDOMAIN);
	qn = query(q, 3, "mx.allowed.test", 15);
	udp_ask(&st, u, q, qn, r, sizeof(r));
	assert_int_equal(r[3] & 0x0f, DNSSTUB_NOERROR);
	assert_int_equal(r[7], 0);
	/* the own name and localhost: refused, as ever, not logged */
	qn = query(q, 4, "myself", 1);
	udp_ask(&st, u, q, qn, r, sizeof(r));
	assert_int_equal(r[3], DNSSTUB_REFUSED);
	/* a label over 63 bytes: FORMERR, the header only */
	qn = query(q, 5,
	    "a123456789012345678901234567890123456789012345678901234567890123"
	    ".allowed.test",
	    1);
	assert_int_equal(send(u, q, qn, 0), (ssize_t)qn);
	spin_until_readable(st.base, u);
	assert_int_equal(recv(u, r, sizeof(r), 0), 12);
	assert_int_equal(r[3] & 0x0f, DNSSTUB_FORMERR);
	close(u);
	/* TCP: AAAA */
	t = client(SOCK_STREAM, tport);
	qn = query(q + 2, 0x66, "tcp.allowed.test", 28);
	q[0] = 0;
	q[1] = (uint8_t)qn;
	assert_int_equal(send(t, q, 2 + qn, 0), (ssize_t)(2 + qn));
	spin_until_readable(st.base, t);
	assert_int_equal(recv(t, r, 2, MSG_WAITALL), 2);
	assert_int_equal(r[1], qn + 28);
	assert_int_equal(
	    recv(t, r + 2, qn + 28, MSG_WAITALL), (ssize_t)(qn + 28));
	assert_int_equal(r[2 + 7], 1);
	assert_memory_equal(r + 2 + qn + 12, SYNTH_V6_NET, 6);
	close(t);
	/* told: only the name that did not resolve (the program fails) */
	assert_int_equal(st.seen.calls, 1);
	stub_stop(&st);
	check_logged(&st, "mixed.allowed.test", "A", "synthetic");
	check_logged(&st, "bad.allowed.test", "A", "nxdomain");
	check_logged(&st, "mx.allowed.test", "MX", "nodata");
	check_logged(&st, "tcp.allowed.test", "AAAA", "synthetic");
	assert_int_equal(count_lines(st.path, "\"event\":\"dns\""), 4);
	stub_clean(&st);
}

/* A reload: the stub asks for the policy at each query. */
static void
test_capture_reload(void **state)
{
	struct stub st;
	struct policy *old;
	uint8_t q[600], r[600];
	size_t qn;
	int u;

	(void)state;
	stub_start_capture(&st, NULL, fixture_policy(capture_policy, 0));
	u = client(SOCK_DGRAM, st.uport);
	qn = query(q, 1, "r.allowed.test", 1);
	assert_int_equal(send(u, q, qn, 0), (ssize_t)qn);
	spin_until_readable(st.base, u);
	assert_int_equal(recv(u, r, sizeof(r), 0), (ssize_t)(qn + 16));
	old = st.p;
	st.p = fixture_policy("allow r2.test\n", 0);
	policy_free(old);
	qn = query(q, 2, "s.allowed.test", 1);
	udp_ask(&st, u, q, qn, r, sizeof(r));
	assert_int_equal(r[3] & 0x0f, DNSSTUB_NXDOMAIN);
	qn = query(q, 3, "r2.test", 28);
	assert_int_equal(send(u, q, qn, 0), (ssize_t)qn);
	spin_until_readable(st.base, u);
	assert_int_equal(recv(u, r, sizeof(r), 0), (ssize_t)(qn + 28));
	/* no policy at all: refused (fail closed) */
	old = st.p;
	st.p = NULL;
	qn = query(q, 4, "r2.test", 1);
	udp_ask(&st, u, q, qn, r, sizeof(r));
	assert_int_equal(r[3] & 0x0f, DNSSTUB_REFUSED);
	st.p = old;
	close(u);
	stub_stop(&st);
	stub_clean(&st);
}

/* Bytes the allocator holds now (0 where it does not say: ASan). */
static size_t
heap_used(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks;
}

/*
 * N random names of the flood (one in 8 denied: x.NNN.test) asked over
 * U, answered; 32 in flight at a time.
 */
static void
flood(struct stub *t, int u, unsigned n, unsigned *seed)
{
	uint8_t q[600], r[600];
	char name[64];
	unsigned i, j, got, k, spins;
	size_t qn;

	for (i = 0; i < n; i += 32) {
		for (j = 0; j < 32; j++) {
			k = (unsigned)rand_r(seed);
			snprintf(name, sizeof(name),
			    k % 8 ? "r%08x.flood.test" : "x%08x.test", k);
			qn = query(q, (uint16_t)j, name, k % 2 ? 1 : 28);
			assert_int_equal(send(u, q, qn, 0), (ssize_t)qn);
		}
		for (got = 0, spins = 0; got < 32 && spins < 5000; spins++) {
			event_base_loop(t->base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
			while (
			    got < 32 && recv(u, r, sizeof(r), MSG_DONTWAIT) > 0)
				got++;
			if (got < 32)
				usleep(100);
		}
		assert_int_equal(got, 32);
	}
}

/* 20000 random names: the map and the table stay bounded, and memory. */
static void
test_capture_flood(void **state)
{
	struct stub st;
	unsigned seed = 12;
	size_t before, after;
	int u, buf = 1 << 20;

	(void)state;
	stub_start_capture(&st, NULL, fixture_policy(capture_policy, 0));
	u = client(SOCK_DGRAM, st.uport);
	(void)setsockopt(u, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	flood(&st, u, 20000, &seed);
	assert_true(synth_count(st.sy) <= SYNTH_MAX);
	assert_int_equal(synth_count(st.sy), SYNTH_MAX);
	before = heap_used();
	flood(&st, u, 20000, &seed);
	after = heap_used();
	assert_int_equal(synth_count(st.sy), SYNTH_MAX);
	/* the second 20000 cost nothing that stays (a little slack) */
	if (after > before + 64 * 1024)
		fail_msg("heap grew from %zu to %zu bytes", before, after);
	/* told: the NXDOMAIN names among the first logged, not the rest */
	assert_true(st.seen.calls > 0 && st.seen.calls < DNSSTUB_NAMES_MAX);
	assert_true(dnsstub_queries(st.s) == 40000);
	close(u);
	stub_stop(&st);
	/* the names past the table: one record for each answer */
	assert_int_equal(
	    count_lines(st.path, "\"event\":\"dns\""), DNSSTUB_NAMES_MAX + 2);
	assert_int_equal(
	    count_lines(st.path, "\"event\":\"dns\",\"answer\":\"synthetic\""),
	    1);
	assert_int_equal(
	    count_lines(st.path, "\"event\":\"dns\",\"answer\":\"nxdomain\""),
	    1);
	stub_clean(&st);
}

/* --- capture: a wildcard socket answers from the address asked ----------- */

static void
write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	CHECK(fd >= 0);
	CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
}

static int
has_ipv6(void)
{
	int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/*
 * Root of a user namespace of its own (so that ip(8) keeps its powers),
 * in a network namespace where every address is local, as the sandbox's
 * is under capture.
 */
static void
enter_capture_netns(int v6)
{
	char map[64], err[256];
	unsigned uid = (unsigned)getuid(), gid = (unsigned)getgid();

	CHECK(unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0);
	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1", uid);
	write_file("/proc/self/uid_map", map);
	snprintf(map, sizeof(map), "0 %u 1", gid);
	write_file("/proc/self/gid_map", map);
	CHECK(net_lo_up(err, sizeof(err)) == 0);
	CHECK(system("PATH=/usr/sbin:/sbin:/usr/bin:/bin; "
	             "ip route add local 0.0.0.0/0 dev lo") == 0);
	if (v6)
		CHECK(system("PATH=/usr/sbin:/sbin:/usr/bin:/bin; "
		             "ip -6 route add local ::/0 dev lo") == 0);
}

/* A socket address of FAMILY for the literal ADDR and PORT, in SS. */
static socklen_t
sockaddr_of(
    int family, const char *addr, uint16_t port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		CHECK(inet_pton(AF_INET, addr, &sin->sin_addr) == 1);
		return sizeof(*sin);
	}
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(port);
	CHECK(inet_pton(AF_INET6, addr, &sin6->sin6_addr) == 1);
	return sizeof(*sin6);
}

/*
 * From a client bound to loopback (so that a reply from the wrong address
 * would show), an A query of NAME to ADDR:PORT; the reply must come from
 * ADDR:PORT and carry a synthetic address.
 */
static void
ask_at(struct event_base *base, int family, const char *addr, uint16_t port,
    const char *name)
{
	struct sockaddr_storage to, from, lo;
	socklen_t tolen = sockaddr_of(family, addr, port, &to), flen;
	uint8_t q[600], r[600];
	ssize_t n = -1;
	size_t qn = query(q, 0x77, name, 1);
	int fd, i;

	CHECK((fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0);
	flen = sockaddr_of(
	    family, family == AF_INET ? "127.0.0.1" : "::1", 0, &lo);
	CHECK(bind(fd, (struct sockaddr *)&lo, flen) == 0);
	CHECK(
	    sendto(fd, q, qn, 0, (struct sockaddr *)&to, tolen) == (ssize_t)qn);
	for (i = 0; i < 5000 && n < 0; i++) {
		event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
		flen = sizeof(from);
		n = recvfrom(fd, r, sizeof(r), MSG_DONTWAIT,
		    (struct sockaddr *)&from, &flen);
		if (n < 0)
			usleep(1000);
	}
	CHECK(n == (ssize_t)(qn + 16));
	if (flen != tolen || memcmp(&from, &to, tolen) != 0) {
		char text[INET6_ADDRSTRLEN] = "?";

		(void)inet_ntop(family,
		    family == AF_INET
		        ? (void *)&((struct sockaddr_in *)&from)->sin_addr
		        : (void *)&((struct sockaddr_in6 *)&from)->sin6_addr,
		    text, sizeof(text));
		fprintf(stderr, "a reply to %s came from %s\n", addr, text);
		_exit(1);
	}
	CHECK(r[3] == 0x80 && r[7] == 1 && r[qn + 12] == 198);
	close(fd);
}

static struct policy *wild_policy;

static const struct policy *
wild_policy_now(void *arg)
{
	(void)arg;
	return wild_policy;
}

/* A UDP socket of FAMILY on the wildcard, PORT (dual-stack for v6). */
static int
wildcard(int family, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t len = sockaddr_of(
	    family, family == AF_INET ? "0.0.0.0" : "::", port, &ss);
	int fd, off = 0;

	CHECK((fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0);
	if (family == AF_INET6)
		CHECK(setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off,
		          sizeof(off)) == 0);
	CHECK(bind(fd, (struct sockaddr *)&ss, len) == 0);
	return fd;
}

static void
child_wildcard(void)
{
	struct dnsstub_config cf = {0};
	struct event_base *base;
	struct dnsstub *s;
	size_t nerr = 0;
	int v6 = has_ipv6();

	enter_capture_netns(v6);
	CHECK(policy_load_string("p.conf", capture_policy,
	          strlen(capture_policy), NULL, &nerr, &wild_policy) == 0);
	CHECK((base = event_base_new()) != NULL);
	CHECK((cf.synth = synth_new()) != NULL);
	cf.policy = wild_policy_now;
	CHECK((s = dnsstub_new(base, &cf)) != NULL);
	/* [::]:53, dual-stack, as the sandbox makes it; 0.0.0.0:5353 */
	if (v6)
		CHECK(dnsstub_listen_fd(s, wildcard(AF_INET6, 53)) == 0);
	else
		CHECK(dnsstub_listen_fd(s, wildcard(AF_INET, 53)) == 0);
	CHECK(dnsstub_listen_fd(s, wildcard(AF_INET, 5353)) == 0);
	ask_at(base, AF_INET, "192.0.2.53", 53, "a.allowed.test");
	ask_at(base, AF_INET, "127.0.0.1", 53, "b.allowed.test");
	ask_at(base, AF_INET, "203.0.113.9", 53, "c.allowed.test");
	ask_at(base, AF_INET, "192.0.2.54", 5353, "d.allowed.test");
	if (v6) {
		ask_at(base, AF_INET6, "2001:db8::53", 53, "e.allowed.test");
		ask_at(base, AF_INET6, "::1", 53, "f.allowed.test");
	} else
		fprintf(stderr, "test_dnsstub: no IPv6: [::]:53 not tried\n");
	dnsstub_free(s);
	synth_free(cf.synth);
	policy_free(wild_policy);
	event_base_free(base);
}

static void
test_capture_wildcard(void **state)
{
	(void)state;
	fixture_child_ok(child_wildcard);
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
	    cmocka_unit_test(test_capture_answers),
	    cmocka_unit_test(test_capture_edns),
	    cmocka_unit_test(test_capture_server),
	    cmocka_unit_test(test_capture_reload),
	    cmocka_unit_test(test_capture_flood),
	    cmocka_unit_test(test_capture_wildcard),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
