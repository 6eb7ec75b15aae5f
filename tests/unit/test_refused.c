/*
 * test_refused.c: proxy/refused.c.  The reader on crafted frames (the
 * kernel's RST|ACK with sequence 0, an aborted connection's RST, a SYN,
 * ICMP and ICMPv6 port unreachable quoting UDP, extension headers, every
 * truncation, bad IHL, loopback), the kernel filters run by a small
 * classic BPF interpreter on the same frames (what the raw socket of
 * each protocol reads of them), and the watcher for real: on raw
 * sockets in a child in its own user and network namespaces with capture's
 * local routes, connections and datagrams the kernel refuses are logged
 * once per destination, loopback never, a synthetic address by its
 * name, a captured port's aborted connection never.  The supervisor's
 * notes (refused ICMP sockets): parsed, logged once per kind.
 */
#define REFUSED_INTERNAL

#include <sys/socket.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <netinet/in.h>

#include <cmocka.h>
#include <event2/event.h>

#include "audit/audit.h"
#include "fixture.h"
#include "proxy/refused.h"
#include "proxy/synth.h"

/* --- crafted frames ------------------------------------------------------- */

static void
put16(uint8_t *p, unsigned v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void
put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v & 0xffff);
}

static void
addr4(uint8_t *p, const char *a)
{
	assert_int_equal(inet_pton(AF_INET, a, p), 1);
}

static void
addr6(uint8_t *p, const char *a)
{
	assert_int_equal(inet_pton(AF_INET6, a, p), 1);
}

/* An Ethernet header as lo has it: zero MACs, then TYPE. */
static size_t
eth(uint8_t *f, unsigned type)
{
	memset(f, 0, 14);
	put16(f + 12, type);
	return 14;
}

/* An IPv4 header of IHL words at P (options zero), PAYLOAD bytes after. */
static size_t
ip4(uint8_t *p, unsigned ihl, unsigned proto, const char *src, const char *dst,
    size_t payload)
{
	memset(p, 0, ihl * 4);
	p[0] = (uint8_t)(0x40 | ihl);
	put16(p + 2, (unsigned)(ihl * 4 + payload));
	put16(p + 6, 0x4000); /* DF */
	p[8] = 64;
	p[9] = (uint8_t)proto;
	addr4(p + 12, src);
	addr4(p + 16, dst);
	return ihl * 4;
}

static size_t
ip6(uint8_t *p, unsigned nh, const char *src, const char *dst, size_t payload)
{
	memset(p, 0, 40);
	p[0] = 0x60;
	put16(p + 4, (unsigned)payload);
	p[6] = (uint8_t)nh;
	p[7] = 64;
	addr6(p + 8, src);
	addr6(p + 24, dst);
	return 40;
}

static size_t
tcp(uint8_t *p, unsigned sport, unsigned dport, unsigned flags, uint32_t seq)
{
	memset(p, 0, 20);
	put16(p, sport);
	put16(p + 2, dport);
	put32(p + 4, seq);
	put32(p + 8, 0x12345678);
	p[12] = 5 << 4;
	p[13] = (uint8_t)flags;
	return 20;
}

static size_t
udp(uint8_t *p, unsigned sport, unsigned dport)
{
	memset(p, 0, 8);
	put16(p, sport);
	put16(p + 2, dport);
	put16(p + 4, 9);
	return 8;
}

#define RST_ACK 0x14

/* IPv4 TCP from SRC:SPORT to 203.0.113.1:40000. */
static size_t
tcp4_frame(
    uint8_t *f, const char *src, unsigned sport, unsigned flags, uint32_t seq)
{
	size_t n = eth(f, 0x0800);

	n += ip4(f + n, 5, 6, src, "203.0.113.1", 20);
	return n + tcp(f + n, sport, 40000, flags, seq);
}

static size_t
tcp6_frame(
    uint8_t *f, const char *src, unsigned sport, unsigned flags, uint32_t seq)
{
	size_t n = eth(f, 0x86dd);

	n += ip6(f + n, 6, src, "::1", 20);
	return n + tcp(f + n, sport, 40000, flags, seq);
}

/* ICMP TYPE/CODE quoting a UDP datagram SPORT -> DST:DPORT. */
static size_t
icmp4_frame(uint8_t *f, unsigned type, unsigned code, unsigned inner_proto,
    const char *dst, unsigned sport, unsigned dport)
{
	size_t n = eth(f, 0x0800);
	uint8_t *icmp;

	n += ip4(f + n, 5, 1, dst, dst, 8 + 20 + 8 + 1);
	icmp = f + n;
	memset(icmp, 0, 8);
	icmp[0] = (uint8_t)type;
	icmp[1] = (uint8_t)code;
	n += 8;
	n += ip4(f + n, 5, inner_proto, dst, dst, 9);
	n += udp(f + n, sport, dport);
	f[n++] = 'x';
	return n;
}

#define EXT_END 256

/*
 * ICMPv6 TYPE/CODE quoting a UDP datagram SPORT -> DST:DPORT after the
 * extension headers EXT (each 8 bytes, numbered as next headers; EXT_END
 * ends), a fragment header with offset FRAG.
 */
static size_t
icmp6_frame(uint8_t *f, unsigned type, unsigned code, const unsigned *ext,
    unsigned frag, const char *dst, unsigned sport, unsigned dport)
{
	size_t n = eth(f, 0x86dd), i, next, plen, start;
	uint8_t *q;

	n += 40; /* the outer header, written last */
	start = n;
	memset(f + n, 0, 8);
	f[n] = (uint8_t)type;
	f[n + 1] = (uint8_t)code;
	n += 8;
	q = f + n;
	n += ip6(
	    q, ext != NULL && ext[0] != EXT_END ? ext[0] : 17, "::1", dst, 0);
	for (i = 0; ext != NULL && ext[i] != EXT_END; i++) {
		next = ext[i + 1] != EXT_END ? ext[i + 1] : 17;
		memset(f + n, 0, 8);
		f[n] = (uint8_t)next;
		if (ext[i] == 44)
			put16(f + n + 2, frag << 3);
		n += 8;
	}
	n += udp(f + n, sport, dport);
	f[n++] = 'x';
	put16(q + 4, (unsigned)(f + n - q - 40));
	plen = n - start;
	ip6(f + 14, 58, "::1", "::1", plen);
	return n;
}

/* --- a classic BPF interpreter, for the filter ---------------------------- */

static int
load(const uint8_t *p, size_t n, uint32_t k, unsigned size, uint32_t *a)
{
	unsigned i;

	if (k > n || n - k < size)
		return -1;
	for (*a = 0, i = 0; i < size; i++)
		*a = *a << 8 | p[k + i];
	return 0;
}

/*
 * Runs the filter on frame P (N bytes), on what the raw socket of its
 * protocol reads (IPv4: from the IP header; IPv6: past it); 0 when no
 * such socket is watched (another protocol or EtherType).
 */
static uint32_t
run_filter(const uint8_t *p, size_t n)
{
	size_t len = 0, pc = 0;
	const struct sock_filter *f = NULL;
	uint32_t a = 0, x = 0, k;
	unsigned size;

	if (n >= 14 + 20 && p[12] == 0x08 && p[13] == 0x00)
		f = refused_filter(AF_INET, p[14 + 9], &len), p += 14, n -= 14;
	else if (n >= 14 + 40 && p[12] == 0x86 && p[13] == 0xdd)
		f = refused_filter(AF_INET6, p[14 + 6], &len), p += 54, n -= 54;
	if (f == NULL)
		return 0;

	while (pc < len) {
		const struct sock_filter *i = &f[pc++];

		k = i->k;
		size = BPF_SIZE(i->code) == BPF_W ? 4
		    : BPF_SIZE(i->code) == BPF_H  ? 2
		                                  : 1;
		switch (BPF_CLASS(i->code)) {
		case BPF_LD:
			if (load(p, n, BPF_MODE(i->code) == BPF_IND ? x + k : k,
			        size, &a) != 0)
				return 0;
			break;
		case BPF_LDX:
			assert_int_equal(BPF_MODE(i->code), BPF_MSH);
			if (load(p, n, k, 1, &x) != 0)
				return 0;
			x = (x & 0xf) * 4;
			break;
		case BPF_ALU:
			assert_int_equal(BPF_OP(i->code), BPF_AND);
			a &= k;
			break;
		case BPF_JMP:
			if (BPF_OP(i->code) == BPF_JEQ)
				pc += a == k ? i->jt : i->jf;
			else if (BPF_OP(i->code) == BPF_JSET)
				pc += (a & k) != 0 ? i->jt : i->jf;
			else
				fail_msg("jump %#x", i->code);
			break;
		case BPF_RET:
			return k;
		default:
			fail_msg("instruction %#x", i->code);
		}
	}
	fail_msg("the filter runs off its end");
	return 0;
}

/*
 * Parses frame F (N bytes): its kind, and the filter must pass every
 * event.
 */
static enum refused_kind
parse(const uint8_t *f, size_t n, struct refused_event *ev)
{
	enum refused_kind k = refused_parse(f, n, ev);

	if (k != REFUSED_NONE)
		assert_int_equal(run_filter(f, n), REFUSED_SNAP);
	return k;
}

/* Every cut of F before its end is not an event. */
static void
assert_cuts(const uint8_t *f, size_t n)
{
	struct refused_event ev;
	size_t i;

	for (i = 0; i < n; i++)
		assert_int_equal(parse(f, i, &ev), REFUSED_NONE);
}

static void
assert_addr(const struct refused_event *ev, const char *want)
{
	char buf[INET6_ADDRSTRLEN];

	assert_non_null(inet_ntop(ev->family, ev->addr, buf, sizeof(buf)));
	assert_string_equal(buf, want);
}

/* --- the reader ----------------------------------------------------------- */

static void
test_tcp4_refused(void **state)
{
	uint8_t f[256] = {0};
	struct refused_event ev;
	size_t n = tcp4_frame(f, "203.0.113.7", 5555, RST_ACK, 0);

	(void)state;
	assert_int_equal(parse(f, n, &ev), REFUSED_TCP);
	assert_int_equal(ev.kind, REFUSED_TCP);
	assert_int_equal(ev.family, AF_INET);
	assert_addr(&ev, "203.0.113.7");
	assert_int_equal(ev.port, 5555);
	assert_cuts(f, n);
	/* Bytes past the IP total length are not the packet's: ignored. */
	assert_int_equal(parse(f, n + 4, &ev), REFUSED_TCP);
	/* PSH is no matter; the run filter agrees. */
	f[14 + 20 + 13] |= 0x08;
	assert_int_equal(parse(f, n, &ev), REFUSED_TCP);
}

static void
test_tcp_not_refused(void **state)
{
	static const unsigned flags[] = {
	    0x02, 0x12, 0x04, 0x10, 0x16, 0x15, 0x11};
	uint8_t f[256] = {0};
	struct refused_event ev;
	size_t i, n;

	(void)state;
	/* An aborted connection's RST: its own sequence number. */
	n = tcp4_frame(f, "203.0.113.7", 443, RST_ACK, 0x7a3b0001);
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	n = tcp6_frame(f, "2001:db8::7", 443, RST_ACK, 1);
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	/* SYN, SYN|ACK, RST alone, ACK, RST|SYN|ACK, RST|ACK|FIN, FIN|ACK */
	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		n = tcp4_frame(f, "203.0.113.7", 5555, flags[i], 0);
		assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
		n = tcp6_frame(f, "2001:db8::7", 5555, flags[i], 0);
		assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	}
	/* A TCP data offset under 5 words, or past the segment. */
	n = tcp4_frame(f, "203.0.113.7", 5555, RST_ACK, 0);
	f[14 + 20 + 12] = 4 << 4;
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	f[14 + 20 + 12] = 6 << 4;
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
}

static void
test_tcp6_refused(void **state)
{
	uint8_t f[256] = {0};
	struct refused_event ev;
	size_t n = tcp6_frame(f, "2001:db8::7", 22, RST_ACK, 0);

	(void)state;
	assert_int_equal(parse(f, n, &ev), REFUSED_TCP);
	assert_int_equal(ev.family, AF_INET6);
	assert_addr(&ev, "2001:db8::7");
	assert_int_equal(ev.port, 22);
	assert_cuts(f, n);
	/* An extension header before TCP: not the kernel's RST. */
	f[14 + 6] = 60;
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
}

static void
test_loopback(void **state)
{
	static const char *const v4[] = {
	    "127.0.0.1", "127.1.2.3", "127.255.255.255"};
	uint8_t f[256] = {0};
	struct refused_event ev;
	size_t i, n;

	(void)state;
	for (i = 0; i < sizeof(v4) / sizeof(v4[0]); i++) {
		n = tcp4_frame(f, v4[i], 5555, RST_ACK, 0);
		assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
		n = icmp4_frame(f, 3, 3, 17, v4[i], 40000, 5000);
		assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	}
	n = tcp6_frame(f, "::1", 5555, RST_ACK, 0);
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	n = tcp6_frame(f, "::ffff:127.0.0.1", 5555, RST_ACK, 0);
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	n = icmp6_frame(f, 1, 4, NULL, 0, "::1", 40000, 5000);
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	/* 128.0.0.1 and ::2 are not loopback. */
	n = tcp4_frame(f, "128.0.0.1", 5555, RST_ACK, 0);
	assert_int_equal(parse(f, n, &ev), REFUSED_TCP);
	n = tcp6_frame(f, "::2", 5555, RST_ACK, 0);
	assert_int_equal(parse(f, n, &ev), REFUSED_TCP);
}

static void
test_ipv4_header(void **state)
{
	uint8_t f[256] = {0};
	struct refused_event ev;
	size_t n;

	(void)state;
	n = tcp4_frame(f, "203.0.113.7", 5555, RST_ACK, 0);
	f[14] = 0x44; /* IHL 4: under a header */
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	f[14] = 0x4f; /* IHL 15: past the packet */
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	f[14] = 0x55; /* version 5 */
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	f[14] = 0x45;
	put16(f + 14 + 2, 19); /* total length under the header */
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	put16(f + 14 + 2, 40);
	put16(f + 14 + 6, 0x2000); /* MF */
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	put16(f + 14 + 6, 0x0001); /* a later fragment */
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	put16(f + 14 + 6, 0x4000);
	assert_int_equal(parse(f, n, &ev), REFUSED_TCP);
	put16(f + 12, 0x0806); /* ARP */
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	/* IHL 6: an option word before TCP. */
	n = eth(f, 0x0800);
	n += ip4(f + n, 6, 6, "203.0.113.7", "203.0.113.1", 20);
	n += tcp(f + n, 5555, 40000, RST_ACK, 0);
	assert_int_equal(parse(f, n, &ev), REFUSED_TCP);
	assert_int_equal(ev.port, 5555);
	assert_cuts(f, n);
}

static void
test_icmp4_unreachable(void **state)
{
	uint8_t f[256] = {0};
	struct refused_event ev;
	size_t n = icmp4_frame(f, 3, 3, 17, "203.0.113.7", 40000, 5000);

	(void)state;
	assert_int_equal(parse(f, n, &ev), REFUSED_UDP);
	assert_int_equal(ev.kind, REFUSED_UDP);
	assert_int_equal(ev.family, AF_INET);
	assert_addr(&ev, "203.0.113.7");
	assert_int_equal(ev.port, 5000);
	assert_cuts(f, n);
	/* The quote may end right after the UDP header. */
	put16(f + 14 + 2, 20 + 8 + 20 + 8);
	assert_int_equal(parse(f, n - 1, &ev), REFUSED_UDP);
	put16(f + 14 + 2, 20 + 8 + 20 + 7);
	assert_int_equal(parse(f, n - 2, &ev), REFUSED_NONE);
	/* Host unreachable, an echo reply, a quoted TCP segment. */
	n = icmp4_frame(f, 3, 1, 17, "203.0.113.7", 40000, 5000);
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	n = icmp4_frame(f, 0, 0, 17, "203.0.113.7", 40000, 5000);
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	n = icmp4_frame(f, 3, 3, 6, "203.0.113.7", 40000, 5000);
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	/* The DNS stub's answer to a program gone. */
	n = icmp4_frame(f, 3, 3, 17, "192.0.2.53", 53, 40000);
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	/* A quoted header with IHL 4, or a later fragment. */
	n = icmp4_frame(f, 3, 3, 17, "203.0.113.7", 40000, 5000);
	f[14 + 20 + 8] = 0x44;
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	f[14 + 20 + 8] = 0x45;
	put16(f + 14 + 20 + 8 + 6, 0x0002);
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	/* A first fragment (MF, offset 0) holds the UDP header. */
	put16(f + 14 + 20 + 8 + 6, 0x2000);
	assert_int_equal(parse(f, n, &ev), REFUSED_UDP);
}

static void
test_icmp6_unreachable(void **state)
{
	static const unsigned opts[] = {0, 43, 60, 44, EXT_END};
	static const unsigned ah[] = {51, EXT_END};
	static const unsigned nine[] = {
	    60, 60, 60, 60, 60, 60, 60, 60, 60, EXT_END};
	uint8_t f[512] = {0};
	struct refused_event ev;
	size_t n = icmp6_frame(f, 1, 4, NULL, 0, "2001:db8::7", 40000, 5000);

	(void)state;
	assert_int_equal(parse(f, n, &ev), REFUSED_UDP);
	assert_int_equal(ev.family, AF_INET6);
	assert_addr(&ev, "2001:db8::7");
	assert_int_equal(ev.port, 5000);
	assert_cuts(f, n);
	/* Hop-by-hop, routing, destination options, a first fragment. */
	n = icmp6_frame(f, 1, 4, opts, 0, "2001:db8::7", 40000, 5001);
	assert_int_equal(parse(f, n, &ev), REFUSED_UDP);
	assert_int_equal(ev.port, 5001);
	assert_cuts(f, n);
	/* A later fragment, AH, nine extension headers. */
	n = icmp6_frame(f, 1, 4, opts, 3, "2001:db8::7", 40000, 5001);
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	n = icmp6_frame(f, 1, 4, ah, 0, "2001:db8::7", 40000, 5001);
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	n = icmp6_frame(f, 1, 4, nine, 0, "2001:db8::7", 40000, 5001);
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	n = icmp6_frame(f, 1, 4, nine + 1, 0, "2001:db8::7", 40000, 5001);
	assert_int_equal(parse(f, n, &ev), REFUSED_UDP);
	/* Address unreachable, the DNS stub's answer, version 4 inside. */
	n = icmp6_frame(f, 1, 3, NULL, 0, "2001:db8::7", 40000, 5000);
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	n = icmp6_frame(f, 1, 4, NULL, 0, "2001:db8::53", 53, 40000);
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	n = icmp6_frame(f, 1, 4, NULL, 0, "2001:db8::7", 40000, 5000);
	f[14 + 40 + 8] = 0x40;
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
	/* A payload length past the frame. */
	n = icmp6_frame(f, 1, 4, NULL, 0, "2001:db8::7", 40000, 5000);
	put16(f + 14 + 4, (unsigned)(n - 14 - 40 + 1));
	assert_int_equal(parse(f, n, &ev), REFUSED_NONE);
}

/* The filter passes no frame of those that are never events. */
static void
test_filter_rejects(void **state)
{
	uint8_t f[256] = {0};
	size_t n;

	(void)state;
	n = tcp4_frame(f, "203.0.113.7", 5555, 0x02, 0); /* SYN */
	assert_int_equal(run_filter(f, n), 0);
	n = tcp4_frame(f, "203.0.113.7", 443, RST_ACK, 77);
	assert_int_equal(run_filter(f, n), 0);
	n = tcp6_frame(f, "2001:db8::7", 443, 0x10, 0); /* ACK */
	assert_int_equal(run_filter(f, n), 0);
	n = tcp6_frame(f, "2001:db8::7", 443, RST_ACK, 9);
	assert_int_equal(run_filter(f, n), 0);
	n = icmp4_frame(f, 8, 0, 17, "203.0.113.7", 1, 2); /* echo */
	assert_int_equal(run_filter(f, n), 0);
	n = icmp6_frame(f, 128, 0, NULL, 0, "2001:db8::7", 1, 2);
	assert_int_equal(run_filter(f, n), 0);
	n = tcp4_frame(f, "203.0.113.7", 5555, RST_ACK, 0);
	put16(f + 14 + 6, 0x2000); /* MF */
	assert_int_equal(run_filter(f, n), 0);
	put16(f + 14 + 6, 0);
	f[14 + 9] = 17; /* UDP */
	assert_int_equal(run_filter(f, n), 0);
	put16(f + 12, 0x0806); /* ARP */
	assert_int_equal(run_filter(f, n), 0);
}

static void
test_reason(void **state)
{
	struct refused_event ev = {.kind = REFUSED_TCP, .port = 5555};
	char buf[256];

	(void)state;
	assert_string_equal(
	    refused_reason(&ev, "203.0.113.7", buf, sizeof(buf)),
	    "port 5555 is not captured: no allow rule names it; connection "
	    "refused in the sandbox");
	ev.kind = REFUSED_UDP;
	ev.port = 5000;
	assert_string_equal(
	    refused_reason(&ev, "203.0.113.7", buf, sizeof(buf)),
	    "UDP to 203.0.113.7:5000: only DNS (port 53) is carried");
	assert_string_equal(
	    refused_reason(&ev, "2001:db8::7", buf, sizeof(buf)),
	    "UDP to [2001:db8::7]:5000: only DNS (port 53) is carried");
}

/* --- the watcher, for real ------------------------------------------------ */

static int
write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
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
 * A user and network namespace as the sandbox's: root in it (ip keeps
 * its capabilities across exec), lo up, capture's local routes.
 */
static void
enter_sandbox_netns(int v6)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	CHECK(unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0);
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	CHECK(write_file("/proc/self/uid_map", map) == 0);
	CHECK(write_file("/proc/self/setgroups", "deny") == 0);
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	CHECK(write_file("/proc/self/gid_map", map) == 0);
	CHECK(system("PATH=/usr/sbin:/sbin:/usr/bin:/bin; "
	             "ip link set lo up && "
	             "ip route add local 0.0.0.0/0 dev lo") == 0);
	if (v6)
		CHECK(system("PATH=/usr/sbin:/sbin:/usr/bin:/bin; "
		             "ip -6 route add local ::/0 dev lo") == 0);
}

/* Drops every capability: the engine, outside, holds none. */
static void
drop_caps(void)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	CHECK(syscall(SYS_capset, &h, d) == 0);
}

/* Connects to ADDR:PORT (either family); the connect's errno, or 0. */
static int
try_connect(const char *addr, unsigned port, int keep, int *fdp)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	int fd, e = 0;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
	} else {
		CHECK(inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1);
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
	}
	CHECK((fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	if (connect(fd, (struct sockaddr *)&ss, sizeof(ss)) != 0)
		e = errno;
	if (keep && e == 0)
		*fdp = fd;
	else
		close(fd);
	return e;
}

/* Sends one UDP datagram to ADDR:PORT. */
static void
send_udp(const char *addr, unsigned port)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	int fd;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
	} else {
		CHECK(inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1);
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
	}
	CHECK((fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0);
	CHECK(sendto(fd, "x", 1, 0, (struct sockaddr *)&ss, sizeof(ss)) == 1);
	close(fd);
}

static struct event_base *base;
static struct refused *watcher;
static unsigned ndenied;
static char denied_last[300];

static void
on_denied(void *arg, const char *host, unsigned port)
{
	(void)arg;
	ndenied++;
	snprintf(denied_last, sizeof(denied_last), "%s:%u", host, port);
}

static void
on_bound(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	*(int *)arg = 1;
}

/* Runs the loop until the watcher has seen WANT events, at most 5 s. */
static void
wait_events(uint64_t want)
{
	struct timeval five = {5, 0};
	int expired = 0;
	struct event *bound = evtimer_new(base, on_bound, &expired);

	CHECK(bound != NULL && evtimer_add(bound, &five) == 0);
	while (refused_events(watcher) < want && !expired)
		CHECK(event_base_loop(base, EVLOOP_ONCE) >= 0);
	event_free(bound);
	CHECK(refused_events(watcher) == want);
}

static int
lines_with(const char *path, const char *a, const char *b)
{
	char line[4096];
	FILE *f = fopen(path, "r");
	int n = 0;

	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f) != NULL)
		n += strstr(line, a) != NULL && (b == NULL || strstr(line, b));
	fclose(f);
	return n;
}

/* A captured port: accepted, then aborted by the "proxy" (RST, seq>0). */
static void
abort_captured(uint64_t *events)
{
	struct linger lg = {1, 0};
	int lfd, cfd = -1, afd, one = 1;
	struct sockaddr_in sin = {.sin_family = AF_INET};

	sin.sin_port = htons(8080);
	CHECK((lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	CHECK(
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0);
	CHECK(bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	CHECK(listen(lfd, 4) == 0);
	CHECK(try_connect("203.0.113.7", 8080, 1, &cfd) == 0);
	CHECK((afd = accept(lfd, NULL, NULL)) >= 0);
	CHECK(setsockopt(afd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) == 0);
	close(afd);
	close(cfd);
	close(lfd);
	/* A sentinel after it: only the sentinel counts. */
	send_udp("203.0.113.8", 5001);
	wait_events(++*events);
}

/* The watcher's scratch log and its synthetic names. */
static char dir[32], path[64];
static struct audit *alog;
static struct synth *sy;

/*
 * In a new user and network namespace as the sandbox's: the watcher on
 * the raw sockets made there as PID 1 makes them (IPv6 ones with V6),
 * with every capability dropped first (the engine has none), its log in
 * a scratch directory.  A second socket of a kind is refused, and
 * closed.
 */
static void
watch_start(int v6)
{
	static const int kinds[][2] = {{AF_INET, IPPROTO_TCP},
	    {AF_INET, IPPROTO_ICMP}, {AF_INET6, IPPROTO_TCP},
	    {AF_INET6, IPPROTO_ICMPV6}};
	struct refused_config cf = {0};
	char err[256];
	int fds[5], i, n = v6 ? 4 : 2;

	snprintf(dir, sizeof(dir), "/tmp/test_refused.XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/audit.jsonl", dir);
	CHECK((alog = audit_open(path, "0123456789abcdef", err, sizeof(err))) !=
	    NULL);
	enter_sandbox_netns(v6);
	for (i = 0; i < n; i++)
		CHECK((fds[i] = socket(kinds[i][0], SOCK_RAW | SOCK_CLOEXEC,
		           kinds[i][1])) >= 0);
	CHECK((fds[n] = socket(
	           AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_TCP)) >= 0);
	drop_caps();
	CHECK((sy = synth_new()) != NULL);
	CHECK((base = event_base_new()) != NULL);
	cf.audit = alog;
	cf.synth = sy;
	cf.denied = on_denied;
	CHECK((watcher = refused_new(base, &cf)) != NULL);
	for (i = 0; i < n; i++)
		CHECK(refused_watch(watcher, fds[i]) == 0);
	CHECK(refused_watch(watcher, fds[n]) == -1);
	CHECK(fcntl(fds[n], F_GETFD) == -1);
}

/* Frees the watcher and closes its log (to be read after). */
static void
watch_stop(void)
{
	refused_free(watcher);
	audit_close(alog);
	synth_free(sy);
	event_base_free(base);
}

static void
child_watcher(void)
{
	char name4[INET_ADDRSTRLEN], name6[INET6_ADDRSTRLEN];
	uint8_t v4[4], v6[16];
	uint64_t events = 0;
	int v6ok = has_ipv6();

	watch_start(v6ok);
	CHECK(synth_map(sy, "db.example.com", v4, v6) == 0);
	inet_ntop(AF_INET, v4, name4, sizeof(name4));
	inet_ntop(AF_INET6, v6, name6, sizeof(name6));

	/* Refused: one record; again: still one. */
	CHECK(try_connect("203.0.113.7", 5555, 0, NULL) == ECONNREFUSED);
	wait_events(++events);
	CHECK(ndenied == 1 && strcmp(denied_last, "203.0.113.7:5555") == 0);
	CHECK(try_connect("203.0.113.7", 5555, 0, NULL) == ECONNREFUSED);
	wait_events(++events);
	/* Loopback: nothing (the UDP sentinel after it is the one event). */
	CHECK(try_connect("127.0.0.1", 5555, 0, NULL) == ECONNREFUSED);
	send_udp("127.0.0.1", 5000);
	send_udp("203.0.113.7", 5000);
	wait_events(++events);
	CHECK(ndenied == 2 && strcmp(denied_last, "203.0.113.7:5000") == 0);
	/* A synthetic address: its name. */
	CHECK(try_connect(name4, 5432, 0, NULL) == ECONNREFUSED);
	wait_events(++events);
	CHECK(ndenied == 3 && strcmp(denied_last, "db.example.com:5432") == 0);
	abort_captured(&events);
	CHECK(ndenied == 4);
	if (v6ok) {
		CHECK(
		    try_connect("2001:db8::7", 5555, 0, NULL) == ECONNREFUSED);
		wait_events(++events);
		send_udp("2001:db8::7", 5000);
		wait_events(++events);
		/* The name's IPv6 address: the same destination. */
		CHECK(try_connect(name6, 5432, 0, NULL) == ECONNREFUSED);
		CHECK(try_connect("::1", 5555, 0, NULL) == ECONNREFUSED);
		send_udp("::1", 5000);
		send_udp("2001:db8::8", 5000);
		wait_events(events += 2);
		CHECK(ndenied == 7);
	}
	watch_stop();

	CHECK(
	    lines_with(path, "\"event\":\"request\"", NULL) == (v6ok ? 7 : 4));
	CHECK(lines_with(path, "\"decision\":\"deny\"",
	          "\"via\":\"capture\"") == (v6ok ? 7 : 4));
	CHECK(lines_with(path, "\"host\":\"203.0.113.7\",\"port\":5555",
	          "\"method\":\"CONNECT\"") == 1);
	CHECK(lines_with(path,
	          "port 5555 is not captured: no allow rule "
	          "names it; connection refused in the sandbox",
	          NULL) == (v6ok ? 2 : 1));
	CHECK(lines_with(path, "\"host\":\"203.0.113.7\",\"port\":5000",
	          "\"method\":\"UDP\"") == 1);
	CHECK(lines_with(path,
	          "UDP to 203.0.113.7:5000: only DNS (port 53) "
	          "is carried",
	          NULL) == 1);
	CHECK(lines_with(path, "\"host\":\"db.example.com\",\"port\":5432",
	          NULL) == 1);
	CHECK(lines_with(path, "127.0.0.1", NULL) == 0);
	CHECK(lines_with(path, "8080", NULL) == 0);
	CHECK(lines_with(
	          path, "\"host\":\"203.0.113.8\",\"port\":5001", NULL) == 1);
	if (v6ok) {
		CHECK(lines_with(path, "\"host\":\"2001:db8::7\",\"port\":5555",
		          NULL) == 1);
		CHECK(lines_with(path, "[2001:db8::7]:5000", NULL) == 1);
		CHECK(lines_with(path, "\"::1\"", NULL) == 0);
	}
	CHECK(unlink(path) == 0 && rmdir(dir) == 0);
}

static void
test_watcher(void **state)
{
	(void)state;
	fixture_child_ok(child_watcher);
}

/* Past REFUSED_DESTS_MAX destinations: counted, in one record. */
static void
child_others(void)
{
	unsigned i, extra = 6;
	uint64_t events = 0;

	watch_start(0);
	for (i = 0; i < REFUSED_DESTS_MAX + extra; i++) {
		CHECK(try_connect("203.0.113.9", 10000 + i, 0, NULL) ==
		    ECONNREFUSED);
		events++;
		/* A known destination again: neither logged nor counted. */
		if (i % 100 == 0) {
			CHECK(try_connect("203.0.113.9", 10000, 0, NULL) ==
			    ECONNREFUSED);
			events++;
		}
		wait_events(events);
	}
	CHECK(ndenied == REFUSED_DESTS_MAX);
	watch_stop();
	CHECK(lines_with(path, "\"method\":\"CONNECT\"", NULL) ==
	    REFUSED_DESTS_MAX);
	CHECK(lines_with(
	          path, "\"host\":\"203.0.113.9\",\"port\":10000,", NULL) == 1);
	CHECK(lines_with(path, "\"count\":6",
	          "destinations past the first "
	          "1024") == 1);
	CHECK(lines_with(path, "\"count\"", NULL) == 1);
	CHECK(unlink(path) == 0 && rmdir(dir) == 0);
}

static void
test_others(void **state)
{
	(void)state;
	fixture_child_ok(child_others);
}

/* Not a raw TCP or ICMP socket: refused, and the descriptor closed. */
static void
test_not_raw(void **state)
{
	struct refused_config cf = {0};
	struct event_base *b = event_base_new();
	struct refused *r = refused_new(b, &cf);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	(void)state;
	assert_non_null(r);
	assert_true(fd >= 0);
	assert_int_equal(refused_watch(r, fd), -1);
	assert_int_equal(fcntl(fd, F_GETFD), -1);
	refused_free(r);
	event_base_free(b);
	refused_free(NULL);
}

/* The supervisor's notes: one byte each; anything else is none. */
static void
test_note_parse(void **state)
{
	const uint8_t i4[] = {'I'}, i6[] = {'6'}, raw[] = {'R'}, two[] = "II";
	const uint8_t other[] = {'X'}, nul[] = {0};

	(void)state;
	assert_int_equal(refused_note_parse(i4, 1), REFUSED_NOTE_ICMP);
	assert_int_equal(refused_note_parse(i6, 1), REFUSED_NOTE_ICMPV6);
	assert_int_equal(refused_note_parse(raw, 1), REFUSED_NOTE_RAW);
	assert_int_equal(refused_note_parse(two, 2), REFUSED_NOTE_NONE);
	assert_int_equal(refused_note_parse(i4, 0), REFUSED_NOTE_NONE);
	assert_int_equal(refused_note_parse(other, 1), REFUSED_NOTE_NONE);
	assert_int_equal(refused_note_parse(nul, 1), REFUSED_NOTE_NONE);
	assert_string_equal(refused_note_method(REFUSED_NOTE_ICMPV6), "ICMP");
	assert_string_equal(refused_note_method(REFUSED_NOTE_RAW), "RAW");
	assert_string_equal(refused_note_what(REFUSED_NOTE_ICMPV6), "ICMPv6");
	assert_non_null(strstr(refused_note_reason(REFUSED_NOTE_ICMP),
	    "ICMP (ping) is not carried"));
}

/*
 * The notes for real: each kind logged and told once, however often it
 * comes; a message of another size or byte ignored; the end of file
 * stops the watching (the loop then has nothing left to run).
 */
static void
test_notes(void **state)
{
	struct refused_config cf = {0};
	struct refused_notes *n;
	struct audit *a;
	char err[256];
	int sp[2];

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_refused.XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/audit.jsonl", dir);
	assert_non_null(
	    a = audit_open(path, "0123456789abcdef", err, sizeof(err)));
	assert_non_null(base = event_base_new());
	assert_int_equal(
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	cf.audit = a;
	cf.denied = on_denied;
	ndenied = 0;
	assert_non_null(n = refused_notes_new(base, &cf, sp[0]));
	assert_int_equal(send(sp[1], "I", 1, 0), 1);
	assert_int_equal(send(sp[1], "I", 1, 0), 1);
	assert_int_equal(send(sp[1], "RR", 2, 0), 2);
	assert_int_equal(send(sp[1], "X", 1, 0), 1);
	assert_int_equal(send(sp[1], "6", 1, 0), 1);
	assert_int_equal(send(sp[1], "R", 1, 0), 1);
	close(sp[1]);
	/* Runs until the end of file took the only event away. */
	assert_int_equal(event_base_dispatch(base), 1);
	assert_int_equal(ndenied, 3);
	assert_string_equal(denied_last, "RAW:0");
	refused_notes_free(n);
	refused_notes_free(NULL);
	audit_close(a);
	event_base_free(base);
	assert_int_equal(lines_with(path, "\"method\":\"ICMP\"",
	                     "\"via\":\"capture\",\"decision\":\"deny\""),
	    2);
	assert_int_equal(lines_with(path, "\"method\":\"RAW\"", NULL), 1);
	assert_int_equal(lines_with(path, "\"host\"", NULL), 0);
	assert_int_equal(
	    lines_with(path, "ICMPv6 (ping) is not carried", NULL), 1);
	/* A note the loop never read: logged when the notes are freed. */
	assert_non_null(base = event_base_new());
	assert_int_equal(
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp), 0);
	assert_non_null(
	    a = audit_open(path, "0123456789abcdef", err, sizeof(err)));
	cf.audit = a;
	assert_non_null(n = refused_notes_new(base, &cf, sp[0]));
	assert_int_equal(send(sp[1], "6", 1, 0), 1);
	refused_notes_free(n);
	close(sp[1]);
	audit_close(a);
	event_base_free(base);
	assert_int_equal(ndenied, 4);
	assert_string_equal(denied_last, "ICMPv6:0");
	assert_int_equal(
	    lines_with(path, "ICMPv6 (ping) is not carried", NULL), 2);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tcp4_refused),
	    cmocka_unit_test(test_tcp_not_refused),
	    cmocka_unit_test(test_tcp6_refused),
	    cmocka_unit_test(test_loopback),
	    cmocka_unit_test(test_ipv4_header),
	    cmocka_unit_test(test_icmp4_unreachable),
	    cmocka_unit_test(test_icmp6_unreachable),
	    cmocka_unit_test(test_filter_rejects),
	    cmocka_unit_test(test_reason),
	    cmocka_unit_test(test_watcher),
	    cmocka_unit_test(test_others),
	    cmocka_unit_test(test_not_raw),
	    cmocka_unit_test(test_note_parse),
	    cmocka_unit_test(test_notes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
