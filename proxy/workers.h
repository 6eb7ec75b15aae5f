/*
 * workers.h: the other event loops of `pinhole proxy --workers N` and of
 * a run's engine (`pinhole run --workers N`), each in a thread of its
 * own, beside the caller's loop (loop 0, engine.c).
 *
 * Each loop has its own event base, resolver (a c-ares channel and its
 * cache), struct proxy (sessions, splice pipes, upstream state), TLS
 * contexts with their leaf and session caches (tls_clone), and metrics
 * shard: nothing on the request path is shared, so nothing there takes a
 * lock.  Shared across the loops: the policy (read only, a reference
 * each: proxy_policy_share), the audit log (thread-safe, one write() per
 * line), and the proxy group (proxy.h: the session limit, an atomic
 * counted at accept and close; the per-client table, under a mutex taken
 * at accept and close; the connection numbers).
 *
 * Connections reach the loops two ways: an IP:PORT listener is one
 * SO_REUSEPORT socket per loop (the kernel spreads connections), and a
 * Unix socket's connections, accepted by loop 0, are handed round the
 * loops (workers_handoff).  Loop 0 and the caller talk to the threads by
 * mail: a queue under a mutex per thread and an eventfd to wake it;
 * the threads answer through the caller's eventfd.  Everything is made
 * and freed on the caller's thread; a thread only runs its loop.
 */
#ifndef PH_WORKERS_H
#define PH_WORKERS_H

#include "proxy/proxy.h"

struct event_base;
struct workers;
struct metrics;

struct workers_config {
	unsigned n; /* loops in all, the caller's included: 2.. */
	const char *dns; /* NULL: the system's resolvers */
	unsigned dns_timeout_ms;
	/*
	 * What each thread's proxy is made from: audit, run_id, budgets,
	 * group, reuseport; its tls is cloned, its metrics a shard of
	 * METRICS (made by SHARD, e.g. metrics_shard_new); its policy is
	 * given to workers_new.
	 */
	struct proxy_config pc;
	struct metrics *(*shard)(struct metrics *root);
	/* Makes each thread's event base (engine_base_new). */
	struct event_base *(*base_new)(void);
	/* A policy of workers_set_policy reached every thread. */
	void (*applied)(void *arg);
	/* Every thread's proxy stopped (workers_stop). */
	void (*stopped)(void *arg);
	void *arg;
	/*
	 * Told to stop, a thread's loop first takes this many turns that do
	 * not wait (what its clients sent last is read and logged: a run's
	 * end), then its proxy stops with the grace; 0: at once.
	 */
	unsigned drain_turns;
};

/*
 * Makes the N - 1 threads' loops on the caller's thread (not running),
 * each with a reference of SHARE (all N - 1 taken over in every case).
 * MAIN is the caller's base (for the threads' answers).  Returns NULL
 * after saying why.
 */
struct workers *workers_new(struct event_base *main,
    const struct workers_config *cf, struct proxy_policy_share *share);

/*
 * Listens on SPEC in every thread's proxy as VIA (proxy_listen): an
 * IP:PORT spec with PORT, the port loop 0 bound (SO_REUSEPORT); a
 * unix:PATH spec is loop 0's alone (handed off).  Returns 0 or -1 said.
 */
int workers_listen(
    struct workers *, const char *spec, enum proxy_via via, unsigned port);

/* Starts the threads.  Returns 0, or -1 after saying why. */
int workers_start(struct workers *);

/*
 * Loop 0's proxy's handoff hook (proxy.h), ARG the workers: round the
 * loops, 0 (taken by a thread) or -1 (loop 0's turn: served there).
 */
int workers_handoff(void *arg, const struct proxy_handoff *h);

/*
 * Gives every thread's proxy SHARE (a reference each, taken over), on
 * its own loop; cf->applied once all have it.
 */
void workers_set_policy(struct workers *, struct proxy_policy_share *share);

/*
 * Every thread's proxy stops accepting (after cf->drain_turns); its
 * sessions get GRACE_MS; then its loop ends, and cf->stopped once all
 * have.
 */
void workers_stop(struct workers *, unsigned grace_ms);

/* Sessions open in the threads' proxies. */
size_t workers_sessions(const struct workers *);

/*
 * Stops the threads if need be (no grace, after cf->drain_turns: their
 * sessions closed and logged), joins them, frees all.  NULL: nothing.
 */
void workers_free(struct workers *);

/* The CPUs this process may run on (sched_getaffinity), at least 1. */
unsigned workers_cpus(void);

#endif
