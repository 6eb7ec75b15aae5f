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
#include <stdint.h>

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
struct proxy_group;
struct proxy_policy_share;

/*
 * A connection one proxy of a group accepted and counted (session limit,
 * client) for another proxy of the group to serve (proxy_serve_handoff).
 */
struct proxy_handoff {
	int fd;
	enum proxy_via via;
	uint64_t conn;
	void *client; /* the group's entry it counts against, or NULL */
};

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
	/*
	 * Bytes of unfinished request heads, all sessions together (every
	 * loop's of the group); 0: 16M.
	 */
	size_t head_memory;
	/* Bytes queued between clients and upstreams, about, the same; 0: 64M. */
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
	/*
	 * borrowed; the limits this proxy shares with the proxies of other
	 * loops (proxy_group_new); NULL: a group of its own, made from
	 * max_sessions and max_per_client.
	 */
	struct proxy_group *group;
	/* Instead of POLICY: one held with other loops (taken over). */
	struct proxy_policy_share *policy_share;
	/* Binds IP:PORT listeners with SO_REUSEPORT (one per loop). */
	int reuseport;
	/*
	 * Called for each connection accepted on a Unix-socket listener or
	 * one given with proxy_listen_fd: 0 when another loop will serve H
	 * (taken over), -1 to serve it here.  NULL: served here.
	 */
	int (*handoff)(void *arg, const struct proxy_handoff *h);
	void *handoff_arg;
};

/* The most proxies one group may have. */
#define PROXY_GROUP_MAX 256

/*
 * The limits shared by N proxies (at most PROXY_GROUP_MAX), one per event
 * loop of a process (workers.h), each maybe in a thread of its own, from
 * CF's: max_sessions (0: 4096) sessions in all, max_per_client (0: none)
 * per client in all, one series of connection numbers; head_memory and
 * buffer_memory (0: 16M and 64M) for the whole process, every proxy's
 * sessions together, never divided (session.h, struct session_shared:
 * one relaxed atomic add per change of an unfinished head); and the
 * splice pipes and kept upstream connections of the process, which each
 * proxy divides by N.  The session count is an atomic taken at accept
 * and given back at close; the client table has a mutex taken at accept
 * and close only, never per request.  A proxy that finds the group full
 * stops accepting (holding at most one accepted connection) until a
 * session ends in any of them.  Returns NULL (ENOMEM).  Freed after its
 * proxies.
 */
struct proxy_config;
struct proxy_group *proxy_group_new(unsigned n, const struct proxy_config *cf);
void proxy_group_free(struct proxy_group *);

/* Sessions open in all the group's proxies (exact). */
size_t proxy_group_sessions(struct proxy_group *);

/*
 * A policy for N proxies of different loops, P taken over (freed when the
 * last lets go); NULL (P freed) when out of memory.
 */
struct proxy_policy_share *proxy_policy_share_new(struct policy *p, unsigned n);

/* Lets go of one reference of SH that no proxy was given.  NULL: none. */
void proxy_policy_share_drop(struct proxy_policy_share *sh);

/* proxy_set_policy with a policy shared by several loops (taken over). */
void proxy_set_policy_shared(struct proxy *, struct proxy_policy_share *);

/*
 * Serves H, handed over by another proxy of PX's group, on PX's loop (the
 * caller's thread).  If PX stops, H's connection is closed and its counts
 * given back.
 */
void proxy_serve_handoff(struct proxy *, const struct proxy_handoff *h);

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

/* Number of open sessions (this proxy's). */
size_t proxy_session_count(const struct proxy *);

/* Number of open sessions in PX's whole group (every loop's). */
size_t proxy_group_sessions_of(const struct proxy *);

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
