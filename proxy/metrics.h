/*
 * metrics.h: counters and histograms the proxy keeps on its loop, and a
 * tiny HTTP responder that hands them out in the Prometheus text
 * exposition format 0.0.4 (`pinhole proxy --metrics ADDR`).
 *
 * The proxy calls the metrics_* counting functions where it already
 * writes its audit records (session.c) and where it learns an upstream's
 * fate (upstream.c); a NULL struct metrics counts nothing, so they cost
 * one test when metrics are off.
 *
 * Threads (`pinhole proxy --workers N`): metrics_new() makes a root,
 * metrics_shard_new() a shard of it for each worker thread.  The root
 * and each shard are one writer each: its counting calls must come from
 * one thread at a time (the root's from the thread that serves it, e.g.
 * the main loop), and then take no lock and no read-modify-write shared
 * with another thread, only the first time a writer meets a host or a
 * series (a short mutex while the registry of hosts and series is not
 * full).  metrics_render() of the root, and its scrapes (metrics_listen,
 * on the root's loop), show the sums over the root and all its shards,
 * read while the workers count: counters, histograms and gauges as if
 * one object had counted every event, the host cap and the series cap
 * over all of them, series in the order they first appeared anywhere.
 *
 * Label cardinality is bounded: at most max_hosts distinct host labels
 * (METRICS_HOSTS_DEFAULT), later hosts count under host="other"; at most
 * METRICS_SERIES_MAX series of pinhole_requests_total, later ones count
 * in one series whose labels are all "other".
 */
#ifndef PH_METRICS_H
#define PH_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct event_base;
struct metrics;

#define METRICS_HOSTS_DEFAULT 256
#define METRICS_SERIES_MAX 4096

/* Why an upstream could not be used (pinhole_upstream_errors_total). */
enum metrics_upstream {
	METRICS_UP_CONNECT, /* refused, unreachable, no address */
	METRICS_UP_TIMEOUT, /* every connect attempt timed out */
	METRICS_UP_TLS, /* the TLS handshake with the upstream failed */
	METRICS_UP_KINDS,
};

/* Returns new metrics (MAX_HOSTS 0: the default), or NULL (ENOMEM). */
struct metrics *metrics_new(size_t max_hosts);

/*
 * Frees root M, its shards, its listener and its open scrapes, once no
 * thread counts in them any more.  NULL, or a shard, does nothing.
 */
void metrics_free(struct metrics *m);

/*
 * Returns a new shard of M's root (M a root or a shard), for one worker
 * thread: it counts as M would, into the root's sums, with nothing
 * shared on the hot path.  It lives until the root is freed.  NULL with
 * errno: ENOMEM, or EINVAL when M is NULL or a relay (which counts
 * nothing here; a relay's engine has one thread).
 */
struct metrics *metrics_shard_new(struct metrics *m);

/* One "request" audit record, as metrics_request() counts it. */
struct metrics_req {
	const char *decision; /* "allow" or "deny" */
	const char *host; /* NULL: "" */
	unsigned port; /* 0: "" */
	/* the deciding rule, as "FILE:LINE"; NULL: "default" (the policy's
	 * default), or "none" when the policy was never asked (!decided) */
	const char *rule_file;
	unsigned rule_line;
	const char *via; /* "proxy", "socks", "capture" */
	int decided; /* the policy decided it (else refused before) */
	int leak; /* a denial as a leak attempt */
	int64_t decision_us; /* head read to decision; < 0: not observed */
};

/* Counts request R: its series, a denial, a leak, its decision time. */
void metrics_request(struct metrics *m, const struct metrics_req *r);

/* Bytes a finished request or tunnel moved up and down. */
void metrics_bytes(struct metrics *m, uint64_t up, uint64_t down);

/* A client connection opened (+1) or closed (-1). */
void metrics_connection(struct metrics *m, int delta);

/* A DNS lookup of an upstream's name failed. */
void metrics_dns_error(struct metrics *m);

/* An upstream could not be used, for KIND. */
void metrics_upstream_error(struct metrics *m, enum metrics_upstream kind);

/* An upstream connection was made after US microseconds. */
void metrics_connected(struct metrics *m, int64_t us);

/* An audit record could not be written. */
void metrics_audit_failure(struct metrics *m);

/*
 * A broker (issue 13): each sandbox's engine is a process of its own, so
 * its counts travel to the broker, which serves them.  metrics_relay_new
 * makes metrics that count nothing here but send each event as one
 * datagram on FD (an AF_UNIX SOCK_SEQPACKET socket, non-blocking; an
 * event that does not fit is dropped and counted); FD is taken over.
 * metrics_absorb applies one such datagram, from an engine that parses
 * the sandbox's bytes and so is not trusted: malformed ones are refused
 * (-1) and counted, never applied in part.  Returns 0 or -1.
 */
struct metrics *metrics_relay_new(int fd);
int metrics_absorb(struct metrics *m, const void *buf, size_t len);

/*
 * Sandboxes a broker serves: one more (+1) or one fewer (-1); 0 says only
 * that the metrics are a broker's.  The broker's series
 * (pinhole_sandboxes_*, pinhole_broker_refused_total,
 * pinhole_relay_errors_total) are rendered once metrics_sandbox,
 * metrics_refused or metrics_absorb was called (a broker calls
 * metrics_sandbox(m, 0) at start to show them at 0), never for a proxy.
 */
void metrics_sandbox(struct metrics *m, int delta);

/* Why a broker refused a client (pinhole_broker_refused_total). */
enum metrics_refusal {
	METRICS_REF_POLICY, /* the policy is not granted to that user */
	METRICS_REF_LIMIT, /* too many sandboxes (the user's, or in all) */
	METRICS_REF_PROTOCOL, /* malformed or out-of-order messages */
	METRICS_REF_SETUP, /* the policy or a secret did not load */
	METRICS_REF_KINDS,
};
void metrics_refused(struct metrics *m, enum metrics_refusal why);

/*
 * Writes every metric of M's root and its shards, summed, to F in the
 * text format 0.0.4; from the root's thread, while shards count.
 * Returns 0, or -1 when F failed or M is a relay.
 */
int metrics_render(const struct metrics *m, FILE *f);

/*
 * Serves GET /metrics on SPEC: 127.0.0.1:PORT (any 127/8 address),
 * [::1]:PORT or unix:PATH (a stale socket there is replaced); port 0
 * picks one, said in *PORT.  Any other address is refused: the counts
 * name hosts and rules, and the responder has no authentication.
 * M must be a root (not a shard, not a relay), BASE the loop of its
 * thread.  Returns 0, or -1 after saying why in the log.
 */
int metrics_listen(struct metrics *m, struct event_base *base, const char *spec,
    unsigned *port);

/* What metrics_parse_head() found in a request head. */
enum metrics_head {
	METRICS_HEAD_MORE, /* no whole head yet */
	METRICS_HEAD_GET, /* GET /metrics: 200 */
	METRICS_HEAD_NOT_FOUND, /* GET or HEAD of another path: 404 */
	METRICS_HEAD_METHOD, /* another method: 405 */
	METRICS_HEAD_BAD, /* not HTTP/1.x, or too long: 400 */
};

/* The most bytes a request head may have. */
#define METRICS_HEAD_MAX 4096

/*
 * Parses the LEN bytes at BUF, from the client (untrusted): a request
 * line "METHOD SP TARGET SP HTTP/1.x", header lines, an empty line.  Only
 * the request line is interpreted; header lines must be printable.
 */
enum metrics_head metrics_parse_head(const char *buf, size_t len);

#ifdef METRICS_INTERNAL
/* Sets the start time the metrics say (exact text in tests). */
void metrics_set_start(struct metrics *m, long long start);
/* A relay: the events its socket did not take (dropped). */
uint64_t metrics_relay_dropped(const struct metrics *m);
#endif

#endif /* PH_METRICS_H */
