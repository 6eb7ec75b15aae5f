/*
 * proxy.h: the egress proxy engine, a library on a libevent loop.
 *
 * `pinhole proxy` wraps it as a daemon; `pinhole run` embeds it in-process
 * and hands it the listener made inside the sandbox.  Every client
  * connection is a session; every request is decided by the policy, before
 * any DNS lookup or connection, and written to the audit log.  The caller
 * must ignore SIGPIPE: tunnel bytes move with splice(2), which has no
 * MSG_NOSIGNAL.
 */
#ifndef PH_PROXY_H
#define PH_PROXY_H

#include <stddef.h>

#include "proxy/via.h"

struct event_base;
struct policy;
struct audit;
struct dns;
struct proxy;
struct tls;
struct inject_standins;
struct synth;
struct metrics;

/* enum proxy_via: how a listener's connections arrive (via.h). */

struct proxy_config {
	struct policy *policy; /* taken over: freed by the proxy */
	struct audit *audit; /* borrowed; NULL: no audit log */
	struct dns *dns; /* borrowed */
	const char *run_id; /* "sandbox" of audit records */
	unsigned max_sessions; /* 0: 4096 */
	/*
	 * Sessions one client may have open at once (0: no limit): an IPv4
	 * address, or an IPv6 /64 (one host's); Unix-socket clients are not
	 * counted.  A connection over it is answered 503 and closed at once,
	 * with a "request" audit record (deny, status 503, the client in the
	 * reason; a client's run of them folds into one) and a line on
	 * stderr at most every 10 s per client.
	 */
	unsigned max_per_client;
	/* Bytes of unfinished request heads, all sessions together; 0: 16M. */
	size_t head_memory;
	/* Bytes queued between clients and upstreams, about; 0: 64M. */
	size_t buffer_memory;
	/* Called for each request refused with 403 (policy or address). */
	void (*denied)(void *arg, const char *host, unsigned port);
	/* Called for each client that refused the run CA (same ARG). */
	void (*distrust)(void *arg, const char *host, unsigned port);
	void *denied_arg;
	struct tls *tls; /* borrowed; NULL: interception is refused (501) */
	const struct inject_standins *standins; /* borrowed; placeholders */
	/* borrowed; the DNS stub's synthetic addresses (synth.h), mapped
	 * back to names for captured and SOCKS connections; NULL: none */
	struct synth *synth;
	/* borrowed; counts for --metrics (metrics.h); NULL: none kept */
	struct metrics *metrics;
};

/* Returns a proxy on BASE, not yet listening, or NULL (ENOMEM). */
struct proxy *proxy_new(struct event_base *base, const struct proxy_config *);

/*
 * Accepts connections on FD, a listening socket (made non-blocking here),
 * arriving as VIA says.  The proxy owns FD from then on.  Returns 0 or -1.
 */
int proxy_listen_fd(struct proxy *, int fd, enum proxy_via via);

/*
 * Serves FD, a connection another front accepted from SA (LEN bytes) and
 * has read nothing of, as if PX's own listener had accepted it as VIA
 * (the per-client limit counts it; an HTTP session reads its head
 * itself).  Returns 0 (FD taken over), or -1 when PX is at its session
 * limit or stopping (FD still the caller's, to refuse).
 */
struct sockaddr;
int proxy_take_fd(struct proxy *, int fd, enum proxy_via via,
    const struct sockaddr *sa, int len);

/*
 * Listens on SPEC: IPV4:PORT or [IPV6]:PORT (literal addresses; port 0
 * lets the kernel pick, and *PORT says which it bound) or unix:PATH (a
 * stale socket there is replaced; *PORT is 0), for connections arriving
 * as VIA.  Says why it failed in the log.  Returns 0 or -1.
 */
int proxy_listen(
    struct proxy *, const char *spec, enum proxy_via via, unsigned *port);

/*
 * Replaces the policy: every request from now on is decided by P (taken
 * over), on new connections and on kept-alive or intercepted ones alike;
 * a request decided before goes on under its decision.  Open tunnels
 * (opaque CONNECT, or after a 101) that P would not allow are closed.
 */
void proxy_set_policy(struct proxy *, struct policy *p);

/*
 * Stops accepting.  Sessions go on; when the last one ends, or after
 * GRACE_MS, the remaining ones are closed and DONE(ARG) is called.
 */
void proxy_shutdown(
    struct proxy *, unsigned grace_ms, void (*done)(void *), void *arg);

/* Number of open sessions. */
size_t proxy_session_count(const struct proxy *);

/*
 * Raises the descriptor limit to the hard one and returns the number of
 * sessions it allows (at most 65536): the default session limit.
 */
unsigned proxy_fd_budget(void);

/* Closes everything and frees.  NULL does nothing. */
void proxy_free(struct proxy *);

#ifdef PROXY_INTERNAL
/*
 * For tests: writes the client SA counts as ("192.0.2.1", "2001:db8::/64")
 * into NAME; returns -1 for a client not counted (a Unix socket's).
 */
int proxy_client_name(
    const struct sockaddr *sa, int len, char *name, size_t namelen);
#endif

#endif
