/*
 * forward.c: plain-HTTP forwarding (absolute-form requests).
 *
 * Each request is decided afresh (a client may change host between
 * requests on one connection), rewritten to origin-form with the path the
 * policy checked, stripped of hop-by-hop fields, and sent upstream; its
 * body and the response's are relayed by their framing (length or
 * chunked, checked as the bytes pass), never buffered whole.  When both
 * messages are complete and both ends allow it, the client connection
 * reads its next request and the upstream connection waits for reuse.
 * Credentials are never injected in plain HTTP: policy_decide() denies a
 * plain-HTTP request whose rule would need one.
 *
 * The same loop serves the requests inside an intercepted tunnel
 * (intercept.c): origin-form requests whose Host must be the CONNECT
 * target, decided as HTTPS, with the rule's credentials injected and its
 * placeholder stand-ins swapped for the real values, and sent over the
 * proxy's own TLS connection to the real server.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/ph_err.h"
#include "policy/policy.h"
#include "proxy/http.h"
#include "proxy/inject.h"
#include "proxy/intercept.h"
#include "proxy/session.h"
#include "proxy/upstream.h"

struct body {
	enum http_body kind;
	uint64_t left; /* HTTP_BODY_LENGTH */
	struct http_chunked chunk; /* HTTP_BODY_CHUNKED */
	int done;
};

struct forward {
	struct body req, resp;
	int head_sent; /* response head written to the client */
	int client_keep; /* the client connection may carry more */
	int up_keep; /* the upstream connection may be reused */
	int upgrade; /* the client asked to switch protocols */

	size_t resp_seen; /* response head bytes looked at */
	char up_host[TARGET_HOST_MAX]; /* what s->up.bev is connected to */
	uint16_t up_port;
	int up_private; /* ...under a decision with private */
	const char *up_ca; /* ...and, intercepted, this upstream-ca */
	char up_addr[64];
	struct evbuffer *head; /* the rewritten request head */
	char method[33];
};

static void up_read(struct bufferevent *, void *);
static void up_event(struct bufferevent *, short, void *);
static void client_read(struct bufferevent *, void *);
static void client_event(struct bufferevent *, short, void *);
static void written(struct bufferevent *, void *);
static void check_done(struct session *);

int
forward_waiting(const struct session *s)
{
	return s->fwd != NULL && !s->fwd->head_sent;
}

void
forward_free(struct session *s)
{
	if (s->fwd == NULL)
		return;
	if (s->fwd->head != NULL)
		evbuffer_free(s->fwd->head);
	free(s->fwd);
	s->fwd = NULL;
}

/* --- request rewriting ---------------------------------------------------- */

/* Hop-by-hop fields (RFC 9110 7.6.1), and credentials for the proxy. */
static int
hop_field(const struct http_field *f, const struct http_head *h)
{
	static const char *const hop[] = {"connection", "keep-alive",
	    "proxy-authenticate", "proxy-authorization", "proxy-connection",
	    "te", "upgrade"};
	const struct http_field *conn;
	char name[64];
	size_t i;

	for (i = 0; i < sizeof(hop) / sizeof(hop[0]); i++)
		if (f->name_len == strlen(hop[i]) &&
		    strncasecmp(f->name, hop[i], f->name_len) == 0)
			return !(h->upgrade && i == 6);
	if (f->name_len >= sizeof(name))
		return 0;
	memcpy(name, f->name, f->name_len);
	name[f->name_len] = '\0';
	/* Fields that Connection names are for this hop only too. */
	for (i = 0; i < h->nfields; i++) {
		conn = &h->fields[i];
		if (conn->name_len == 10 &&
		    strncasecmp(conn->name, "connection", 10) == 0 &&
		    http_list_has(conn->value, conn->value_len, name))
			return 1;
	}
	return 0;
}

/* Writes PATH percent-encoding all but RFC 3986 pchar and '/'. */
static void
add_path(struct evbuffer *out, const char *path)
{
	const unsigned char *p;

	for (p = (const unsigned char *)path; *p != '\0'; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') ||
		    strchr("-._~!$&'()*+,;=:@/", *p) != NULL)
			evbuffer_add(out, p, 1);
		else
			evbuffer_add_printf(out, "%%%02X", *p);
	}
}

static void
add_host(
    struct evbuffer *out, const struct target_host *h, uint16_t port, int tls)
{
	evbuffer_add_printf(
	    out, h->kind == TARGET_V6 ? "Host: [%s]" : "Host: %s", h->name);
	if (port != (tls ? 443 : 80))
		evbuffer_add_printf(out, ":%u", port);
	evbuffer_add(out, "\r\n", 2);
}

/*
 * The request target (normalised path, query as sent), with the
 * stand-ins the rule binds swapped for their values.
 */
static int
add_target(struct session *s, struct evbuffer *out, const struct http_head *h,
    const char *path)
{
	const char *q = memchr(h->target, '?', h->target_len);
	struct evbuffer *t;
	unsigned char *flat;
	int r = -1;

	/* Most requests bind no stand-in: straight into the head. */
	if (s->dec.nplaceholder == 0) {
		add_path(out, path);
		if (q != NULL)
			evbuffer_add(out, q, h->target + h->target_len - q);
		return 0;
	}
	if ((t = evbuffer_new()) == NULL)
		return -1;
	add_path(t, path);
	if (q != NULL)
		evbuffer_add(t, q, h->target + h->target_len - q);
	if ((flat = evbuffer_pullup(t, -1)) != NULL)
		r = inject_add_swapped(out, (const char *)flat,
		    evbuffer_get_length(t), s->ctx->standins, &s->dec,
		    &s->secret, 1);
	evbuffer_free(t);
	return r;
}

/* A field for upstream: dropped, replaced by an injection, or swapped. */
static int
add_field(struct session *s, struct evbuffer *out, const struct http_field *f,
    const struct http_head *h)
{
	if ((f->name_len == 4 && strncasecmp(f->name, "host", 4) == 0) ||
	    hop_field(f, h) || inject_replaces(&s->dec, f->name, f->name_len))
		return 0;
	evbuffer_add_printf(out, "%.*s: ", (int)f->name_len, f->name);
	if (inject_add_swapped(out, f->value, f->value_len, s->ctx->standins,
	        &s->dec, &s->secret, 0) != 0)
		return -1;
	evbuffer_add(out, "\r\n", 2);
	return 0;
}

/*
 * The request as it goes upstream: origin-form with the normalised path
 * (what the policy checked is what the server gets) and the query as sent;
 * inside an intercepted tunnel, with the rule's credentials.
 */
static int
build_head(
    struct session *s, const struct http_head *h, const struct target_url *u)
{
	struct forward *fw = s->fwd;
	size_t i;

	if (fw->head == NULL && (fw->head = evbuffer_new()) == NULL)
		return -1;
	evbuffer_drain(fw->head, evbuffer_get_length(fw->head));
	evbuffer_add(fw->head, h->method, h->method_len);
	evbuffer_add(fw->head, " ", 1);
	if (add_target(s, fw->head, h, s->path) != 0)
		return -1;
	evbuffer_add_printf(fw->head, " HTTP/1.1\r\n");
	add_host(fw->head, &u->host, u->port, u->tls);
	for (i = 0; i < h->nfields; i++)
		if (add_field(s, fw->head, &h->fields[i], h) != 0)
			return -1;
	if (inject_add_fields(fw->head, &s->dec) != 0)
		return -1;
	if (s->dec.ninject > 0)
		s->secret = s->dec.inject[0].secret_name;
	if (h->upgrade)
		evbuffer_add_printf(fw->head, "Connection: upgrade\r\n");
	evbuffer_add(fw->head, "\r\n", 2);
	return 0;
}

/* --- body relay ----------------------------------------------------------- */

static void
body_init(struct body *b, const struct http_head *h)
{
	memset(b, 0, sizeof(*b));
	b->kind = h->body;
	b->left = h->content_length;
	http_chunked_init(&b->chunk);
	b->done = b->kind == HTTP_BODY_NONE ||
	    (b->kind == HTTP_BODY_LENGTH && b->left == 0);
}

/* How many of IN's bytes belong to the chunked body; -1 on bad framing. */
static ssize_t
chunked_span(struct body *b, struct evbuffer *in, const char **why)
{
	struct evbuffer_iovec v[16];
	ssize_t total = 0, r;
	int i, n = evbuffer_peek(in, -1, NULL, v, 16);

	for (i = 0; i < n && i < 16 && !b->done; i++) {
		r = http_chunked_scan(
		    &b->chunk, v[i].iov_base, v[i].iov_len, &b->done, why);
		if (r < 0)
			return -1;
		total += r;
	}
	return total;
}

/*
 * Moves the body bytes of B from IN to OUT (counting them in *BYTES);
 * bytes after the body stay in IN.  Returns 0, or -1 with *WHY.
 */
static int
body_move(struct body *b, struct evbuffer *in, struct evbuffer *out,
    uint64_t *bytes, const char **why)
{
	size_t n = evbuffer_get_length(in);
	ssize_t m = 0;

	if (b->done || n == 0)
		return 0;
	switch (b->kind) {
	case HTTP_BODY_LENGTH:
		m = n < b->left ? n : b->left;
		b->left -= m;
		b->done = b->left == 0;
		break;
	case HTTP_BODY_CHUNKED:
		if ((m = chunked_span(b, in, why)) < 0)
			return -1;
		break;
	case HTTP_BODY_CLOSE:
		m = n;
		break;
	case HTTP_BODY_NONE:
		return 0;
	}
	evbuffer_remove_buffer(in, out, m);
	*bytes += m;
	return 0;
}

static void
backpressure(
    struct session *s, struct bufferevent *from, struct bufferevent *to)
{
	size_t high = session_buf_high(s->ctx);

	if (evbuffer_get_length(bufferevent_get_output(to)) >= high) {
		bufferevent_disable(from, EV_READ);
		bufferevent_setwatermark(to, EV_WRITE, high / 4, 0);
	}
}

static void
pump_request(struct session *s)
{
	struct forward *fw = s->fwd;
	const char *why = NULL;

	if (body_move(&fw->req, bufferevent_get_input(s->client.bev),
	        bufferevent_get_output(s->up.bev), &s->client.bytes,
	        &why) != 0) {
		session_close(s, why);
		return;
	}
	session_touch(s);
	if (fw->req.done)
		bufferevent_disable(s->client.bev, EV_READ);
	else
		backpressure(s, s->client.bev, s->up.bev);
}

/* --- responses ------------------------------------------------------------ */

/* The response head for the client: status line as sent, our fields. */
static void
send_head(struct session *s, const char *buf, const struct http_head *h)
{
	struct evbuffer *out = bufferevent_get_output(s->client.bev);
	const char *eol = memchr(buf, '\r', h->head_len);
	size_t i;

	evbuffer_add(out, buf, eol - buf + 2);
	for (i = 0; i < h->nfields; i++) {
		const struct http_field *f = &h->fields[i];

		if (hop_field(f, h))
			continue;
		evbuffer_add_printf(out, "%.*s: %.*s\r\n", (int)f->name_len,
		    f->name, (int)f->value_len, f->value);
	}
	if (h->status == 101)
		evbuffer_add_printf(out, "Connection: upgrade\r\n");
	else if (!s->fwd->client_keep)
		evbuffer_add_printf(out, "Connection: close\r\n");
	evbuffer_add(out, "\r\n", 2);
}

/* Takes one response head off the upstream input; 0 when none yet. */
static int
take_head(struct session *s, struct http_head *h)
{
	struct evbuffer *in = bufferevent_get_input(s->up.bev);
	struct forward *fw = s->fwd;
	size_t len = evbuffer_get_length(in);
	const char *buf, *why = NULL;
	int r;

	if (len > HTTP_HEAD_MAX)
		len = HTTP_HEAD_MAX;
	if (len == 0 || !session_head_ready(in, &fw->resp_seen) ||
	    (buf = (const char *)evbuffer_pullup(in, len)) == NULL)
		return 0;
	r = http_parse_response(
	    buf, len, fw->method, strlen(fw->method), h, &why);
	if (r > 0 && h->status == 101 && !fw->upgrade) {
		r = -1;
		why = "the upstream switched protocols unasked";
	}
	if (r < 0) {
		session_reply_close(s, 502, why);
		return -1;
	}
	if (r > 0) {
		/* A body that ends with the connection ends ours too. */
		if (h->status >= 200 && h->body == HTTP_BODY_CLOSE)
			fw->client_keep = 0;
		send_head(s, buf, h);
		evbuffer_drain(in, r);
		fw->resp_seen = 0; /* a 1xx may be followed by more */
	}
	return r;
}

static void
final_head(struct session *s, const struct http_head *h)
{
	struct forward *fw = s->fwd;

	s->status = h->status;
	fw->head_sent = 1;
	body_init(&fw->resp, h);
	fw->up_keep = h->keep_alive && h->body != HTTP_BODY_CLOSE;
}

static void
pump_response(struct session *s)
{
	struct forward *fw = s->fwd;
	const char *why = NULL;

	if (body_move(&fw->resp, bufferevent_get_input(s->up.bev),
	        bufferevent_get_output(s->client.bev), &s->up.bytes,
	        &why) != 0) {
		session_close(s, why);
		return;
	}
	session_touch(s);
	backpressure(s, s->up.bev, s->client.bev);
	check_done(s);
}

static void
up_read(struct bufferevent *bev, void *arg)
{
	struct session *s = arg;
	struct http_head *h;
	int r = 1;

	(void)bev;
	if (s->fwd->head_sent) {
		pump_response(s);
		return;
	}
	if ((h = malloc(sizeof(*h))) == NULL) {
		session_close(s, "out of memory");
		return;
	}
	/* Interim 1xx heads pass through; then the final head. */
	while ((r = take_head(s, h)) > 0 && h->status / 100 == 1 &&
	    h->status != 101)
		;
	if (r > 0 && h->status == 101) {
		/* The "end" record comes when the upgraded tunnel closes. */
		s->status = 101;
		session_tunnel_begin(s);
	} else if (r > 0) {
		final_head(s, h);
		pump_response(s);
	}
	free(h);
}

/* --- completion ----------------------------------------------------------- */

/* An idle upstream connection that speaks or closes is of no more use. */
static void
idle_up_read(struct bufferevent *bev, void *arg)
{
	struct session *s = arg;

	(void)bev;
	bufferevent_free(s->up.bev);
	s->up.bev = NULL;
}

static void
idle_up_event(struct bufferevent *bev, short what, void *arg)
{
	(void)what;
	idle_up_read(bev, arg);
}

static void
check_done(struct session *s)
{
	struct forward *fw = s->fwd;

	if (!fw->resp.done || s->state != SESSION_FORWARD)
		return;
	session_audit_end(s, NULL);
	if (!fw->req.done || !fw->client_keep) {
		session_finish(s);
		return;
	}
	if (fw->up_keep && s->up.bev != NULL) {
		bufferevent_setcb(
		    s->up.bev, idle_up_read, NULL, idle_up_event, s);
		bufferevent_enable(s->up.bev, EV_READ);
	} else if (s->up.bev != NULL) {
		bufferevent_free(s->up.bev);
		s->up.bev = NULL;
	}
	session_next_request(s);
}

/* --- events --------------------------------------------------------------- */

static void
written(struct bufferevent *bev, void *arg)
{
	struct session *s = arg;

	bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
	if (s->state == SESSION_CLOSING) {
		session_close(s, NULL);
		return;
	}
	/* Drained: the side that feeds BEV may read again. */
	if (bev == s->up.bev && !s->fwd->req.done)
		bufferevent_enable(s->client.bev, EV_READ);
	else if (bev == s->client.bev && s->up.bev != NULL)
		bufferevent_enable(s->up.bev, EV_READ);
}

static void
up_event(struct bufferevent *bev, short what, void *arg)
{
	struct session *s = arg;
	struct forward *fw = s->fwd;

	(void)bev;
	if ((what & BEV_EVENT_EOF) && fw->head_sent &&
	    fw->resp.kind == HTTP_BODY_CLOSE) {
		/* The end of a close-delimited body: move the rest, finish. */
		evbuffer_add_buffer(bufferevent_get_output(s->client.bev),
		    bufferevent_get_input(s->up.bev));
		fw->resp.done = 1;
		fw->up_keep = 0;
		check_done(s);
	} else if (!fw->head_sent)
		session_reply_close(s, 502,
		    (what & BEV_EVENT_EOF)
		        ? "upstream closed the connection before answering"
		        : "upstream connection failed before answering");
	else
		session_close(s,
		    (what & BEV_EVENT_EOF)
		        ? "upstream closed the connection mid-body"
		        : "upstream connection failed mid-body");
}

static void
client_read(struct bufferevent *bev, void *arg)
{
	(void)bev;
	pump_request(arg);
}

static void
client_event(struct bufferevent *bev, short what, void *arg)
{
	struct session *s = arg;

	(void)bev;
	if ((what & BEV_EVENT_EOF) && s->fwd->req.done &&
	    s->state == SESSION_FORWARD) {
		s->client.eof = 1; /* half-close: still answer */
		return;
	}
	session_close(s,
	    (what & BEV_EVENT_EOF)
	        ? "the client closed the connection mid-request"
	        : "client connection failed");
}

/* --- start ---------------------------------------------------------------- */

static void
send_request(struct session *s)
{
	s->state = SESSION_FORWARD;
	s->fwd->head_sent = 0;
	s->fwd->resp_seen = 0;
	bufferevent_setcb(s->up.bev, up_read, written, up_event, s);
	bufferevent_setcb(s->client.bev, client_read, written, client_event, s);
	bufferevent_setwatermark(s->client.bev, EV_READ, 0, 0);
	evbuffer_add_buffer(bufferevent_get_output(s->up.bev), s->fwd->head);
	bufferevent_enable(s->up.bev, EV_READ | EV_WRITE);
	bufferevent_enable(s->client.bev, EV_READ | EV_WRITE);
	session_start_idle(s);
	pump_request(s);
}

/* The proxy's TLS to the real server is up (or failed: 502, why). */
static void
tls_connected(struct session *s, struct bufferevent *bev, const char *error)
{
	if (bev == NULL) {
		session_reply_close(s, 502, error);
		return;
	}
	send_request(s);
}

static void
connected(void *arg, struct bufferevent *bev, int status, const char *reason,
    const char *addr)
{
	struct session *s = arg;

	s->connecting = NULL;
	if (bev == NULL) {
		session_reply_close(s, status, reason);
		return;
	}
	snprintf(s->addr, sizeof(s->addr), "%s", addr);
	memcpy(s->fwd->up_addr, s->addr, sizeof(s->addr));
	memcpy(s->fwd->up_host, s->host, sizeof(s->host));
	s->fwd->up_port = s->port;
	s->fwd->up_private = s->dec.allow_private;
	s->fwd->up_ca = s->dec.upstream_ca;
	if (s->icpt != NULL) {
		intercept_upstream(s, bev, s->dec.upstream_ca, tls_connected);
		return;
	}
	s->up.bev = bev;
	send_request(s);
}

/*
 * A stand-in in a request its rule does not bind (another target, plain
 * HTTP, a denied request) is a leak attempt: denied, and said so.
 */
static void
check_leak(struct session *s, const struct http_head *h)
{
	long i = inject_leak(s->ctx->standins, h,
	    s->dec.verdict == POLICY_ALLOW ? &s->dec : NULL, s->icpt != NULL);

	if (i < 0)
		return;
	s->dec.verdict = POLICY_DENY;
	snprintf(s->dec.reason, sizeof(s->dec.reason),
	    "leak attempt: the stand-in for %.48s sent to %.120s:%u, "
	    "which its rule does not cover",
	    inject_standin_env(s->ctx->standins, (size_t)i), s->host, s->port);
}

/* Decides the request; returns 0 when it may go on. */
static int
decide(struct session *s, const struct http_head *h, const struct target_url *u)
{
	struct policy_request q = {0};

	q.host = &u->host;
	q.port = u->port;
	q.tls = u->tls;
	q.method = s->fwd->method;
	q.path = s->path;
	policy_decide(s->policy->p, &q, &s->dec);
	check_leak(s, h);
	if (session_audit_request(s) != 0)
		return -1;
	if (s->dec.verdict == POLICY_ALLOW)
		return 0;
	session_reply_close(s, 403, s->dec.reason);
	return -1;
}

/*
 * Inside an intercepted tunnel: the target is the CONNECT target, the
 * path the request's, and Host must name the same host (and port, when
 * it gives one): a request for another host is domain fronting.
 */
static int
inner_target(struct session *s, const struct http_head *h, struct target_url *u)
{
	const struct http_field *f = http_field_find(h, "host");
	struct target_host hh;
	uint16_t hport = 0;
	int r;

	u->tls = 1;
	u->host = s->icpt->host;
	u->port = s->icpt->port;
	if ((s->path = malloc(h->target_len + 2)) == NULL) {
		session_close(s, "out of memory");
		return -1;
	}
	if ((r = target_path_normalise(
	         h->target, h->target_len, s->path, h->target_len + 2)) != 0) {
		session_reply_close(s, 400, target_strerror(r));
		return -1;
	}
	if (f != NULL &&
	    (target_authority_parse(f->value, f->value_len, &hh, &hport) != 0 ||
	        strcmp(hh.name, u->host.name) != 0 ||
	        (hport != 0 && hport != u->port))) {
		session_reply_close(s, 421,
		    "the Host field names another host than the CONNECT "
		    "target");
		return -1;
	}
	return 0;
}

/* Parses the absolute URL into U and s->path; replies on error. */
static int
parse_target(struct session *s, const struct http_head *h, struct target_url *u)
{
	int r;

	if ((s->path = malloc(h->target_len + 2)) == NULL) {
		session_close(s, "out of memory");
		return -1;
	}
	r = target_url_parse(
	    h->target, h->target_len, u, s->path, h->target_len + 2);
	if (r == 0 && u->tls)
		session_reply_close(s, 400, "https:// URLs go through CONNECT");
	else if (r != 0)
		session_reply_close(s, 400, target_strerror(r));
	return r != 0 || u->tls ? -1 : 0;
}

void
forward_start(struct session *s, const struct http_head *h)
{
	struct target_url u;
	struct forward *fw;

	if (s->fwd == NULL && (s->fwd = calloc(1, sizeof(*s->fwd))) == NULL) {
		session_close(s, "out of memory");
		return;
	}
	fw = s->fwd;
	session_note_target(s, h->method, h->method_len,
	    s->icpt ? &s->icpt->host : NULL, s->icpt ? s->icpt->port : 0);
	snprintf(fw->method, sizeof(fw->method), "%s", s->method);
	if (s->icpt ? inner_target(s, h, &u) : parse_target(s, h, &u))
		return;
	session_note_target(s, h->method, h->method_len, &u.host, u.port);
	if (decide(s, h, &u) != 0)
		return;
	if (build_head(s, h, &u) != 0) {
		session_close(s, "out of memory, or a secret without a value");
		return;
	}
	body_init(&fw->req, h);
	fw->client_keep = h->keep_alive && !h->upgrade;
	fw->upgrade = h->upgrade;

	evbuffer_drain(bufferevent_get_input(s->client.bev), h->head_len);
	bufferevent_disable(s->client.bev, EV_READ);
	/*
	 * Reuse the idle upstream connection when it goes to the same place
	 * and was checked under the same rule about private addresses.
	 */
	if (s->up.bev != NULL && fw->up_port == u.port &&
	    strcmp(fw->up_host, u.host.name) == 0 &&
	    fw->up_private == s->dec.allow_private &&
	    fw->up_ca == s->dec.upstream_ca) {
		memcpy(s->addr, fw->up_addr, sizeof(s->addr));
		send_request(s);
		return;
	}
	if (s->up.bev != NULL) {
		bufferevent_free(s->up.bev);
		s->up.bev = NULL;
	}
	s->state = SESSION_CONNECTING;
	s->connecting = upstream_open(
	    s->ctx, s->policy->p, &s->dec, &u.host, u.port, connected, s);
	if (s->connecting == NULL)
		session_reply_close(s, 502, "out of memory");
}
