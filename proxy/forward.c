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
 * Credentials are never injected in plain HTTP: the policy denies a
 * plain-HTTP request whose rule would need one (decide.c asks it).
 *
 * The same loop serves the requests inside an intercepted tunnel
 * (intercept.c): origin-form requests whose Host must be the CONNECT
 * target, decided as HTTPS, with the rule's credentials injected and its
 * placeholder stand-ins swapped for the real values, and sent over the
 * proxy's own TLS connection to the real server.  And those of a
 * captured connection that spoke HTTP (capture.c, SESSION_REACH_PLAIN):
 * origin-form requests whose Host must be the name the program connected
 * to, decided as plain HTTP, sent in the clear.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/ph_err.h"
#include "common/log.h"
#include "policy/policy.h"
#include "policy/secret.h"
#include "proxy/decide.h"
#include "proxy/forward.h"
#include "proxy/http.h"
#include "proxy/inject.h"
#include "proxy/intercept.h"
#include "proxy/scan.h"
#include "proxy/session_int.h"
#include "proxy/tunnel.h"
#include "proxy/upstream.h"
#include "proxy/uppool.h"

struct body {
	enum http_body kind;
	uint64_t left; /* HTTP_BODY_LENGTH */
	struct http_chunked chunk; /* HTTP_BODY_CHUNKED */
	int done;
};

#define NOHOLD UINT64_MAX

/*
 * The search of responses for the real values sent on this connection.
 * Body bytes are counted as they come (FED) and pass on (SENT); those
 * from HOLD on may begin a value and wait in HELD until more bytes
 * decide.  The payload is one stream (chunk framing between two halves
 * of a value would hide it, and the client removes the framing); the
 * framing of a chunked body (sizes, extensions, trailer fields) is
 * another (state FST, held from FHOLD).
 */
struct rscan {
	const struct scan *sc; /* NULL: not searching */
	uint32_t st, fst;
	uint64_t fed, sent, hold, fhold;
	struct evbuffer *held;
	unsigned id; /* the secret found */
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
	int up_tls; /* ...with TLS of the proxy's own (intercepted) */
	uint64_t up_gen; /* ...in this generation of the pool (uppool.h) */
	int up_idle; /* s->up.bev is whole, quiet, and may be parked */
	char up_addr[64];
	struct evbuffer *head; /* the rewritten request head */
	struct evbuffer *rhead; /* the response head, built (see send_head) */
	char method[33];
	struct rscan rs;
};

static void up_read(struct bufferevent *, void *);
static void up_event(struct bufferevent *, short, void *);
static void client_read(struct bufferevent *, void *);
static void client_event(struct bufferevent *, short, void *);
static void written(struct bufferevent *, void *);
static void check_done(struct session *);
static void up_park(struct session *);
static void send_request(struct session *);

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
	up_park(s);
	if (s->fwd->head != NULL)
		evbuffer_free(s->fwd->head);
	if (s->fwd->rhead != NULL)
		evbuffer_free(s->fwd->rhead);
	if (s->fwd->rs.held != NULL)
		evbuffer_free(s->fwd->rs.held);
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

/*
 * The heads are written with evbuffer_add(), not evbuffer_add_printf():
 * formatting each field took 13% of the engine's time on intercepted
 * keep-alive requests (bench/README.md).
 */
static void
add_str(struct evbuffer *out, const char *str)
{
	evbuffer_add(out, str, strlen(str));
}

/* "NAME: VALUE\r\n", in one piece. */
static void
add_line(struct evbuffer *out, const char *name, size_t nlen, const char *value,
    size_t vlen)
{
	struct evbuffer_iovec v;
	size_t n = nlen + 2 + vlen + 2;
	char *p;

	if (evbuffer_reserve_space(out, n, &v, 1) != 1)
		return;
	p = v.iov_base;
	memcpy(p, name, nlen);
	memcpy(p + nlen, ": ", 2);
	memcpy(p + nlen + 2, value, vlen);
	memcpy(p + nlen + 2 + vlen, "\r\n", 2);
	v.iov_len = n;
	(void)evbuffer_commit_space(out, &v, 1);
}

static int
pchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') ||
	    (c != '\0' && strchr("-._~!$&'()*+,;=:@/", c) != NULL);
}

/* Writes PATH percent-encoding all but RFC 3986 pchar and '/'. */
static void
add_path(struct evbuffer *out, const char *path)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)path, *run;
	char esc[3] = {'%', 0, 0};

	while (*p != '\0') {
		for (run = p; *p != '\0' && pchar(*p); p++)
			;
		if (p > run)
			evbuffer_add(out, run, p - run);
		if (*p == '\0')
			break;
		esc[1] = hex[*p >> 4];
		esc[2] = hex[*p & 15];
		evbuffer_add(out, esc, 3);
		p++;
	}
}

static void
add_host(
    struct evbuffer *out, const struct target_host *h, uint16_t port, int tls)
{
	char num[8];

	add_str(out, h->kind == TARGET_V6 ? "Host: [" : "Host: ");
	add_str(out, h->name);
	if (h->kind == TARGET_V6)
		evbuffer_add(out, "]", 1);
	if (port != (tls ? 443 : 80)) {
		snprintf(num, sizeof(num), ":%u", port);
		add_str(out, num);
	}
	evbuffer_add(out, "\r\n", 2);
}

/*
 * The request target: normalised path, query as sent.  Stand-ins are
 * never swapped here (a server echoes and logs targets): one found here
 * was refused by check_leak.
 */
static void
add_target(struct evbuffer *out, const struct http_head *h, const char *path)
{
	const char *q = memchr(h->target, '?', h->target_len);

	add_path(out, path);
	if (q != NULL)
		evbuffer_add(out, q, h->target + h->target_len - q);
}

/* A field for upstream: dropped, replaced by an injection, or swapped. */
static int
add_field(struct session *s, struct evbuffer *out, const struct http_field *f,
    const struct http_head *h)
{
	if ((f->name_len == 4 && strncasecmp(f->name, "host", 4) == 0) ||
	    hop_field(f, h) || inject_replaces(&s->dec, f->name, f->name_len))
		return 0;
	return inject_add_field(out, f, s->ctx->standins, &s->dec, &s->secret);
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
	add_target(fw->head, h, s->path);
	add_str(fw->head, " HTTP/1.1\r\n");
	add_host(fw->head, &u->host, u->port, u->tls);
	for (i = 0; i < h->nfields; i++)
		if (add_field(s, fw->head, &h->fields[i], h) != 0)
			return -1;
	if (inject_add_fields(fw->head, &s->dec) != 0)
		return -1;
	if (s->dec.ninject > 0)
		s->secret = s->dec.inject[0].secret_name;
	if (h->upgrade)
		add_str(fw->head, "Connection: upgrade\r\n");
	evbuffer_add(fw->head, "\r\n", 2);
	return 0;
}

/*
 * Decides the request and, when allowed, builds the head that goes
 * upstream first: only then is it known which secret goes in (injected,
 * or a stand-in swapped), and the "request" record names it as the "end"
 * record does.  Returns 0 when the request may go on.
 */
static int
decide(struct session *s, const struct http_head *h, const struct target_url *u)
{
	struct decide_request r = {0};
	int built = 0, go;

	r.host = &u->host;
	r.port = u->port;
	r.tls = u->tls;
	r.method = s->fwd->method;
	r.path = s->path;
	decide_request(s->policy->p, s->ctx->standins, h, &r, &s->dec);
	if (s->dec.verdict == POLICY_ALLOW)
		built = build_head(s, h, u);
	if (session_audit_request(s) != 0)
		return -1;
	/* Known before S may be freed by a reply or a close. */
	go = s->dec.verdict == POLICY_ALLOW && built == 0;
	if (s->dec.verdict != POLICY_ALLOW)
		session_reply_close(s, 403, s->dec.reason);
	else if (built != 0)
		session_close(s, "out of memory, or a secret without a value");
	return go ? 0 : -1;
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
	/*
	 * Done: what comes next (a pipelined request) waits in the input,
	 * read up to a head's worth, for head_wait().  Reading stays on: off
	 * and on again cost two epoll_ctl calls a request.
	 */
	if (fw->req.done)
		bufferevent_setwatermark(
		    s->client.bev, EV_READ, 0, HTTP_HEAD_MAX);
	else
		backpressure(s, s->client.bev, s->up.bev);
}

/* --- response scan -------------------------------------------------------- */

/*
 * The real values of the policy's secrets in the forms a response may
 * echo them: as is, Base64 (a Basic field's "user:value" too, whatever
 * the user) and percent-encoded.  Built once per policy, by the first
 * connection that sends a value; freed with the policy.
 */
static const struct scan *
values_scan(struct proxy_policy *pp)
{
	const unsigned forms = SCAN_RAW | SCAN_BASE64 | SCAN_PERCENT;
	struct secret_store *st = policy_secrets(pp->p);
	const uint8_t *v;
	struct scan *sc;
	size_t i, len;

	if (pp->scan != NULL)
		return pp->scan;
	if ((sc = scan_new()) == NULL)
		return NULL;
	for (i = 0; st != NULL && i < secret_store_count(st); i++)
		if ((v = secret_value(secret_store_get(st, i), &len)) != NULL &&
		    scan_add_value(sc, v, len, (unsigned)i, forms) != 0)
			goto fail;
	if (scan_compile(sc) != 0)
		goto fail;
	pp->scan = sc;
	return sc;
fail:
	scan_free(sc);
	return NULL;
}

/* From now on, this connection's responses are searched.  0 or -1. */
static int
rscan_start(struct session *s)
{
	struct rscan *rs = &s->fwd->rs;

	if (rs->sc != NULL)
		return 0;
	if (rs->held == NULL && (rs->held = evbuffer_new()) == NULL)
		return -1;
	if ((rs->sc = values_scan(s->policy)) == NULL)
		return -1;
	rs->st = rs->fst = SCAN_START;
	rs->hold = rs->fhold = NOHOLD;
	return 0;
}

/* Searches payload P[0..N), the next body bytes.  1: a value ends there. */
static int
rscan_span(struct rscan *rs, const char *p, size_t n)
{
	size_t end, d;

	if (scan_feed(rs->sc, &rs->st, p, n, &end, &rs->id))
		return 1;
	d = scan_held(rs->sc, rs->st);
	if (d == 0)
		rs->hold = NOHOLD;
	else if (d <= n)
		rs->hold = rs->fed + n - d;
	/* Else the prefix began in an earlier span, at or after HOLD. */
	rs->fed += n;
	return 0;
}

/* Searches framing byte P, at body offset FED.  1: a value ends there. */
static int
rscan_framing(struct rscan *rs, const char *p)
{
	size_t end, d;

	if (scan_feed(rs->sc, &rs->fst, p, 1, &end, &rs->id))
		return 1;
	d = scan_held(rs->sc, rs->fst);
	if (d == 0)
		rs->fhold = NOHOLD;
	else if (d == 1)
		rs->fhold = rs->fed;
	/* Else the prefix began at FHOLD or after (a conservative hold). */
	return 0;
}

/* Searches up to M bytes of IN; returns how many, or -1: a value. */
static ssize_t
plain_searched(struct rscan *rs, struct evbuffer *in, size_t m)
{
	struct evbuffer_iovec v[16];
	int i, n = evbuffer_peek(in, m, NULL, v, 16);
	size_t k, total = 0;

	for (i = 0; i < n && i < 16 && total < m; i++) {
		k = v[i].iov_len < m - total ? v[i].iov_len : m - total;
		if (rscan_span(rs, v[i].iov_base, k))
			return -1;
		total += k;
	}
	return (ssize_t)total;
}

/*
 * chunked_span() that searches the chunks' data as it goes.  Returns the
 * bytes of the body, or -1: bad framing (*WHY), or a value (*FOUND).
 */
static ssize_t
chunked_searched(struct body *b, struct rscan *rs, struct evbuffer *in,
    const char **why, int *found)
{
	struct evbuffer_iovec v[16];
	int i, n = evbuffer_peek(in, -1, NULL, v, 16);
	ssize_t total = 0, r = 1;
	const char *p;
	uint64_t left;
	size_t off, k;

	for (i = 0; i < n && i < 16 && !b->done; i++)
		for (off = 0; off < v[i].iov_len && !b->done && r > 0;
		     off += r, total += r) {
			p = (const char *)v[i].iov_base + off;
			left = http_chunked_data_left(&b->chunk);
			/* Framing goes a byte at a time: it is short. */
			k = left == 0                   ? 1
			    : left < v[i].iov_len - off ? left
			                                : v[i].iov_len - off;
			if (left > 0 ? rscan_span(rs, p, k)
			             : rscan_framing(rs, p)) {
				*found = 1;
				return -1;
			}
			r = http_chunked_scan(&b->chunk, p, k, &b->done, why);
			if (r < 0)
				return -1;
			if (left == 0)
				rs->fed += r;
		}
	return total;
}

/* One pass of body_move_searched over what one peek of IN shows. */
static int
search_pass(struct body *b, struct rscan *rs, struct evbuffer *in,
    struct evbuffer *out, uint64_t *bytes, const char **why)
{
	size_t n = evbuffer_get_length(in);
	int found = 0;
	uint64_t upto;
	ssize_t m;

	if (b->kind == HTTP_BODY_CHUNKED)
		m = chunked_searched(b, rs, in, why, &found);
	else if ((m = plain_searched(rs, in,
	              b->kind == HTTP_BODY_LENGTH && n > b->left ? b->left
	                                                         : n)) < 0)
		found = 1;
	else if (b->kind == HTTP_BODY_LENGTH) {
		b->left -= m;
		b->done = b->left == 0;
	}
	if (m < 0)
		return found ? 1 : -1;
	evbuffer_remove_buffer(in, rs->held, m);
	*bytes += m;
	upto = rs->hold < rs->fhold ? rs->hold : rs->fhold;
	upto = b->done || upto == NOHOLD ? rs->fed : upto;
	evbuffer_remove_buffer(rs->held, out, upto - rs->sent);
	rs->sent = upto;
	if (b->done)
		rs->hold = rs->fhold = NOHOLD;
	return 0;
}

/*
 * body_move() for a searched response: the bytes searched go to HELD,
 * and on to OUT but those that may begin a value (all, once the body is
 * complete).  Returns 0, -1 on bad framing (*WHY), or 1 when a value was
 * found: then nothing of the bytes that hold it has moved.  Passes until
 * IN is empty or the body done, so that no byte waits for a read that
 * may never come.
 */
static int
body_move_searched(struct body *b, struct rscan *rs, struct evbuffer *in,
    struct evbuffer *out, uint64_t *bytes, const char **why)
{
	size_t before;
	int r = 0;

	if (b->kind == HTTP_BODY_NONE)
		return 0;
	while (r == 0 && !b->done && (before = evbuffer_get_length(in)) > 0) {
		r = search_pass(b, rs, in, out, bytes, why);
		if (evbuffer_get_length(in) == before)
			break; /* a partial chunk line: more bytes needed */
	}
	return r;
}

/* The rest of a close-delimited body, at the upstream's EOF. */
static int
close_searched(struct rscan *rs, struct evbuffer *in, struct evbuffer *out)
{
	ssize_t m;

	while (evbuffer_get_length(in) > 0) {
		if ((m = plain_searched(rs, in, evbuffer_get_length(in))) < 0)
			return 1;
		if (m == 0)
			return 1; /* cannot happen; never pass unsearched */
		evbuffer_remove_buffer(in, rs->held, m);
	}
	evbuffer_add_buffer(out, rs->held);
	rs->sent = rs->fed;
	rs->hold = NOHOLD;
	return 0;
}

/*
 * A response holds a real value: none of its bytes that hold it go on
 * (a 502 when the head held it), the connection is closed, and the
 * "end" record says why.  Never the value itself.
 */
static void
cut_leak(struct session *s)
{
	struct secret_store *st = policy_secrets(s->policy->p);
	const struct secret *sec =
	    st != NULL ? secret_store_get(st, s->fwd->rs.id) : NULL;
	char why[256];

	snprintf(why, sizeof(why),
	    "leak: the response from %.100s:%u carried the real value of "
	    "secret %.48s; cut before the client",
	    s->host, s->port, sec != NULL ? secret_name(sec) : "?");
	log_warnx("conn %llu: %s", (unsigned long long)s->conn, why);
	if (!s->fwd->head_sent)
		session_reply_close(s, 502, why);
	else {
		/* Even a body that ends with the connection shows the cut. */
		intercept_cut(s);
		session_close(s, why);
	}
}

/* Does the response head BUF[0..LEN) hold a value?  Searched whole. */
static int
head_searched(struct rscan *rs, const char *buf, size_t len)
{
	size_t end;

	if (rs->sc == NULL)
		return 0;
	if (scan_feed(rs->sc, &rs->st, buf, len, &end, &rs->id))
		return 1;
	rs->hold = NOHOLD; /* the head goes whole; it ends in CRLF */
	return 0;
}

/* --- responses ------------------------------------------------------------ */

/*
 * The response head for the client: status line as sent, our fields.
 * Built aside in fw->rhead and handed over whole: every addition to a
 * TLS filter's output is an SSL_write, so a field at a time made a TLS
 * record, with its allocations, per field (bench/README.md).  An interim
 * head (1xx) goes at once; a final one waits there for the body's first
 * bytes (head_out).
 */
static void
send_head(struct session *s, const char *buf, const struct http_head *h)
{
	struct evbuffer *cout = bufferevent_get_output(s->client.bev);
	struct evbuffer *out = s->fwd->rhead;
	const char *eol = memchr(buf, '\r', h->head_len);
	size_t i;

	if (out == NULL && (out = s->fwd->rhead = evbuffer_new()) == NULL)
		out = cout; /* out of memory: a field at a time, as it comes */

	evbuffer_add(out, buf, eol - buf + 2);
	for (i = 0; i < h->nfields; i++) {
		const struct http_field *f = &h->fields[i];

		if (hop_field(f, h))
			continue;
		add_line(out, f->name, f->name_len, f->value, f->value_len);
	}
	if (h->status == 101)
		add_str(out, "Connection: upgrade\r\n");
	else if (!s->fwd->client_keep)
		add_str(out, "Connection: close\r\n");
	evbuffer_add(out, "\r\n", 2);
	if (out != cout && h->status / 100 == 1)
		evbuffer_add_buffer(cout, out);
}

/* The most of a response's start that goes as one TLS record. */
#define ONE_RECORD (16 * 1024)

/*
 * The final head, with what of the body came with it, to the client:
 * one chain when small, so one SSL_write and one TLS record where the
 * head and the body made two (libevent writes each chain of an output
 * as its own record), and one fewer for the client to open.
 */
static void
head_out(struct session *s)
{
	struct evbuffer *rhead = s->fwd->rhead;

	if (evbuffer_get_length(rhead) <= ONE_RECORD)
		(void)evbuffer_pullup(rhead, -1); /* if not: as it is */
	evbuffer_add_buffer(bufferevent_get_output(s->client.bev), rhead);
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
	if (r > 0 && head_searched(&fw->rs, buf, (size_t)r)) {
		cut_leak(s);
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
	struct evbuffer *in = bufferevent_get_input(s->up.bev);
	struct evbuffer *out = bufferevent_get_output(s->client.bev);
	const char *why = NULL;
	int r;

	/* The head not sent yet (send_head) takes the body's first bytes. */
	if (fw->rhead != NULL && evbuffer_get_length(fw->rhead) > 0)
		out = fw->rhead;
	r = fw->rs.sc != NULL
	    ? body_move_searched(
	          &fw->resp, &fw->rs, in, out, &s->up.bytes, &why)
	    : body_move(&fw->resp, in, out, &s->up.bytes, &why);
	if (out == fw->rhead)
		head_out(s); /* also before a cut: the client has the head */
	if (r > 0) {
		cut_leak(s);
		return;
	}
	if (r != 0) {
		session_close(s, why);
		return;
	}
	session_touch(s);
	backpressure(s, s->up.bev, s->client.bev);
	check_done(s);
}

/*
 * The parsed head (about 3 KiB) is on the stack, as in head_try(): a
 * malloc of that size a response went past glibc's per-thread cache.
 */
static void
up_read(struct bufferevent *bev, void *arg)
{
	struct session *s = arg;
	struct http_head h;
	int r = 1;

	/* More records now, while the response wants them: one write on. */
	if (!s->fwd->head_sent || !s->fwd->resp.done)
		intercept_up_drain(bev);
	if (s->fwd->head_sent) {
		pump_response(s);
		return;
	}
	/* Interim 1xx heads pass through; then the final head. */
	while ((r = take_head(s, &h)) > 0 && h.status / 100 == 1 &&
	    h.status != 101)
		;
	if (r > 0 && h.status == 101) {
		/* The "end" record comes when the upgraded tunnel closes. */
		s->status = 101;
		tunnel_relay_start(s);
	} else if (r > 0) {
		final_head(s, &h);
		pump_response(s);
	}
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
	s->fwd->up_idle = 0;
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
	session_send_now(s->client.bev); /* the response's end, logged first */
	fw->up_idle = fw->req.done && fw->up_keep && s->up.bev != NULL;
	if (!fw->req.done || !fw->client_keep) {
		up_park(s); /* another client connection may use it now */
		session_finish(s);
		return;
	}
	if (fw->up_idle) {
		bufferevent_setcb(
		    s->up.bev, idle_up_read, NULL, idle_up_event, s);
		bufferevent_enable(s->up.bev, EV_READ);
	} else if (s->up.bev != NULL) {
		bufferevent_free(s->up.bev);
		s->up.bev = NULL;
	}
	session_next_request(s);
}

/* --- the pool of idle upstream connections (uppool.h) ---------------------- */

/* The pool's key of S's upstream connection, as note_up() recorded it. */
static void
up_key(const struct session *s, struct uppool_key *k)
{
	const struct forward *fw = s->fwd;

	k->host = fw->up_host;
	k->port = fw->up_port;
	k->tls = fw->up_tls;
	k->allow_private = fw->up_private;
	k->ca = fw->up_ca;
	k->gen = fw->up_gen;
	k->client = s->client_id;
}

/* Records what S's new upstream connection was made for (the key). */
static void
note_up(struct session *s)
{
	struct forward *fw = s->fwd;

	memcpy(fw->up_addr, s->addr, sizeof(s->addr));
	memcpy(fw->up_host, s->host, sizeof(s->host));
	fw->up_port = s->port;
	fw->up_private = s->dec.allow_private;
	fw->up_ca = s->dec.upstream_ca;
	fw->up_tls = s->reach == SESSION_REACH_INTERCEPT;
}

/*
 * S's idle upstream connection (its last response whole and kept alive,
 * nothing sent since) goes to the proxy's pool, which may close it;
 * without a pool it closes.  One in use stays.
 */
static void
up_park(struct session *s)
{
	struct uppool_key k;

	if (s->up.bev == NULL || !s->fwd->up_idle)
		return;
	if (s->ctx->upool != NULL) {
		up_key(s, &k);
		(void)uppool_put(s->ctx->upool, &k, s->up.bev, s->fwd->up_addr);
	} else {
		bufferevent_free(s->up.bev);
	}
	s->up.bev = NULL;
	s->fwd->up_idle = 0;
}

/*
 * A parked connection for S's decided request to U, made under the same
 * terms: sent on at once, and 1; 0 when the pool has none.  Its "end"
 * record names the address it is connected to, as for a new one.
 */
static int
up_take(struct session *s, const struct target_url *u)
{
	struct uppool_key k = {.host = u->host.name,
	    .port = u->port,
	    .tls = s->reach == SESSION_REACH_INTERCEPT,
	    .allow_private = s->dec.allow_private,
	    .ca = s->dec.upstream_ca,
	    .gen = s->fwd->up_gen,
	    .client = s->client_id};

	if (s->ctx->upool == NULL ||
	    (s->up.bev = uppool_take(
	         s->ctx->upool, &k, s->addr, sizeof(s->addr))) == NULL)
		return 0;
	note_up(s);
	send_request(s);
	return 1;
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

/*
 * The upstream broke off mid-body: what the client was sent already
 * (the head, the body so far, still in its output buffer) goes out, then
 * the connection closes, short of its length; the end record has why.
 */
static void
up_broke(struct session *s, short what)
{
	snprintf(s->why, sizeof(s->why), "%s",
	    session_clean_eof(what) ? "upstream closed the connection mid-body"
	                            : "upstream connection failed mid-body");
	bufferevent_free(s->up.bev);
	s->up.bev = NULL;
	session_finish(s);
}

static void
up_event(struct bufferevent *bev, short what, void *arg)
{
	struct session *s = arg;
	struct forward *fw = s->fwd;

	(void)bev;
	if (session_clean_eof(what) && fw->head_sent &&
	    fw->resp.kind == HTTP_BODY_CLOSE) {
		/* The end of a close-delimited body: move the rest, finish. */
		if (fw->rs.sc != NULL &&
		    close_searched(&fw->rs, bufferevent_get_input(s->up.bev),
		        bufferevent_get_output(s->client.bev))) {
			cut_leak(s);
			return;
		}
		evbuffer_add_buffer(bufferevent_get_output(s->client.bev),
		    bufferevent_get_input(s->up.bev));
		fw->resp.done = 1;
		fw->up_keep = 0;
		check_done(s);
	} else if (!fw->head_sent)
		session_reply_close(s, 502,
		    session_clean_eof(what)
		        ? "upstream closed the connection before answering"
		        : "upstream connection failed before answering");
	else
		up_broke(s, what);
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
	char why[128];
	int err;

	(void)bev;
	if (session_clean_eof(what) && s->fwd->req.done &&
	    s->state == SESSION_FORWARD) {
		s->client.eof = 1; /* half-close: still answer */
		return;
	}
	if (session_clean_eof(what))
		session_close(
		    s, "the client closed the connection mid-request");
	else if ((err = EVUTIL_SOCKET_ERROR()) == 0)
		/* The TLS filter over the client's socket passes no errno. */
		session_close(s, "client connection failed");
	else {
		snprintf(why, sizeof(why), "client: %s",
		    evutil_socket_error_to_string(err));
		session_close(s, why);
	}
}

/* --- start ---------------------------------------------------------------- */

static void
send_request(struct session *s)
{
	s->state = SESSION_FORWARD;
	s->fwd->head_sent = 0;
	s->fwd->up_idle = 0;
	s->fwd->resp_seen = 0;
	bufferevent_setcb(s->up.bev, up_read, written, up_event, s);
	bufferevent_setcb(s->client.bev, client_read, written, client_event, s);
	bufferevent_setwatermark(s->client.bev, EV_READ, 0, 0);
	evbuffer_add_buffer(bufferevent_get_output(s->up.bev), s->fwd->head);
	bufferevent_enable(s->up.bev, EV_READ | EV_WRITE);
	bufferevent_enable(s->client.bev, EV_READ | EV_WRITE);
	session_send_now(s->up.bev);
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
	note_up(s);
	if (s->reach == SESSION_REACH_INTERCEPT) {
		intercept_upstream(s, bev, s->dec.upstream_ca, tls_connected);
		return;
	}
	s->up.bev = bev;
	send_request(s);
}

/*
 * Inside an intercepted tunnel or a captured connection: the target is
 * the CONNECT target or the name connected to, the path the request's,
 * and Host must name the same host (and port, when it gives one): a
 * request for another host is domain fronting.
 */
static int
inner_target(struct session *s, const struct http_head *h, struct target_url *u)
{
	const struct http_field *f = http_field_find(h, "host");
	struct target_host hh;
	uint16_t hport = 0;
	int r;

	u->tls = s->reach == SESSION_REACH_INTERCEPT;
	u->host = s->tt->host;
	u->port = s->tt->port;
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
		    u->tls ? "the Host field names another host than the "
		             "CONNECT target"
		           : "the Host field names another host than the name "
		             "the program connected to");
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
	int inside = s->reach == SESSION_REACH_INTERCEPT ||
	    s->reach == SESSION_REACH_PLAIN;
	struct target_url u;
	struct forward *fw;

	if (s->fwd == NULL && (s->fwd = calloc(1, sizeof(*s->fwd))) == NULL) {
		session_close(s, "out of memory");
		return;
	}
	fw = s->fwd;
	session_note_target(s, h->method, h->method_len,
	    inside ? &s->tt->host : NULL, inside ? s->tt->port : 0);
	snprintf(fw->method, sizeof(fw->method), "%s", s->method);
	if (inside ? inner_target(s, h, &u) : parse_target(s, h, &u))
		return;
	session_note_target(s, h->method, h->method_len, &u.host, u.port);
	if (decide(s, h, &u) != 0)
		return;
	/*
	 * A real value goes out, or could have on another connection (a
	 * server may echo an earlier request): what comes back from a rule
	 * that carries credentials is searched, on this connection from now
	 * on.
	 */
	if ((s->secret != NULL || s->dec.ninject > 0 ||
	        s->dec.nplaceholder > 0) &&
	    rscan_start(s) != 0) {
		session_close(s, "out of memory (response search)");
		return;
	}
	body_init(&fw->req, h);
	fw->client_keep = h->keep_alive && !h->upgrade;
	fw->upgrade = h->upgrade;

	evbuffer_drain(bufferevent_get_input(s->client.bev), h->head_len);
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
	up_park(s); /* another session may want it */
	if (s->up.bev != NULL) {
		bufferevent_free(s->up.bev);
		s->up.bev = NULL;
	}
	fw->up_idle = 0; /* also when a reload or a refusal freed it */
	fw->up_gen = s->ctx->upool != NULL ? uppool_gen(s->ctx->upool) : 0;
	if (up_take(s, &u))
		return;
	/* Not before: on an upstream at hand, send_request reads on. */
	bufferevent_disable(s->client.bev, EV_READ);
	s->state = SESSION_CONNECTING;
	s->connecting = upstream_open(
	    s->ctx, s->policy->p, &s->dec, &u.host, u.port, connected, s);
	if (s->connecting == NULL)
		session_reply_close(s, 502, "out of memory");
}
