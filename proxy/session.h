/*
 * session.h: one client connection of the proxy, the small context the
 * proxy shares with its sessions, and what every part of the request
 * path does to a session.  Internal to proxy/.
 *
 * A session reads a request head from the client (request.c), has it
 * decided (decide.c), and becomes either a CONNECT tunnel (tunnel.c, or
 * intercept.c when the policy must see the requests inside) or a
 * plain-HTTP forwarding exchange (forward.c).  Those call down into this
 * module (answers, audit records, timers, the close path), which calls
 * back up only through the context's session_ops.  Every way out goes
 * through session_close(), which writes the "end" audit record.  struct
 * session is opaque here; the files that carry one share session_int.h.
 */
#ifndef PH_SESSION_H
#define PH_SESSION_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/time.h>

#include <event2/bufferevent.h>

#include "policy/policy.h"
#include "proxy/http.h"
#include "proxy/via.h"

struct bufferevent;
struct evbuffer;
struct event;
struct event_base;
struct upstream;
struct tls;
struct inject_standins;
struct scan;
struct metrics;
struct pipepool;
struct uppool;

/*
 * One policy held by the proxies of several event loops (workers.h): each
 * loop's struct proxy_policy holds one reference; the last let go frees
 * P.  Atomic: the loops are threads.  Touched at a reload and when a
 * loop lets a policy go, never per request.
 */
struct proxy_policy_share {
	atomic_uint refs;
	struct policy *p;
};

/*
 * What the event loops of one process share on the data path (proxy.c's
 * group holds it; a proxy alone, one of its own): the open sessions, the
 * two memory budgets, --head-memory and --buffer-memory, each for the
 * whole process, never divided among the loops, and the state of the
 * audit log as stderr tells it (said once per process, not per loop).
 *
 * HEAD_BYTES is exact: every change of an unfinished head, in any loop,
 * is one relaxed atomic add (session_head_hold, session_head_release),
 * so it is at every moment the sum of every loop's unfinished heads.  A
 * loop whose head grows and brings the total over HEAD_MAX refuses its
 * own slowest heads (request.c), that one last, until the total fits: no
 * loop touches another's sessions, so the request path takes no lock.
 * A head is refused only while the total is over the budget: its bytes
 * come off by a compare-and-swap that holds only then (session_head_shed),
 * so two loops over the budget at once do not both refuse for the same
 * excess.  The total passes the budget only while a loop is between a
 * read and its refusals, by at most that read.
 *
 * The buffer budget is not counted byte by byte: it is kept by each
 * session's watermark, BUF_MAX over twice the process's open sessions
 * (session_buf_high), so all loops together queue about BUF_MAX, as one
 * loop alone did.  SESSIONS is the group's session count (proxy.c: a slot
 * reserved at accept, given back at close).
 *
 * Padding keeps the counter every request writes off the line that the
 * relays and every audit record read.
 */
struct session_shared {
	atomic_uint sessions; /* open in every loop (proxy.c's slots) */
	size_t head_max; /* bytes of unfinished heads, the process's */
	size_t buf_max; /* bytes queued by relays, the process's, about */
	atomic_int audit_broken; /* the last write failed (said once) */
	atomic_int audit_over_said; /* the log's limit was reached (said) */
	atomic_ullong audit_failures; /* records that could not be written */
	char pad[64];
	atomic_size_t head_bytes; /* unfinished heads now, every loop's */
	atomic_int head_said; /* the budget was reached (said once) */
};

/* Sets SH up for HEAD_MAX and BUF_MAX bytes (neither 0), no session. */
void
session_shared_init(struct session_shared *sh, size_t head_max, size_t buf_max);

/* A policy shared by the sessions that started under it. */
struct proxy_policy {
	struct policy *p;
	unsigned refs;
	struct scan *scan; /* its secrets' values, for responses (forward.c) */
	/* P's holder across loops; NULL: P is this loop's alone. */
	struct proxy_policy_share *share;
};

/*
 * Frees PP (no session and not the context's any more): its scan, and P
 * unless another loop still holds it.
 */
void session_policy_free(struct proxy_policy *pp);

/* Opaque outside the session's own files (see session_int.h). */
struct session;
TAILQ_HEAD(session_list, session);

/*
 * What this module asks of the one above it (request.c), which knows the
 * relays: set in the context, like libevent's callbacks, so that the
 * session layer includes no relay and nothing here calls back up by name.
 */
struct session_ops {
	/* Waits for the next request head on S, parses what is there. */
	void (*next_request)(struct session *s);
	/* Frees what the relays hold for S (upstream, forward, tunnels). */
	void (*release)(struct session *s);
	/* Is S's request sent upstream with no response head back yet? */
	int (*awaiting_response)(const struct session *s);
};

struct session_ctx {
	struct event_base *base;
	struct dns *dns;
	struct audit *audit;
	const char *run_id;
	struct proxy_policy *policy; /* for every new request */
	const struct session_ops *ops; /* request.c's (request_new) */
	struct session_list sessions;
	size_t nsessions;
	size_t head_bytes; /* unfinished request heads, this loop's */
	/* The process's count and budgets, shared with other loops. */
	struct session_shared *shared;
	/*
	 * Called after a session is gone (the proxy may accept again), with
	 * the owner session_set_owner() gave it (NULL if none).
	 */
	void (*ended)(void *arg, void *owner);
	void *ended_arg;
	/* Called for each request refused with 403 (policy or address). */
	void (*denied)(void *arg, const char *host, unsigned port);
	/* A client refused the run CA (intercept.c), DENIED_ARG too. */
	void (*distrust)(void *arg, const char *host, unsigned port);
	void *denied_arg;
	struct tls *tls; /* NULL: no interception */
	const struct inject_standins *standins; /* placeholder stand-ins */
	struct synth *synth; /* synthetic addresses (synth.h); NULL: none */
	struct metrics *metrics; /* counts (metrics.h); NULL: off */
	/* Splice pipes of this loop's tunnels (pipepool.h); NULL: unpooled. */
	struct pipepool *pipes;
	/* Idle upstream connections of this loop (uppool.h); NULL: none. */
	struct uppool *upool;
};

/*
 * Makes a session on accepted socket FD, connection number CONN, arrived
 * as VIA (proxy.h), holding the context's policy; request_new() then
 * waits for its head.  Returns NULL (FD closed) when out of memory.
 */
struct session *
session_new(struct session_ctx *, int fd, uint64_t conn, enum proxy_via via);

/* VIA as audit records say it: "proxy", "socks" or "capture" (static). */
const char *session_via_name(enum proxy_via via);

/* Tags S with OWNER, handed to ctx->ended (proxy.c: its client's count). */
void session_set_owner(struct session *s, void *owner);

/*
 * Ends S: writes its "end" record (ERROR: NULL or why it ended), frees
 * everything, tells the context.  S is gone afterwards.
 */
void session_close(struct session *s, const char *error);

/* Closes S once its output to the client is written. */
void session_finish(struct session *s);

/* Closes every session (shutdown). */
void session_close_all(struct session_ctx *);

/*
 * Refuses S's request with STATUS (an HTTP status) for REASON, logged,
 * then closes the session once the answer is written.  The answer is the
 * front's: a proxy-made HTTP response with an X-Pinhole-Reason header and
 * a one-line body for via proxy, and for any session whose front
 * exchange is over (session_established: inside a tunnel, HTTP is
 * spoken); before that, the SOCKS reply socks_reply_for_status() gives
 * for via socks, and for via capture a reset (SO_LINGER 0), no byte
 * written: a captured client expected the server, not a proxy.
 */
void session_reply_close(struct session *s, int status, const char *reason);

/*
 * S's target is reached (a tunnel, or the TLS of an interception, goes
 * on): queues on the client's bufferevent what the front says then --
 * "HTTP/1.1 200 Connection established" (proxy), the SOCKS success reply
 * with bound address 0.0.0.0:0 (socks: the upstream's own address would
 * tell the sandbox the host's), nothing (capture) -- and marks the
 * front's exchange over (session_reply_close answers HTTP from then on).
 */
void session_established(struct session *s);

/*
 * WHAT, a bufferevent's event, is a clean end of the peer's sending (a
 * FIN, or a close_notify) and nothing broke.  With deferred callbacks
 * libevent folds what one turn met into one call: a write that failed
 * with ECONNRESET and the read of 0 bytes after it come as EOF|ERROR,
 * which is a reset, never a half-close to go on answering.
 */
static inline int
session_clean_eof(short what)
{
	return (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) == BEV_EVENT_EOF;
}

/* Why a request is refused when its record cannot be written. */
#define SESSION_AUDIT_FAILED                                                   \
	"the audit log cannot be written: pinhole serves no request it "       \
	"cannot log"

/*
 * Writes the "request" audit record of the current decision.  Returns 0,
 * or -1 when the record could not be written: then S has been answered
 * with 503 (fail closed) and is closing; the caller must not serve it.
 */
int session_audit_request(struct session *s);

/* Writes an "end" record for the current request (forward keeps going). */
void session_audit_end(struct session *s, const char *error);

/*
 * A refused request that never reached the policy still gets a
 * "request" record (deny, REASON; STATUS when > 0), once per request.
 */
void session_audit_refused(struct session *s, int status, const char *reason);

/* Marks activity now (idle timer). */
void session_touch(struct session *s);

/* Returns milliseconds since TS. */
int64_t session_ms_since(const struct timespec *ts);

/*
 * Records the request's method (and, unless HOST is NULL, its target) for
 * logs, and starts its clock.
 */
void session_note_target(struct session *s, const char *method, size_t mlen,
    const struct target_host *host, uint16_t port);

/* Arms the head timer (policy "timeout head"); then 408. */
void session_start_head_timer(struct session *s);

/* Arms the idle timer (policy "timeout idle"). */
void session_start_idle(struct session *s);

/* A TLS handshake with the client gets the head timeout; then closes. */
void session_start_handshake_timer(struct session *s);

/*
 * Waits for the next request head on the client connection, and parses
 * what is already there (ctx->ops->next_request).  S may be gone when
 * this returns.
 */
void session_next_request(struct session *s);

/*
 * S's unfinished head is LEN bytes now: counted in its loop's and the
 * process's totals.  Returns the process's total after the change.
 */
size_t session_head_hold(struct session *s, size_t len);

/* S's unfinished head no longer counts against the head budget. */
void session_head_release(struct session *s);

/*
 * If the process's heads are over the budget now, S's unfinished head
 * stops counting (as session_head_release) and 1 is returned: S is to be
 * refused.  0 when the total fits (S keeps its head), or S holds none.
 */
int session_head_shed(struct session *s);

/*
 * A whole head was read: S takes the context's current policy (a reload
 * applies from the next request on) and drops an idle upstream connection
 * checked under the old one.
 */
void session_follow_policy(struct session *s);

/*
 * Is it worth parsing the head in IN again?  Only when bytes that arrived
 * since *SEEN hold a LF (a head ends in one) or the limit is reached: a
 * client sending one byte at a time must not cost a parse per byte.
 */
int session_head_ready(struct evbuffer *in, size_t *seen);

/*
 * How many bytes a session may queue toward one peer before it stops
 * reading the side that feeds it: 256 KiB, less when many sessions are
 * open in the whole process (every loop's), so that all of them together
 * queue about ctx->shared->buf_max (never less than 16 KiB each, or bulk
 * transfers would crawl).  One relaxed atomic load.
 */
size_t session_buf_high(const struct session_ctx *);

/*
 * Writes what BEV's output holds to its socket now, in this turn of the
 * loop, rather than after the next epoll_wait reports the socket
 * writable: libevent 2.1 adds EPOLLOUT for every write and takes it off
 * again once sent, two epoll_ctl calls per response and per request
 * head.  Activated in this turn, the write comes before the loop applies
 * its changes, the addition and the removal cancel out, and no system
 * call is made for them.  BEV is a socket or TLS bufferevent, or a TLS
 * filter (its socket's is written).  A socket that takes less leaves the
 * rest to the usual EPOLLOUT.
 */
void session_send_now(struct bufferevent *bev);

/* Status reason phrase for proxy-made responses. */
const char *session_status_text(int status);

#endif
