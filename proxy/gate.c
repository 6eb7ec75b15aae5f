/*
 * gate.c: the gateway's front (gate.h).
 *
 * The first head is looked at with MSG_PEEK, so that the policy's proxy
 * gets the connection as if it had accepted it.  Peeked bytes stay
 * readable, so a level-triggered event would fire at once again: the
 * read event is edge-triggered (EV_ET; epoll has it), woken only by new
 * bytes, and a timer bounds the wait by the head timeout.
 */
#include <sys/queue.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <openssl/crypto.h>

#include "common/log.h"
#include "policy/grant.h"
#include "policy/secret.h"
#include "policy/target.h"
#include "audit/audit.h"
#define GATE_INTERNAL
#include "proxy/gate.h"
#include "proxy/http.h"
#include "proxy/metrics.h"
#include "proxy/proxy.h"
#include "proxy/session.h"
#include "proxy/socks.h"

#define PENDING_DEFAULT 4096
#define LISTEN_BACKLOG 512
#define ACCEPT_PAUSE_MS 100
#define DRAIN_MAX 65536 /* bytes of a refused client's request read first */

struct gate_listener {
	LIST_ENTRY(gate_listener) entry;
	struct gate *g;
	struct evconnlistener *lev;
	enum proxy_via via;
};

/* A connection whose first head is awaited. */
struct pending {
	TAILQ_ENTRY(pending) entry;
	struct gate *g;
	int fd;
	struct sockaddr_storage sa;
	int salen;
	uint64_t conn;
	struct event *rd; /* edge-triggered: new bytes only */
	struct event *deadline; /* the head timeout */
};

struct gate {
	struct gate_config cf;
	LIST_HEAD(, gate_listener) listeners;
	TAILQ_HEAD(, pending) pending;
	size_t npending;
	int paused;
	struct event *resume; /* re-enables accept after EMFILE */
	uint64_t next_conn;
	char buf[HTTP_HEAD_MAX]; /* the peeked head: one at a time */
	struct http_head head;
};

/* --- Proxy-Authorization: Basic (RFC 7617) -------------------------------- */

static int
b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/*
 * Decodes canonical base64 (padded, no blanks, unused bits zero) of LEN
 * bytes into OUT (room for OUTMAX); returns the decoded length, or -1.
 */
static long
b64_decode(const char *in, size_t len, uint8_t *out, size_t outmax)
{
	size_t i, o = 0, pad = 0;
	uint32_t acc = 0;
	int v;

	if (len == 0 || len % 4 != 0)
		return -1;
	if (in[len - 1] == '=')
		pad = in[len - 2] == '=' ? 2 : 1;
	if (len / 4 * 3 - pad > outmax)
		return -1;
	for (i = 0; i < len; i++) {
		v = i >= len - pad ? 0 : b64_value((unsigned char)in[i]);
		if (v < 0)
			return -1;
		acc = acc << 6 | (uint32_t)v;
		if (i % 4 != 3)
			continue;
		out[o++] = (uint8_t)(acc >> 16);
		if (i < len - 1 || pad < 2)
			out[o++] = (uint8_t)(acc >> 8);
		if (i < len - 1 || pad < 1)
			out[o++] = (uint8_t)acc;
		/* The bits past the last byte must be zero (canonical). */
		if (i == len - 1 &&
		    (acc &
		        (pad == 2     ? 0xffff
		                : pad ? 0xff
		                      : 0)))
			return -1;
		acc = 0;
	}
	return (long)o;
}

static int
has_ctl(const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] == 0x7f)
			return 1;
	return 0;
}

int
gate_basic_parse(
    const char *v, size_t len, char *user, char *pass, size_t *passlen)
{
	uint8_t dec[GATE_USER_MAX + 1 + GATE_PASS_MAX + 3];
	const uint8_t *colon;
	size_t i = 5, ulen;
	long n = -1;
	int r = -1;

	user[0] = '\0';
	pass[0] = '\0';
	*passlen = 0;
	if (len < 6 || strncasecmp(v, "basic", 5) != 0 ||
	    (v[5] != ' ' && v[5] != '\t'))
		goto out;
	while (i < len && (v[i] == ' ' || v[i] == '\t'))
		i++;
	if ((n = b64_decode(v + i, len - i, dec, sizeof(dec))) < 0 ||
	    (colon = memchr(dec, ':', (size_t)n)) == NULL)
		goto out;
	ulen = (size_t)(colon - dec);
	if (ulen == 0 || ulen > GATE_USER_MAX ||
	    (size_t)n - ulen - 1 > GATE_PASS_MAX || has_ctl(dec, (size_t)n))
		goto out;
	memcpy(user, dec, ulen);
	user[ulen] = '\0';
	*passlen = (size_t)n - ulen - 1;
	memcpy(pass, colon + 1, *passlen);
	pass[*passlen] = '\0';
	r = 0;
out:
	explicit_bzero(dec, sizeof(dec));
	if (r != 0) {
		explicit_bzero(user, GATE_USER_MAX + 1);
		explicit_bzero(pass, GATE_PASS_MAX + 1);
		*passlen = 0;
	}
	return r;
}

/* The login of a parsed head H: as gate_head_login. */
static int
head_login(const struct http_head *h, char *user, char *pass, size_t *passlen)
{
	const struct http_field *f = NULL;
	size_t i;

	user[0] = '\0';
	*passlen = 0;
	for (i = 0; i < h->nfields; i++) {
		if (h->fields[i].name_len != 19 ||
		    strncasecmp(h->fields[i].name, "proxy-authorization", 19))
			continue;
		if (f != NULL) /* two logins: which one? neither */
			return -1;
		f = &h->fields[i];
	}
	if (f == NULL)
		return 0;
	return gate_basic_parse(f->value, f->value_len, user, pass, passlen) ==
	        0
	    ? 1
	    : -1;
}

int
gate_head_login(
    const char *buf, size_t len, char *user, char *pass, size_t *passlen)
{
	static struct http_head h;
	const char *why;

	user[0] = '\0';
	*passlen = 0;
	if (http_parse_request(buf, len, &h, &why) <= 0)
		return -1;
	return head_login(&h, user, pass, passlen);
}

/* --- the choice ------------------------------------------------------------ */

long
gate_pick(const struct grant_set *g, const struct secret_store *store,
    const struct sockaddr *sa, const char *user, const char *pass,
    size_t passlen, const char **why)
{
	const char *name = NULL;
	const struct secret *sec;
	const uint8_t *val;
	size_t vlen = 0;
	long i;

	i = grant_gateway(g, sa, user, &name);
	*why = user != NULL ? GATE_WHY_AUTH : GATE_WHY_NONE;
	if (i < 0 || name == NULL)
		return i < 0 || user == NULL || name == NULL ? i : -1;
	/* A grant that needs a password: fail closed on anything amiss. */
	if (user == NULL || pass == NULL || store == NULL ||
	    (sec = secret_store_find(store, name)) == NULL ||
	    (val = secret_value(sec, &vlen)) == NULL || vlen != passlen ||
	    CRYPTO_memcmp(val, pass, passlen) != 0)
		return -1;
	return i;
}

/* --- answers --------------------------------------------------------------- */

/* What a refused head asked for, for its record. */
struct asked {
	char method[32];
	struct target_host host; /* name "" when unknown */
	uint16_t port;
};

/* Fills A from head H: the method, and the target when it reads as one. */
static void
asked_of(const struct http_head *h, struct asked *a)
{
	char path[2048];
	struct target_url u;

	memset(a, 0, sizeof(*a));
	snprintf(a->method, sizeof(a->method), "%.*s",
	    (int)(h->method_len < 31 ? h->method_len : 31), h->method);
	if (h->form == HTTP_FORM_AUTHORITY) {
		if (target_authority_parse(
		        h->target, h->target_len, &a->host, &a->port) != 0)
			a->host.name[0] = '\0';
	} else if (h->form == HTTP_FORM_ABSOLUTE &&
	    target_url_parse(
	        h->target, h->target_len, &u, path, sizeof(path)) == 0) {
		a->host = u.host;
		a->port = u.port;
	}
}

/*
 * Records the refusal of connection CONN: a "request" record (deny, the
 * status, WHY, the login USER if any, what A asked for if known) and the
 * metrics.
 */
static void
record(struct gate *g, uint64_t conn, enum proxy_via via, const struct asked *a,
    int status, const char *why, const char *user)
{
	char reason[80 + GATE_USER_MAX];
	struct audit_rec r;

	if (user != NULL && user[0] != '\0')
		snprintf(reason, sizeof(reason), "%s (login %s)", why, user);
	else
		snprintf(reason, sizeof(reason), "%s", why);
	log_info("gate: connection %llu: %s", (unsigned long long)conn, reason);
	if (g->cf.audit != NULL) {
		audit_rec_init(&r, "request", conn);
		r.via = session_via_name(via);
		if (a != NULL) {
			r.method = a->method;
			r.host = a->host.name[0] != '\0' ? a->host.name : NULL;
			r.port =
			    a->host.name[0] != '\0' && a->port ? a->port : -1;
		}
		r.decision = "deny";
		r.reason = reason;
		r.status = status;
		(void)audit_write(g->cf.audit, &r);
	}
	metrics_request(g->cf.metrics,
	    &(struct metrics_req){.decision = "deny",
	        .host = a != NULL && a->host.name[0] ? a->host.name : NULL,
	        .port = a != NULL && a->host.name[0] ? a->port : 0,
	        .via = session_via_name(via),
	        .decision_us = -1});
}

static const char *
status_text(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 407:
		return "Proxy Authentication Required";
	case 408:
		return "Request Timeout";
	case 431:
		return "Request Header Fields Too Large";
	case 501:
		return "Not Implemented";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Service Unavailable";
	}
}

/*
 * Answers FD STATUS with WHY (407: the Basic challenge) and closes it.
 * What the client sent is read first: closing with unread bytes resets
 * the connection, and the client might never see the answer.
 */
static void
reply_close(int fd, enum proxy_via via, int status, const char *why)
{
	char buf[4096], reply[512];
	size_t got = 0;
	ssize_t n;
	int len;

	while (got < DRAIN_MAX &&
	    (n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		got += (size_t)n;
	explicit_bzero(buf, sizeof(buf)); /* it may have held a password */
	len = snprintf(reply, sizeof(reply),
	    "HTTP/1.1 %d %s\r\n%sContent-Type: text/plain\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n"
	    "X-Pinhole-Reason: %s\r\n\r\n%s\n",
	    status, status_text(status),
	    status == 407 ? "Proxy-Authenticate: Basic realm=\"pinhole\"\r\n"
	                  : "",
	    strlen(why) + 1, why, why);
	if (via == PROXY_VIA_SOCKS) { /* to its greeting: no method will do */
		reply[0] = SOCKS_VERSION;
		reply[1] = (char)SOCKS_METHOD_NONE;
		len = 2;
	}
	(void)send(fd, reply, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL);
	(void)shutdown(fd, SHUT_WR);
	close(fd);
}

/* --- connections ----------------------------------------------------------- */

static void accepting(struct gate *g, int on);

/*
 * P's events go before its descriptor does: libevent refuses an fd with
 * edge- and level-triggered events at once, and the proxy's are level.
 */
static void
pending_quiet(struct pending *p)
{
	if (p->rd != NULL)
		event_free(p->rd);
	if (p->deadline != NULL)
		event_free(p->deadline);
	p->rd = p->deadline = NULL;
}

static void
pending_free(struct pending *p, int close_fd)
{
	struct gate *g = p->g;

	TAILQ_REMOVE(&g->pending, p, entry);
	pending_quiet(p);
	if (close_fd && p->fd >= 0)
		close(p->fd);
	free(p);
	if (--g->npending < g->cf.max_pending && g->paused) {
		g->paused = 0;
		accepting(g, 1);
	}
}

/* Hands FD to policy I's proxy, or answers 503 when it has no room. */
static void
hand_over(struct gate *g, int fd, const struct sockaddr *sa, int salen,
    enum proxy_via via, uint64_t conn, long i)
{
	struct proxy *px = g->cf.proxy(g->cf.arg, i);

	if (px != NULL && proxy_take_fd(px, fd, via, sa, salen) == 0)
		return;
	record(g, conn, via, NULL, 503, "the policy's proxy is full", NULL);
	reply_close(fd, via, 503, "the policy's proxy is full");
}

/*
 * The whole head H is there: picks the policy for its login, then hands
 * the connection over or refuses it.  The password is wiped either way.
 */
static void
decide(struct pending *p, const struct http_head *h)
{
	struct gate *g = p->g;
	char user[GATE_USER_MAX + 1], pass[GATE_PASS_MAX + 1];
	const char *why = GATE_WHY_AUTH;
	struct asked a;
	size_t passlen = 0;
	long i = -1;
	int have;

	pending_quiet(p);
	asked_of(h, &a);
	have = head_login(h, user, pass, &passlen);
	if (have >= 0)
		i = g->cf.pick(g->cf.arg, (struct sockaddr *)&p->sa,
		    have ? user : NULL, have ? pass : NULL, passlen, &why);
	explicit_bzero(pass, sizeof(pass));
	explicit_bzero(g->buf, sizeof(g->buf));
	if (i >= 0) {
		hand_over(g, p->fd, (struct sockaddr *)&p->sa, p->salen,
		    PROXY_VIA_PROXY, p->conn, i);
	} else {
		record(g, p->conn, PROXY_VIA_PROXY, &a, 407, why, user);
		reply_close(p->fd, PROXY_VIA_PROXY, 407, why);
	}
	explicit_bzero(user, sizeof(user));
	p->fd = -1;
	pending_free(p, 0);
}

/* A head that cannot be read: answered STATUS with WHY, recorded. */
static void
refuse_head(struct pending *p, int status, const char *why)
{
	pending_quiet(p);
	record(p->g, p->conn, PROXY_VIA_PROXY, NULL, status, why, NULL);
	reply_close(p->fd, PROXY_VIA_PROXY, status, why);
	p->fd = -1;
	pending_free(p, 0);
}

/* Looks at what has come so far; decides once the head is whole. */
static void
on_read(evutil_socket_t fd, short what, void *arg)
{
	struct pending *p = arg;
	struct gate *g = p->g;
	const char *why = "bad request head";
	ssize_t n;
	int r;

	(void)what;
	n = recv(fd, g->buf, sizeof(g->buf), MSG_PEEK | MSG_DONTWAIT);
	if (n < 0 &&
	    (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return;
	if (n <= 0) { /* gone before a whole head: nothing to say */
		pending_free(p, 1);
		return;
	}
	r = http_parse_request(g->buf, (size_t)n, &g->head, &why);
	if (r > 0)
		decide(p, &g->head);
	else if (r < 0)
		refuse_head(p, -r, why);
	else if ((size_t)n >= sizeof(g->buf))
		refuse_head(p, 431, "request head too large");
	else
		explicit_bzero(g->buf, (size_t)n);
}

static void
on_deadline(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	refuse_head(arg, 408, "request head timeout");
}

/* Waits for FD's first head (an HTTP proxy client). */
static void
await_head(
    struct gate *g, int fd, const struct sockaddr *sa, int salen, uint64_t conn)
{
	struct timeval tv = {
	    g->cf.head_ms / 1000, (g->cf.head_ms % 1000) * 1000};
	struct pending *p = calloc(1, sizeof(*p));

	if (p == NULL || (size_t)salen > sizeof(p->sa)) {
		log_warnx("gate: connection %llu: out of memory",
		    (unsigned long long)conn);
		free(p);
		close(fd);
		return;
	}
	p->g = g;
	p->fd = fd;
	p->conn = conn;
	memcpy(&p->sa, sa, (size_t)salen);
	p->salen = salen;
	TAILQ_INSERT_TAIL(&g->pending, p, entry);
	if (++g->npending >= g->cf.max_pending && !g->paused) {
		g->paused = 1;
		accepting(g, 0);
	}
	p->rd =
	    event_new(g->cf.base, fd, EV_READ | EV_ET | EV_PERSIST, on_read, p);
	p->deadline = evtimer_new(g->cf.base, on_deadline, p);
	if (p->rd == NULL || p->deadline == NULL || event_add(p->rd, NULL) ||
	    evtimer_add(p->deadline, &tv)) {
		log_warnx("gate: connection %llu: out of memory",
		    (unsigned long long)conn);
		pending_free(p, 1);
	}
}

static void
on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
    int salen, void *arg)
{
	struct gate_listener *l = arg;
	struct gate *g = l->g;
	uint64_t conn = ++g->next_conn;
	const char *why = GATE_WHY_NONE;
	long i;

	(void)lev;
	if (l->via != PROXY_VIA_SOCKS) {
		await_head(g, fd, sa, salen, conn);
		return;
	}
	/* SOCKS5 here has no login: the address alone decides. */
	if ((i = g->cf.pick(g->cf.arg, sa, NULL, NULL, 0, &why)) >= 0) {
		hand_over(g, fd, sa, salen, PROXY_VIA_SOCKS, conn, i);
		return;
	}
	record(g, conn, PROXY_VIA_SOCKS, NULL, 407, why, NULL);
	reply_close(fd, PROXY_VIA_SOCKS, 407, why);
}

static void
accepting(struct gate *g, int on)
{
	struct gate_listener *l;

	LIST_FOREACH(l, &g->listeners, entry)
	{
		if (on)
			evconnlistener_enable(l->lev);
		else
			evconnlistener_disable(l->lev);
	}
}

static void
on_resume(evutil_socket_t fd, short what, void *arg)
{
	struct gate *g = arg;

	(void)fd;
	(void)what;
	if (!g->paused)
		accepting(g, 1);
}

static void
on_accept_error(struct evconnlistener *lev, void *arg)
{
	struct gate *g = ((struct gate_listener *)arg)->g;
	struct timeval tv = {0, ACCEPT_PAUSE_MS * 1000};
	int err = EVUTIL_SOCKET_ERROR();

	(void)lev;
	log_warnx("gate: accept: %s", strerror(err));
	if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
		accepting(g, 0);
		evtimer_add(g->resume, &tv);
	}
}

struct gate *
gate_new(const struct gate_config *cf)
{
	struct gate *g;

	/* Without edge-triggered reads, a peek would spin. */
	if (!(event_base_get_features(cf->base) & EV_FEATURE_ET)) {
		log_warnx("gate: the event loop has no edge-triggered events");
		return NULL;
	}
	if ((g = calloc(1, sizeof(*g))) == NULL)
		return NULL;
	g->cf = *cf;
	if (g->cf.max_pending == 0)
		g->cf.max_pending = PENDING_DEFAULT;
	LIST_INIT(&g->listeners);
	TAILQ_INIT(&g->pending);
	if ((g->resume = evtimer_new(cf->base, on_resume, g)) == NULL) {
		free(g);
		return NULL;
	}
	return g;
}

/* A listening socket on the literal IPV4:PORT or [IPV6]:PORT SPEC. */
static struct evconnlistener *
bind_spec(struct gate_listener *l, const char *spec, unsigned *port)
{
	struct sockaddr_storage ss = {0};
	int len = sizeof(ss);
	socklen_t slen = sizeof(ss);
	struct evconnlistener *lev;
	const char *colon = strrchr(spec, ':');
	char addr[INET6_ADDRSTRLEN + 8] = "";
	size_t n = strlen(spec);

	/* libevent refuses port 0 (the kernel's pick): parse the rest alone. */
	if (n > 2 && strcmp(spec + n - 2, ":0") == 0)
		n -= 2;
	if (n < sizeof(addr))
		memcpy(addr, spec, n);
	/* The port must be said ("::1:0" is an address, not ::1 port 0). */
	if (colon == NULL || colon[1] == '\0' || n >= sizeof(addr) ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
	    (spec[0] == '[') != (colon > spec && colon[-1] == ']') ||
	    evutil_parse_sockaddr_port(addr, (struct sockaddr *)&ss, &len) !=
	        0 ||
	    (ss.ss_family != AF_INET && ss.ss_family != AF_INET6)) {
		log_warnx(
		    "gate: bad address '%s': use IPV4:PORT or [IPV6]:PORT",
		    spec);
		return NULL;
	}
	lev = evconnlistener_new_bind(l->g->cf.base, on_accept, l,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE,
	    LISTEN_BACKLOG, (struct sockaddr *)&ss, len);
	if (lev == NULL) {
		log_warn("gate: listen on %s", spec);
		return NULL;
	}
	if (getsockname(
	        evconnlistener_get_fd(lev), (struct sockaddr *)&ss, &slen) == 0)
		*port = ntohs(ss.ss_family == AF_INET
		        ? ((struct sockaddr_in *)&ss)->sin_port
		        : ((struct sockaddr_in6 *)&ss)->sin6_port);
	return lev;
}

int
gate_listen(
    struct gate *g, const char *spec, enum proxy_via via, unsigned *port)
{
	struct gate_listener *l = calloc(1, sizeof(*l));

	*port = 0;
	if (l == NULL)
		return -1;
	l->g = g;
	l->via = via;
	if ((l->lev = bind_spec(l, spec, port)) == NULL) {
		free(l);
		return -1;
	}
	evconnlistener_set_error_cb(l->lev, on_accept_error);
	LIST_INSERT_HEAD(&g->listeners, l, entry);
	if (g->paused)
		evconnlistener_disable(l->lev);
	return 0;
}

void
gate_stop(struct gate *g)
{
	struct gate_listener *l;

	while ((l = LIST_FIRST(&g->listeners)) != NULL) {
		LIST_REMOVE(l, entry);
		evconnlistener_free(l->lev);
		free(l);
	}
	g->paused = 0;
	while (!TAILQ_EMPTY(&g->pending))
		pending_free(TAILQ_FIRST(&g->pending), 1);
}

void
gate_free(struct gate *g)
{
	if (g == NULL)
		return;
	gate_stop(g);
	event_free(g->resume);
	explicit_bzero(g->buf, sizeof(g->buf));
	free(g);
}
