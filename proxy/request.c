/*
 * request.c: where a request head is read and handed on: the head (and
 * the memory all unfinished heads may hold), the CONNECT, and the choice
 * between forward.c, tunnel.c and intercept.c.  Decisions are decide.c's;
 * the session itself, its answers, records and timers, session.c's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "common/log.h"
#include "policy/policy.h"
#include "proxy/decide.h"
#include "proxy/forward.h"
#include "proxy/intercept.h"
#include "proxy/request.h"
#include "proxy/session_int.h"
#include "proxy/tunnel.h"
#include "proxy/upstream.h"

static void head_wait(struct session *);
static void head_try(struct session *);

/* --- CONNECT -------------------------------------------------------------- */

/*
 * Did the upstream refuse the connection (a reset: SOCKS reply 5, not
 * 4)?  upstream.c says so only in its reason, "connect to ADDR: " and
 * the error's text, that of the last address tried.
 */
static int
refused(int status, const char *reason)
{
	const char *err = evutil_socket_error_to_string(ECONNREFUSED);
	size_t n = strlen(reason), e = strlen(err);

	return status == 502 && n > e && strcmp(reason + n - e, err) == 0 &&
	    strncmp(reason, "connect to ", 11) == 0;
}

static void
tunnel_up(void *arg, struct bufferevent *bev, int status, const char *reason,
    const char *addr)
{
	struct session *s = arg;

	s->connecting = NULL;
	if (bev == NULL) {
		s->up_refused = refused(status, reason);
		session_reply_close(s, status, reason);
		return;
	}
	s->up.bev = bev;
	snprintf(s->addr, sizeof(s->addr), "%s", addr);
	s->status = 200;
	if (tunnel_start(s) == 0) {
		s->state = SESSION_TUNNEL;
		session_start_idle(s);
	} else
		tunnel_relay_start(s); /* the bufferevent relay */
}

void
request_connect(
    struct session *s, const struct target_host *host, uint16_t port)
{
	session_note_target(s, "CONNECT", 7, host, port);
	decide_connect(s->policy->p, host, port, &s->dec);
	if (session_audit_request(s) != 0)
		return;
	if (s->dec.verdict != POLICY_ALLOW) {
		session_reply_close(s, 403, s->dec.reason);
		return;
	}
	if (s->dec.intercept && s->ctx->tls == NULL) {
		session_reply_close(s, 501,
		    "this rule needs TLS interception (paths, methods, "
		    "inject or placeholder): pin a CA the clients trust "
		    "with \"ca cert PATH key PATH\" in the policy, or use "
		    "pinhole run");
		return;
	}
	s->reach =
	    s->dec.intercept ? SESSION_REACH_INTERCEPT : SESSION_REACH_TUNNEL;
	if (s->reach == SESSION_REACH_INTERCEPT) {
		if ((s->tt = malloc(sizeof(*s->tt))) == NULL) {
			session_close(s, "out of memory");
			return;
		}
		s->tt->host = *host;
		s->tt->port = port;
		intercept_start(s);
		return;
	}
	bufferevent_disable(s->client.bev, EV_READ);
	evtimer_del(s->idle);
	s->state = SESSION_CONNECTING;
	s->connecting = upstream_open(
	    s->ctx, s->policy->p, &s->dec, host, port, tunnel_up, s);
	if (s->connecting == NULL)
		session_reply_close(s, 502, "out of memory");
}

static void
connect_start(struct session *s, const struct http_head *h)
{
	struct target_host host;
	uint16_t port;

	if (target_authority_parse(h->target, h->target_len, &host, &port) !=
	        0 ||
	    port == 0) {
		session_reply_close(s, 400, "CONNECT needs HOST:PORT");
		return;
	}
	/* What follows the head is the tunnel's (a TLS hello sent early). */
	evbuffer_drain(bufferevent_get_input(s->client.bev), h->head_len);
	request_connect(s, &host, port);
}

/* --- request heads -------------------------------------------------------- */

static void
dispatch(struct session *s, const struct http_head *h)
{
	session_head_release(s);
	evtimer_del(s->idle);
	session_follow_policy(s);
	if (s->reach == SESSION_REACH_INTERCEPT ||
	    s->reach == SESSION_REACH_PLAIN) {
		if (h->form == HTTP_FORM_ORIGIN)
			forward_start(s, h);
		else
			session_reply_close(s, 400,
			    "inside a tunnel or a captured connection, send "
			    "origin-form requests (GET /path)");
	} else if (h->method_len == 7 && memcmp(h->method, "CONNECT", 7) == 0)
		connect_start(s, h);
	else if (h->form == HTTP_FORM_ABSOLUTE)
		forward_start(s, h);
	else
		session_reply_close(s, 400,
		    "pinhole is a proxy: send an "
		    "absolute URL (http://host/path) or CONNECT host:port");
}

/* --- the memory of unfinished heads ---------------------------------------- */

/* The session whose unfinished head has waited longest, or NULL. */
static struct session *
slowest_head(struct session_ctx *ctx)
{
	struct session *s, *old = NULL;

	for (s = TAILQ_FIRST(&ctx->sessions); s != NULL;
	     s = TAILQ_NEXT(s, entry)) {
		if (s->state != SESSION_HEAD || s->head_held == 0)
			continue;
		if (old == NULL || s->start.tv_sec < old->start.tv_sec ||
		    (s->start.tv_sec == old->start.tv_sec &&
		        s->start.tv_nsec < old->start.tv_nsec))
			old = s;
	}
	return old;
}

/*
 * Counts the LEN bytes of S's unfinished head against the budget that
 * all sessions of the process share, every loop's (a per-session limit
 * alone lets thousands of connections each hold 64 KiB).  When S's head
 * grows and the process's total is over the budget, the heads of this
 * loop that have waited longest are refused with 503 while the total is
 * over, S too if need be: a slow client (slowloris) loses before a fast
 * one.  A loop closes only its own sessions (session.h, struct
 * session_shared: no lock on the request path), so with several loops
 * the refused are the slowest of the loop whose head grew.  Returns 1
 * when S itself was refused, else 0.
 */
static int
head_account(struct session *s, size_t len)
{
	struct session_shared *sh = s->ctx->shared;
	int grew = len > s->head_held, self = 0;
	size_t total = session_head_hold(s, len);
	struct session *old;

	if (total <= sh->head_max || !grew) {
		if (total < sh->head_max / 2 &&
		    atomic_load_explicit(&sh->head_said, memory_order_relaxed))
			atomic_store_explicit(
			    &sh->head_said, 0, memory_order_relaxed);
		return 0;
	}
	/* Once per process while the budget stays reached. */
	if (!atomic_exchange_explicit(&sh->head_said, 1, memory_order_relaxed))
		log_warnx("unfinished request heads hold over %zu bytes; the "
		          "slowest are refused (503)",
		    sh->head_max);
	/* Each refused only while the total is still over (session.h). */
	while ((old = slowest_head(s->ctx)) != NULL && session_head_shed(old)) {
		self |= old == s;
		session_reply_close(old, 503,
		    "the proxy's memory for unfinished request heads is full; "
		    "this head waited longest");
	}
	return self;
}

int
request_head_account(struct session *s, size_t len)
{
	return head_account(s, len);
}

/*
 * The client has sent all it will (EOF) and no whole head is left: what
 * was answered goes out first, then the connection closes.
 */
static void
head_eof(struct session *s)
{
	if (!s->client.eof)
		return;
	if (evbuffer_get_length(bufferevent_get_input(s->client.bev)) > 0)
		session_audit_refused(s, 0, "the client closed mid-head");
	session_finish(s);
}

/*
 * Parses what the client sent so far; acts once a whole head is there.
 * The parsed head (about 3 KiB) is on the stack: allocated, it cost a
 * malloc past glibc's per-thread cache for every request.
 */
static void
head_try(struct session *s)
{
	struct evbuffer *in = bufferevent_get_input(s->client.bev);
	size_t len = evbuffer_get_length(in);
	struct http_head h;
	const char *why = NULL;
	const char *buf;
	int r;

	if (len > 0 && head_account(s, len))
		return;
	if (len == 0 || !session_head_ready(in, &s->head_seen)) {
		head_eof(s);
		return;
	}
	if (len > HTTP_HEAD_MAX)
		len = HTTP_HEAD_MAX;
	if ((buf = (const char *)evbuffer_pullup(in, len)) == NULL) {
		session_close(s, "out of memory");
		return;
	}
	r = http_parse_request(buf, len, &h, &why);
	if (r < 0)
		session_reply_close(s, -r, why);
	else if (r > 0)
		dispatch(s, &h);
	else
		head_eof(s);
}

static void
head_read(struct bufferevent *bev, void *arg)
{
	(void)bev;
	head_try(arg);
}

static void
client_event(struct bufferevent *bev, short what, void *arg)
{
	struct session *s = arg;

	(void)bev;
	if (session_clean_eof(what)) {
		/* Pipelined requests may still wait in the input: serve them. */
		s->client.eof = 1;
		head_try(s);
		return;
	}
	session_close(s, evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
}

/* Resets S for a new request and waits for its head. */
static void
head_wait(struct session *s)
{
	s->state = SESSION_HEAD;
	s->end_pending = 0;
	s->head_seen = 0;
	s->method[0] = s->host[0] = '\0';
	s->port = 0;
	free(s->path);
	s->path = NULL;
	s->addr[0] = '\0';
	s->why[0] = '\0';
	s->secret = NULL;
	s->status = 0;
	s->client.bytes = s->up.bytes = 0;
	memset(&s->dec, 0, sizeof(s->dec));
	bufferevent_setwatermark(s->client.bev, EV_READ, 0, HTTP_HEAD_MAX);
	bufferevent_setcb(s->client.bev, head_read, NULL, client_event, s);
	bufferevent_enable(s->client.bev, EV_READ | EV_WRITE);
	session_start_head_timer(s);
	clock_gettime(CLOCK_MONOTONIC, &s->start);
}

/* --- what the session layer asks of this one ------------------------------- */

static void
next_request(struct session *s)
{
	head_wait(s);
	head_try(s);
}

static void
release(struct session *s)
{
	upstream_cancel(s->connecting);
	forward_free(s);
	intercept_free(s);
	tunnel_free(s->tun);
}

static const struct session_ops ops = {
    .next_request = next_request,
    .release = release,
    .awaiting_response = forward_waiting,
};

struct session *
request_session(
    struct session_ctx *ctx, int fd, uint64_t conn, enum proxy_via via)
{
	ctx->ops = &ops; /* session.c calls back up through these */
	return session_new(ctx, fd, conn, via);
}

struct session *
request_new(struct session_ctx *ctx, int fd, uint64_t conn, enum proxy_via via)
{
	struct session *s;

	if ((s = request_session(ctx, fd, conn, via)) != NULL)
		head_wait(s);
	return s;
}

/* --- policy reloads ------------------------------------------------------- */

/* Would the current policy still allow the tunnel S relays? */
static int
tunnel_still_allowed(struct session *s)
{
	return decide_still_allowed(s->ctx->policy->p, s->method, s->host,
	    s->port, s->path, s->reach == SESSION_REACH_INTERCEPT);
}

void
request_policy_reloaded(struct session_ctx *ctx)
{
	struct session *s, *next;

	for (s = TAILQ_FIRST(&ctx->sessions); s != NULL; s = next) {
		next = TAILQ_NEXT(s, entry);
		if (s->state == SESSION_TUNNEL && !tunnel_still_allowed(s))
			session_close(s,
			    "closed by a policy reload that no "
			    "longer allows it");
	}
}
