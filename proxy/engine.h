/*
 * engine.h: a proxy with what it runs on -- what engine_load.h loaded
 * (the policy, its secrets, the audit log, the TLS contexts) and the
 * resolver -- and, for a daemon, its reloads and its shutdown.
 *
 * A reload asks the caller to parse the policy on the loop (files only,
 * quick), then loads its secrets in a thread, since an exec helper may
 * take up to its deadline: the proxy keeps serving with the old policy
 * meanwhile, and the new one is swapped in only once every secret loaded.
 * Stopping during a pending reload cancels it (the helper is killed).
 */
#ifndef PINHOLE_PROXY_ENGINE_H
#define PINHOLE_PROXY_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/via.h"

struct event_base;
struct engine;
struct engine_load;
struct metrics;
struct policy;
struct proxy;

#define ENGINE_PER_CLIENT_DEFAULT (-1L)

struct engine_config {
	const char *name; /* says whose messages: "proxy" (NULL) or "run" */
	const char *dns; /* NULL: the system's resolvers */
	unsigned max_sessions; /* 0: as many as descriptors allow */
	/*
	 * Sessions per client (proxy.h); 0: no limit (pinhole run: its one
	 * client is the sandbox); ENGINE_PER_CLIENT_DEFAULT: a quarter of
	 * the session limit, at least 1.
	 */
	long max_per_client;
	size_t head_memory; /* 0: the proxy's default */
	size_t buffer_memory; /* 0: the proxy's default */
	/* Denied targets, for a summary (proxy.h); may be NULL. */
	void (*denied)(void *arg, const char *host, unsigned port);
	/* Clients that refused the run CA (proxy.h); may be NULL. */
	void (*distrust)(void *arg, const char *host, unsigned port);
	void *denied_arg;
	/* borrowed; what the proxy counts (metrics.h); NULL: nothing */
	struct metrics *metrics;
	/* The first query of each name to the DNS stub (dnsstub.h); may be
	 * NULL. */
	void (*looked_up)(void *arg, const char *name, const char *qtype);
	void *looked_up_arg;
	const char *own_name; /* the sandbox's host name (dnsstub.h) */
	/* The sandbox captures connections (issue 12): the DNS stub answers
	 * allowed names with synthetic addresses (synth.h); 0: it refuses
	 * every name, as under pinhole run --no-capture. */
	int capture;
	/* Parses the policy again for a reload, reading no secret; NULL
	 * after saying why.  NULL: no reloads. */
	struct policy *(*parse)(void *arg);
	void *parse_arg;
	/*
	 * Event loops (workers.h): 0 or 1, the caller's alone, no thread;
	 * N > 1 (at most PROXY_GROUP_MAX): N - 1 threads beside it.  A
	 * sandbox's DNS stub, refusals and notes are the caller's loop's
	 * (engine_listen_*), as are the listeners given to engine_proxy();
	 * their connections go round the loops; capture's synthetic
	 * addresses are shared (synth.h).  The callbacks above (denied,
	 * distrust) are then called from every loop's thread.
	 */
	unsigned workers;
	/* With workers and metrics: each thread's shard of METRICS. */
	struct metrics *(*metrics_shard)(struct metrics *root);
	/*
	 * With workers: when engine_free stops a thread, its loop first
	 * takes this many turns that do not wait, so that what its clients
	 * sent last is read and logged (a run's end: the caller drains its
	 * own loop the same way); 0: none (a daemon's stop has its grace).
	 */
	unsigned drain_turns;
};

/*
 * A new event loop for a proxy, NULL when none can be made.  On Linux
 * it batches its epoll changes (see engine.c).
 */
struct event_base *engine_base_new(void);

/*
 * Opens the resolver and makes the proxy on BASE, not yet listening, on
 * what L loaded (engine_load.h: the policy with its secrets, the audit
 * log, the TLS contexts and the stand-ins), L taken over in every case.
 * Returns NULL after saying why.
 */
struct engine *engine_new(struct event_base *base, const struct engine_config *,
    struct engine_load *l);

/* The proxy of the caller's loop, to give listeners to. */
struct proxy *engine_proxy(struct engine *);

/*
 * Listens on SPEC (proxy_listen) in every loop: an IP:PORT in each (the
 * port the first bound, SO_REUSEPORT), a unix:PATH in the caller's,
 * whose connections go round the loops.  Returns 0, or -1 said.
 */
int engine_listen(
    struct engine *, const char *spec, enum proxy_via via, unsigned *port);

/*
 * Starts the workers' threads (none for one loop): 0, or -1 said.  A
 * thread has the privileges, no_new_privs and Landlock domain of the
 * caller's thread when this is called: a caller that sheds them does so
 * first.
 */
int engine_start(struct engine *);

/* Sessions open in every loop. */
size_t engine_sessions(struct engine *);

/*
 * Serves FD, a socket of the sandbox's DNS stub (dnsstub_is_stub_fd),
 * with the run's audit log; taken over.  Returns 0 or -1.
 */
int engine_listen_dns(struct engine *, int fd);

/*
 * Watches FD, one of the raw sockets made in the sandbox's network
 * namespace (capture, netns/net.h), for connections the sandbox's
 * kernel refused (no listener on that port) and UDP it could not
 * deliver, and logs each destination once, telling the denied callback
 * (refused.h); taken over.  Returns 0, or -1 after saying why (not a
 * raw TCP or ICMP socket, or a second one of a kind: one sandbox).
 */
int engine_listen_refused(struct engine *, int fd);

/*
 * Watches FD, the engine's end of the sandbox supervisor's notes (an
 * AF_UNIX SOCK_SEQPACKET socket: the ICMP sockets it refused), and logs
 * each kind once, telling the denied callback (refused.h); taken over.
 * Returns 0, or -1 after saying why (a second one is refused).
 */
int engine_listen_notes(struct engine *, int fd);

/*
 * Starts a reload (SIGHUP); one asked for while one is pending follows it.
 * "reload: policy reloaded" is said once every loop has the new policy.
 */
void engine_reload(struct engine *);

/*
 * Stops (SIGTERM): a pending reload is cancelled, the proxy stops
 * accepting and its sessions may finish for GRACE_MS; then DONE(ARG).
 */
void engine_stop(
    struct engine *, unsigned grace_ms, void (*done)(void *), void *arg);

/*
 * Joins a pending reload; stops the threads (each after its drain_turns)
 * and joins them, their sessions closed and logged; closes the caller's
 * loop's sessions and the log; frees E.
 */
void engine_free(struct engine *);

#endif
