/*
 * dnsstub.c: the sandbox's DNS stub (dnsstub.h): a strict reader of one
 * query, the one function that decides its answer (the policy's names,
 * synthetic addresses), the answer's builder, and the UDP and TCP
 * servers on the sockets made inside the sandbox.  Nothing here asks a
 * real resolver.
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <netinet/in.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "audit/audit.h"
#include "common/htab.h"
#include "common/log.h"
#include "policy/policy.h"
#include "policy/target.h"
#include "proxy/dnsstub.h"
#include "proxy/synth.h"

#define HDR 12
#define NAME_WIRE_MAX 255 /* RFC 1035 2.3.4, length bytes included */
#define QR 0x80
#define OPCODE_MASK 0x78
#define RD 0x01
#define RA 0x80
#define TYPE_A 1
#define TYPE_AAAA 28
#define CLASS_IN 1
#define QUESTION_PTR 0xc00c /* the name at offset 12: the question's */
#define UDP_BURST 64 /* datagrams read per wake-up, then others' turn */
#define TCP_IDLE_S 10
#define TCP_OUT_MAX 65536 /* answers a peer leaves unread: it goes */
#define SOCKS_MAX 8
#define OTHERS_MAX 8 /* answers' words (dnsstub_answer.word) */

static uint16_t
get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static void
put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* A byte a host name's label may hold (policy/target.c's set). */
static int
label_byte(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/*
 * The question's name from offset *OFF of the N bytes of P, as dotted
 * text in TEXT (NAME_WIRE_MAX bytes); *OFF moves past it.
 */
static int
read_name(const uint8_t *p, size_t n, size_t *off, char *text)
{
	size_t o = *off, t = 0, i;
	uint8_t len;

	for (;;) {
		if (o >= n)
			return DNSSTUB_E_SHORT;
		len = p[o++];
		if (len == 0)
			break;
		/* The question is the message's first name: nothing earlier
		 * to point at, so a pointer is never needed. */
		if ((len & 0xc0) == 0xc0)
			return DNSSTUB_E_POINTER;
		if ((len & 0xc0) != 0)
			return DNSSTUB_E_LABEL; /* 0x40, 0x80: no such label */
		if (o - *off + len + 1 > NAME_WIRE_MAX)
			return DNSSTUB_E_NAME;
		if (o + len > n)
			return DNSSTUB_E_SHORT;
		for (i = 0; i < len; i++)
			if (!label_byte(p[o + i]))
				return DNSSTUB_E_LABEL;
		if (t > 0)
			text[t++] = '.';
		memcpy(text + t, p + o, len);
		t += len;
		o += len;
	}
	text[t] = '\0';
	*off = o;
	return DNSSTUB_OK;
}

/* The header's checks: one standard query with one question. */
static int
check_header(const uint8_t *p, size_t n)
{
	if (n < HDR)
		return DNSSTUB_E_SHORT;
	if (p[2] & QR)
		return DNSSTUB_E_RESPONSE;
	if (n > DNSSTUB_QUERY_MAX)
		return DNSSTUB_E_LONG;
	if ((p[2] & OPCODE_MASK) != 0)
		return DNSSTUB_E_OPCODE;
	/* At most one additional record: an EDNS OPT. */
	if (get16(p + 4) != 1 || get16(p + 6) != 0 || get16(p + 8) != 0 ||
	    get16(p + 10) > 1)
		return DNSSTUB_E_COUNTS;
	return DNSSTUB_OK;
}

int
dnsstub_parse(const uint8_t *p, size_t n, struct dnsstub_query *q)
{
	char text[NAME_WIRE_MAX];
	size_t off = HDR;
	int r;

	memset(q, 0, sizeof(*q));
	if (n >= 2)
		q->id = get16(p);
	if (n >= 3)
		q->rd = p[2] & RD;
	if ((r = check_header(p, n)) != DNSSTUB_OK ||
	    (r = read_name(p, n, &off, text)) != DNSSTUB_OK)
		return r;
	if (off + 4 > n)
		return DNSSTUB_E_SHORT;
	q->qtype = get16(p + off);
	q->qclass = get16(p + off + 2);
	q->qend = off + 4;
	/* Without an OPT record nothing may follow the question. */
	if (get16(p + 10) == 0 && q->qend != n)
		return DNSSTUB_E_COUNTS;
	if (text[0] == '\0' ||
	    target_host_parse(text, strlen(text), &q->host) != 0 ||
	    q->host.kind != TARGET_NAME)
		return DNSSTUB_E_NAME;
	return DNSSTUB_OK;
}

/*
 * Without capture, REFUSED rather than NXDOMAIN: the stub does not know
 * that the name does not exist, and says only that it will not look it
 * up; a resolver treats REFUSED as this server's failure, so nothing
 * caches "no such name", and glibc gives up at once when its only server
 * refuses (EAI_AGAIN).  With capture the stub is the sandbox's whole DNS:
 * the names the policy may allow exist (at synthetic addresses), and no
 * other does, so NXDOMAIN (EAI_NONAME: glibc stops at once; the
 * sandbox's resolv.conf has no search list to try).
 */
void
dnsstub_decide(const struct dnsstub_query *q, const struct policy *p,
    struct synth *synth, struct dnsstub_answer *a)
{
	uint8_t v4[4], v6[16];

	memset(a, 0, sizeof(*a));
	a->rcode = DNSSTUB_REFUSED;
	if (synth == NULL || p == NULL)
		goto out;
	a->ra = 1;
	a->rcode = DNSSTUB_NXDOMAIN;
	if (!policy_host_may_allow(p, &q->host))
		goto out;
	a->rcode = DNSSTUB_NOERROR;
	a->word = "nodata";
	if (q->qclass != CLASS_IN ||
	    (q->qtype != TYPE_A && q->qtype != TYPE_AAAA))
		goto out;
	if (synth_map(synth, q->host.name, v4, v6) != 0) {
		a->rcode = DNSSTUB_SERVFAIL;
		a->word = NULL;
		goto out;
	}
	a->rtype = q->qtype;
	if (q->qtype == TYPE_A)
		memcpy(a->addr, v4, 4);
	else
		memcpy(a->addr, v6, 16);
	a->word = "synthetic";
out:
	if (a->word == NULL)
		a->word = dnsstub_rcode_name(a->rcode);
}

const char *
dnsstub_rcode_name(enum dnsstub_rcode rc)
{
	static const char *const names[] = {
	    "noerror", "formerr", "servfail", "nxdomain", "notimp", "refused"};

	return (unsigned)rc < sizeof(names) / sizeof(names[0]) ? names[rc]
	                                                       : "other";
}

const char *
dnsstub_qtype_name(uint16_t qtype, char buf[12])
{
	static const struct {
		uint16_t type;
		const char *name;
	} types[] = {{1, "A"}, {2, "NS"}, {5, "CNAME"}, {6, "SOA"}, {12, "PTR"},
	    {15, "MX"}, {16, "TXT"}, {28, "AAAA"}, {33, "SRV"}, {64, "SVCB"},
	    {65, "HTTPS"}, {255, "ANY"}, {257, "CAA"}};
	size_t i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].type == qtype)
			return types[i].name;
	snprintf(buf, 12, "TYPE%u", (unsigned)qtype);
	return buf;
}

/* A's record after the question, at OUT; returns its length. */
static size_t
put_record(uint8_t *out, const struct dnsstub_answer *a)
{
	size_t alen = a->rtype == TYPE_A ? 4 : 16;

	put16(out, QUESTION_PTR);
	put16(out + 2, a->rtype);
	put16(out + 4, CLASS_IN);
	put16(out + 6, 0);
	put16(out + 8, SYNTH_TTL);
	put16(out + 10, (uint16_t)alen);
	memcpy(out + 12, a->addr, alen);
	return 12 + alen;
}

size_t
dnsstub_respond(const uint8_t *p, size_t n, int err,
    const struct dnsstub_query *q, const struct dnsstub_answer *a, uint8_t *out)
{
	enum dnsstub_rcode rc;
	size_t len = HDR;
	int ra = 0;

	/* No header to answer, or a response: answering could loop. */
	if (n < HDR || err == DNSSTUB_E_RESPONSE)
		return 0;
	memset(out, 0, HDR);
	put16(out, q->id);
	if (err == DNSSTUB_OK) {
		rc = a->rcode;
		ra = a->ra;
		memcpy(out + HDR, p + HDR, q->qend - HDR);
		put16(out + 4, 1);
		len = q->qend;
		if (rc == DNSSTUB_NOERROR &&
		    (a->rtype == TYPE_A || a->rtype == TYPE_AAAA)) {
			len += put_record(out + len, a);
			put16(out + 6, 1);
		}
	} else
		rc = err == DNSSTUB_E_OPCODE ? DNSSTUB_NOTIMP : DNSSTUB_FORMERR;
	out[2] = (uint8_t)(QR |
	    (err == DNSSTUB_E_OPCODE ? p[2] & OPCODE_MASK : 0) | q->rd);
	out[3] = (uint8_t)((ra ? RA : 0) | rc);
	return len;
}

size_t
dnsstub_tcp_len(const uint8_t prefix[2])
{
	size_t len = get16(prefix);

	return len < HDR || len > DNSSTUB_QUERY_MAX ? 0 : len;
}

/* --- the server ----------------------------------------------------------- */

struct dnsstub {
	struct event_base *base;
	struct dnsstub_config cf;
	struct event *udp[SOCKS_MAX];
	struct evconnlistener *tcp[SOCKS_MAX];
	size_t nudp, ntcp;
	struct bufferevent *conns[DNSSTUB_TCP_MAX]; /* TCP, open */
	struct htab *names; /* the names seen, up to DNSSTUB_NAMES_MAX */
	/* Queries of names past the table, by answer (its static word). */
	struct {
		const char *word;
		uint64_t n;
	} others[OTHERS_MAX];
	uint64_t queries;
};

/* The first query of a name: one record, and the caller told. */
static void
first_query(struct dnsstub *s, const struct dnsstub_query *q, const char *word)
{
	struct audit_rec rec;
	char buf[12];
	const char *qtype = dnsstub_qtype_name(q->qtype, buf);

	if (s->cf.audit != NULL) {
		audit_rec_init(&rec, "dns", 0);
		rec.host = q->host.name;
		rec.qtype = qtype;
		rec.answer = word;
		(void)audit_write(s->cf.audit, &rec);
	}
	/* A name that resolved (synthetic, or NODATA for another type)
	 * leads the program on to a captured connection: nothing to say. */
	if (s->cf.looked_up != NULL && strcmp(word, "synthetic") != 0 &&
	    strcmp(word, "nodata") != 0)
		s->cf.looked_up(s->cf.arg, q->host.name, qtype);
}

/*
 * Names that are no one's target: "localhost" and below (RFC 6761 6.3),
 * and the sandbox's own name.  A program asks them of DNS when
 * /etc/hosts lacks one family: no hint is due.
 */
static int
quiet(const struct dnsstub *s, const struct dnsstub_query *q)
{
	const char *n = q->host.name;
	size_t len = q->host.len;

	return strcmp(n, "localhost") == 0 ||
	    (len > 10 && strcmp(n + len - 10, ".localhost") == 0) ||
	    (s->cf.own_name != NULL && strcasecmp(n, s->cf.own_name) == 0);
}

/* A query of a name past the table, counted under its answer. */
static void
count_other(struct dnsstub *s, const char *word)
{
	size_t i;

	for (i = 0; i < OTHERS_MAX; i++)
		if (s->others[i].word == NULL || s->others[i].word == word) {
			s->others[i].word = word;
			s->others[i].n++;
			return;
		}
}

/* Notes a well-formed query's name and its answer's WORD. */
static void
note(struct dnsstub *s, const struct dnsstub_query *q, const char *word)
{
	if (htab_find(s->names, q->host.name, q->host.len) != NULL)
		return;
	if (htab_count(s->names) >= DNSSTUB_NAMES_MAX ||
	    htab_try_add(s->names, q->host.name, q->host.len, 0, 0) != 0) {
		count_other(s, word);
		return;
	}
	first_query(s, q, word);
}

/* The policy in force, or NULL. */
static const struct policy *
policy_now(const struct dnsstub *s)
{
	return s->cf.policy != NULL ? s->cf.policy(s->cf.policy_arg) : NULL;
}

/* One query of N bytes: its answer in OUT, and its length (0: none). */
static size_t
handle(struct dnsstub *s, const uint8_t *p, size_t n, uint8_t *out)
{
	struct dnsstub_query q;
	struct dnsstub_answer a;
	int err = dnsstub_parse(p, n, &q);

	s->queries++;
	if (err == DNSSTUB_OK && quiet(s, &q))
		dnsstub_decide(&q, NULL, NULL, &a); /* refused, as ever */
	else if (err == DNSSTUB_OK) {
		dnsstub_decide(&q, policy_now(s), s->cf.synth, &a);
		note(s, &q, a.word);
	} else
		log_debug("dns: query refused: %d", err);
	return dnsstub_respond(p, n, err, &q, &a, out);
}

/*
 * The destination of the datagram MSG brought, as a control message for
 * the answer in CTL (of CTLLEN bytes): the answer leaves from the address
 * the query was sent to.  Returns the control message's length, 0 when
 * the datagram said nothing (the kernel picks the source).
 */
static size_t
reply_from(struct msghdr *msg, uint8_t *ctl, size_t ctllen)
{
	struct cmsghdr *c, *o;
	struct in_pktinfo pi4;
	struct in6_pktinfo pi6;

	memset(ctl, 0, ctllen);
	for (c = CMSG_FIRSTHDR(msg); c != NULL; c = CMSG_NXTHDR(msg, c)) {
		o = (struct cmsghdr *)(void *)ctl;
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO &&
		    c->cmsg_len >= CMSG_LEN(sizeof(pi4)) &&
		    CMSG_SPACE(sizeof(pi4)) <= ctllen) {
			memcpy(&pi4, CMSG_DATA(c), sizeof(pi4));
			pi4.ipi_spec_dst = pi4.ipi_addr; /* the destination */
			pi4.ipi_ifindex = 0;
			o->cmsg_level = IPPROTO_IP;
			o->cmsg_type = IP_PKTINFO;
			o->cmsg_len = CMSG_LEN(sizeof(pi4));
			memcpy(CMSG_DATA(o), &pi4, sizeof(pi4));
			return CMSG_SPACE(sizeof(pi4));
		}
		/* An IPv4 datagram on a dual-stack socket comes with its
		 * destination mapped (::ffff:a.b.c.d): sent back as is. */
		if (c->cmsg_level == IPPROTO_IPV6 &&
		    c->cmsg_type == IPV6_PKTINFO &&
		    c->cmsg_len >= CMSG_LEN(sizeof(pi6)) &&
		    CMSG_SPACE(sizeof(pi6)) <= ctllen) {
			memcpy(&pi6, CMSG_DATA(c), sizeof(pi6));
			pi6.ipi6_ifindex = 0;
			o->cmsg_level = IPPROTO_IPV6;
			o->cmsg_type = IPV6_PKTINFO;
			o->cmsg_len = CMSG_LEN(sizeof(pi6));
			memcpy(CMSG_DATA(o), &pi6, sizeof(pi6));
			return CMSG_SPACE(sizeof(pi6));
		}
	}
	return 0;
}

/* Room for one IP_PKTINFO or IPV6_PKTINFO control message. */
#define CTL_MAX                                                                \
	(CMSG_SPACE(sizeof(struct in6_pktinfo)) +                              \
	    CMSG_SPACE(sizeof(struct in_pktinfo)))

static void
on_udp(evutil_socket_t fd, short what, void *arg)
{
	struct dnsstub *s = arg;
	uint8_t in[DNSSTUB_QUERY_MAX + 1], out[DNSSTUB_ANSWER_MAX];
	union {
		struct cmsghdr align;
		uint8_t b[CTL_MAX];
	} ctl_in, ctl_out;
	struct sockaddr_storage from;
	struct iovec iov;
	struct msghdr msg;
	ssize_t n;
	size_t len, clen;
	int i;

	(void)what;
	for (i = 0; i < UDP_BURST; i++) {
		memset(&msg, 0, sizeof(msg));
		iov.iov_base = in;
		iov.iov_len = sizeof(in);
		msg.msg_name = &from;
		msg.msg_namelen = sizeof(from);
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = ctl_in.b;
		msg.msg_controllen = sizeof(ctl_in.b);
		/* MSG_TRUNC: the datagram's real length, to refuse a long one */
		n = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0)
			break;
		if ((len = handle(s, in, (size_t)n, out)) == 0)
			continue;
		clen = reply_from(&msg, ctl_out.b, sizeof(ctl_out.b));
		iov.iov_base = out;
		iov.iov_len = len;
		msg.msg_control = clen > 0 ? ctl_out.b : NULL;
		msg.msg_controllen = clen;
		msg.msg_flags = 0;
		if (sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			log_debug("dns: answer not sent: %s", strerror(errno));
	}
}

static void
tcp_close(struct dnsstub *s, struct bufferevent *bev)
{
	size_t i;

	for (i = 0; i < DNSSTUB_TCP_MAX; i++)
		if (s->conns[i] == bev)
			s->conns[i] = NULL;
	bufferevent_free(bev);
}

/* A free slot for a connection, or NULL. */
static struct bufferevent **
tcp_slot(struct dnsstub *s)
{
	size_t i;

	for (i = 0; i < DNSSTUB_TCP_MAX; i++)
		if (s->conns[i] == NULL)
			return &s->conns[i];
	return NULL;
}

/* Every whole message in the input answered; -1: the peer must go. */
static int
tcp_answer(struct dnsstub *s, struct bufferevent *bev)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	uint8_t pre[2], msg[2 + DNSSTUB_QUERY_MAX], out[2 + DNSSTUB_ANSWER_MAX];
	size_t len, alen;

	while (evbuffer_copyout(in, pre, 2) == 2) {
		if ((len = dnsstub_tcp_len(pre)) == 0)
			return -1;
		if (evbuffer_get_length(in) < 2 + len)
			break;
		(void)evbuffer_remove(in, msg, 2 + len);
		if ((alen = handle(s, msg + 2, len, out + 2)) == 0)
			return -1;
		put16(out, (uint16_t)alen);
		if (bufferevent_write(bev, out, 2 + alen) != 0 ||
		    evbuffer_get_length(bufferevent_get_output(bev)) >
		        TCP_OUT_MAX)
			return -1;
	}
	return 0;
}

static void
on_tcp_read(struct bufferevent *bev, void *arg)
{
	struct dnsstub *s = arg;

	if (tcp_answer(s, bev) != 0)
		tcp_close(s, bev);
}

/* The peer closed its side: go once the answers are out. */
static void
on_tcp_drained(struct bufferevent *bev, void *arg)
{
	tcp_close(arg, bev);
}

static void
on_tcp_event(struct bufferevent *bev, short what, void *arg)
{
	struct dnsstub *s = arg;

	/*
	 * The client shut its side: the answers it asked for still go out.
	 * Not after a reset (EOF|ERROR in one call): nothing would drain.
	 */
	if ((what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) == BEV_EVENT_EOF &&
	    evbuffer_get_length(bufferevent_get_output(bev)) > 0) {
		bufferevent_disable(bev, EV_READ);
		/* A write that fails, or times out, still ends it (here). */
		bufferevent_setcb(bev, NULL, on_tcp_drained, on_tcp_event, s);
		return;
	}
	tcp_close(s, bev);
}

static void
on_tcp_accept(struct evconnlistener *lev, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct dnsstub *s = arg;
	struct bufferevent *bev = NULL, **slot = tcp_slot(s);
	struct timeval idle = {TCP_IDLE_S, 0};

	(void)lev;
	(void)sa;
	(void)salen;
	if (slot == NULL ||
	    (bev = bufferevent_socket_new(
	         s->base, fd, BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		close(fd);
		return;
	}
	*slot = bev;
	bufferevent_setcb(bev, on_tcp_read, NULL, on_tcp_event, s);
	bufferevent_set_timeouts(bev, &idle, &idle);
	if (bufferevent_enable(bev, EV_READ) != 0)
		tcp_close(s, bev);
}

struct dnsstub *
dnsstub_new(struct event_base *base, const struct dnsstub_config *cf)
{
	struct dnsstub *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	s->base = base;
	s->cf = *cf;
	s->names = htab_new();
	return s;
}

int
dnsstub_is_stub_fd(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port) ==
		    DNSSTUB_PORT;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) ==
		    DNSSTUB_PORT;
	return 0;
}

/*
 * Asks UDP socket FD for each datagram's destination: IP_PKTINFO on an
 * IPv4 socket, IPV6_RECVPKTINFO on an IPv6 one (a dual-stack socket
 * reports an IPv4 datagram's destination mapped, which sendmsg takes),
 * and IP_FREEBIND there.
 * Without it answers still go, from the address the kernel picks: right
 * on a socket bound to one address.
 */
static void
want_destination(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int on = 1, r = -1;

	if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
		ss.ss_family = AF_UNSPEC;
	if (ss.ss_family == AF_INET)
		r = setsockopt(fd, IPPROTO_IP, IP_PKTINFO, &on, sizeof(on));
	/* IPv6 checks a source address against the addresses configured,
	 * not the local routes (IPv4 does): without IP_FREEBIND an answer
	 * from 2001:db8::53 fails (EINVAL).  Only a query's destination is
	 * ever used as a source. */
	else if (ss.ss_family == AF_INET6)
		r = setsockopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, &on,
		        sizeof(on)) != 0 ||
		    setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &on, sizeof(on));
	if (r != 0)
		log_debug(
		    "dns: no destination of datagrams: %s", strerror(errno));
}

int
dnsstub_listen_fd(struct dnsstub *s, int fd)
{
	int type = 0;
	socklen_t len = sizeof(type);
	struct event *ev;
	struct evconnlistener *lev;

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
	    evutil_make_socket_nonblocking(fd) != 0)
		return -1;
	if (type == SOCK_DGRAM && s->nudp < SOCKS_MAX) {
		want_destination(fd);
		ev = event_new(s->base, fd, EV_READ | EV_PERSIST, on_udp, s);
		if (ev == NULL || event_add(ev, NULL) != 0) {
			if (ev != NULL)
				event_free(ev);
			return -1;
		}
		s->udp[s->nudp++] = ev;
		return 0;
	}
	if (type == SOCK_STREAM && s->ntcp < SOCKS_MAX) {
		/* Backlog 0: listening already (made inside the sandbox). */
		lev = evconnlistener_new(s->base, on_tcp_accept, s,
		    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
		if (lev == NULL)
			return -1;
		s->tcp[s->ntcp++] = lev;
		return 0;
	}
	return -1;
}

uint64_t
dnsstub_queries(const struct dnsstub *s)
{
	return s->queries;
}

/* The names past the table: one record for each answer they got. */
static void
log_others(struct dnsstub *s)
{
	struct audit_rec rec;
	size_t i;

	for (i = 0; i < OTHERS_MAX && s->cf.audit != NULL; i++) {
		if (s->others[i].n == 0)
			continue;
		audit_rec_init(&rec, "dns", 0);
		rec.answer = s->others[i].word;
		rec.count = (int64_t)s->others[i].n;
		(void)audit_write(s->cf.audit, &rec);
	}
}

void
dnsstub_free(struct dnsstub *s)
{
	size_t i;

	if (s == NULL)
		return;
	log_others(s);
	for (i = 0; i < s->nudp; i++) {
		close(event_get_fd(s->udp[i]));
		event_free(s->udp[i]);
	}
	for (i = 0; i < s->ntcp; i++)
		evconnlistener_free(s->tcp[i]);
	for (i = 0; i < DNSSTUB_TCP_MAX; i++)
		if (s->conns[i] != NULL)
			bufferevent_free(s->conns[i]);
	htab_free(s->names);
	free(s);
}
