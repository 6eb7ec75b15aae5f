/*
 * metrics.c: the proxy's counters and histograms, their text exposition
 * (Prometheus format 0.0.4), and the responder that serves them.
 *
 * Writers and sums.  A root (metrics_new) and each of its shards
 * (metrics_shard_new, one per worker thread) is a writer: its counters
 * are written by one thread only, with a relaxed atomic load and store
 * (bump()), never a read-modify-write shared with another thread, so a
 * worker's update costs what a plain increment costs and its cache lines
 * stay its own.  A scrape, on the root's thread, sums every writer's
 * counters with relaxed loads: each sum is exact up to the events still
 * being counted.
 *
 * What must be one across writers lives in the root's registry: the
 * distinct host labels (the max_hosts cap) and the series of
 * pinhole_requests_total, each with its escaped label text (also what is
 * rendered) and an id, in the order they first appeared anywhere; a
 * writer counts series id I in its own series_n[I].  A writer asks the
 * registry, under its mutex, only the first time it meets a host or a
 * label text, and keeps the answer in its own tables (hosts, index), so a
 * label it already knows takes no lock.  Once a registry table is full
 * it never changes again and is read without the mutex, so a stream of
 * new hosts past the cap takes no lock either.  The registry's labels
 * are never moved, and their count is published with a release store,
 * so a scrape reads them without the mutex.
 *
 * The responder reads one bounded head (METRICS_HEAD_MAX bytes, within
 * SCRAPE_TIMEOUT_S), answers once and closes; at most SCRAPES_MAX scrapes
 * are open at once, more are closed at accept.
 *
 * A broker's engine counts through a relay (metrics_relay_new): each
 * event is one SOCK_SEQPACKET datagram to the broker, which decodes it
 * with metrics_absorb() (the wire format is at "the relay" below).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include "common/htab.h"
#include "common/log.h"
#define METRICS_INTERNAL
#include "proxy/metrics.h"

#define SCRAPES_MAX 16
#define SCRAPE_TIMEOUT_S 5
#define LABELS_MAX 1024 /* one series' label text, escaped */
#define RULE_FILE_MAX 200 /* bytes of a rule's file name in its label */
#define HOST_LABEL_MAX 256 /* bytes of a host in its label */
#define CACHE_LINE 64 /* a writer's counters share no line with another's */

/* The relay's datagrams: a version byte, then one of these kinds. */
#define RELAY_VERSION 1
enum relay_kind {
	RELAY_REQUEST = 1,
	RELAY_BYTES,
	RELAY_CONNECTION,
	RELAY_DNS_ERROR,
	RELAY_UPSTREAM_ERROR,
	RELAY_CONNECTED,
	RELAY_AUDIT_FAILURE,
	RELAY_REFUSED,
	RELAY_SANDBOX,
};

/* Bucket bounds: microseconds, and the "le" label that says them. */
struct bucket {
	int64_t us;
	const char *le;
};

static const struct bucket decision_buckets[] = {
    {50, "5e-05"},
    {100, "0.0001"},
    {250, "0.00025"},
    {500, "0.0005"},
    {1000, "0.001"},
    {2500, "0.0025"},
    {5000, "0.005"},
    {10000, "0.01"},
    {100000, "0.1"},
    {1000000, "1"},
};
#define DECISION_NB (sizeof(decision_buckets) / sizeof(decision_buckets[0]))

static const struct bucket connect_buckets[] = {
    {1000, "0.001"},
    {5000, "0.005"},
    {10000, "0.01"},
    {25000, "0.025"},
    {50000, "0.05"},
    {100000, "0.1"},
    {250000, "0.25"},
    {500000, "0.5"},
    {1000000, "1"},
    {2500000, "2.5"},
    {5000000, "5"},
    {10000000, "10"},
};
#define CONNECT_NB (sizeof(connect_buckets) / sizeof(connect_buckets[0]))
#define NB_MAX CONNECT_NB

/*
 * A writer's scalar counters, one array so that a scrape sums them in
 * one loop.  The gauges (CTR_CONNS_ACTIVE, CTR_SANDBOXES_ACTIVE) are
 * int64 deltas kept modulo 2^64: their sum over writers, read as an
 * int64, is the gauge, whichever writer saw the +1 and the -1.
 */
enum ctr {
	CTR_DENIALS,
	CTR_LEAKS,
	CTR_BYTES_UP,
	CTR_BYTES_DOWN,
	CTR_CONNS_TOTAL,
	CTR_CONNS_ACTIVE,
	CTR_DNS_ERRORS,
	CTR_AUDIT_FAILURES,
	CTR_UPSTREAM, /* METRICS_UP_KINDS counters, by kind */
	CTR_OVERFLOW = CTR_UPSTREAM + METRICS_UP_KINDS, /* past the series */
	CTR_BROKER, /* not 0: a broker's (its series are rendered) */
	CTR_SANDBOXES_ACTIVE,
	CTR_SANDBOXES_TOTAL,
	CTR_REFUSED, /* METRICS_REF_KINDS counters, by reason */
	CTR_RELAY_ERRORS = CTR_REFUSED + METRICS_REF_KINDS,
	CTR_N,
};

/* A writer's histogram. */
struct histogram {
	_Atomic uint64_t count[NB_MAX]; /* per bucket, not cumulative */
	_Atomic uint64_t n, sum_us;
};

/* The sums over writers, as a scrape renders them. */
struct hsum {
	uint64_t count[NB_MAX], n, sum_us;
};

struct sums {
	uint64_t ctr[CTR_N];
	struct hsum decision, connect;
};

/* A root's: what is one across all its writers (see the top). */
struct registry {
	pthread_mutex_t lock; /* taken by writers adding a host or series */
	struct htab *hosts; /* distinct host labels, at most max_hosts */
	atomic_int hosts_full; /* hosts holds max_hosts: it is read-only */
	struct htab *index; /* label text -> series id */
	char *labels[METRICS_SERIES_MAX]; /* by id, escaped, as rendered */
	atomic_size_t nseries; /* labels[0..nseries) are set for good */
	_Atomic(struct metrics *) shards; /* newest first, by next */
};

struct scrape {
	struct metrics *m;
	struct bufferevent *bev;
	struct scrape *next, **prev;
};

struct metrics {
	/* What this writer counted: written by its one thread only. */
	_Alignas(CACHE_LINE) _Atomic uint64_t ctr[CTR_N];
	struct histogram decision, connect;
	_Atomic uint64_t *series_n; /* METRICS_SERIES_MAX, by series id */
	struct htab *hosts; /* the host labels the registry admitted */
	struct htab *index; /* label text -> series id, as registered */
	struct metrics *root; /* a root's is itself */
	struct metrics *next; /* the root's next shard; set before shown */
	/* A root's only. */
	struct registry *reg;
	size_t max_hosts;
	time_t start;
	struct evconnlistener *lev;
	char *unix_path; /* removed at free */
	struct scrape *scrapes;
	size_t nscrapes;
	int relay_fd; /* a relay: the socket to the broker; else -1 */
	uint64_t relay_dropped; /* a relay: events the socket did not take */
};

static int relay_send(struct metrics *m, const unsigned char *p, size_t n);
static void relay_request(struct metrics *m, const struct metrics_req *r);
static void relay_event(struct metrics *m, unsigned kind, int64_t a, int64_t b);

/* A writer with its own tables, or NULL (ENOMEM). */
static struct metrics *
writer_new(struct metrics *root)
{
	struct metrics *m;

	if ((m = aligned_alloc(CACHE_LINE, sizeof(*m))) == NULL)
		return NULL;
	memset(m, 0, sizeof(*m));
	if ((m->series_n = calloc(METRICS_SERIES_MAX, sizeof(*m->series_n))) ==
	    NULL) {
		free(m);
		return NULL;
	}
	m->hosts = htab_new();
	m->index = htab_new();
	m->root = root != NULL ? root : m;
	m->relay_fd = -1;
	return m;
}

static void
writer_free(struct metrics *m)
{
	free(m->series_n);
	htab_free(m->hosts);
	htab_free(m->index);
	free(m);
}

struct metrics *
metrics_new(size_t max_hosts)
{
	struct metrics *m;

	if ((m = writer_new(NULL)) == NULL)
		return NULL;
	if ((m->reg = calloc(1, sizeof(*m->reg))) == NULL ||
	    pthread_mutex_init(&m->reg->lock, NULL) != 0) {
		free(m->reg);
		writer_free(m);
		return NULL;
	}
	m->reg->hosts = htab_new();
	m->reg->index = htab_new();
	m->max_hosts = max_hosts ? max_hosts : METRICS_HOSTS_DEFAULT;
	m->start = time(NULL);
	return m;
}

struct metrics *
metrics_shard_new(struct metrics *m)
{
	struct registry *g;
	struct metrics *s;

	/* A relay counts nothing here: a shard of it would count unseen. */
	if (m == NULL || m->root->relay_fd != -1) {
		errno = EINVAL;
		return NULL;
	}
	g = m->root->reg;
	if ((s = writer_new(m->root)) == NULL)
		return NULL;
	pthread_mutex_lock(&g->lock);
	s->next = atomic_load_explicit(&g->shards, memory_order_relaxed);
	/* release: a scrape that finds S finds it whole */
	atomic_store_explicit(&g->shards, s, memory_order_release);
	pthread_mutex_unlock(&g->lock);
	return s;
}

static void scrape_free(struct scrape *sc);

static void
registry_free(struct registry *g)
{
	struct metrics *s, *next;
	size_t i, n = atomic_load(&g->nseries);

	for (s = atomic_load(&g->shards); s != NULL; s = next) {
		next = s->next;
		writer_free(s);
	}
	for (i = 0; i < n; i++)
		free(g->labels[i]);
	htab_free(g->hosts);
	htab_free(g->index);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

void
metrics_free(struct metrics *m)
{
	/* A shard lives as long as its root: a scrape may still read it. */
	if (m == NULL || m->root != m)
		return;
	if (m->relay_fd != -1)
		close(m->relay_fd);
	while (m->scrapes != NULL)
		scrape_free(m->scrapes);
	if (m->lev != NULL)
		evconnlistener_free(m->lev);
	if (m->unix_path != NULL) {
		unlink(m->unix_path);
		free(m->unix_path);
	}
	registry_free(m->reg);
	writer_free(m);
}

/* --- counting ------------------------------------------------------------- */

/* A counter of any writer, whole. */
static inline uint64_t
load(const _Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

/*
 * Adds V to counter C of the calling writer.  Its thread alone writes C,
 * so a load and a store do (no read-modify-write, no lock prefix); being
 * atomic, they let a scrape on another thread read C whole.
 */
static inline void
bump(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c, load(c) + v, memory_order_relaxed);
}

/* Appends S (at most MAX bytes of it) to BUF at *AT, escaped for a label. */
static void
escape(char *buf, size_t len, size_t *at, const char *s, size_t max)
{
	size_t i;
	const char *e;

	for (i = 0; s[i] != '\0' && i < max && *at + 3 < len; i++) {
		e = s[i] == '\\'   ? "\\\\"
		    : s[i] == '"'  ? "\\\""
		    : s[i] == '\n' ? "\\n"
		                   : NULL;
		if (e != NULL) {
			buf[(*at)++] = e[0];
			buf[(*at)++] = e[1];
		} else
			buf[(*at)++] = s[i];
	}
	buf[*at] = '\0';
}

static void
append(char *buf, size_t len, size_t *at, const char *s)
{
	size_t n = strlen(s);

	if (*at + n >= len)
		n = len - *at - 1;
	memcpy(buf + *at, s, n);
	*at += n;
	buf[*at] = '\0';
}

/*
 * Under the registry's lock: is HOST one of the first max_hosts distinct
 * hosts of all writers (added if there is room)?
 */
static int
host_admit(struct metrics *root, const char *host, size_t n)
{
	struct registry *g = root->reg;
	int ok = 1;

	if (htab_find(g->hosts, host, n) == NULL &&
	    (htab_count(g->hosts) >= root->max_hosts ||
	        htab_try_add(g->hosts, host, n, 0, 0) != 0))
		ok = 0;
	/* release: who sees the flag sees the table as it stays */
	if (htab_count(g->hosts) >= root->max_hosts)
		atomic_store_explicit(&g->hosts_full, 1, memory_order_release);
	return ok;
}

/* The host's label: HOST while fewer than max_hosts are known, "other". */
static const char *
host_label(struct metrics *m, const char *host)
{
	struct registry *g = m->root->reg;
	size_t n = strlen(host);
	int known;

	if (htab_find(m->hosts, host, n) != NULL)
		return host;
	if (atomic_load_explicit(&g->hosts_full, memory_order_acquire))
		known = htab_find(g->hosts, host, n) != NULL;
	else {
		pthread_mutex_lock(&g->lock);
		known = host_admit(m->root, host, n);
		pthread_mutex_unlock(&g->lock);
	}
	/* Only hosts the registry admitted: at most max_hosts here too. */
	if (known)
		(void)htab_try_add(m->hosts, host, n, 0, 0);
	return known ? host : "other";
}

/*
 * Under the registry's lock: the id of the series LABELS, registered if
 * there is room, or -1.
 */
static long
series_admit(struct registry *g, const char *labels, size_t n)
{
	const struct htab_list *l;
	size_t id = atomic_load_explicit(&g->nseries, memory_order_relaxed);
	char *dup = NULL;

	if ((l = htab_find(g->index, labels, n)) != NULL && l[0].n > 0)
		return (long)l[0].ids[0];
	if (id >= METRICS_SERIES_MAX || (dup = strdup(labels)) == NULL ||
	    htab_try_add(g->index, labels, n, 0, (uint32_t)id) != 0) {
		free(dup);
		return -1;
	}
	g->labels[id] = dup;
	/* release: a scrape, or a writer finding the registry full, that
	 * reads the count sees the label and the index as they are */
	atomic_store_explicit(&g->nseries, id + 1, memory_order_release);
	return (long)id;
}

/* The id of the series LABELS (N bytes) for writer M, or -1 (overflow). */
static long
series_id(struct metrics *m, const char *labels, size_t n)
{
	struct registry *g = m->root->reg;
	const struct htab_list *l;
	long id;

	if ((l = htab_find(m->index, labels, n)) != NULL && l[0].n > 0)
		return (long)l[0].ids[0];
	if (atomic_load_explicit(&g->nseries, memory_order_acquire) >=
	    METRICS_SERIES_MAX) {
		/* full: the index never changes again */
		l = htab_find(g->index, labels, n);
		id = l != NULL && l[0].n > 0 ? (long)l[0].ids[0] : -1;
	} else {
		pthread_mutex_lock(&g->lock);
		id = series_admit(g, labels, n);
		pthread_mutex_unlock(&g->lock);
	}
	if (id >= 0)
		(void)htab_try_add(m->index, labels, n, 0, (uint32_t)id);
	return id;
}

/*
 * Counts US in H.  The bucket is written last, with release: a scrape
 * that sees it (with acquire) sees n too, so no bucket it renders ever
 * counts more than +Inf.
 */
static void
observe(struct histogram *h, const struct bucket *b, size_t nb, int64_t us)
{
	size_t i;

	if (us < 0)
		us = 0;
	for (i = 0; i < nb && us > b[i].us; i++)
		;
	bump(&h->n, 1);
	bump(&h->sum_us, (uint64_t)us);
	if (i < nb)
		atomic_store_explicit(
		    &h->count[i], load(&h->count[i]) + 1, memory_order_release);
}

/* Writes the label text of R's series into BUF. */
static void
labels(struct metrics *m, const struct metrics_req *r, char *buf, size_t len)
{
	char num[48];
	size_t at = 0;

	append(buf, len, &at, "decision=\"");
	escape(buf, len, &at, r->decision, 16);
	append(buf, len, &at, "\",host=\"");
	escape(buf, len, &at, host_label(m, r->host ? r->host : ""),
	    HOST_LABEL_MAX);
	snprintf(num, sizeof(num), "\",port=\"%u\",rule=\"", r->port);
	append(buf, len, &at, r->port ? num : "\",port=\"\",rule=\"");
	if (r->rule_file != NULL) {
		escape(buf, len, &at, r->rule_file, RULE_FILE_MAX);
		snprintf(num, sizeof(num), ":%u", r->rule_line);
		append(buf, len, &at, num);
	} else
		append(buf, len, &at, r->decided ? "default" : "none");
	append(buf, len, &at, "\",via=\"");
	escape(buf, len, &at, r->via, 16);
	append(buf, len, &at, "\"");
}

void
metrics_request(struct metrics *m, const struct metrics_req *r)
{
	char buf[LABELS_MAX];
	long id;

	if (m == NULL)
		return;
	if (m->relay_fd != -1) {
		relay_request(m, r);
		return;
	}
	labels(m, r, buf, sizeof(buf));
	id = series_id(m, buf, strlen(buf));
	bump(id >= 0 ? &m->series_n[id] : &m->ctr[CTR_OVERFLOW], 1);
	if (strcmp(r->decision, "allow") != 0)
		bump(&m->ctr[CTR_DENIALS], 1);
	if (r->leak)
		bump(&m->ctr[CTR_LEAKS], 1);
	if (r->decision_us >= 0)
		observe(&m->decision, decision_buckets, DECISION_NB,
		    r->decision_us);
}

void
metrics_bytes(struct metrics *m, uint64_t up, uint64_t down)
{
	if (m == NULL)
		return;
	if (m->relay_fd != -1) {
		relay_event(m, RELAY_BYTES, (int64_t)up, (int64_t)down);
		return;
	}
	bump(&m->ctr[CTR_BYTES_UP], up);
	bump(&m->ctr[CTR_BYTES_DOWN], down);
}

void
metrics_connection(struct metrics *m, int delta)
{
	if (m == NULL)
		return;
	if (m->relay_fd != -1) {
		relay_event(m, RELAY_CONNECTION, delta, 0);
		return;
	}
	bump(&m->ctr[CTR_CONNS_ACTIVE], (uint64_t)(int64_t)delta);
	if (delta > 0)
		bump(&m->ctr[CTR_CONNS_TOTAL], 1);
}

void
metrics_dns_error(struct metrics *m)
{
	if (m != NULL && m->relay_fd != -1)
		relay_event(m, RELAY_DNS_ERROR, 0, 0);
	else if (m != NULL)
		bump(&m->ctr[CTR_DNS_ERRORS], 1);
}

void
metrics_upstream_error(struct metrics *m, enum metrics_upstream kind)
{
	if (m != NULL && m->relay_fd != -1)
		relay_event(m, RELAY_UPSTREAM_ERROR, kind, 0);
	else if (m != NULL && kind < METRICS_UP_KINDS)
		bump(&m->ctr[CTR_UPSTREAM + kind], 1);
}

void
metrics_connected(struct metrics *m, int64_t us)
{
	/* observe() counts a negative time as 0: so does the relay */
	if (m != NULL && m->relay_fd != -1)
		relay_event(m, RELAY_CONNECTED, us < 0 ? 0 : us, 0);
	else if (m != NULL)
		observe(&m->connect, connect_buckets, CONNECT_NB, us);
}

void
metrics_audit_failure(struct metrics *m)
{
	if (m != NULL && m->relay_fd != -1)
		relay_event(m, RELAY_AUDIT_FAILURE, 0, 0);
	else if (m != NULL)
		bump(&m->ctr[CTR_AUDIT_FAILURES], 1);
}

/* --- summing -------------------------------------------------------------- */

/* Adds writer histogram H to S: the buckets first (see observe()). */
static void
hsum_add(struct hsum *s, const struct histogram *h)
{
	size_t i;

	for (i = 0; i < NB_MAX; i++)
		s->count[i] +=
		    atomic_load_explicit(&h->count[i], memory_order_acquire);
	s->n += load(&h->n);
	s->sum_us += load(&h->sum_us);
}

static void
sums_add(struct sums *s, const struct metrics *w)
{
	size_t i;

	for (i = 0; i < CTR_N; i++)
		s->ctr[i] += load(&w->ctr[i]);
	hsum_add(&s->decision, &w->decision);
	hsum_add(&s->connect, &w->connect);
}

/* The first shard of ROOT (the rest by next), as a scrape may walk them. */
static const struct metrics *
shards(const struct metrics *root)
{
	return atomic_load_explicit(&root->reg->shards, memory_order_acquire);
}

/* The sums of ROOT and all its shards into S. */
static void
sums_all(const struct metrics *root, struct sums *s)
{
	const struct metrics *w;

	memset(s, 0, sizeof(*s));
	sums_add(s, root);
	for (w = shards(root); w != NULL; w = w->next)
		sums_add(s, w);
}

/* Series ID's count, summed over ROOT and all its shards. */
static uint64_t
series_sum(const struct metrics *root, size_t id)
{
	const struct metrics *w;
	uint64_t n = load(&root->series_n[id]);

	for (w = shards(root); w != NULL; w = w->next)
		n += load(&w->series_n[id]);
	return n;
}

/* --- rendering ------------------------------------------------------------ */

static void
head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
counter(FILE *f, const char *name, const char *help, uint64_t v)
{
	head(f, name, "counter", help);
	fprintf(f, "%s %llu\n", name, (unsigned long long)v);
}

static void
gauge(FILE *f, const char *name, const char *help, uint64_t v)
{
	head(f, name, "gauge", help);
	fprintf(f, "%s %lld\n", name, (long long)(int64_t)v);
}

static void
histogram(FILE *f, const char *name, const char *help, const struct hsum *h,
    const struct bucket *b, size_t nb)
{
	uint64_t cum = 0;
	size_t i;

	head(f, name, "histogram", help);
	for (i = 0; i < nb; i++) {
		cum += h->count[i];
		fprintf(f, "%s_bucket{le=\"%s\"} %llu\n", name, b[i].le,
		    (unsigned long long)cum);
	}
	fprintf(
	    f, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)h->n);
	fprintf(f, "%s_sum %llu.%06llu\n", name,
	    (unsigned long long)(h->sum_us / 1000000),
	    (unsigned long long)(h->sum_us % 1000000));
	fprintf(f, "%s_count %llu\n", name, (unsigned long long)h->n);
}

static void
render_requests(const struct metrics *root, const struct sums *s, FILE *f)
{
	const struct registry *g = root->reg;
	size_t i, n = atomic_load_explicit(&g->nseries, memory_order_acquire);

	head(f, "pinhole_requests_total", "counter",
	    "Requests decided, by decision, host, port, deciding rule "
	    "(file:line) and how the client came");
	for (i = 0; i < n; i++)
		fprintf(f, "pinhole_requests_total{%s} %llu\n", g->labels[i],
		    (unsigned long long)series_sum(root, i));
	if (s->ctr[CTR_OVERFLOW] > 0)
		fprintf(f,
		    "pinhole_requests_total{decision=\"other\",host=\"other\","
		    "port=\"other\",rule=\"other\",via=\"other\"} %llu\n",
		    (unsigned long long)s->ctr[CTR_OVERFLOW]);
}

static void
render_upstream(const struct sums *s, FILE *f)
{
	static const char *const kinds[METRICS_UP_KINDS] = {
	    "connect", "timeout", "tls"};
	size_t i;

	head(f, "pinhole_upstream_errors_total", "counter",
	    "Upstreams that could not be used, by kind");
	for (i = 0; i < METRICS_UP_KINDS; i++)
		fprintf(f, "pinhole_upstream_errors_total{kind=\"%s\"} %llu\n",
		    kinds[i], (unsigned long long)s->ctr[CTR_UPSTREAM + i]);
}

/* A broker's series: only once it counted something as a broker. */
static void
render_broker(const struct sums *s, FILE *f)
{
	static const char *const why[METRICS_REF_KINDS] = {
	    "policy", "limit", "protocol", "setup"};
	size_t i;

	if (s->ctr[CTR_BROKER] == 0)
		return;
	gauge(f, "pinhole_sandboxes_active", "Sandboxes the broker serves",
	    s->ctr[CTR_SANDBOXES_ACTIVE]);
	counter(f, "pinhole_sandboxes_total",
	    "Engines the broker started, one per client accepted",
	    s->ctr[CTR_SANDBOXES_TOTAL]);
	head(f, "pinhole_broker_refused_total", "counter",
	    "Clients the broker refused, by reason");
	for (i = 0; i < METRICS_REF_KINDS; i++)
		fprintf(f, "pinhole_broker_refused_total{reason=\"%s\"} %llu\n",
		    why[i], (unsigned long long)s->ctr[CTR_REFUSED + i]);
	counter(f, "pinhole_relay_errors_total",
	    "Malformed metrics datagrams from sandbox engines, refused",
	    s->ctr[CTR_RELAY_ERRORS]);
}

int
metrics_render(const struct metrics *m, FILE *f)
{
	struct sums s;

	m = m->root;
	if (m->relay_fd != -1)
		return -1; /* a relay counts nothing: the broker renders */
	sums_all(m, &s);
	render_requests(m, &s, f);
	counter(
	    f, "pinhole_denials_total", "Requests denied", s.ctr[CTR_DENIALS]);
	counter(f, "pinhole_leaks_total",
	    "Requests denied as leak attempts (a stand-in sent elsewhere)",
	    s.ctr[CTR_LEAKS]);
	head(f, "pinhole_bytes_total", "counter",
	    "Bytes moved by finished requests and tunnels");
	fprintf(f, "pinhole_bytes_total{direction=\"up\"} %llu\n",
	    (unsigned long long)s.ctr[CTR_BYTES_UP]);
	fprintf(f, "pinhole_bytes_total{direction=\"down\"} %llu\n",
	    (unsigned long long)s.ctr[CTR_BYTES_DOWN]);
	gauge(f, "pinhole_connections_active", "Client connections open",
	    s.ctr[CTR_CONNS_ACTIVE]);
	counter(f, "pinhole_connections_total", "Client connections accepted",
	    s.ctr[CTR_CONNS_TOTAL]);
	counter(f, "pinhole_dns_errors_total",
	    "DNS lookups of upstream names that failed", s.ctr[CTR_DNS_ERRORS]);
	render_upstream(&s, f);
	counter(f, "pinhole_audit_write_failures_total",
	    "Audit records that could not be written",
	    s.ctr[CTR_AUDIT_FAILURES]);
	histogram(f, "pinhole_decision_seconds",
	    "Time from a request head read to its decision", &s.decision,
	    decision_buckets, DECISION_NB);
	histogram(f, "pinhole_connect_seconds",
	    "Time from a decision to its upstream connection", &s.connect,
	    connect_buckets, CONNECT_NB);
	render_broker(&s, f);
	gauge(f, "process_start_time_seconds",
	    "Start time of the process since the Unix epoch",
	    (uint64_t)(int64_t)m->start);
	return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

void
metrics_set_start(struct metrics *m, long long start)
{
	m->root->start = (time_t)start;
}

/* --- the request head ----------------------------------------------------- */

/* Length of the head in BUF (through its empty line), or 0. */
static size_t
head_end(const char *buf, size_t len)
{
	size_t i;

	for (i = 1; i < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i - 1] == '\n')
			return i + 1;
		if (i >= 2 && buf[i - 1] == '\r' && buf[i - 2] == '\n')
			return i + 1;
	}
	return 0;
}

/* Are the header lines of BUF[0..LEN) printable text? */
static int
fields_ok(const char *buf, size_t len)
{
	size_t i;
	unsigned char c;

	for (i = 0; i < len; i++) {
		c = (unsigned char)buf[i];
		if (c == '\r' && i + 1 < len && buf[i + 1] == '\n')
			continue;
		if (c != '\n' && c != '\t' && (c < 0x20 || c > 0x7e))
			return 0;
	}
	return 1;
}

enum metrics_head
metrics_parse_head(const char *buf, size_t len)
{
	size_t end, line, m, t;
	const char *target;

	if (len > METRICS_HEAD_MAX)
		len = METRICS_HEAD_MAX;
	if ((end = head_end(buf, len)) == 0)
		return len == METRICS_HEAD_MAX ? METRICS_HEAD_BAD
		                               : METRICS_HEAD_MORE;
	line = (size_t)((const char *)memchr(buf, '\n', end) - buf);
	if (line > 0 && buf[line - 1] == '\r')
		line--;
	for (m = 0; m < line && buf[m] >= 'A' && buf[m] <= 'Z'; m++)
		;
	if (m == 0 || m >= line || buf[m] != ' ')
		return METRICS_HEAD_BAD;
	target = buf + m + 1;
	for (t = 0; m + 1 + t < line && target[t] > ' ' && target[t] < 0x7f;
	     t++)
		;
	/* " HTTP/1.x" ends the line. */
	if (t == 0 || m + 1 + t + 9 != line ||
	    memcmp(target + t, " HTTP/1.", 8) != 0 || target[t + 8] < '0' ||
	    target[t + 8] > '9' || !fields_ok(buf + line, end - line))
		return METRICS_HEAD_BAD;
	if (m != 3 || memcmp(buf, "GET", 3) != 0)
		return METRICS_HEAD_METHOD;
	if ((t == 8 || (t > 8 && target[8] == '?')) &&
	    memcmp(target, "/metrics", 8) == 0)
		return METRICS_HEAD_GET;
	return METRICS_HEAD_NOT_FOUND;
}

/* --- the responder -------------------------------------------------------- */

static void
scrape_free(struct scrape *sc)
{
	*sc->prev = sc->next;
	if (sc->next != NULL)
		sc->next->prev = sc->prev;
	sc->m->nscrapes--;
	bufferevent_free(sc->bev);
	free(sc);
}

static void
on_scrape_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	scrape_free(arg);
}

static void
on_scrape_written(struct bufferevent *bev, void *arg)
{
	if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		scrape_free(arg);
}

/* Queues the answer to WHAT on SC; it closes once written. */
static void
answer(struct scrape *sc, enum metrics_head what)
{
	struct evbuffer *out = bufferevent_get_output(sc->bev);
	char *body = NULL;
	size_t len = 0;
	FILE *f;
	int status = what == METRICS_HEAD_GET ? 200
	    : what == METRICS_HEAD_NOT_FOUND  ? 404
	    : what == METRICS_HEAD_METHOD     ? 405
	                                      : 400;
	const char *text = status == 200 ? "OK"
	    : status == 404              ? "Not Found"
	    : status == 405              ? "Method Not Allowed"
	                                 : "Bad Request";

	if (status == 200 && (f = open_memstream(&body, &len)) != NULL) {
		if (metrics_render(sc->m, f) != 0)
			status = 500, text = "Internal Server Error";
		fclose(f);
	} else if (status == 200)
		status = 500, text = "Internal Server Error";
	if (status != 200)
		len = 0;
	evbuffer_add_printf(out,
	    "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	    "%sConnection: close\r\n\r\n",
	    status, text,
	    status == 200 ? "text/plain; version=0.0.4; charset=utf-8"
	                  : "text/plain",
	    len, status == 405 ? "Allow: GET\r\n" : "");
	evbuffer_add(out, body, len);
	free(body);
	bufferevent_disable(sc->bev, EV_READ);
	bufferevent_setcb(
	    sc->bev, NULL, on_scrape_written, on_scrape_event, sc);
	bufferevent_enable(sc->bev, EV_WRITE);
}

static void
on_scrape_read(struct bufferevent *bev, void *arg)
{
	struct evbuffer *in = bufferevent_get_input(bev);
	size_t len = evbuffer_get_length(in);
	enum metrics_head what;

	if (len > METRICS_HEAD_MAX)
		len = METRICS_HEAD_MAX;
	what = metrics_parse_head(
	    (const char *)evbuffer_pullup(in, (ev_ssize_t)len), len);
	if (what != METRICS_HEAD_MORE)
		answer(arg, what);
}

static void
on_scrape(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
    int salen, void *arg)
{
	static const struct timeval tv = {SCRAPE_TIMEOUT_S, 0};
	struct metrics *m = arg;
	struct scrape *sc = NULL;

	(void)sa;
	(void)salen;
	if (m->nscrapes >= SCRAPES_MAX ||
	    (sc = calloc(1, sizeof(*sc))) == NULL ||
	    (sc->bev = bufferevent_socket_new(evconnlistener_get_base(lev), fd,
	         BEV_OPT_CLOSE_ON_FREE)) == NULL) {
		free(sc);
		evutil_closesocket(fd);
		return;
	}
	sc->m = m;
	sc->next = m->scrapes;
	if (sc->next != NULL)
		sc->next->prev = &sc->next;
	sc->prev = &m->scrapes;
	m->scrapes = sc;
	m->nscrapes++;
	bufferevent_setwatermark(sc->bev, EV_READ, 0, METRICS_HEAD_MAX + 1);
	bufferevent_set_timeouts(sc->bev, &tv, &tv);
	bufferevent_setcb(sc->bev, on_scrape_read, NULL, on_scrape_event, sc);
	bufferevent_enable(sc->bev, EV_READ);
}

/* Is SS a loopback address (127/8, ::1)? */
static int
loopback(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in *sin = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)ss;

	if (ss->ss_family == AF_INET)
		return (ntohl(sin->sin_addr.s_addr) >> 24) == 127;
	return ss->ss_family == AF_INET6 &&
	    IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr);
}

/* Parses IPV4:PORT or [IPV6]:PORT (port 0 allowed) into SS; 0 or -1. */
static int
parse_inet(const char *spec, struct sockaddr_storage *ss, int *len)
{
	char addr[INET6_ADDRSTRLEN + 8];
	const char *colon = strrchr(spec, ':');
	size_t n = strlen(spec);

	/* libevent refuses port 0 (the kernel's pick): parse the rest alone. */
	if (n > 2 && strcmp(spec + n - 2, ":0") == 0)
		n -= 2;
	/* A port must be given, after the address ("[::1]" has none). */
	if (colon == NULL || colon[1] == '\0' ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
	    (spec[0] == '[' && colon[-1] != ']') || n >= sizeof(addr))
		return -1;
	memcpy(addr, spec, n);
	addr[n] = '\0';
	/* A bare IPv6 address parses as one with no port: refuse it. */
	if (addr[0] != '[' && strchr(addr, ':') != strrchr(addr, ':'))
		return -1;
	return evutil_parse_sockaddr_port(addr, (struct sockaddr *)ss, len);
}

static int
bind_unix(struct metrics *m, struct event_base *base, const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct stat sb;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_warnx("metrics: unix socket path too long: %s", path);
		return -1;
	}
	strcpy(sun.sun_path, path);
	if (lstat(path, &sb) == 0 && S_ISSOCK(sb.st_mode))
		unlink(path);
	m->lev = evconnlistener_new_bind(base, on_scrape, m,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 16,
	    (struct sockaddr *)&sun, sizeof(sun));
	if (m->lev == NULL) {
		log_warn("metrics: listen on unix:%s", path);
		return -1;
	}
	if ((m->unix_path = strdup(path)) == NULL)
		log_warnx("metrics: out of memory (unix:%s stays)", path);
	return 0;
}

int
metrics_listen(struct metrics *m, struct event_base *base, const char *spec,
    unsigned *port)
{
	struct sockaddr_storage ss = {0};
	int len = sizeof(ss);
	socklen_t slen = sizeof(ss);

	*port = 0;
	/* A relay serves nothing (the broker does); a shard's root serves
	 * the sums. */
	if (m->relay_fd != -1 || m->root != m)
		return -1;
	if (strncmp(spec, "unix:", 5) == 0)
		return bind_unix(m, base, spec + 5);
	if (parse_inet(spec, &ss, &len) != 0) {
		log_warnx("metrics: bad --metrics '%s': use 127.0.0.1:PORT, "
		          "[::1]:PORT or unix:PATH",
		    spec);
		return -1;
	}
	if (!loopback(&ss)) {
		log_warnx("metrics: --metrics '%s' is not a loopback address: "
		          "the metrics name hosts and rules and have no "
		          "authentication; use 127.0.0.1:PORT, [::1]:PORT or "
		          "unix:PATH (and a local agent to forward them)",
		    spec);
		return -1;
	}
	m->lev = evconnlistener_new_bind(base, on_scrape, m,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE,
	    16, (struct sockaddr *)&ss, len);
	if (m->lev == NULL) {
		log_warn("metrics: listen on %s", spec);
		return -1;
	}
	if (getsockname(evconnlistener_get_fd(m->lev), (struct sockaddr *)&ss,
	        &slen) == 0)
		*port = ntohs(ss.ss_family == AF_INET
		        ? ((struct sockaddr_in *)&ss)->sin_port
		        : ((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

/* --- the relay ------------------------------------------------------------ */

/*
 * A datagram: the version byte (RELAY_VERSION), the kind byte, then the
 * kind's fields in this order, numbers big-endian, strings as a 2-byte
 * length and that many bytes (printable: no NUL, no control byte):
 *
 *   REQUEST          flags u8 (1 decided, 2 leak, 4 decision_us given,
 *                    8 rule file given), port u16, rule_line u32,
 *                    decision_us u64 (0 when not given), then the
 *                    strings decision ("allow", "deny"), host, rule file
 *                    ("" when not given), via ("proxy", "socks",
 *                    "capture")
 *   BYTES            up u64, down u64
 *   CONNECTION       delta u8 (1: +1, 0xff: -1)
 *   DNS_ERROR, AUDIT_FAILURE   nothing
 *   UPSTREAM_ERROR   kind u8 (< METRICS_UP_KINDS)
 *   CONNECTED        us u64
 *   REFUSED          why u8 (< METRICS_REF_KINDS)
 *   SANDBOX          delta u8 (as CONNECTION)
 *
 * Numbers u64 must fit in int64_t.  Anything else, or bytes left over,
 * makes the datagram malformed.
 */
#define RELAY_MAX 1024 /* the longest datagram */
#define RELAY_STR_MAX 256 /* the longest string (a host label's length) */
#define RF_DECIDED 0x1
#define RF_LEAK 0x2
#define RF_US 0x4
#define RF_RULE 0x8
#define RF_ALL 0xf

struct wire {
	unsigned char b[RELAY_MAX];
	size_t n;
};

static void
put_u8(struct wire *w, unsigned v)
{
	w->b[w->n++] = (unsigned char)v;
}

static void
put_be(struct wire *w, uint64_t v, size_t bytes)
{
	while (bytes-- > 0)
		w->b[w->n++] = (unsigned char)(v >> (8 * bytes));
}

/*
 * Puts S (NULL: "") cut to MAX bytes, each byte a metrics label could
 * not take as it is (a control byte) made '?': what the engine sends is
 * always what metrics_absorb() takes, and the label text it makes the
 * same but for such bytes.
 */
static void
put_str(struct wire *w, const char *s, size_t max)
{
	size_t n = s != NULL ? strnlen(s, max) : 0, i;
	unsigned char c;

	put_be(w, n, 2);
	for (i = 0; i < n; i++) {
		c = (unsigned char)s[i];
		w->b[w->n++] = c < 0x20 || c == 0x7f ? '?' : c;
	}
}

/* One of the short names the relay takes: "allow", "proxy", ... */
static const char *const decisions[] = {"allow", "deny"};
static const char *const vias[] = {"proxy", "socks", "capture"};

static void
relay_request(struct metrics *m, const struct metrics_req *r)
{
	struct wire w = {.n = 0};
	unsigned flags = (r->decided ? RF_DECIDED : 0) |
	    (r->leak ? RF_LEAK : 0) | (r->decision_us >= 0 ? RF_US : 0) |
	    (r->rule_file != NULL ? RF_RULE : 0);

	put_u8(&w, RELAY_VERSION);
	put_u8(&w, RELAY_REQUEST);
	put_u8(&w, flags);
	put_be(&w, r->port > 0xffff ? 0 : r->port, 2);
	put_be(&w, r->rule_line, 4);
	put_be(&w, r->decision_us >= 0 ? (uint64_t)r->decision_us : 0, 8);
	put_str(&w, r->decision, 16);
	put_str(&w, r->host, HOST_LABEL_MAX);
	put_str(&w, r->rule_file, RULE_FILE_MAX);
	put_str(&w, r->via, 16);
	(void)relay_send(m, w.b, w.n);
}

/* The events with at most two numbers, A and B. */
static void
relay_event(struct metrics *m, unsigned kind, int64_t a, int64_t b)
{
	struct wire w = {.n = 0};

	/* A delta is one more or one fewer; 0 changes nothing to send. */
	if ((kind == RELAY_CONNECTION || kind == RELAY_SANDBOX) && a == 0)
		return;
	put_u8(&w, RELAY_VERSION);
	put_u8(&w, kind);
	switch (kind) {
	case RELAY_BYTES:
		put_be(&w, (uint64_t)a, 8);
		put_be(&w, (uint64_t)b, 8);
		break;
	case RELAY_CONNECTION:
	case RELAY_SANDBOX:
		put_u8(&w, a > 0 ? 1 : 0xff);
		break;
	case RELAY_UPSTREAM_ERROR:
	case RELAY_REFUSED:
		put_u8(&w, (unsigned)a);
		break;
	case RELAY_CONNECTED:
		put_be(&w, (uint64_t)a, 8);
		break;
	default:
		break;
	}
	(void)relay_send(m, w.b, w.n);
}

/*
 * Sends one datagram without waiting.  A full socket (EAGAIN: the broker
 * is slow to read) or a broker gone (EPIPE) drops the event, counted
 * here: the proxy never waits on metrics, whose counts are an estimate
 * to watch, while the audit log is the record that must be complete.
 * Blocking here would let a slow broker stall every connection of the
 * sandbox.
 */
static int
relay_send(struct metrics *m, const unsigned char *p, size_t n)
{
	ssize_t w;

	do
		w = send(m->relay_fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	while (w == -1 && errno == EINTR);
	if (w == (ssize_t)n)
		return 0;
	m->relay_dropped++;
	return -1;
}

struct metrics *
metrics_relay_new(int fd)
{
	struct metrics *m = NULL;
	socklen_t len = sizeof(int);
	int type = 0, fl;

	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 ||
	    type != SOCK_SEQPACKET || (fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1 ||
	    fcntl(fd, F_SETFD, FD_CLOEXEC) == -1 ||
	    (m = metrics_new(0)) == NULL) {
		if (fd >= 0)
			close(fd);
		if (type != 0 && type != SOCK_SEQPACKET)
			errno = EINVAL;
		return NULL;
	}
	m->relay_fd = fd;
	return m;
}

/* A datagram being read: *BAD is set by the first read past its end. */
struct rd {
	const unsigned char *p;
	size_t n, at;
	int bad;
};

static uint64_t
get_be(struct rd *r, size_t bytes)
{
	uint64_t v = 0;

	if (r->bad || r->n - r->at < bytes) {
		r->bad = 1;
		return 0;
	}
	while (bytes-- > 0)
		v = v << 8 | r->p[r->at++];
	return v;
}

/* A u64 that must fit in int64_t. */
static int64_t
get_i64(struct rd *r)
{
	uint64_t v = get_be(r, 8);

	if (v > INT64_MAX)
		r->bad = 1;
	return (int64_t)v;
}

/* A +1/-1 byte. */
static int
get_delta(struct rd *r)
{
	uint64_t v = get_be(r, 1);

	if (v != 1 && v != 0xff)
		r->bad = 1;
	return v == 1 ? 1 : -1;
}

/*
 * A string into BUF (MAX bytes and a NUL): refused when longer, or when
 * it holds a NUL or a control byte.
 */
static void
get_str(struct rd *r, char *buf, size_t max)
{
	size_t n = (size_t)get_be(r, 2), i;

	buf[0] = '\0';
	if (r->bad || n > max || r->n - r->at < n) {
		r->bad = 1;
		return;
	}
	for (i = 0; i < n; i++) {
		buf[i] = (char)r->p[r->at + i];
		if (r->p[r->at + i] < 0x20 || r->p[r->at + i] == 0x7f)
			r->bad = 1;
	}
	buf[n] = '\0';
	r->at += n;
}

/* The entry of NAMES equal to S, or NULL. */
static const char *
one_of(const char *s, const char *const *names, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return names[i];
	return NULL;
}

/* Decodes and counts a REQUEST; 0 or -1 (nothing counted). */
static int
absorb_request(struct metrics *m, struct rd *r)
{
	char decision[17], host[HOST_LABEL_MAX + 1], rule[RULE_FILE_MAX + 1],
	    via[17];
	struct metrics_req q = {0};
	unsigned flags = (unsigned)get_be(r, 1);

	q.port = (unsigned)get_be(r, 2);
	q.rule_line = (unsigned)get_be(r, 4);
	q.decision_us = get_i64(r);
	get_str(r, decision, 16);
	get_str(r, host, HOST_LABEL_MAX);
	get_str(r, rule, RULE_FILE_MAX);
	get_str(r, via, 16);
	q.decision = one_of(decision, decisions, 2);
	q.via = one_of(via, vias, 3);
	if (r->bad || r->at != r->n || (flags & ~RF_ALL) ||
	    q.decision == NULL || q.via == NULL ||
	    (!(flags & RF_US) && q.decision_us != 0) ||
	    (!(flags & RF_RULE) && rule[0] != '\0'))
		return -1;
	q.host = host[0] != '\0' ? host : NULL;
	q.rule_file = flags & RF_RULE ? rule : NULL;
	q.decided = (flags & RF_DECIDED) != 0;
	q.leak = (flags & RF_LEAK) != 0;
	if (!(flags & RF_US))
		q.decision_us = -1;
	metrics_request(m, &q);
	return 0;
}

/*
 * Decodes the rest of an event other than REQUEST into A and B, checked;
 * 0 or -1.
 */
static int
absorb_fields(unsigned kind, struct rd *r, int64_t *a, int64_t *b)
{
	*a = *b = 0;
	switch (kind) {
	case RELAY_BYTES:
		*a = get_i64(r);
		*b = get_i64(r);
		break;
	case RELAY_CONNECTION:
	case RELAY_SANDBOX:
		*a = get_delta(r);
		break;
	case RELAY_UPSTREAM_ERROR:
		*a = (int64_t)get_be(r, 1);
		r->bad |= *a >= METRICS_UP_KINDS;
		break;
	case RELAY_REFUSED:
		*a = (int64_t)get_be(r, 1);
		r->bad |= *a >= METRICS_REF_KINDS;
		break;
	case RELAY_CONNECTED:
		*a = get_i64(r);
		break;
	case RELAY_DNS_ERROR:
	case RELAY_AUDIT_FAILURE:
		break;
	default:
		return -1;
	}
	return r->bad || r->at != r->n ? -1 : 0;
}

/* Counts the event KIND with A and B, as its metrics_* call does. */
static void
absorb_apply(struct metrics *m, unsigned kind, int64_t a, int64_t b)
{
	switch (kind) {
	case RELAY_BYTES:
		metrics_bytes(m, (uint64_t)a, (uint64_t)b);
		break;
	case RELAY_CONNECTION:
		metrics_connection(m, (int)a);
		break;
	case RELAY_SANDBOX:
		metrics_sandbox(m, (int)a);
		break;
	case RELAY_UPSTREAM_ERROR:
		metrics_upstream_error(m, (enum metrics_upstream)a);
		break;
	case RELAY_REFUSED:
		metrics_refused(m, (enum metrics_refusal)a);
		break;
	case RELAY_CONNECTED:
		metrics_connected(m, a);
		break;
	case RELAY_DNS_ERROR:
		metrics_dns_error(m);
		break;
	case RELAY_AUDIT_FAILURE:
		metrics_audit_failure(m);
		break;
	}
}

int
metrics_absorb(struct metrics *m, const void *buf, size_t len)
{
	struct rd r = {.p = buf, .n = len, .at = 0, .bad = 0};
	unsigned version, kind;
	int64_t a, b;
	int rc = -1;

	if (m == NULL)
		return -1;
	atomic_store_explicit(&m->ctr[CTR_BROKER], 1, memory_order_relaxed);
	version = (unsigned)get_be(&r, 1);
	kind = (unsigned)get_be(&r, 1);
	if (r.bad || version != RELAY_VERSION)
		goto out;
	if (kind == RELAY_REQUEST)
		rc = absorb_request(m, &r);
	else if ((rc = absorb_fields(kind, &r, &a, &b)) == 0)
		absorb_apply(m, kind, a, b);
out:
	if (rc != 0)
		bump(&m->ctr[CTR_RELAY_ERRORS], 1);
	return rc;
}

void
metrics_sandbox(struct metrics *m, int delta)
{
	if (m == NULL)
		return;
	if (m->relay_fd != -1) {
		relay_event(m, RELAY_SANDBOX, delta, 0);
		return;
	}
	atomic_store_explicit(&m->ctr[CTR_BROKER], 1, memory_order_relaxed);
	bump(&m->ctr[CTR_SANDBOXES_ACTIVE], (uint64_t)(int64_t)delta);
	if (delta > 0)
		bump(&m->ctr[CTR_SANDBOXES_TOTAL], 1);
}

void
metrics_refused(struct metrics *m, enum metrics_refusal why)
{
	if (m == NULL)
		return;
	if (m->relay_fd != -1) {
		relay_event(m, RELAY_REFUSED, why, 0);
		return;
	}
	atomic_store_explicit(&m->ctr[CTR_BROKER], 1, memory_order_relaxed);
	if (why < METRICS_REF_KINDS)
		bump(&m->ctr[CTR_REFUSED + why], 1);
}

uint64_t
metrics_relay_dropped(const struct metrics *m)
{
	return m->relay_dropped;
}
