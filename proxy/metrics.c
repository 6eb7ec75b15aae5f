/*
 * metrics.c: the proxy's counters and histograms, their text exposition
 * (Prometheus format 0.0.4), and the responder that serves them.
 *
 * Series of pinhole_requests_total are keyed by their escaped label text,
 * which is also what is rendered: one string per series, no second table.
 * The responder reads one bounded head (METRICS_HEAD_MAX bytes, within
 * SCRAPE_TIMEOUT_S), answers once and closes; at most SCRAPES_MAX scrapes
 * are open at once, more are closed at accept.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
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

struct histogram {
	const struct bucket *b;
	size_t nb;
	uint64_t count[NB_MAX]; /* per bucket, not cumulative */
	uint64_t n;
	int64_t sum_us;
};

struct series {
	char *labels; /* escaped, as rendered */
	uint64_t n;
};

struct scrape {
	struct metrics *m;
	struct bufferevent *bev;
	struct scrape *next, **prev;
};

struct metrics {
	size_t max_hosts;
	struct htab *hosts; /* distinct host labels so far */
	struct htab *index; /* label text -> index in series */
	struct series *series;
	size_t nseries, cap;
	uint64_t overflow; /* requests past METRICS_SERIES_MAX series */
	uint64_t denials, leaks, bytes_up, bytes_down;
	uint64_t conns_total;
	int64_t conns_active;
	uint64_t dns_errors, audit_failures;
	uint64_t upstream[METRICS_UP_KINDS];
	struct histogram decision, connect;
	time_t start;
	struct evconnlistener *lev;
	char *unix_path; /* removed at free */
	struct scrape *scrapes;
	size_t nscrapes;
};

struct metrics *
metrics_new(size_t max_hosts)
{
	struct metrics *m;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		return NULL;
	m->max_hosts = max_hosts ? max_hosts : METRICS_HOSTS_DEFAULT;
	m->hosts = htab_new();
	m->index = htab_new();
	m->decision.b = decision_buckets;
	m->decision.nb = DECISION_NB;
	m->connect.b = connect_buckets;
	m->connect.nb = CONNECT_NB;
	m->start = time(NULL);
	return m;
}

static void scrape_free(struct scrape *sc);

void
metrics_free(struct metrics *m)
{
	size_t i;

	if (m == NULL)
		return;
	while (m->scrapes != NULL)
		scrape_free(m->scrapes);
	if (m->lev != NULL)
		evconnlistener_free(m->lev);
	if (m->unix_path != NULL) {
		unlink(m->unix_path);
		free(m->unix_path);
	}
	for (i = 0; i < m->nseries; i++)
		free(m->series[i].labels);
	free(m->series);
	htab_free(m->hosts);
	htab_free(m->index);
	free(m);
}

/* --- counting ------------------------------------------------------------- */

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

/* The host's label: HOST while fewer than max_hosts are known, "other". */
static const char *
host_label(struct metrics *m, const char *host)
{
	size_t n = strlen(host);

	if (htab_find(m->hosts, host, n) != NULL)
		return host;
	if (htab_count(m->hosts) >= m->max_hosts ||
	    htab_try_add(m->hosts, host, n, 0, 0) != 0)
		return "other";
	return host;
}

static void
observe(struct histogram *h, int64_t us)
{
	size_t i;

	if (us < 0)
		us = 0;
	for (i = 0; i < h->nb && us > h->b[i].us; i++)
		;
	if (i < h->nb)
		h->count[i]++;
	h->n++;
	h->sum_us += us;
}

/* Counts one request in the series LABELS names (made if there is room). */
static void
count_series(struct metrics *m, const char *labels)
{
	const struct htab_list *l;
	struct series *ns;
	size_t n = strlen(labels), cap;

	if ((l = htab_find(m->index, labels, n)) != NULL && l[0].n > 0) {
		m->series[l[0].ids[0]].n++;
		return;
	}
	if (m->nseries == m->cap) {
		cap = m->cap ? m->cap * 2 : 32;
		if (m->nseries >= METRICS_SERIES_MAX ||
		    (ns = realloc(m->series, cap * sizeof(*ns))) == NULL)
			goto overflow;
		m->series = ns;
		m->cap = cap;
	}
	if ((m->series[m->nseries].labels = strdup(labels)) == NULL)
		goto overflow;
	if (htab_try_add(m->index, labels, n, 0, (uint32_t)m->nseries) != 0) {
		free(m->series[m->nseries].labels);
		goto overflow;
	}
	m->series[m->nseries++].n = 1;
	return;
overflow:
	m->overflow++;
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
	escape(buf, len, &at, host_label(m, r->host ? r->host : ""), 256);
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

	if (m == NULL)
		return;
	labels(m, r, buf, sizeof(buf));
	count_series(m, buf);
	if (strcmp(r->decision, "allow") != 0)
		m->denials++;
	if (r->leak)
		m->leaks++;
	if (r->decision_us >= 0)
		observe(&m->decision, r->decision_us);
}

void
metrics_bytes(struct metrics *m, uint64_t up, uint64_t down)
{
	if (m == NULL)
		return;
	m->bytes_up += up;
	m->bytes_down += down;
}

void
metrics_connection(struct metrics *m, int delta)
{
	if (m == NULL)
		return;
	m->conns_active += delta;
	if (delta > 0)
		m->conns_total++;
}

void
metrics_dns_error(struct metrics *m)
{
	if (m != NULL)
		m->dns_errors++;
}

void
metrics_upstream_error(struct metrics *m, enum metrics_upstream kind)
{
	if (m != NULL && kind < METRICS_UP_KINDS)
		m->upstream[kind]++;
}

void
metrics_connected(struct metrics *m, int64_t us)
{
	if (m != NULL)
		observe(&m->connect, us);
}

void
metrics_audit_failure(struct metrics *m)
{
	if (m != NULL)
		m->audit_failures++;
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
histogram(
    FILE *f, const char *name, const char *help, const struct histogram *h)
{
	uint64_t cum = 0;
	size_t i;

	head(f, name, "histogram", help);
	for (i = 0; i < h->nb; i++) {
		cum += h->count[i];
		fprintf(f, "%s_bucket{le=\"%s\"} %llu\n", name, h->b[i].le,
		    (unsigned long long)cum);
	}
	fprintf(
	    f, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)h->n);
	fprintf(f, "%s_sum %lld.%06lld\n", name,
	    (long long)(h->sum_us / 1000000), (long long)(h->sum_us % 1000000));
	fprintf(f, "%s_count %llu\n", name, (unsigned long long)h->n);
}

static void
render_requests(const struct metrics *m, FILE *f)
{
	size_t i;

	head(f, "pinhole_requests_total", "counter",
	    "Requests decided, by decision, host, port, deciding rule "
	    "(file:line) and how the client came");
	for (i = 0; i < m->nseries; i++)
		fprintf(f, "pinhole_requests_total{%s} %llu\n",
		    m->series[i].labels, (unsigned long long)m->series[i].n);
	if (m->overflow > 0)
		fprintf(f,
		    "pinhole_requests_total{decision=\"other\",host=\"other\","
		    "port=\"other\",rule=\"other\",via=\"other\"} %llu\n",
		    (unsigned long long)m->overflow);
}

static void
render_upstream(const struct metrics *m, FILE *f)
{
	static const char *const kinds[METRICS_UP_KINDS] = {
	    "connect", "timeout", "tls"};
	size_t i;

	head(f, "pinhole_upstream_errors_total", "counter",
	    "Upstreams that could not be used, by kind");
	for (i = 0; i < METRICS_UP_KINDS; i++)
		fprintf(f, "pinhole_upstream_errors_total{kind=\"%s\"} %llu\n",
		    kinds[i], (unsigned long long)m->upstream[i]);
}

int
metrics_render(const struct metrics *m, FILE *f)
{
	render_requests(m, f);
	counter(f, "pinhole_denials_total", "Requests denied", m->denials);
	counter(f, "pinhole_leaks_total",
	    "Requests denied as leak attempts (a stand-in sent elsewhere)",
	    m->leaks);
	head(f, "pinhole_bytes_total", "counter",
	    "Bytes moved by finished requests and tunnels");
	fprintf(f, "pinhole_bytes_total{direction=\"up\"} %llu\n",
	    (unsigned long long)m->bytes_up);
	fprintf(f, "pinhole_bytes_total{direction=\"down\"} %llu\n",
	    (unsigned long long)m->bytes_down);
	head(f, "pinhole_connections_active", "gauge",
	    "Client connections open");
	fprintf(
	    f, "pinhole_connections_active %lld\n", (long long)m->conns_active);
	counter(f, "pinhole_connections_total", "Client connections accepted",
	    m->conns_total);
	counter(f, "pinhole_dns_errors_total",
	    "DNS lookups of upstream names that failed", m->dns_errors);
	render_upstream(m, f);
	counter(f, "pinhole_audit_write_failures_total",
	    "Audit records that could not be written", m->audit_failures);
	histogram(f, "pinhole_decision_seconds",
	    "Time from a request head read to its decision", &m->decision);
	histogram(f, "pinhole_connect_seconds",
	    "Time from a decision to its upstream connection", &m->connect);
	head(f, "process_start_time_seconds", "gauge",
	    "Start time of the process since the Unix epoch");
	fprintf(f, "process_start_time_seconds %lld\n", (long long)m->start);
	return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

void
metrics_set_start(struct metrics *m, long long start)
{
	m->start = (time_t)start;
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

/* SCAFFOLD (issue 13): the relay, the sandboxes gauge and refusals. */
struct metrics *
metrics_relay_new(int fd)
{
	(void)close(fd);
	return NULL;
}

int
metrics_absorb(struct metrics *m, const void *buf, size_t len)
{
	(void)m;
	(void)buf;
	(void)len;
	return -1;
}

void
metrics_sandbox(struct metrics *m, int delta)
{
	(void)m;
	(void)delta;
}

void
metrics_refused(struct metrics *m, enum metrics_refusal why)
{
	(void)m;
	(void)why;
}
