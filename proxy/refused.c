/*
 * refused.c: the refusals of the sandbox's kernel under capture
 * (refused.h): a strict reader of one frame from lo, the kernel filter
 * that lets only those frames reach it, and the watcher on the engine's
 * loop that logs each destination once.
 */
#define REFUSED_INTERNAL

#include <sys/ioctl.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <net/if.h>
#include <netinet/in.h>

#include <event2/event.h>

#include "audit/audit.h"
#include "common/hmap.h"
#include "common/log.h"
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

/* --- the filter ----------------------------------------------------------- */

/*
 * The frames refused_parse() may take, and (nearly) no other: each
 * frame once, as it arrives (not as it leaves); IPv4 unfragmented TCP
 * RST|ACK with sequence 0 or ICMP port unreachable; IPv6 the same with
 * no extension header.  The parser checks the rest.  Indexes in the
 * comments: jumps are counted from the next instruction.
 */
#define E ETH_HLEN_LO
#define TO(from, to) ((to) - (from)-1)
enum {
	L_V4 = 5,
	L_TCP4 = 11,
	L_ICMP4 = 16,
	L_V6 = 18,
	L_TCP6 = 21,
	L_ICMP6 = 26,
	L_ACCEPT = 28,
	L_REJECT = 29
};

static const struct sock_filter filter[] = {
    /* 0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SKF_AD_OFF + SKF_AD_PKTTYPE),
    /* 1 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACKET_OUTGOING, TO(1, L_REJECT), 0),
    /* 2 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 12),
    /* 3 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETHERTYPE_IPV4, TO(3, L_V4), 0),
    /* 4 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ETHERTYPE_IPV6, TO(4, L_V6),
        TO(4, L_REJECT)),
    /* 5 L_V4 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, E + 6),
    /* 6 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, IP4_FRAG, TO(6, L_REJECT), 0),
    /* 7 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, E + 9),
    /* 8 */ BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, E),
    /* 9 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROTO_TCP, TO(9, L_TCP4), 0),
    /* 10 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROTO_ICMP, TO(10, L_ICMP4),
        TO(10, L_REJECT)),
    /* 11 L_TCP4 */ BPF_STMT(BPF_LD | BPF_B | BPF_IND, E + 13),
    /* 12 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, TCP_MASK),
    /* 13 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TCP_RST | TCP_ACK, 0, TO(13, L_REJECT)),
    /* 14 */ BPF_STMT(BPF_LD | BPF_W | BPF_IND, E + 4),
    /* 15 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, TO(15, L_ACCEPT), TO(15, L_REJECT)),
    /* 16 L_ICMP4 */ BPF_STMT(BPF_LD | BPF_H | BPF_IND, E),
    /* 17 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ICMP_UNREACH_PORT, TO(17, L_ACCEPT),
        TO(17, L_REJECT)),
    /* 18 L_V6 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, E + 6),
    /* 19 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROTO_TCP, TO(19, L_TCP6), 0),
    /* 20 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROTO_ICMP6, TO(20, L_ICMP6),
        TO(20, L_REJECT)),
    /* 21 L_TCP6 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, E + IP6_HDR + 13),
    /* 22 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, TCP_MASK),
    /* 23 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TCP_RST | TCP_ACK, 0, TO(23, L_REJECT)),
    /* 24 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, E + IP6_HDR + 4),
    /* 25 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, TO(25, L_ACCEPT), TO(25, L_REJECT)),
    /* 26 L_ICMP6 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, E + IP6_HDR),
    /* 27 */
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ICMP6_UNREACH_PORT, TO(27, L_ACCEPT),
        TO(27, L_REJECT)),
    /* 28 L_ACCEPT */ BPF_STMT(BPF_RET | BPF_K, REFUSED_SNAP),
    /* 29 L_REJECT */ BPF_STMT(BPF_RET | BPF_K, 0),
};

_Static_assert(sizeof(filter) / sizeof(filter[0]) == L_REJECT + 1,
    "the filter's labels are its indexes");

const struct sock_filter *
refused_filter(size_t *len)
{
	*len = sizeof(filter) / sizeof(filter[0]);
	return filter;
}

/* --- the watcher ---------------------------------------------------------- */

/* A destination logged: KEY is its kind, port and shown host. */
struct dest {
	struct hmap_entry e;
	size_t len;
	uint8_t key[KEY_MAX];
};

struct refused {
	struct refused_config cf;
	struct event *ev;
	struct hmap *dests; /* up to REFUSED_DESTS_MAX */
	uint64_t others; /* refusals of destinations past the table */
	uint64_t events;
};

/* EV's destination as shown: the name of a synthetic address, if known. */
static const char *
shown_host(struct refused *r, const struct refused_event *ev, char *buf)
{
	const char *name = NULL;

	if (r->cf.synth != NULL && synth_is_synthetic(ev->family, ev->addr))
		name = synth_name(r->cf.synth, ev->family, ev->addr);
	if (name != NULL)
		return name;
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
	char abuf[INET6_ADDRSTRLEN];
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

static void
on_frames(evutil_socket_t fd, short what, void *arg)
{
	struct refused *r = arg;
	uint8_t buf[REFUSED_SNAP];
	struct refused_event ev;
	struct sockaddr_ll from;
	socklen_t flen;
	ssize_t n;
	int i;

	(void)what;
	for (i = 0; i < REFUSED_BURST; i++) {
		flen = sizeof(from);
		n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT,
		    (struct sockaddr *)&from, &flen);
		if (n < 0)
			break;
		/* Each frame crosses lo twice: count it as it arrives. */
		if (from.sll_pkttype == PACKET_OUTGOING)
			continue;
		if (refused_parse(buf, (size_t)n, &ev) != REFUSED_NONE)
			note(r, &ev);
	}
}

/* lo's index in FD's namespace (1 in every new one), or 0. */
static int
lo_index(int fd)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(fd, SIOCGIFINDEX, &ifr) != 0)
		return 0;
	return ifr.ifr_ifindex;
}

/*
 * Filters FD, then binds it to lo for every protocol: the filter comes
 * first, so that no other frame is ever queued.  Returns 0 or -1 after
 * saying why.
 */
static int
attach(int fd)
{
	struct sock_fprog prog = {0};
	struct sockaddr_ll sll;
	socklen_t len = sizeof(sll);
	size_t flen;
	int one = 1, rcvbuf = RCVBUF;

	memset(&sll, 0, sizeof(sll));
	if (getsockname(fd, (struct sockaddr *)&sll, &len) != 0 ||
	    sll.sll_family != AF_PACKET) {
		log_warnx("capture: the refusals' socket is not a packet "
		          "socket");
		return -1;
	}
	prog.filter = (struct sock_filter *)(uintptr_t)refused_filter(&flen);
	prog.len = (unsigned short)flen;
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) !=
	    0) {
		log_warn("capture: the refusals' filter");
		return -1;
	}
	/* The filter drops outgoing frames anyway; this saves their copy. */
	(void)setsockopt(
	    fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one));
	/* A burst of refusals waits here for the loop (the kernel caps it
	 * at net.core.rmem_max; what overflows is counted, refused_free). */
	(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	if ((sll.sll_ifindex = lo_index(fd)) == 0)
		sll.sll_ifindex = 1;
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)) != 0) {
		log_warn("capture: the refusals' socket on lo");
		return -1;
	}
	return 0;
}

struct refused *
refused_new(struct event_base *base, const struct refused_config *cf, int fd)
{
	struct refused *r = calloc(1, sizeof(*r));

	if (r == NULL || (r->dests = hmap_new(BUCKETS)) == NULL) {
		log_warnx("capture: out of memory");
		goto fail;
	}
	r->cf = *cf;
	if (attach(fd) != 0 || evutil_make_socket_nonblocking(fd) != 0)
		goto fail;
	r->ev = event_new(base, fd, EV_READ | EV_PERSIST, on_frames, r);
	if (r->ev == NULL || event_add(r->ev, NULL) != 0) {
		log_warnx("capture: cannot watch the refusals' socket");
		goto fail;
	}
	return r;
fail:
	close(fd);
	if (r != NULL && r->ev != NULL)
		event_free(r->ev);
	if (r != NULL)
		hmap_free(r->dests);
	free(r);
	return NULL;
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

/* Frames the socket's full queue dropped: their refusals went unseen. */
static void
log_drops(struct refused *r)
{
	struct tpacket_stats st;
	socklen_t len = sizeof(st);

	memset(&st, 0, sizeof(st));
	if (getsockopt(event_get_fd(r->ev), SOL_PACKET, PACKET_STATISTICS, &st,
	        &len) == 0 &&
	    st.tp_drops > 0)
		log_warnx("capture: %u refusals in the sandbox came too fast "
		          "to be seen, and were not logged",
		    st.tp_drops);
}

void
refused_free(struct refused *r)
{
	struct hmap_entry *e, *next;

	if (r == NULL)
		return;
	log_others(r);
	log_drops(r);
	close(event_get_fd(r->ev));
	event_free(r->ev);
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
