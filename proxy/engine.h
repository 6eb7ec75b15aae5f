/*
 * engine.h: a proxy with what it runs on -- the audit log, the resolver,
 * the policy -- and, for a daemon, its reloads and its shutdown.
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

struct audit;
struct event_base;
struct engine;
struct inject_standins;
struct policy;
struct proxy;
struct tls;

struct engine_config {
	const char *name; /* says whose messages: "proxy" (NULL) or "run" */
	/* An audit log opened already (taken over; RUN_ID is its run's), or
	 * NULL: LOG is opened, under a new run id. */
	struct audit *audit;
	const char *run_id;
	const char *log; /* NULL: the policy's, else stderr */
	uint64_t log_limit; /* 0: none */
	const char *dns; /* NULL: the system's resolvers */
	unsigned max_sessions; /* 0: as many as descriptors allow */
	size_t head_memory; /* 0: the proxy's default */
	size_t buffer_memory; /* 0: the proxy's default */
	/* Denied targets, for a summary (proxy.h); may be NULL. */
	void (*denied)(void *arg, const char *host, unsigned port);
	/* Clients that refused the run CA (proxy.h); may be NULL. */
	void (*distrust)(void *arg, const char *host, unsigned port);
	void *denied_arg;
	struct tls *tls; /* borrowed; NULL: no interception */
	const struct inject_standins *standins; /* borrowed; may be NULL */
	/* Parses the policy again for a reload, reading no secret; NULL
	 * after saying why.  NULL: no reloads. */
	struct policy *(*parse)(void *arg);
	void *parse_arg;
};

/*
 * Opens the audit log (unless given) and the resolver and makes the proxy
 * on BASE, not yet listening, with P (taken over in every case, and so is
 * the config's audit log; P's secrets loaded).
 * Returns NULL after saying why.
 */
struct engine *engine_new(
    struct event_base *base, const struct engine_config *, struct policy *p);

/* The proxy, to give listeners to. */
struct proxy *engine_proxy(struct engine *);

/* Starts a reload (SIGHUP); one asked for while one is pending follows it. */
void engine_reload(struct engine *);

/*
 * Stops (SIGTERM): a pending reload is cancelled, the proxy stops
 * accepting and its sessions may finish for GRACE_MS; then DONE(ARG).
 */
void engine_stop(
    struct engine *, unsigned grace_ms, void (*done)(void *), void *arg);

/* Joins a pending reload, closes the sessions and the log, frees E. */
void engine_free(struct engine *);

#endif
