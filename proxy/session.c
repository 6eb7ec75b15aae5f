/*
 * session.c: a client connection and what every part of the request path
 * does to it: its audit records, proxy-made responses, timers, relay
 * budget, the policy it holds, and the one close path.  Reading heads and
 * handing them on is request.c's, which this file reaches only through
 * the context's session_ops; decisions are decide.c's, plain HTTP
 * forward.c's, tunnel bytes tunnel.c's.
 */
#include <sys/socket.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_struct.h>
#include <event2/event.h>

#include "common/log.h"
#include "policy/policy.h"
#include "audit/audit.h"
#include "proxy/decide.h"
#include "proxy/metrics.h"
#include "proxy/scan.h"
#include "proxy/session_int.h"
#include "proxy/socks.h"

#define RELAY_HIGH (256 * 1024) /* stop reading the feeding side */
#define RELAY_FLOOR (16 * 1024) /* ...or less when many sessions are open */

int64_t
session_ms_since(const struct timespec *ts)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - ts->tv_sec) * 1000 +
	    (now.tv_nsec - ts->tv_nsec) / 1000000;
}

void
session_touch(struct session *s)
{
	clock_gettime(CLOCK_MONOTONIC, &s->active);
}

static void
arm_timer(struct session *s, unsigned ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	evtimer_add(s->idle, &tv);
}

/* --- audit ---------------------------------------------------------------- */

static void
fill_rec(const struct session *s, struct audit_rec *r, const char *event)
{
	audit_rec_init(r, event, s->conn);
	r->via = session_via_name(s->via);
	r->method = s->method[0] ? s->method : NULL;
	r->host = s->host[0] ? s->host : NULL;
	r->port = s->port ? s->port : -1;
	r->path = s->path;
	r->secret = s->secret;
	if (s->dec.rule_file != NULL) {
		r->rule_file = s->dec.rule_file;
		r->rule_line = s->dec.rule_line;
	}
}

/*
 * Writes R.  A failure is said once, when the log stops taking records,
 * and once more when it takes them again; the requests in between are
 * refused (session_audit_request).  Returns what audit_write() did.
 */
static int
audit_put(struct session *s, const struct audit_rec *r)
{
	struct session_ctx *ctx = s->ctx;
	struct session_shared *sh = ctx->shared;
	int rc, err;

	if (ctx->audit == NULL)
		return 0;
	rc = audit_write(ctx->audit, r);
	err = errno;
	/* Said once per process: the flags are every loop's. */
	if (!atomic_load_explicit(&sh->audit_over_said, memory_order_relaxed) &&
	    audit_over_limit(ctx->audit) &&
	    !atomic_exchange(&sh->audit_over_said, 1))
		log_warnx(
		    "audit log: this run reached its limit on what it may "
		    "write; further requests are only counted, per "
		    "host, in summary records at the end");
	if (rc < 0) {
		atomic_fetch_add(&sh->audit_failures, 1);
		metrics_audit_failure(ctx->metrics);
		if (!atomic_exchange(&sh->audit_broken, 1))
			log_warnx("audit log: cannot write (%s); requests are "
			          "refused with 503 until it can be written",
			    strerror(err));
	} else if (atomic_load_explicit(
	               &sh->audit_broken, memory_order_relaxed) &&
	    atomic_exchange(&sh->audit_broken, 0)) {
		log_warnx("audit log: writable again after %llu failed "
		          "records; serving requests",
		    (unsigned long long)atomic_load(&sh->audit_failures));
	}
	errno = err;
	return rc;
}

/* Microseconds since TS (CLOCK_MONOTONIC). */
static int64_t
us_since(const struct timespec *ts)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)(now.tv_sec - ts->tv_sec) * 1000000 +
	    (now.tv_nsec - ts->tv_nsec) / 1000;
}

/* Counts the request record R of S (metrics.h); DECIDED by the policy. */
static void
count_request(const struct session *s, const struct audit_rec *r, int decided)
{
	struct metrics_req mr = {0};

	if (s->ctx->metrics == NULL)
		return;
	mr.decision = r->decision;
	mr.host = r->host;
	mr.port = r->port > 0 ? (unsigned)r->port : 0;
	mr.rule_file = r->rule_file;
	mr.rule_line = r->rule_line;
	mr.via = r->via;
	mr.decided = decided;
	mr.leak = decided && s->dec.verdict != POLICY_ALLOW &&
	    strncmp(s->dec.reason, DECIDE_LEAK_PREFIX,
	        sizeof(DECIDE_LEAK_PREFIX) - 1) == 0;
	mr.decision_us =
	    decided && s->start.tv_sec != 0 ? us_since(&s->start) : -1;
	metrics_request(s->ctx->metrics, &mr);
}

int
session_audit_request(struct session *s)
{
	struct audit_rec r;
	int rc;

	fill_rec(s, &r, "request");
	r.decision = s->dec.verdict == POLICY_ALLOW ? "allow" : "deny";
	if (s->dec.verdict != POLICY_ALLOW)
		r.reason = s->dec.reason;
	count_request(s, &r, 1);
	rc = audit_put(s, &r);
	/* Folded into an earlier identical denial: no "end" record either. */
	s->end_pending =
	    rc == AUDIT_HELD && !audit_over_limit(s->ctx->audit) ? 2 : 1;
	/* The session id on every line; never a header or a query. */
	log_info("conn %llu: %s %s:%u%s: %s%s%s", (unsigned long long)s->conn,
	    s->method, s->host, s->port, s->path != NULL ? s->path : "",
	    r.decision, r.reason != NULL ? ", " : "",
	    r.reason != NULL ? r.reason : "");
	if (rc < 0)
		session_reply_close(s, 503, SESSION_AUDIT_FAILED);
	return rc < 0 ? -1 : 0;
}

void
session_audit_end(struct session *s, const char *error)
{
	struct audit_rec r;

	if (s->end_pending != 1)
		return;
	fill_rec(s, &r, "end");
	r.addr = s->addr[0] ? s->addr : NULL;
	r.status = s->status ? s->status : -1;
	r.bytes_up = s->client.bytes;
	r.bytes_down = s->up.bytes;
	r.ms = session_ms_since(&s->start);
	r.error = error;
	metrics_bytes(s->ctx->metrics, r.bytes_up, r.bytes_down);
	audit_put(s, &r);
	s->end_pending = 0;
}

void
session_audit_refused(struct session *s, int status, const char *reason)
{
	struct audit_rec r;

	if (s->end_pending)
		return;
	fill_rec(s, &r, "request");
	r.decision = "deny";
	r.reason = reason;
	r.status = status > 0 ? status : -1;
	count_request(s, &r, 0);
	audit_put(s, &r);
	s->end_pending = 1;
}

/* --- life and death ------------------------------------------------------- */

/* Small requests and replies: do not let Nagle hold them back. */
static void
nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

const char *
session_via_name(enum proxy_via via)
{
	switch (via) {
	case PROXY_VIA_SOCKS:
		return "socks";
	case PROXY_VIA_CAPTURE:
		return "capture";
	default:
		return "proxy";
	}
}

/*
 * Names the peer of FD into ID: "4:ADDR" or "6:ADDR", or "u:UID" on a
 * Unix socket (a sandbox's listener, or a local client); "" otherwise.
 * An upstream connection kept for reuse is handed only to a request of
 * the same client (forward.c, uppool.h).
 */
static void
client_id(int fd, char *id, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct ucred uc;
	socklen_t ul = sizeof(uc);
	char a[INET6_ADDRSTRLEN] = "";

	id[0] = '\0';
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0)
		return;
	if (ss.ss_family == AF_INET &&
	    inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, a,
	        sizeof(a)) != NULL)
		snprintf(id, len, "4:%s", a);
	else if (ss.ss_family == AF_INET6 &&
	    inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, a,
	        sizeof(a)) != NULL)
		snprintf(id, len, "6:%s", a);
	else if (ss.ss_family == AF_UNIX &&
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &ul) == 0)
		snprintf(id, len, "u:%u", (unsigned)uc.uid);
}

struct session *
session_new(struct session_ctx *ctx, int fd, uint64_t conn, enum proxy_via via)
{
	struct session *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		goto fail;
	s->ctx = ctx;
	s->conn = conn;
	s->via = via;
	s->front_done = via == PROXY_VIA_PROXY;
	s->client.dst = &s->up;
	s->up.dst = &s->client;
	client_id(fd, s->client_id, sizeof(s->client_id));
	s->client.bev =
	    bufferevent_socket_new(ctx->base, fd, BEV_OPT_CLOSE_ON_FREE);
	s->idle = evtimer_new(ctx->base, NULL, NULL);
	if (s->client.bev == NULL || s->idle == NULL)
		goto fail;
	fd = -1; /* the bufferevent owns it */
	s->policy = ctx->policy;
	s->policy->refs++;
	TAILQ_INSERT_TAIL(&ctx->sessions, s, entry);
	ctx->nsessions++;
	metrics_connection(ctx->metrics, 1);
	nodelay(bufferevent_getfd(s->client.bev));
	return s;
fail:
	if (s != NULL) {
		if (s->client.bev != NULL)
			bufferevent_free(s->client.bev);
		if (s->idle != NULL)
			event_free(s->idle);
		free(s);
	}
	if (fd != -1)
		close(fd);
	return NULL;
}

void
session_policy_free(struct proxy_policy *pp)
{
	scan_free(pp->scan);
	if (pp->share == NULL)
		policy_free(pp->p);
	else if (atomic_fetch_sub(&pp->share->refs, 1) == 1) {
		policy_free(pp->share->p);
		free(pp->share);
	}
	free(pp);
}

static void
policy_unref(struct session_ctx *ctx, struct proxy_policy *pp)
{
	if (--pp->refs == 0 && pp != ctx->policy)
		session_policy_free(pp);
}

void
session_set_owner(struct session *s, void *owner)
{
	s->owner = owner;
}

void
session_close(struct session *s, const char *error)
{
	struct session_ctx *ctx = s->ctx;
	void *owner = s->owner;

	session_audit_end(s, error);
	session_head_release(s);
	ctx->ops->release(s);
	if (s->client.bev != NULL)
		bufferevent_free(s->client.bev);
	if (s->up.bev != NULL)
		bufferevent_free(s->up.bev);
	event_free(s->idle);
	free(s->path);
	free(s->tt);
	policy_unref(ctx, s->policy);
	TAILQ_REMOVE(&ctx->sessions, s, entry);
	ctx->nsessions--;
	metrics_connection(ctx->metrics, -1);
	free(s);
	if (ctx->ended != NULL)
		ctx->ended(ctx->ended_arg, owner);
}

void
session_close_all(struct session_ctx *ctx)
{
	struct session *s;

	while ((s = TAILQ_FIRST(&ctx->sessions)) != NULL)
		session_close(s, "the proxy is shutting down");
}

/* --- proxy-made responses ------------------------------------------------- */

const char *
session_status_text(int status)
{
	switch (status) {
	case 200:
		return "Connection established";
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 408:
		return "Request Timeout";
	case 421:
		return "Misdirected Request";
	case 431:
		return "Request Header Fields Too Large";
	case 501:
		return "Not Implemented";
	case 502:
		return "Bad Gateway";
	case 503:
		return "Service Unavailable";
	case 504:
		return "Gateway Timeout";
	case 505:
		return "HTTP Version Not Supported";
	default:
		return "Error";
	}
}

/*
 * Queues the SOCKS reply CODE.  The bound address is 0.0.0.0:0 even on
 * success: the upstream's own address is the host's, which the sandbox
 * has no need to learn.
 */
static void
socks_answer(struct session *s, enum socks_reply code)
{
	uint8_t buf[SOCKS_REPLY_MAX];
	size_t n = socks_reply(code, 0, NULL, 0, buf);

	evbuffer_add(bufferevent_get_output(s->client.bev), buf, n);
}

/*
 * A captured connection is refused with a reset, as a closed port
 * would be: no byte of a proxy's making reaches a client that expected
 * the server.  S is gone afterwards.
 */
static void
reset_close(struct session *s)
{
	struct linger lg = {1, 0};

	setsockopt(bufferevent_getfd(s->client.bev), SOL_SOCKET, SO_LINGER, &lg,
	    sizeof(lg));
	session_close(s, s->why);
}

static void
closing_written(struct bufferevent *bev, void *arg)
{
	struct session *s = arg;

	(void)bev;
	session_close(s, s->why[0] != '\0' ? s->why : NULL);
}

static void
closing_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	session_close(arg, "the client went away before the reply was sent");
}

void
session_finish(struct session *s)
{
	session_head_release(s);
	s->state = SESSION_CLOSING;
	bufferevent_disable(s->client.bev, EV_READ);
	bufferevent_setwatermark(s->client.bev, EV_WRITE, 0, 0);
	bufferevent_setcb(
	    s->client.bev, NULL, closing_written, closing_event, s);
	if (evbuffer_get_length(bufferevent_get_output(s->client.bev)) == 0)
		session_close(s, s->why[0] != '\0' ? s->why : NULL);
}

void
session_reply_close(struct session *s, int status, const char *reason)
{
	char *line = s->why;
	size_t i;

	/* One line, printable: it goes into a header. */
	snprintf(s->why, sizeof(s->why), "%s", reason);
	for (i = 0; line[i] != '\0'; i++)
		if ((unsigned char)line[i] < ' ' || line[i] == 0x7f)
			line[i] = '?';
	session_audit_refused(s, status, line);
	s->status = status;
	if (status == 403 && s->host[0] && s->ctx->denied != NULL)
		s->ctx->denied(s->ctx->denied_arg, s->host, s->port);
	if (s->up.bev != NULL) {
		bufferevent_free(s->up.bev);
		s->up.bev = NULL;
	}
	if (!s->front_done && s->via == PROXY_VIA_CAPTURE) {
		reset_close(s);
		return;
	}
	if (!s->front_done && s->via == PROXY_VIA_SOCKS)
		socks_answer(s, socks_reply_for_status(status, s->up_refused));
	else
		evbuffer_add_printf(bufferevent_get_output(s->client.bev),
		    "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
		    "Content-Length: %zu\r\nConnection: close\r\n"
		    "X-Pinhole-Reason: %s\r\n\r\n%s\n",
		    status, session_status_text(status), strlen(line) + 1, line,
		    line);
	bufferevent_enable(s->client.bev, EV_WRITE);
	session_finish(s);
}

void
session_established(struct session *s)
{
	static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";

	if (!s->front_done && s->via == PROXY_VIA_SOCKS)
		socks_answer(s, SOCKS_REP_OK);
	else if (s->via != PROXY_VIA_CAPTURE)
		evbuffer_add(
		    bufferevent_get_output(s->client.bev), ok, sizeof(ok) - 1);
	s->front_done = 1;
}

/* --- timers --------------------------------------------------------------- */

static void
head_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;

	(void)fd;
	(void)what;
	session_reply_close(s, 408, "no complete request head in time");
}

static void
idle_timeout(evutil_socket_t fd, short what, void *arg)
{
	struct session *s = arg;
	int64_t quiet = session_ms_since(&s->active);

	(void)fd;
	(void)what;
	if (quiet < s->idle_ms)
		arm_timer(s, s->idle_ms - quiet);
	else if (s->state == SESSION_FORWARD &&
	    s->ctx->ops->awaiting_response(s))
		session_reply_close(s, 504,
		    "the upstream sent no response "
		    "within the idle timeout");
	else
		session_close(s, "idle timeout");
}

static void
handshake_timeout(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	session_close(arg, "no TLS handshake in time");
}

void
session_start_head_timer(struct session *s)
{
	evtimer_del(s->idle);
	event_assign(s->idle, s->ctx->base, -1, 0, head_timeout, s);
	arm_timer(s, policy_timeout(s->policy->p, POLICY_TIMEOUT_HEAD));
}

void
session_start_handshake_timer(struct session *s)
{
	evtimer_del(s->idle);
	event_assign(s->idle, s->ctx->base, -1, 0, handshake_timeout, s);
	arm_timer(s, policy_timeout(s->policy->p, POLICY_TIMEOUT_HEAD));
}

void
session_start_idle(struct session *s)
{
	s->idle_ms = policy_timeout(s->policy->p, POLICY_TIMEOUT_IDLE);
	session_touch(s);
	evtimer_del(s->idle);
	event_assign(s->idle, s->ctx->base, -1, 0, idle_timeout, s);
	arm_timer(s, s->idle_ms);
}

/* --- relays and requests --------------------------------------------------- */

void
session_send_now(struct bufferevent *bev)
{
	struct bufferevent *sock = bufferevent_get_underlying(bev);

	if (sock == NULL)
		sock = bev;
	/* ev_write is the bufferevent's own (bufferevent_struct.h). */
	if ((bufferevent_get_enabled(sock) & EV_WRITE) &&
	    evbuffer_get_length(bufferevent_get_output(sock)) > 0)
		event_active(&sock->ev_write, EV_WRITE, 1);
}

size_t
session_buf_high(const struct session_ctx *ctx)
{
	const struct session_shared *sh = ctx->shared;
	size_t n = atomic_load_explicit(&sh->sessions, memory_order_relaxed);
	size_t share = n > 0 ? sh->buf_max / (2 * n) : RELAY_HIGH;

	if (share > RELAY_HIGH)
		return RELAY_HIGH;
	return share < RELAY_FLOOR ? RELAY_FLOOR : share;
}

void
session_note_target(struct session *s, const char *method, size_t mlen,
    const struct target_host *h, uint16_t port)
{
	snprintf(s->method, sizeof(s->method), "%.*s", (int)mlen, method);
	if (h != NULL) {
		memcpy(s->host, h->name, h->len + 1);
		s->port = port;
	}
	clock_gettime(CLOCK_MONOTONIC, &s->start);
}

int
session_head_ready(struct evbuffer *in, size_t *seen)
{
	size_t len = evbuffer_get_length(in);
	struct evbuffer_ptr pos;
	int ready = len >= HTTP_HEAD_MAX;

	if (!ready && len > *seen &&
	    evbuffer_ptr_set(in, &pos, *seen, EVBUFFER_PTR_SET) == 0)
		ready = evbuffer_search(in, "\n", 1, &pos).pos != -1;
	*seen = len;
	return ready;
}

/* --- the memory of unfinished heads, the policy held ------------------------ */

void
session_shared_init(struct session_shared *sh, size_t head_max, size_t buf_max)
{
	memset(sh, 0, sizeof(*sh));
	atomic_init(&sh->sessions, 0);
	atomic_init(&sh->head_bytes, 0);
	atomic_init(&sh->head_said, 0);
	atomic_init(&sh->audit_broken, 0);
	atomic_init(&sh->audit_over_said, 0);
	atomic_init(&sh->audit_failures, 0);
	sh->head_max = head_max;
	sh->buf_max = buf_max;
}

/*
 * Called for every read of a head and at its end: one relaxed atomic,
 * since the total publishes nothing else, and only a load when S's head
 * did not change.  Size arithmetic is modular: a head may shrink.
 */
size_t
session_head_hold(struct session *s, size_t len)
{
	atomic_size_t *total = &s->ctx->shared->head_bytes;
	size_t was = s->head_held, before;

	s->head_held = len;
	s->ctx->head_bytes += len - was;
	if (len > was)
		before = atomic_fetch_add_explicit(
		    total, len - was, memory_order_relaxed);
	else if (len < was)
		before = atomic_fetch_sub_explicit(
		    total, was - len, memory_order_relaxed);
	else
		before = atomic_load_explicit(total, memory_order_relaxed);
	return before + (len - was);
}

void
session_head_release(struct session *s)
{
	if (s->head_held > 0)
		(void)session_head_hold(s, 0);
}

int
session_head_shed(struct session *s)
{
	struct session_shared *sh = s->ctx->shared;
	size_t held = s->head_held;
	size_t total =
	    atomic_load_explicit(&sh->head_bytes, memory_order_relaxed);

	/* Off the total only if it is still over: else another loop's shed
	 * (or a head that ended) made room already. */
	do {
		if (held == 0 || total <= sh->head_max)
			return 0;
	} while (!atomic_compare_exchange_weak_explicit(&sh->head_bytes, &total,
	    total - held, memory_order_relaxed, memory_order_relaxed));
	s->head_held = 0;
	s->ctx->head_bytes -= held;
	return 1;
}

/*
 * A reload applies to every request after it: a session that has read
 * a whole request head takes the current policy before deciding it.  An
 * idle upstream connection kept for reuse was checked (addresses,
 * upstream-ca) under the old one, so it goes.
 */
void
session_follow_policy(struct session *s)
{
	struct session_ctx *ctx = s->ctx;

	if (s->policy == ctx->policy)
		return;
	policy_unref(ctx, s->policy);
	s->policy = ctx->policy;
	s->policy->refs++;
	if (s->up.bev != NULL) {
		bufferevent_free(s->up.bev);
		s->up.bev = NULL;
	}
}

void
session_next_request(struct session *s)
{
	s->ctx->ops->next_request(s);
}
