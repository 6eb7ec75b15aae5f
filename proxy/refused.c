/*
 * refused.c: the refusals of the sandbox's kernel under capture
 * (refused.h): a strict reader of one frame from lo, the kernel filters
 * that let only those datagrams reach the raw sockets, and the watcher
 * on the engine's loop that logs each destination once.
 */
#define REFUSED_INTERNAL

#include <sys/socket.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>

#include <event2/event.h>

#include "audit/audit.h"
#include "common/hmap.h"
#include "common/log.h"
#include "policy/target.h"
#include "proxy/refused.h"
#include "proxy/synth.h"

#define ETH_HLEN_LO 14
#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86dd
#define IP4_HDR 20
#define IP6_HDR 40
#define TCP_HDR 20
#define ICMP_HDR 8
#define UDP_HDR 8
#define PROTO_ICMP 1
#define PROTO_TCP 6
#define PROTO_UDP 17
#define PROTO_ICMP6 58
#define IP4_FRAG 0x3fff /* MF and the fragment offset */
#define TCP_FIN 0x01
#define TCP_SYN 0x02
#define TCP_RST 0x04
#define TCP_ACK 0x10
#define TCP_MASK (TCP_FIN | TCP_SYN | TCP_RST | TCP_ACK)
#define ICMP_UNREACH_PORT 0x0303 /* type 3 code 3 */
#define ICMP6_UNREACH_PORT 0x0104 /* type 1 code 4 */
#define EXT_MAX 8 /* extension headers skipped in a quoted datagram */
#define BUCKETS 256
#define KEY_MAX (3 + 256) /* kind, port, host */
#define RCVBUF (1 << 20)

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

/* --- the reader ----------------------------------------------------------- */

/* The kernel's answer to a SYN with no listener (refused.h). */
static int
tcp_refused(const uint8_t *t, size_t n)
{
	size_t off;

	if (n < TCP_HDR)
		return 0;
	off = (size_t)(t[12] >> 4) * 4;
	return off >= TCP_HDR && off <= n &&
	    (t[13] & TCP_MASK) == (TCP_RST | TCP_ACK) && get32(t + 4) == 0;
}

/* The source port of the quoted UDP header U is the DNS stub's. */
static enum refused_kind
quoted_udp(const uint8_t *u, struct refused_event *ev)
{
	if (get16(u) == 53)
		return REFUSED_NONE;
	ev->port = get16(u + 2);
	return REFUSED_UDP;
}

/* The IPv4 datagram quoted in an ICMP error: Q, N bytes of it. */
static enum refused_kind
quoted4(const uint8_t *q, size_t n, struct refused_event *ev)
{
	size_t ihl;

	if (n < IP4_HDR || q[0] >> 4 != 4)
		return REFUSED_NONE;
	ihl = (size_t)(q[0] & 0x0f) * 4;
	/* Only a first fragment (offset 0) holds the UDP header. */
	if (ihl < IP4_HDR || ihl + UDP_HDR > n || q[9] != PROTO_UDP ||
	    (get16(q + 6) & 0x1fff) != 0)
		return REFUSED_NONE;
	ev->family = AF_INET;
	memcpy(ev->addr, q + 16, 4);
	return quoted_udp(q + ihl, ev);
}

/* The IPv6 datagram quoted in an ICMPv6 error: Q, N bytes of it. */
static enum refused_kind
quoted6(const uint8_t *q, size_t n, struct refused_event *ev)
{
	size_t off = IP6_HDR, i;
	uint8_t nh;

	if (n < IP6_HDR || q[0] >> 4 != 6)
		return REFUSED_NONE;
	nh = q[6];
	for (i = 0; i <= EXT_MAX && nh != PROTO_UDP; i++) {
		if (i == EXT_MAX || off + 8 > n)
			return REFUSED_NONE;
		if (nh ==
		    44) { /* fragment: only the first has the UDP header */
			if ((get16(q + off + 2) & 0xfff8) != 0)
				return REFUSED_NONE;
			nh = q[off];
			off += 8;
		} else if (nh == 0 || nh == 43 || nh == 60) {
			nh = q[off];
			off += ((size_t)q[off + 1] + 1) * 8;
		} else {
			return REFUSED_NONE;
		}
	}
	if (off + UDP_HDR > n)
		return REFUSED_NONE;
	ev->family = AF_INET6;
	memcpy(ev->addr, q + 24, 16);
	return quoted_udp(q + off, ev);
}

static enum refused_kind
ipv4(const uint8_t *p, size_t n, struct refused_event *ev)
{
	size_t ihl, tot;

	if (n < IP4_HDR || p[0] >> 4 != 4)
		return REFUSED_NONE;
	ihl = (size_t)(p[0] & 0x0f) * 4;
	tot = get16(p + 2);
	if (ihl < IP4_HDR || tot < ihl || tot > n ||
	    (get16(p + 6) & IP4_FRAG) != 0)
		return REFUSED_NONE;
	if (p[9] == PROTO_TCP && tcp_refused(p + ihl, tot - ihl)) {
		ev->family = AF_INET;
		memcpy(ev->addr, p + 12, 4);
		ev->port = get16(p + ihl);
		return REFUSED_TCP;
	}
	if (p[9] == PROTO_ICMP && tot - ihl >= ICMP_HDR &&
	    get16(p + ihl) == ICMP_UNREACH_PORT)
		return quoted4(p + ihl + ICMP_HDR, tot - ihl - ICMP_HDR, ev);
	return REFUSED_NONE;
}

/* The outer header's next header must be TCP or ICMPv6 (refused.h). */
static enum refused_kind
ipv6(const uint8_t *p, size_t n, struct refused_event *ev)
{
	const uint8_t *l4 = p + IP6_HDR;
	size_t plen;

	if (n < IP6_HDR || p[0] >> 4 != 6)
		return REFUSED_NONE;
	plen = get16(p + 4);
	if (IP6_HDR + plen > n)
		return REFUSED_NONE;
	if (p[6] == PROTO_TCP && tcp_refused(l4, plen)) {
		ev->family = AF_INET6;
		memcpy(ev->addr, p + 8, 16);
		ev->port = get16(l4);
		return REFUSED_TCP;
	}
	if (p[6] == PROTO_ICMP6 && plen >= ICMP_HDR &&
	    get16(l4) == ICMP6_UNREACH_PORT)
		return quoted6(l4 + ICMP_HDR, plen - ICMP_HDR, ev);
	return REFUSED_NONE;
}

/* The program's own local services are no one's business here. */
static int
loopback(const struct refused_event *ev)
{
	static const uint8_t one[16] = {[15] = 1};
	static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};

	if (ev->family == AF_INET)
		return ev->addr[0] == 127;
	return memcmp(ev->addr, one, 16) == 0 ||
	    (memcmp(ev->addr, mapped, 12) == 0 && ev->addr[12] == 127);
}

enum refused_kind
refused_parse(const uint8_t *frame, size_t n, struct refused_event *ev)
{
	enum refused_kind k = REFUSED_NONE;

	memset(ev, 0, sizeof(*ev));
	if (n >= ETH_HLEN_LO && get16(frame + 12) == ETHERTYPE_IPV4)
		k = ipv4(frame + ETH_HLEN_LO, n - ETH_HLEN_LO, ev);
	else if (n >= ETH_HLEN_LO && get16(frame + 12) == ETHERTYPE_IPV6)
		k = ipv6(frame + ETH_HLEN_LO, n - ETH_HLEN_LO, ev);
	if (k != REFUSED_NONE && loopback(ev))
		k = REFUSED_NONE;
	if (k == REFUSED_NONE)
		memset(ev, 0, sizeof(*ev));
	ev->kind = k;
	return k;
}

const char *
refused_reason(
    const struct refused_event *ev, const char *host, char *buf, size_t len)
{
	if (ev->kind == REFUSED_TCP)
		snprintf(buf, len,
		    "port %u is not captured: no allow rule names it; "
		    "connection refused in the sandbox",
		    ev->port);
	else
		snprintf(buf, len,
		    strchr(host, ':') != NULL
		        ? "UDP to [%s]:%u: only DNS (port 53) is carried"
		        : "UDP to %s:%u: only DNS (port 53) is carried",
		    host, ev->port);
	return buf;
}

/* --- the filters --------------------------------------------------------- */

/*
 * The datagrams refused_parse() may take, and (nearly) no other, one
 * program per raw socket: an IPv4 raw socket's filter sees the IP
 * header first, an IPv6 one's the transport header (the kernel keeps
 * the IPv6 header from raw sockets).  IPv4: unfragmented (a raw socket
 * gets datagrams reassembled, so this never bites), TCP RST|ACK with
 * sequence 0, or ICMP port unreachable; IPv6: the same.  The parser
 * checks the rest.  Jumps are counted from the next instruction.
 */
#define ACCEPT BPF_STMT(BPF_RET | BPF_K, REFUSED_SNAP)
#define REJECT BPF_STMT(BPF_RET | BPF_K, 0)

static const struct sock_filter tcp4[] = {
    /* 0 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 6),
    /* 1 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, IP4_FRAG, 7, 0),
    /* 2 */ BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),
    /* 3 */ BPF_STMT(BPF_LD | BPF_B | BPF_IND, 13),
    /* 4 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, TCP_MASK),
    /* 5 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TCP_RST | TCP_ACK, 0, 3),
    /* 6 */ BPF_STMT(BPF_LD | BPF_W | BPF_IND, 4),
    /* 7 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
    /* 8 */ ACCEPT,
    /* 9 */ REJECT,
};

static const struct sock_filter icmp4[] = {
    /* 0 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 6),
    /* 1 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, IP4_FRAG, 4, 0),
    /* 2 */ BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),
    /* 3 */ BPF_STMT(BPF_LD | BPF_H | BPF_IND, 0),
    /* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ICMP_UNREACH_PORT, 0, 1),
    /* 5 */ ACCEPT,
    /* 6 */ REJECT,
};

static const struct sock_filter tcp6[] = {
    /* 0 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 13),
    /* 1 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, TCP_MASK),
    /* 2 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TCP_RST | TCP_ACK, 0, 3),
    /* 3 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4),
    /* 4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 1),
    /* 5 */ ACCEPT,
    /* 6 */ REJECT,
};

static const struct sock_filter icmp6[] = {
    /* 0 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 0),
    /* 1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ICMP6_UNREACH_PORT, 0, 1),
    /* 2 */ ACCEPT,
    /* 3 */ REJECT,
};

#define LEN(a) (sizeof(a) / sizeof((a)[0]))

const struct sock_filter *
refused_filter(int family, int proto, size_t *len)
{
	const struct sock_filter *f = NULL;

	*len = 0;
	if (family == AF_INET && proto == PROTO_TCP)
		f = tcp4, *len = LEN(tcp4);
	else if (family == AF_INET && proto == PROTO_ICMP)
		f = icmp4, *len = LEN(icmp4);
	else if (family == AF_INET6 && proto == PROTO_TCP)
		f = tcp6, *len = LEN(tcp6);
	else if (family == AF_INET6 && proto == PROTO_ICMP6)
		f = icmp6, *len = LEN(icmp6);
	return f;
}

/* --- the watcher ---------------------------------------------------------- */

/* A destination logged: KEY is its kind, port and shown host. */
struct dest {
	struct hmap_entry e;
	size_t len;
	uint8_t key[KEY_MAX];
};

/* One raw socket: FAMILY and PROTO say which datagrams it reads. */
struct watch {
	struct refused *r;
	struct event *ev;
	int family, proto;
};

struct refused {
	struct refused_config cf;
	struct event_base *base;
	struct watch w[REFUSED_SOCKETS];
	int n; /* sockets watched */
	struct hmap *dests; /* up to REFUSED_DESTS_MAX */
	uint64_t others; /* refusals of destinations past the table */
	uint64_t events;
};

/*
 * EV's destination as shown, in BUF (TARGET_HOST_MAX bytes): the name of
 * a synthetic address, if known, else the address.
 */
static const char *
shown_host(struct refused *r, const struct refused_event *ev, char *buf)
{
	if (r->cf.synth == NULL || !synth_is_synthetic(ev->family, ev->addr) ||
	    synth_name(
	        r->cf.synth, ev->family, ev->addr, buf, TARGET_HOST_MAX) != 0)
		inet_ntop(ev->family, ev->addr, buf, INET6_ADDRSTRLEN);
	return buf;
}

/* The first refusal of a destination: one record, and the caller told. */
static void
first_refusal(
    struct refused *r, const struct refused_event *ev, const char *host)
{
	struct audit_rec rec;
	char reason[512];

	log_debug("capture: %s %s port %u refused in the sandbox",
	    ev->kind == REFUSED_TCP ? "TCP" : "UDP", host, ev->port);
	if (r->cf.audit != NULL) {
		audit_rec_init(&rec, "request", 0);
		rec.method = ev->kind == REFUSED_TCP ? "CONNECT" : "UDP";
		rec.via = "capture";
		rec.host = host;
		rec.port = ev->port;
		rec.decision = "deny";
		rec.reason = refused_reason(ev, host, reason, sizeof(reason));
		(void)audit_write(r->cf.audit, &rec);
	}
	if (r->cf.denied != NULL)
		r->cf.denied(r->cf.denied_arg, host, ev->port);
}

/* Notes one event: logged when its destination is new. */
static void
note(struct refused *r, const struct refused_event *ev)
{
	char abuf[TARGET_HOST_MAX];
	const char *host = shown_host(r, ev, abuf);
	uint8_t key[KEY_MAX];
	size_t hlen = strlen(host), len = 3 + hlen;
	struct dest *d;

	r->events++;
	if (len > KEY_MAX)
		len = KEY_MAX; /* a name is at most 253 bytes: never */
	key[0] = (uint8_t)ev->kind;
	key[1] = (uint8_t)(ev->port >> 8);
	key[2] = (uint8_t)ev->port;
	memcpy(key + 3, host, len - 3);
	if (hmap_find(r->dests, key, len) != NULL)
		return;
	if (hmap_count(r->dests) >= REFUSED_DESTS_MAX ||
	    (d = calloc(1, sizeof(*d))) == NULL) {
		r->others++;
		return;
	}
	memcpy(d->key, key, len);
	d->len = len;
	hmap_insert(r->dests, &d->e, d->key, d->len);
	first_refusal(r, ev, host);
}

/*
 * The frame refused_parse() reads (a frame as lo carries it), made in
 * BUF around the datagram of N bytes that W's socket read to BUF +
 * HDR_ROOM: lo's 14-byte Ethernet header before it, and for IPv6, whose
 * raw sockets give no IP header, one made from what the kernel says of
 * it (the sender FROM, the socket's protocol, the length; the
 * destination is not read).  Returns the frame, its length in LEN.
 */
#define HDR_ROOM (ETH_HLEN_LO + IP6_HDR)
static const uint8_t *
lo_frame(const struct watch *w, uint8_t *buf, size_t n,
    const struct sockaddr_in6 *from, size_t *len)
{
	int v6 = w->family == AF_INET6;
	uint8_t *f = v6 ? buf : buf + IP6_HDR, *ip = f + ETH_HLEN_LO;
	unsigned type = v6 ? ETHERTYPE_IPV6 : ETHERTYPE_IPV4;

	memset(f, 0, ETH_HLEN_LO);
	f[12] = (uint8_t)(type >> 8);
	f[13] = (uint8_t)type;
	if (v6) {
		memset(ip, 0, IP6_HDR);
		ip[0] = 0x60;
		ip[4] = (uint8_t)(n >> 8);
		ip[5] = (uint8_t)n;
		ip[6] = (uint8_t)w->proto;
		ip[7] = 64;
		memcpy(ip + 8, &from->sin6_addr, 16);
	}
	*len = (size_t)(buf + HDR_ROOM - f) + n;
	return f;
}

static void
on_datagrams(evutil_socket_t fd, short what, void *arg)
{
	struct watch *w = arg;
	uint8_t buf[HDR_ROOM + REFUSED_SNAP];
	struct refused_event ev;
	struct sockaddr_in6 from;
	const uint8_t *f;
	socklen_t flen;
	size_t len;
	ssize_t n;
	int i;

	(void)what;
	for (i = 0; i < REFUSED_BURST; i++) {
		memset(&from, 0, sizeof(from));
		flen = sizeof(from);
		n = recvfrom(fd, buf + HDR_ROOM, REFUSED_SNAP, MSG_DONTWAIT,
		    (struct sockaddr *)&from, &flen);
		if (n < 0)
			break;
		f = lo_frame(w, buf, (size_t)n, &from, &len);
		if (refused_parse(f, len, &ev) != REFUSED_NONE)
			note(w->r, &ev);
	}
}

/* FD's SOL_SOCKET option OPT, or -1. */
static int
sockopt(int fd, int opt)
{
	socklen_t len = sizeof(int);
	int v = -1;

	if (getsockopt(fd, SOL_SOCKET, opt, &v, &len) != 0)
		return -1;
	return v;
}

/*
 * Filters FD, a raw socket of R's kinds not yet watched, and sizes its
 * queue.  It received from the start, so a datagram may wait that the
 * filter would have dropped: the parser drops it (before the command
 * starts, nothing on lo is an event anyway).  Returns 0 or -1 after
 * saying why.
 */
static int
attach(struct refused *r, int fd, struct watch *w)
{
	struct sock_fprog prog = {0};
	size_t flen;
	int i, rcvbuf = RCVBUF;

	w->family = sockopt(fd, SO_DOMAIN);
	w->proto = sockopt(fd, SO_PROTOCOL);
	if (sockopt(fd, SO_TYPE) != SOCK_RAW ||
	    (prog.filter = (struct sock_filter *)(uintptr_t)refused_filter(
	         w->family, w->proto, &flen)) == NULL) {
		log_warnx("capture: the refusals' socket is not a raw TCP or "
		          "ICMP socket");
		return -1;
	}
	for (i = 0; i < r->n; i++)
		if (r->w[i].family == w->family && r->w[i].proto == w->proto) {
			log_warnx("capture: a second refusals' socket of a "
			          "kind");
			return -1;
		}
	prog.len = (unsigned short)flen;
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) !=
	    0) {
		log_warn("capture: the refusals' filter");
		return -1;
	}
	/* A burst of refusals waits here for the loop (the kernel caps it
	 * at net.core.rmem_max; what overflows is counted, refused_free). */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	return 0;
}

struct refused *
refused_new(struct event_base *base, const struct refused_config *cf)
{
	struct refused *r = calloc(1, sizeof(*r));

	if (r == NULL || (r->dests = hmap_new(BUCKETS)) == NULL) {
		log_warnx("capture: out of memory");
		free(r);
		return NULL;
	}
	r->cf = *cf;
	r->base = base;
	return r;
}

int
refused_watch(struct refused *r, int fd)
{
	struct watch *w = &r->w[r->n];

	if (r->n == REFUSED_SOCKETS) {
		log_warnx("capture: too many refusals' sockets");
		goto fail;
	}
	memset(w, 0, sizeof(*w));
	w->r = r;
	if (attach(r, fd, w) != 0 || evutil_make_socket_nonblocking(fd) != 0)
		goto fail;
	w->ev = event_new(r->base, fd, EV_READ | EV_PERSIST, on_datagrams, w);
	if (w->ev == NULL || event_add(w->ev, NULL) != 0) {
		log_warnx("capture: cannot watch the refusals' socket");
		if (w->ev != NULL)
			event_free(w->ev);
		goto fail;
	}
	r->n++;
	return 0;
fail:
	close(fd);
	return -1;
}

uint64_t
refused_events(const struct refused *r)
{
	return r->events;
}

/* The refusals past the table, in one record. */
static void
log_others(struct refused *r)
{
	struct audit_rec rec;
	char reason[128];

	if (r->others == 0 || r->cf.audit == NULL)
		return;
	audit_rec_init(&rec, "request", 0);
	rec.via = "capture";
	rec.decision = "deny";
	snprintf(reason, sizeof(reason),
	    "refused in the sandbox: destinations past the first %d, "
	    "counted",
	    REFUSED_DESTS_MAX);
	rec.reason = reason;
	rec.count = (int64_t)r->others;
	(void)audit_write(r->cf.audit, &rec);
}

/* Datagrams the sockets' full queues dropped: their refusals went unseen. */
static void
log_drops(struct refused *r)
{
	uint32_t mem[SK_MEMINFO_VARS];
	socklen_t len;
	uint64_t drops = 0;
	int i;

	for (i = 0; i < r->n; i++) {
		memset(mem, 0, sizeof(mem));
		len = sizeof(mem);
		if (getsockopt(event_get_fd(r->w[i].ev), SOL_SOCKET, SO_MEMINFO,
		        mem, &len) == 0 &&
		    len > SK_MEMINFO_DROPS * sizeof(uint32_t))
			drops += mem[SK_MEMINFO_DROPS];
	}
	if (drops > 0)
		log_warnx("capture: %" PRIu64 " refusals in the sandbox came "
		          "too fast to be seen, and were not logged",
		    drops);
}

void
refused_free(struct refused *r)
{
	struct hmap_entry *e, *next;
	int i;

	if (r == NULL)
		return;
	log_others(r);
	log_drops(r);
	for (i = 0; i < r->n; i++) {
		close(event_get_fd(r->w[i].ev));
		event_free(r->w[i].ev);
	}
	for (e = hmap_first(r->dests); e != NULL; e = next) {
		next = hmap_next(r->dests, e);
		hmap_remove(r->dests, e);
		free(HMAP_ITEM(e, struct dest, e));
	}
	hmap_free(r->dests);
	free(r);
}

/* --- the supervisor's notes ---------------------------------------------- */

#define NOTES_BURST 16 /* messages read per wake-up; 3 kinds are sent */

enum refused_note
refused_note_parse(const uint8_t *msg, size_t n)
{
	if (n != 1)
		return REFUSED_NOTE_NONE;
	switch (msg[0]) {
	case 'I':
		return REFUSED_NOTE_ICMP;
	case '6':
		return REFUSED_NOTE_ICMPV6;
	case 'R':
		return REFUSED_NOTE_RAW;
	default:
		return REFUSED_NOTE_NONE;
	}
}

const char *
refused_note_method(enum refused_note k)
{
	return k == REFUSED_NOTE_RAW ? "RAW" : "ICMP";
}

const char *
refused_note_what(enum refused_note k)
{
	return k == REFUSED_NOTE_RAW   ? "RAW"
	    : k == REFUSED_NOTE_ICMPV6 ? "ICMPv6"
	                               : "ICMP";
}

const char *
refused_note_reason(enum refused_note k)
{
	switch (k) {
	case REFUSED_NOTE_ICMPV6:
		return "ICMPv6 (ping) is not carried: the sandbox has no "
		       "ICMP socket; only TCP through the proxy and DNS "
		       "leave it";
	case REFUSED_NOTE_RAW:
		return "a raw socket (ICMP, ping) is not carried: the sandbox "
		       "has no raw socket; only TCP through the proxy and "
		       "DNS leave it";
	default:
		return "ICMP (ping) is not carried: the sandbox has no ICMP "
		       "socket; only TCP through the proxy and DNS leave it";
	}
}

struct refused_notes {
	struct refused_config cf;
	struct event *ev;
	unsigned said; /* bit K: kind K logged */
};

static void
first_note(struct refused_notes *r, enum refused_note k)
{
	struct audit_rec rec;

	if (r->said & (1U << k))
		return;
	r->said |= 1U << k;
	log_debug("capture: a %s socket refused in the sandbox",
	    refused_note_what(k));
	if (r->cf.audit != NULL) {
		audit_rec_init(&rec, "request", 0);
		rec.method = refused_note_method(k);
		rec.via = "capture";
		rec.decision = "deny";
		rec.reason = refused_note_reason(k);
		(void)audit_write(r->cf.audit, &rec);
	}
	if (r->cf.denied != NULL)
		r->cf.denied(r->cf.denied_arg, refused_note_what(k), 0);
}

/* End of file (the supervisor is gone): nothing more to read. */
static void
on_notes(evutil_socket_t fd, short what, void *arg)
{
	struct refused_notes *r = arg;
	enum refused_note k;
	uint8_t buf[16];
	ssize_t n = -1;
	int i;

	(void)what;
	for (i = 0; i < NOTES_BURST; i++) {
		if ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) <= 0)
			break;
		if ((k = refused_note_parse(buf, (size_t)n)) !=
		    REFUSED_NOTE_NONE)
			first_note(r, k);
	}
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		(void)event_del(r->ev);
}

struct refused_notes *
refused_notes_new(
    struct event_base *base, const struct refused_config *cf, int fd)
{
	struct refused_notes *r = calloc(1, sizeof(*r));

	if (r == NULL) {
		log_warnx("capture: out of memory");
		goto fail;
	}
	r->cf = *cf;
	r->ev = event_new(base, fd, EV_READ | EV_PERSIST, on_notes, r);
	if (r->ev == NULL || event_add(r->ev, NULL) != 0) {
		log_warnx("capture: cannot watch the supervisor's notes");
		goto fail;
	}
	return r;
fail:
	close(fd);
	if (r != NULL && r->ev != NULL)
		event_free(r->ev);
	free(r);
	return NULL;
}

void
refused_notes_free(struct refused_notes *r)
{
	if (r == NULL)
		return;
	/* A note the loop has not read yet: logged all the same. */
	on_notes(event_get_fd(r->ev), EV_READ, r);
	close(event_get_fd(r->ev));
	event_free(r->ev);
	free(r);
}
