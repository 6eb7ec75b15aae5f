/*
 * dnsstub.c: the sandbox's DNS stub (dnsstub.h): a strict reader of one
 * query, the one function that decides its answer, and the UDP and TCP
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
#include "policy/target.h"
#include "proxy/dnsstub.h"

#define HDR 12
#define NAME_WIRE_MAX 255 /* RFC 1035 2.3.4, length bytes included */
#define QR 0x80
#define OPCODE_MASK 0x78
#define RD 0x01
#define UDP_BURST 64 /* datagrams read per wake-up, then others' turn */
#define TCP_IDLE_S 10
#define TCP_OUT_MAX 65536 /* answers a peer leaves unread: it goes */
#define SOCKS_MAX 8

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
 * REFUSED rather than NXDOMAIN: the stub does not know that the name does
 * not exist, and says only that it will not look it up.  A resolver
 * treats REFUSED as this server's failure, not as an answer about the
 * name, so nothing caches "no such name"; glibc gives up at once when its
 * only server refuses (EAI_AGAIN, "temporary failure"), so the program
 * fails fast.  Issue 12 answers the policy's names here.
 */
enum dnsstub_rcode
dnsstub_decide(const struct dnsstub_query *q)
{
	(void)q;
	return DNSSTUB_REFUSED;
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

size_t
dnsstub_respond(const uint8_t *p, size_t n, int err,
    const struct dnsstub_query *q, uint8_t *out)
{
	enum dnsstub_rcode rc;
	size_t len = HDR;

	/* No header to answer, or a response: answering could loop. */
	if (n < HDR || err == DNSSTUB_E_RESPONSE)
		return 0;
	memset(out, 0, HDR);
	put16(out, q->id);
	if (err == DNSSTUB_OK) {
		rc = dnsstub_decide(q);
		memcpy(out + HDR, p + HDR, q->qend - HDR);
		put16(out + 4, 1);
		len = q->qend;
	} else
		rc = err == DNSSTUB_E_OPCODE ? DNSSTUB_NOTIMP : DNSSTUB_FORMERR;
	out[2] = (uint8_t)(QR |
	    (err == DNSSTUB_E_OPCODE ? p[2] & OPCODE_MASK : 0) | q->rd);
	out[3] = (uint8_t)rc;
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
	uint64_t others; /* queries of names past the table */
	uint64_t queries;
};

/* The first query of a name: one record, and the caller told. */
static void
first_query(struct dnsstub *s, const struct dnsstub_query *q, const char *rc)
{
	struct audit_rec rec;
	char buf[12];
	const char *qtype = dnsstub_qtype_name(q->qtype, buf);

	if (s->cf.audit != NULL) {
		audit_rec_init(&rec, "dns", 0);
		rec.host = q->host.name;
		rec.qtype = qtype;
		rec.answer = rc;
		(void)audit_write(s->cf.audit, &rec);
	}
	if (s->cf.looked_up != NULL)
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

/* Notes a well-formed query's name. */
static void
note(struct dnsstub *s, const struct dnsstub_query *q)
{
	const char *rc = dnsstub_rcode_name(dnsstub_decide(q));

	if (quiet(s, q) ||
	    htab_find(s->names, q->host.name, q->host.len) != NULL)
		return;
	if (htab_count(s->names) >= DNSSTUB_NAMES_MAX ||
	    htab_try_add(s->names, q->host.name, q->host.len, 0, 0) != 0) {
		s->others++;
		return;
	}
	first_query(s, q, rc);
}

/* One query of N bytes: its answer in OUT, and its length (0: none). */
static size_t
handle(struct dnsstub *s, const uint8_t *p, size_t n, uint8_t *out)
{
	struct dnsstub_query q;
	int err = dnsstub_parse(p, n, &q);

	s->queries++;
	if (err == DNSSTUB_OK)
		note(s, &q);
	else
		log_debug("dns: query refused: %d", err);
	return dnsstub_respond(p, n, err, &q, out);
}

static void
on_udp(evutil_socket_t fd, short what, void *arg)
{
	struct dnsstub *s = arg;
	uint8_t in[DNSSTUB_QUERY_MAX + 1], out[DNSSTUB_ANSWER_MAX];
	struct sockaddr_storage from;
	socklen_t flen;
	ssize_t n;
	size_t len;
	int i;

	(void)what;
	for (i = 0; i < UDP_BURST; i++) {
		flen = sizeof(from);
		/* MSG_TRUNC: the datagram's real length, to refuse a long one */
		n = recvfrom(fd, in, sizeof(in), MSG_DONTWAIT | MSG_TRUNC,
		    (struct sockaddr *)&from, &flen);
		if (n < 0)
			break;
		if ((len = handle(s, in, (size_t)n, out)) > 0)
			(void)sendto(fd, out, len, MSG_DONTWAIT | MSG_NOSIGNAL,
			    (struct sockaddr *)&from, flen);
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

	if ((what & BEV_EVENT_EOF) &&
	    evbuffer_get_length(bufferevent_get_output(bev)) > 0) {
		bufferevent_disable(bev, EV_READ);
		bufferevent_setcb(bev, NULL, on_tcp_drained, NULL, s);
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

/* The names past the table, in one record. */
static void
log_others(struct dnsstub *s)
{
	struct audit_rec rec;

	if (s->others == 0 || s->cf.audit == NULL)
		return;
	audit_rec_init(&rec, "dns", 0);
	rec.answer = dnsstub_rcode_name(DNSSTUB_REFUSED);
	rec.count = (int64_t)s->others;
	(void)audit_write(s->cf.audit, &rec);
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
