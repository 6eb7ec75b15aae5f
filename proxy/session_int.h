/*
 * session_int.h: the insides of a session, for the files that carry one
 * (session.c, request.c, forward.c, tunnel.c, intercept.c, capture.c).
 * Internal to them: request.c reads heads, session.c answers and closes,
 * forward.c serves requests, tunnel.c and intercept.c move its bytes,
 * capture.c peeks at a captured connection's first bytes, and all of
 * them read and write its two directions, counters and current request
 * in place; accessors for each of those would only hide a shared struct
 * behind forty functions.  Every other file (proxy.c, upstream.c) sees
 * struct session opaque through session.h.
 */
#ifndef PH_SESSION_INT_H
#define PH_SESSION_INT_H

#include "proxy/session.h"

/* How a session reaches the target its CONNECT named (its tunnel target). */
enum session_reach {
	SESSION_REACH_NONE, /* no tunnel: each request names its target */
	SESSION_REACH_TUNNEL, /* an opaque tunnel: bytes only (tunnel.c);
	                         the target stays in host and port */
	SESSION_REACH_INTERCEPT, /* TLS ends here, the requests inside are
	                            decided one by one (intercept.c) */
	SESSION_REACH_PLAIN, /* a captured connection that spoke HTTP:
	                        origin-form requests to the fixed target tt,
	                        decided one by one (capture.c, forward.c) */
};

/*
 * The tunnel target of an intercepted CONNECT, or of a captured
 * connection (the name or address the program connected to), which
 * every request read inside it must name.  Apart from the session (NULL until then): an
 * opaque tunnel does not need it, and an idle tunnel's memory counts.
 */
struct session_target {
	struct target_host host;
	uint16_t port;
};

enum session_state {
	SESSION_HEAD, /* reading a request head */
	SESSION_CONNECTING, /* resolving and connecting upstream */
	SESSION_TUNNEL, /* CONNECT: bytes both ways */
	SESSION_FORWARD, /* plain HTTP: one request in flight */
	SESSION_CLOSING, /* flushing a last response, then close */
};

/* One direction of bytes; the session owns both. */
struct session_dir {
	struct bufferevent *bev;
	struct session_dir *dst; /* where bytes read here go */
	uint64_t bytes; /* read here, sent to dst */
	int eof; /* read side ended */
	int shut; /* write side of dst shut down */
};

struct session {
	TAILQ_ENTRY(session) entry;
	struct session_ctx *ctx;
	struct proxy_policy *policy;
	uint64_t conn;
	enum session_state state;
	struct session_dir client, up;
	struct upstream *connecting;
	struct event *idle; /* idle and head timeouts */
	struct timespec start; /* of the current request/tunnel */
	struct timespec active; /* last byte moved */
	unsigned idle_ms;
	/* The request being served (audit "end" record). */
	char method[33];
	char host[TARGET_HOST_MAX];
	uint16_t port;
	char *path; /* normalised, no query */
	char addr[64]; /* address connected to */
	struct policy_decision dec;
	int status;
	int end_pending; /* a "request" record awaits its "end"; 2: folded */
	char why[256]; /* reason of a proxy-made reply */
	size_t head_seen; /* head bytes already looked at */
	size_t head_held; /* ...of them counted in ctx->head_bytes */
	struct forward *fwd; /* plain HTTP state (forward.c) */
	enum session_reach reach; /* set when a CONNECT is allowed */
	struct session_target *tt; /* REACH_INTERCEPT, _PLAIN: its target */
	struct intercept *icpt; /* inside an intercepted tunnel (intercept.c) */
	const char *secret; /* name of a secret this request carries */
	struct tunnel *tun; /* spliced CONNECT tunnel (tunnel.c) */
	void *owner; /* for ctx->ended (session_set_owner) */
	enum proxy_via via; /* how it arrived: its records say so */
	/*
	 * The front's own exchange is over (session_established, or capture
	 * found HTTP): answers are HTTP from then on, whatever the via.
	 */
	int front_done;
	int up_refused; /* the upstream answered a reset (SOCKS reply 5) */
	/*
	 * Who the client is, for the upstream pool's key (uppool.h): its
	 * address, or its uid on a Unix socket; "" when unknown.
	 */
	char client_id[64];
};

#endif /* PH_SESSION_INT_H */
