/*
 * test_metrics.c: proxy/metrics.c: counting and the exact text of a small
 * case, label escaping (a rule file name with a quote, a backslash and a
 * newline), the host cap (later hosts under host="other"), the series
 * cap, cumulative histogram buckets at their bounds, and the request-head
 * parser of the responder (every cut of a good head is MORE), and the
 * addresses it refuses to listen on (anything but loopback or unix:).
 * A broker's relay: every kind of event sent on a socketpair and
 * absorbed on the other side renders as the local calls do; a full
 * socket drops without blocking; malformed datagrams (every cut of a
 * valid one, unknown kinds, bad strings and values) are refused whole
 * and counted.
 * Shards: a root and its shards fed a stream of events render the exact
 * text of one object fed the same; the host and series caps hold across
 * shards; worker threads hammer their own shards while the main thread
 * renders, every scrape whole and the last one exact.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <event2/event.h>

#define METRICS_INTERNAL
#include "proxy/metrics.h"

/* The text of M, malloc'd. */
static char *
render(const struct metrics *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(metrics_render(m, f), 0);
	fclose(f);
	return buf;
}

static void
req(struct metrics *m, const char *decision, const char *host, unsigned port,
    const char *file, unsigned line, int leak, int64_t us)
{
	struct metrics_req r = {0};

	r.decision = decision;
	r.host = host;
	r.port = port;
	r.rule_file = file;
	r.rule_line = line;
	r.via = "proxy";
	r.decided = 1;
	r.leak = leak;
	r.decision_us = us;
	metrics_request(m, &r);
}

/* Does TEXT hold LINE as a whole line? */
static int
has_line(const char *text, const char *line)
{
	size_t n = strlen(line);
	const char *p;

	for (p = text; (p = strstr(p, line)) != NULL; p++)
		if ((p == text || p[-1] == '\n') && p[n] == '\n')
			return 1;
	return 0;
}

static const char small_text[] =
    "# HELP pinhole_requests_total Requests decided, by decision, host, "
    "port, deciding rule (file:line) and how the client came\n"
    "# TYPE pinhole_requests_total counter\n"
    "pinhole_requests_total{decision=\"allow\",host=\"web.test\","
    "port=\"443\",rule=\"a.conf:3\",via=\"proxy\"} 3\n"
    "pinhole_requests_total{decision=\"deny\",host=\"x.test\",port=\"80\","
    "rule=\"default\",via=\"proxy\"} 1\n"
    "pinhole_requests_total{decision=\"deny\",host=\"\",port=\"\","
    "rule=\"none\",via=\"socks\"} 1\n"
    "# HELP pinhole_denials_total Requests denied\n"
    "# TYPE pinhole_denials_total counter\n"
    "pinhole_denials_total 2\n"
    "# HELP pinhole_leaks_total Requests denied as leak attempts (a "
    "stand-in sent elsewhere)\n"
    "# TYPE pinhole_leaks_total counter\n"
    "pinhole_leaks_total 1\n"
    "# HELP pinhole_bytes_total Bytes moved by finished requests and "
    "tunnels\n"
    "# TYPE pinhole_bytes_total counter\n"
    "pinhole_bytes_total{direction=\"up\"} 10\n"
    "pinhole_bytes_total{direction=\"down\"} 2000\n"
    "# HELP pinhole_connections_active Client connections open\n"
    "# TYPE pinhole_connections_active gauge\n"
    "pinhole_connections_active 1\n"
    "# HELP pinhole_connections_total Client connections accepted\n"
    "# TYPE pinhole_connections_total counter\n"
    "pinhole_connections_total 2\n"
    "# HELP pinhole_dns_errors_total DNS lookups of upstream names that "
    "failed\n"
    "# TYPE pinhole_dns_errors_total counter\n"
    "pinhole_dns_errors_total 1\n"
    "# HELP pinhole_upstream_errors_total Upstreams that could not be "
    "used, by kind\n"
    "# TYPE pinhole_upstream_errors_total counter\n"
    "pinhole_upstream_errors_total{kind=\"connect\"} 0\n"
    "pinhole_upstream_errors_total{kind=\"timeout\"} 1\n"
    "pinhole_upstream_errors_total{kind=\"tls\"} 2\n"
    "# HELP pinhole_audit_write_failures_total Audit records that could "
    "not be written\n"
    "# TYPE pinhole_audit_write_failures_total counter\n"
    "pinhole_audit_write_failures_total 1\n"
    "# HELP pinhole_decision_seconds Time from a request head read to its "
    "decision\n"
    "# TYPE pinhole_decision_seconds histogram\n"
    "pinhole_decision_seconds_bucket{le=\"5e-05\"} 1\n"
    "pinhole_decision_seconds_bucket{le=\"0.0001\"} 1\n"
    "pinhole_decision_seconds_bucket{le=\"0.00025\"} 1\n"
    "pinhole_decision_seconds_bucket{le=\"0.0005\"} 1\n"
    "pinhole_decision_seconds_bucket{le=\"0.001\"} 2\n"
    "pinhole_decision_seconds_bucket{le=\"0.0025\"} 2\n"
    "pinhole_decision_seconds_bucket{le=\"0.005\"} 2\n"
    "pinhole_decision_seconds_bucket{le=\"0.01\"} 2\n"
    "pinhole_decision_seconds_bucket{le=\"0.1\"} 2\n"
    "pinhole_decision_seconds_bucket{le=\"1\"} 2\n"
    "pinhole_decision_seconds_bucket{le=\"+Inf\"} 3\n"
    "pinhole_decision_seconds_sum 2.000750\n"
    "pinhole_decision_seconds_count 3\n"
    "# HELP pinhole_connect_seconds Time from a decision to its upstream "
    "connection\n"
    "# TYPE pinhole_connect_seconds histogram\n"
    "pinhole_connect_seconds_bucket{le=\"0.001\"} 0\n"
    "pinhole_connect_seconds_bucket{le=\"0.005\"} 1\n"
    "pinhole_connect_seconds_bucket{le=\"0.01\"} 1\n"
    "pinhole_connect_seconds_bucket{le=\"0.025\"} 1\n"
    "pinhole_connect_seconds_bucket{le=\"0.05\"} 1\n"
    "pinhole_connect_seconds_bucket{le=\"0.1\"} 1\n"
    "pinhole_connect_seconds_bucket{le=\"0.25\"} 1\n"
    "pinhole_connect_seconds_bucket{le=\"0.5\"} 1\n"
    "pinhole_connect_seconds_bucket{le=\"1\"} 1\n"
    "pinhole_connect_seconds_bucket{le=\"2.5\"} 1\n"
    "pinhole_connect_seconds_bucket{le=\"5\"} 1\n"
    "pinhole_connect_seconds_bucket{le=\"10\"} 1\n"
    "pinhole_connect_seconds_bucket{le=\"+Inf\"} 1\n"
    "pinhole_connect_seconds_sum 0.003000\n"
    "pinhole_connect_seconds_count 1\n"
    "# HELP process_start_time_seconds Start time of the process since "
    "the Unix epoch\n"
    "# TYPE process_start_time_seconds gauge\n"
    "process_start_time_seconds 1700000000\n";

static void
test_small_text(void **state)
{
	struct metrics *m = metrics_new(0);
	struct metrics_req r = {0};
	char *text;

	(void)state;
	metrics_set_start(m, 1700000000);
	req(m, "allow", "web.test", 443, "a.conf", 3, 0, 50);
	req(m, "allow", "web.test", 443, "a.conf", 3, 0, -1);
	req(m, "deny", "x.test", 80, NULL, 0, 1, 700);
	/* Refused before the policy: no host, rule "none", no latency. */
	r.decision = "deny";
	r.via = "socks";
	r.decision_us = -1;
	metrics_request(m, &r);
	/* Past every bucket: only +Inf and the sum. */
	req(m, "allow", "web.test", 443, "a.conf", 3, 0, 2000000);
	metrics_bytes(m, 10, 2000);
	metrics_connection(m, 1);
	metrics_connection(m, 1);
	metrics_connection(m, -1);
	metrics_dns_error(m);
	metrics_upstream_error(m, METRICS_UP_TIMEOUT);
	metrics_upstream_error(m, METRICS_UP_TLS);
	metrics_upstream_error(m, METRICS_UP_TLS);
	metrics_connected(m, 3000);
	metrics_audit_failure(m);
	text = render(m);
	assert_string_equal(text, small_text);
	free(text);
	metrics_free(m);
}

/* Label values escape \\, " and newline; rule file names are not checked. */
static void
test_escape(void **state)
{
	struct metrics *m = metrics_new(0);
	char *text;

	(void)state;
	req(m, "allow", "h.test", 1, "a\"b\\c\nd.conf", 7, 0, -1);
	text = render(m);
	assert_true(has_line(text,
	    "pinhole_requests_total{decision=\"allow\",host=\"h.test\","
	    "port=\"1\",rule=\"a\\\"b\\\\c\\nd.conf:7\",via=\"proxy\"} 1"));
	free(text);
	metrics_free(m);
}

/* Past max_hosts distinct hosts, the rest count under host="other". */
static void
test_host_cap(void **state)
{
	struct metrics *m = metrics_new(3);
	char *text, host[32];
	int i;

	(void)state;
	for (i = 0; i < 6; i++) {
		snprintf(host, sizeof(host), "h%d.test", i);
		req(m, "deny", host, 80, NULL, 0, 0, -1);
	}
	req(m, "deny", "h1.test", 80, NULL, 0, 0, -1); /* known: its own */
	text = render(m);
	assert_true(has_line(text,
	    "pinhole_requests_total{decision=\"deny\",host=\"h1.test\","
	    "port=\"80\",rule=\"default\",via=\"proxy\"} 2"));
	assert_true(has_line(text,
	    "pinhole_requests_total{decision=\"deny\",host=\"other\","
	    "port=\"80\",rule=\"default\",via=\"proxy\"} 3"));
	assert_null(strstr(text, "h3.test"));
	assert_true(has_line(text, "pinhole_denials_total 7"));
	free(text);
	metrics_free(m);
}

/* Past METRICS_SERIES_MAX series, requests count in one "other" series. */
static void
test_series_cap(void **state)
{
	struct metrics *m = metrics_new(0);
	char *text;
	unsigned p;

	(void)state;
	for (p = 1; p <= METRICS_SERIES_MAX + 5; p++)
		req(m, "allow", "h.test", p, "a.conf", 1, 0, -1);
	req(m, "allow", "h.test", 1, "a.conf", 1, 0, -1);
	text = render(m);
	assert_true(has_line(text,
	    "pinhole_requests_total{decision=\"allow\",host=\"h.test\","
	    "port=\"1\",rule=\"a.conf:1\",via=\"proxy\"} 2"));
	assert_true(has_line(text,
	    "pinhole_requests_total{decision=\"other\",host=\"other\","
	    "port=\"other\",rule=\"other\",via=\"other\"} 5"));
	free(text);
	metrics_free(m);
}

/* Buckets are cumulative, each bound inclusive. */
static void
test_buckets(void **state)
{
	struct metrics *m = metrics_new(0);
	char *text;

	(void)state;
	metrics_connected(m, 1000); /* le 0.001 */
	metrics_connected(m, 1001); /* le 0.005 */
	metrics_connected(m, 0);
	metrics_connected(m, -5); /* a clock step: counted as 0 */
	metrics_connected(m, 10000001); /* +Inf only */
	text = render(m);
	assert_true(
	    has_line(text, "pinhole_connect_seconds_bucket{le=\"0.001\"} 3"));
	assert_true(
	    has_line(text, "pinhole_connect_seconds_bucket{le=\"0.005\"} 4"));
	assert_true(
	    has_line(text, "pinhole_connect_seconds_bucket{le=\"10\"} 4"));
	assert_true(
	    has_line(text, "pinhole_connect_seconds_bucket{le=\"+Inf\"} 5"));
	assert_true(has_line(text, "pinhole_connect_seconds_sum 10.002002"));
	assert_true(has_line(text, "pinhole_connect_seconds_count 5"));
	free(text);
	metrics_free(m);
}

static void
test_parse_head(void **state)
{
	static const struct {
		const char *head;
		enum metrics_head want;
	} cases[] = {
	    {"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", METRICS_HEAD_GET},
	    {"GET /metrics HTTP/1.0\n\n", METRICS_HEAD_GET},
	    {"GET /metrics?x=1 HTTP/1.1\r\n\r\n", METRICS_HEAD_GET},
	    {"GET /metricsx HTTP/1.1\r\n\r\n", METRICS_HEAD_NOT_FOUND},
	    {"GET / HTTP/1.1\r\n\r\n", METRICS_HEAD_NOT_FOUND},
	    {"POST /metrics HTTP/1.1\r\n\r\n", METRICS_HEAD_METHOD},
	    {"HEAD /metrics HTTP/1.1\r\n\r\n", METRICS_HEAD_METHOD},
	    {"GET /metrics HTTP/2.0\r\n\r\n", METRICS_HEAD_BAD},
	    {"GET /metrics HTTP/1.1 \r\n\r\n", METRICS_HEAD_BAD},
	    {"GET  /metrics HTTP/1.1\r\n\r\n", METRICS_HEAD_BAD},
	    {"get /metrics HTTP/1.1\r\n\r\n", METRICS_HEAD_BAD},
	    {"GET\r\n\r\n", METRICS_HEAD_BAD},
	    {"\r\n\r\n", METRICS_HEAD_BAD},
	    {"GET /metrics HTTP/1.1\r\nX: \001\r\n\r\n", METRICS_HEAD_BAD},
	    {"GET /metrics HTTP/1.1\r\nX: \r\r\n\r\n", METRICS_HEAD_BAD},
	    {"GET /metrics HTTP/1.1\r\nX: a\tb\r\n\r\n", METRICS_HEAD_GET},
	    {"GET /metrics HTTP/1.1\r\n", METRICS_HEAD_MORE},
	};
	const char *good = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
	char *big;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(
		    metrics_parse_head(cases[i].head, strlen(cases[i].head)),
		    cases[i].want);
	for (i = 0; i < strlen(good); i++)
		assert_int_equal(
		    metrics_parse_head(good, i), METRICS_HEAD_MORE);
	/* No end within METRICS_HEAD_MAX bytes: bad, never more. */
	big = malloc(METRICS_HEAD_MAX + 10);
	memset(big, 'a', METRICS_HEAD_MAX + 10);
	assert_int_equal(
	    metrics_parse_head(big, METRICS_HEAD_MAX - 1), METRICS_HEAD_MORE);
	assert_int_equal(
	    metrics_parse_head(big, METRICS_HEAD_MAX), METRICS_HEAD_BAD);
	assert_int_equal(
	    metrics_parse_head(big, METRICS_HEAD_MAX + 10), METRICS_HEAD_BAD);
	free(big);
}

/* Only loopback or a Unix socket: the counts name hosts and rules. */
static void
test_listen_loopback_only(void **state)
{
	static const char *const refused[] = {
	    "192.0.2.1:0",
	    "0.0.0.0:0",
	    "[::]:0",
	    "[2001:db8::1]:0",
	    "localhost:0",
	    "127.0.0.1",
	    "::1",
	    "[::1]",
	    "",
	    "unix",
	    "127.0.0.1:80x",
	    "127.0.0.1:",
	};
	struct event_base *base = event_base_new();
	struct metrics *m;
	unsigned port;
	size_t i;

	(void)state;
	assert_non_null(base);
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		m = metrics_new(0);
		port = 1;
		assert_int_equal(
		    metrics_listen(m, base, refused[i], &port), -1);
		assert_int_equal(port, 0);
		metrics_free(m);
	}
	m = metrics_new(0);
	assert_int_equal(metrics_listen(m, base, "127.0.0.2:0", &port), 0);
	assert_true(port > 0);
	metrics_free(m);
	event_base_free(base);
}

/* --- the relay ----------------------------------------------------------- */

/* What a broker adds, between the histograms and the start time. */
static const char broker_text[] =
    "# HELP pinhole_sandboxes_active Sandboxes the broker serves\n"
    "# TYPE pinhole_sandboxes_active gauge\n"
    "pinhole_sandboxes_active 1\n"
    "# HELP pinhole_sandboxes_total Engines the broker started, one per client "
    "accepted\n"
    "# TYPE pinhole_sandboxes_total counter\n"
    "pinhole_sandboxes_total 2\n"
    "# HELP pinhole_broker_refused_total Clients the broker refused, by "
    "reason\n"
    "# TYPE pinhole_broker_refused_total counter\n"
    "pinhole_broker_refused_total{reason=\"policy\"} 1\n"
    "pinhole_broker_refused_total{reason=\"limit\"} 0\n"
    "pinhole_broker_refused_total{reason=\"protocol\"} 0\n"
    "pinhole_broker_refused_total{reason=\"setup\"} 2\n"
    "# HELP pinhole_relay_errors_total Malformed metrics datagrams from "
    "sandbox engines, refused\n"
    "# TYPE pinhole_relay_errors_total counter\n"
    "pinhole_relay_errors_total 0\n";

/* SMALL_TEXT with BROKER_TEXT before the start time. */
static char *
small_broker_text(void)
{
	const char *at = strstr(small_text, "# HELP process_start");
	char *t;

	assert_non_null(at);
	assert_true(asprintf(&t, "%.*s%s%s", (int)(at - small_text), small_text,
	                broker_text, at) > 0);
	return t;
}

/* test_small_text's events, and a broker's, counted in M. */
static void
small_events(struct metrics *m)
{
	struct metrics_req r = {0};

	req(m, "allow", "web.test", 443, "a.conf", 3, 0, 50);
	req(m, "allow", "web.test", 443, "a.conf", 3, 0, -1);
	req(m, "deny", "x.test", 80, NULL, 0, 1, 700);
	r.decision = "deny";
	r.via = "socks";
	r.decision_us = -1;
	metrics_request(m, &r);
	req(m, "allow", "web.test", 443, "a.conf", 3, 0, 2000000);
	metrics_bytes(m, 10, 2000);
	metrics_connection(m, 1);
	metrics_connection(m, 1);
	metrics_connection(m, -1);
	metrics_dns_error(m);
	metrics_upstream_error(m, METRICS_UP_TIMEOUT);
	metrics_upstream_error(m, METRICS_UP_TLS);
	metrics_upstream_error(m, METRICS_UP_TLS);
	metrics_connected(m, 3000);
	metrics_audit_failure(m);
	metrics_sandbox(m, 1);
	metrics_sandbox(m, 1);
	metrics_sandbox(m, -1);
	/* no change: a relay sends nothing */
	metrics_sandbox(m, 0);
	metrics_connection(m, 0);
	metrics_refused(m, METRICS_REF_POLICY);
	metrics_refused(m, METRICS_REF_SETUP);
	metrics_refused(m, METRICS_REF_SETUP);
}

/* A relay on one end of a SOCK_SEQPACKET pair; *PEER the other end. */
static struct metrics *
relay_pair(int *peer)
{
	struct metrics *m;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_non_null(m = metrics_relay_new(sv[0]));
	*peer = sv[1];
	return m;
}

/* Absorbs every datagram waiting on FD into M; returns how many. */
static size_t
drain(int fd, struct metrics *m)
{
	unsigned char buf[2048];
	ssize_t n;
	size_t k = 0;

	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		assert_int_equal(metrics_absorb(m, buf, (size_t)n), 0);
		k++;
	}
	return k;
}

/* Every kind of event, relayed and absorbed, renders as counted here. */
static void
test_relay(void **state)
{
	struct metrics *m = metrics_new(0), *relay;
	unsigned port;
	char *text, *want;
	int peer;

	(void)state;
	relay = relay_pair(&peer);
	metrics_set_start(m, 1700000000);
	small_events(relay);
	assert_int_equal(metrics_relay_dropped(relay), 0);
	assert_int_equal(drain(peer, m), 21);
	text = render(m);
	want = small_broker_text();
	assert_string_equal(text, want);
	free(text);
	/* The same, counted locally. */
	metrics_free(m);
	m = metrics_new(0);
	metrics_set_start(m, 1700000000);
	small_events(m);
	text = render(m);
	assert_string_equal(text, want);
	free(text);
	free(want);
	/* A relay renders and serves nothing. */
	assert_int_equal(metrics_render(relay, stdout), -1);
	assert_int_equal(metrics_listen(relay, NULL, "127.0.0.1:0", &port), -1);
	metrics_free(relay);
	metrics_free(m);
	close(peer);
}

/* A proxy's metrics say nothing of a broker until one counts. */
static void
test_broker_series(void **state)
{
	struct metrics *m = metrics_new(0);
	char *text;

	(void)state;
	text = render(m);
	assert_null(strstr(text, "sandboxes"));
	assert_null(strstr(text, "relay"));
	free(text);
	/* A broker at start: every series, at 0. */
	metrics_sandbox(m, 0);
	text = render(m);
	assert_true(has_line(text, "pinhole_sandboxes_active 0"));
	assert_true(has_line(text, "pinhole_sandboxes_total 0"));
	assert_true(
	    has_line(text, "pinhole_broker_refused_total{reason=\"limit\"} 0"));
	free(text);
	metrics_refused(m, METRICS_REF_LIMIT);
	text = render(m);
	assert_true(has_line(text, "pinhole_sandboxes_active 0"));
	assert_true(has_line(text, "pinhole_sandboxes_total 0"));
	assert_true(
	    has_line(text, "pinhole_broker_refused_total{reason=\"limit\"} 1"));
	assert_true(has_line(text, "pinhole_relay_errors_total 0"));
	free(text);
	metrics_free(m);
}

/* Only a SOCK_SEQPACKET socket makes a relay; a full one drops. */
static void
test_relay_full(void **state)
{
	struct metrics *m = metrics_new(0), *relay;
	int sv[2], p[2], peer, i;
	size_t got;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_null(metrics_relay_new(sv[0]));
	close(sv[1]);
	assert_int_equal(pipe(p), 0);
	assert_null(metrics_relay_new(p[1]));
	close(p[0]);
	assert_null(metrics_relay_new(-1));
	relay = relay_pair(&peer);
	/* Nobody reads: the socket fills, and later events are dropped. */
	for (i = 0; i < 200000 && metrics_relay_dropped(relay) < 10; i++)
		metrics_dns_error(relay);
	assert_int_equal(metrics_relay_dropped(relay), 10);
	got = drain(peer, m);
	assert_int_equal(got + 10, (size_t)i);
	free(render(m));
	metrics_free(relay);
	metrics_free(m);
	close(peer);
}

/* One datagram of each kind, as the relay sends them: *N of them. */
static size_t
valid_datagrams(unsigned char dg[][512], size_t len[])
{
	struct metrics *relay;
	struct metrics_req r = {0};
	ssize_t got;
	size_t k = 0;
	int peer;

	relay = relay_pair(&peer);
	req(relay, "deny", "x.test", 80, "a.conf", 3, 1, 700);
	r.decision = "allow";
	r.via = "capture";
	r.decision_us = -1;
	metrics_request(relay, &r);
	metrics_bytes(relay, 1, 2);
	metrics_connection(relay, -1);
	metrics_dns_error(relay);
	metrics_upstream_error(relay, METRICS_UP_CONNECT);
	metrics_connected(relay, 5);
	metrics_audit_failure(relay);
	metrics_refused(relay, METRICS_REF_PROTOCOL);
	metrics_sandbox(relay, 1);
	while ((got = recv(peer, dg[k], 512, MSG_DONTWAIT)) > 0)
		len[k++] = (size_t)got;
	assert_int_equal(k, 10);
	metrics_free(relay);
	close(peer);
	return k;
}

/* The relay errors M counted, from its text. */
static unsigned long
relay_errors(const struct metrics *m)
{
	char *text = render(m), *at;
	unsigned long n;

	at = strstr(text, "\npinhole_relay_errors_total ");
	assert_non_null(at);
	n = strtoul(at + strlen("\npinhole_relay_errors_total "), NULL, 10);
	free(text);
	return n;
}

/* Absorbs the LEN bytes at P into M: must be refused. */
static void
refused(
    struct metrics *m, const unsigned char *p, size_t len, unsigned long *nerr)
{
	assert_int_equal(metrics_absorb(m, p, len), -1);
	++*nerr;
}

/* A copy of DG (LEN bytes) with byte AT set to V. */
static void
patched(struct metrics *m, const unsigned char *dg, size_t len, size_t at,
    unsigned v, unsigned long *nerr)
{
	unsigned char b[512];

	memcpy(b, dg, len);
	b[at] = (unsigned char)v;
	refused(m, b, len, nerr);
}

/*
 * The request datagram of valid_datagrams(): version, kind, flags, port
 * (2), line (4), us (8), then the strings, each after its 2-byte
 * length: decision at 19 ("deny"), host at 25 ("x.test"), rule file at
 * 33 ("a.conf"), via at 41 ("proxy").
 */
#define AT_FLAGS 2
#define AT_US 9
#define AT_DECISION 19
#define AT_HOST 25
#define AT_VIA 41

/* Malformed datagrams are refused whole, counted, and change nothing. */
static void
test_relay_malformed(void **state)
{
	unsigned char dg[16][512], b[600];
	size_t len[16], n, i, k;
	struct metrics *m = metrics_new(0), *fresh = metrics_new(0);
	unsigned long nerr = 0;
	unsigned kind;
	char *text, *want;

	(void)state;
	n = valid_datagrams(dg, len);
	metrics_set_start(m, 1);
	metrics_set_start(fresh, 1);
	metrics_absorb(fresh, "", 0);
	for (i = 0; i < n; i++)
		for (k = 0; k < len[i]; k++)
			refused(m, dg[i], k, &nerr);
	for (i = 0; i < n; i++) {
		/* a byte too many; another version */
		memcpy(b, dg[i], len[i]);
		b[len[i]] = 0;
		refused(m, b, len[i] + 1, &nerr);
		patched(m, dg[i], len[i], 0, 2, &nerr);
		patched(m, dg[i], len[i], 0, 0, &nerr);
	}
	/* Unknown kinds. */
	for (kind = 0; kind < 256; kind++)
		if (kind == 0 || kind > 9)
			patched(m, dg[4], len[4], 1, kind, &nerr);
	assert_memory_equal(dg[0] + AT_DECISION, "deny", 4);
	assert_memory_equal(dg[0] + AT_HOST, "x.test", 6);
	assert_memory_equal(dg[0] + AT_VIA, "proxy", 5);
	/* The request: a decision, via or flag it does not know. */
	patched(m, dg[0], len[0], AT_DECISION, 'x', &nerr);
	patched(m, dg[0], len[0], AT_VIA, 'P', &nerr);
	patched(m, dg[0], len[0], AT_FLAGS, 0x10 | dg[0][AT_FLAGS], &nerr);
	/* no latency given, yet one there */
	patched(m, dg[0], len[0], AT_FLAGS, dg[0][AT_FLAGS] & ~0x4, &nerr);
	/* a negative latency */
	patched(m, dg[0], len[0], AT_US, 0x80, &nerr);
	/* strings: a NUL, a control byte, DEL; a length past the end */
	patched(m, dg[0], len[0], AT_HOST + 3, 0, &nerr);
	patched(m, dg[0], len[0], AT_HOST + 3, '\n', &nerr);
	patched(m, dg[0], len[0], AT_HOST + 3, 0x7f, &nerr);
	patched(m, dg[0], len[0], AT_HOST - 1, 0xff, &nerr);
	patched(m, dg[0], len[0], AT_HOST - 2, 0x01, &nerr);
	/* Values out of range: deltas, kinds, a negative number. */
	patched(m, dg[3], len[3], 2, 0, &nerr);
	patched(m, dg[3], len[3], 2, 2, &nerr);
	patched(m, dg[9], len[9], 2, 0x7f, &nerr);
	patched(m, dg[5], len[5], 2, 3, &nerr);
	patched(m, dg[8], len[8], 2, 4, &nerr);
	patched(m, dg[6], len[6], 2, 0x80, &nerr);
	patched(m, dg[2], len[2], 2, 0xff, &nerr);
	patched(m, dg[2], len[2], 10, 0x80, &nerr);
	assert_int_equal(relay_errors(m), nerr);
	/* Nothing of them was counted: the text is a fresh broker's. */
	text = render(m);
	want = render(fresh);
	assert_non_null(strstr(want, "pinhole_relay_errors_total 1\n"));
	*strstr(text, "pinhole_relay_errors_total ") = '\0';
	*strstr(want, "pinhole_relay_errors_total ") = '\0';
	assert_string_equal(text, want);
	free(text);
	free(want);
	/* And the valid ones still are. */
	for (i = 0; i < n; i++)
		assert_int_equal(metrics_absorb(m, dg[i], len[i]), 0);
	assert_int_equal(relay_errors(m), nerr);
	text = render(m);
	assert_true(has_line(text,
	    "pinhole_requests_total{decision=\"deny\",host=\"x.test\","
	    "port=\"80\",rule=\"a.conf:3\",via=\"proxy\"} 1"));
	assert_true(has_line(text,
	    "pinhole_requests_total{decision=\"allow\",host=\"\",port=\"\","
	    "rule=\"none\",via=\"capture\"} 1"));
	assert_true(has_line(text, "pinhole_leaks_total 1"));
	assert_true(has_line(text, "pinhole_connections_active -1"));
	assert_true(has_line(text, "pinhole_sandboxes_active 1"));
	assert_true(has_line(
	    text, "pinhole_broker_refused_total{reason=\"protocol\"} 1"));
	free(text);
	metrics_free(m);
	metrics_free(fresh);
}

/* Hosts relayed count against max_hosts as local ones do. */
static void
test_relay_host_cap(void **state)
{
	struct metrics *m = metrics_new(2), *relay;
	char *text;
	int peer;

	(void)state;
	relay = relay_pair(&peer);
	req(relay, "allow", "a.test", 1, NULL, 0, 0, -1);
	req(relay, "allow", "b.test", 1, NULL, 0, 0, -1);
	req(relay, "allow", "c.test", 1, NULL, 0, 0, -1);
	req(relay, "allow", "d.test\x01", 1, NULL, 0, 0, -1);
	assert_int_equal(drain(peer, m), 4);
	text = render(m);
	assert_true(has_line(text,
	    "pinhole_requests_total{decision=\"allow\",host=\"other\","
	    "port=\"1\",rule=\"default\",via=\"proxy\"} 2"));
	free(text);
	metrics_free(relay);
	metrics_free(m);
	close(peer);
}

/* --- shards --------------------------------------------------------------- */

/*
 * Event K of a fixed stream: requests to 13 hosts over 3 ports, both
 * decisions, some leaks, rules and latencies; bytes, connections opened
 * and closed, errors, connect times, a broker's events.
 */
static void
event(struct metrics *m, unsigned k)
{
	char host[32];

	snprintf(host, sizeof(host), "h%u.test", (k * 7) % 13);
	switch (k % 9) {
	case 0:
	case 1:
	case 2:
		req(m, k % 2 ? "allow" : "deny", host, 80 + k % 3,
		    k % 4 ? "a.conf" : NULL, k % 5, k % 11 == 0,
		    k % 3 ? (int64_t)(k * 37) % 3000000 : -1);
		break;
	case 3:
		metrics_bytes(m, k, 2 * k);
		break;
	case 4:
		metrics_connection(m, k % 2 ? 1 : -1);
		break;
	case 5:
		metrics_connected(m, (int64_t)(k * 101) % 12000000 - 5);
		break;
	case 6:
		metrics_upstream_error(m, k % METRICS_UP_KINDS);
		metrics_dns_error(m);
		break;
	case 7:
		metrics_audit_failure(m);
		metrics_refused(m, k % METRICS_REF_KINDS);
		break;
	default:
		metrics_sandbox(m, k % 2 ? 1 : -1);
		metrics_connection(m, 1);
	}
}

/* A root and its shards render exactly as one object fed the same. */
static void
test_shards_same_text(void **state)
{
	struct metrics *one = metrics_new(5), *root = metrics_new(5), *w[4];
	char *want, *text;
	unsigned k;

	(void)state;
	w[0] = root;
	for (k = 1; k < 4; k++)
		assert_non_null(w[k] = metrics_shard_new(root));
	metrics_set_start(one, 1700000000);
	metrics_set_start(root, 1700000000);
	for (k = 0; k < 20000; k++) {
		event(one, k);
		event(w[(k * 2654435761u) >> 30], k);
	}
	want = render(one);
	/* the stream passed the host cap: "other" is in both */
	assert_non_null(strstr(want, "host=\"other\""));
	assert_non_null(strstr(want, "pinhole_sandboxes_active"));
	text = render(root);
	assert_string_equal(text, want);
	free(text);
	/* A shard renders its root; freeing it does nothing. */
	text = render(w[2]);
	assert_string_equal(text, want);
	free(text);
	metrics_free(w[2]);
	text = render(root);
	assert_string_equal(text, want);
	free(text);
	free(want);
	metrics_free(root);
	metrics_free(one);
}

/* The host cap holds across shards, whichever shard met a host first. */
static void
test_shards_host_cap(void **state)
{
	struct metrics *root = metrics_new(3), *a, *b, *late;
	char *text;

	(void)state;
	assert_non_null(a = metrics_shard_new(root));
	assert_non_null(b = metrics_shard_new(root));
	req(a, "deny", "h0.test", 80, NULL, 0, 0, -1);
	req(b, "deny", "h1.test", 80, NULL, 0, 0, -1);
	req(root, "deny", "h2.test", 80, NULL, 0, 0, -1);
	req(b, "deny", "h3.test", 80, NULL, 0, 0, -1); /* the 4th: other */
	req(a, "deny", "h3.test", 80, NULL, 0, 0, -1);
	req(b, "deny", "h0.test", 80, NULL, 0, 0, -1); /* known: its own */
	/* A shard made once the cap is reached learns hosts from it. */
	assert_non_null(late = metrics_shard_new(b));
	req(late, "deny", "h2.test", 80, NULL, 0, 0, -1);
	req(late, "deny", "h4.test", 80, NULL, 0, 0, -1);
	text = render(root);
	assert_true(has_line(text,
	    "pinhole_requests_total{decision=\"deny\",host=\"h0.test\","
	    "port=\"80\",rule=\"default\",via=\"proxy\"} 2"));
	assert_true(has_line(text,
	    "pinhole_requests_total{decision=\"deny\",host=\"h2.test\","
	    "port=\"80\",rule=\"default\",via=\"proxy\"} 2"));
	assert_true(has_line(text,
	    "pinhole_requests_total{decision=\"deny\",host=\"other\","
	    "port=\"80\",rule=\"default\",via=\"proxy\"} 3"));
	assert_null(strstr(text, "h3.test"));
	assert_null(strstr(text, "h4.test"));
	assert_true(has_line(text, "pinhole_denials_total 8"));
	free(text);
	metrics_free(root);
}

/* The series cap holds across shards; past it, no series is made. */
static void
test_shards_series_cap(void **state)
{
	struct metrics *root = metrics_new(0), *s[2], *late;
	char *text;
	unsigned p;

	(void)state;
	assert_non_null(s[0] = metrics_shard_new(root));
	assert_non_null(s[1] = metrics_shard_new(root));
	for (p = 1; p <= METRICS_SERIES_MAX + 5; p++)
		req(s[p % 2], "allow", "h.test", p, "a.conf", 1, 0, -1);
	req(s[0], "allow", "h.test", 1, "a.conf", 1, 0, -1); /* s[1]'s */
	assert_non_null(late = metrics_shard_new(root));
	req(late, "allow", "h.test", 2, "a.conf", 1, 0, -1);
	req(late, "allow", "h.test", 1, "b.conf", 1, 0, -1);
	text = render(root);
	assert_true(has_line(text,
	    "pinhole_requests_total{decision=\"allow\",host=\"h.test\","
	    "port=\"1\",rule=\"a.conf:1\",via=\"proxy\"} 2"));
	assert_true(has_line(text,
	    "pinhole_requests_total{decision=\"allow\",host=\"h.test\","
	    "port=\"2\",rule=\"a.conf:1\",via=\"proxy\"} 2"));
	assert_true(has_line(text,
	    "pinhole_requests_total{decision=\"other\",host=\"other\","
	    "port=\"other\",rule=\"other\",via=\"other\"} 6"));
	assert_null(strstr(text, "b.conf"));
	free(text);
	metrics_free(root);
}

/* What a shard is made of, and what it cannot do. */
static void
test_shard_api(void **state)
{
	struct metrics *root = metrics_new(0), *s, *ss, *relay;
	unsigned port;
	char *text;
	int peer;

	(void)state;
	errno = 0;
	assert_null(metrics_shard_new(NULL));
	assert_int_equal(errno, EINVAL);
	relay = relay_pair(&peer);
	errno = 0;
	assert_null(metrics_shard_new(relay));
	assert_int_equal(errno, EINVAL);
	metrics_free(relay);
	close(peer);
	assert_non_null(s = metrics_shard_new(root));
	/* A shard of a shard is one more shard of the root. */
	assert_non_null(ss = metrics_shard_new(s));
	metrics_dns_error(ss);
	metrics_dns_error(s);
	metrics_dns_error(root);
	text = render(root);
	assert_true(has_line(text, "pinhole_dns_errors_total 3"));
	free(text);
	/* Only the root serves. */
	assert_int_equal(metrics_listen(s, NULL, "127.0.0.1:0", &port), -1);
	metrics_free(ss);
	metrics_free(s);
	metrics_free(root);
}

/* The value of the sample NAME (a whole "name{labels}" or "name") in TEXT. */
static unsigned long long
value(const char *text, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	for (p = text; (p = strstr(p, name)) != NULL; p++)
		if ((p == text || p[-1] == '\n') && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
	fail_msg("no sample %s", name);
	return 0;
}

#define THREADS 4
#define THREAD_EVENTS 20000
#define THREAD_HOSTS 64

struct hammer {
	struct metrics *root;
	unsigned t;
	atomic_uint *done;
};

/* One worker: its own shard, made while the main thread renders. */
static void *
hammer(void *arg)
{
	struct hammer *h = arg;
	struct metrics *s = metrics_shard_new(h->root);
	char host[32];
	unsigned i;

	for (i = 0; s != NULL && i < THREAD_EVENTS; i++) {
		snprintf(host, sizeof(host), "h%02u.test",
		    (i * 31 + h->t * 7) % THREAD_HOSTS);
		metrics_connection(s, 1);
		req(s, i % 3 ? "allow" : "deny", host, 443, "a.conf", i % 7, 0,
		    i % 2000);
		metrics_bytes(s, 1, 2);
		metrics_connected(s, (int64_t)(i * 997) % 11000000);
		metrics_connection(s, -1);
	}
	atomic_fetch_add(h->done, 1);
	return s;
}

/* A scrape while the workers count: whole, and never going back. */
static void
check_scrape(const char *text, unsigned long long *conns)
{
	unsigned long long c = value(text, "pinhole_connections_total");

	assert_true(c >= *conns);
	*conns = c;
	assert_true(value(text, "pinhole_connections_active") <= THREADS);
	assert_true(value(text, "pinhole_connect_seconds_bucket{le=\"10\"}") <=
	    value(text, "pinhole_connect_seconds_bucket{le=\"+Inf\"}"));
	assert_true(value(text, "pinhole_decision_seconds_bucket{le=\"1\"}") <=
	    value(text, "pinhole_decision_seconds_count"));
}

/* Requests in TEXT, and the distinct hosts (but "other") they name. */
static void
count_requests(const char *text, unsigned long long *n, unsigned *hosts)
{
	static const char pre[] = "pinhole_requests_total{";
	char seen[THREAD_HOSTS] = {0};
	const char *p, *h;
	unsigned k;

	*n = 0;
	*hosts = 0;
	for (p = text; (p = strstr(p, pre)) != NULL; p++) {
		*n += strtoull(strstr(p, "} ") + 2, NULL, 10);
		h = strstr(p, "host=\"") + 6;
		if (sscanf(h, "h%2u.test\"", &k) == 1 && k < THREAD_HOSTS &&
		    !seen[k]++)
			++*hosts;
	}
}

/* Workers hammer their shards while the main thread renders. */
static void
test_shards_threads(void **state)
{
	struct metrics *root = metrics_new(THREAD_HOSTS / 2);
	struct hammer h[THREADS];
	pthread_t tid[THREADS];
	atomic_uint done = 0;
	unsigned long long conns = 0, n;
	unsigned t, renders = 0, hosts;
	char *text;
	void *s;

	(void)state;
	for (t = 0; t < THREADS; t++) {
		h[t] = (struct hammer){.root = root, .t = t, .done = &done};
		assert_int_equal(
		    pthread_create(&tid[t], NULL, hammer, &h[t]), 0);
	}
	while (atomic_load(&done) < THREADS && renders < 100000) {
		text = render(root);
		check_scrape(text, &conns);
		free(text);
		renders++;
	}
	for (t = 0; t < THREADS; t++) {
		assert_int_equal(pthread_join(tid[t], &s), 0);
		assert_non_null(s);
	}
	assert_true(renders > 0);
	text = render(root);
	check_scrape(text, &conns);
	count_requests(text, &n, &hosts);
	assert_int_equal(n, THREADS * THREAD_EVENTS);
	assert_int_equal(hosts, THREAD_HOSTS / 2);
	assert_int_equal(
	    value(text, "pinhole_connections_total"), THREADS * THREAD_EVENTS);
	assert_int_equal(value(text, "pinhole_connections_active"), 0);
	assert_int_equal(value(text, "pinhole_bytes_total{direction=\"down\"}"),
	    2 * THREADS * THREAD_EVENTS);
	assert_int_equal(value(text, "pinhole_decision_seconds_count"),
	    THREADS * THREAD_EVENTS);
	assert_int_equal(value(text, "pinhole_connect_seconds_count"),
	    THREADS * THREAD_EVENTS);
	free(text);
	metrics_free(root);
}

/* Off: NULL counts nothing and does not crash. */
static void
test_null(void **state)
{
	struct metrics_req r = {.decision = "allow", .via = "proxy"};

	(void)state;
	metrics_request(NULL, &r);
	metrics_bytes(NULL, 1, 1);
	metrics_connection(NULL, 1);
	metrics_dns_error(NULL);
	metrics_upstream_error(NULL, METRICS_UP_TLS);
	metrics_connected(NULL, 1);
	metrics_audit_failure(NULL);
	metrics_sandbox(NULL, 1);
	metrics_refused(NULL, METRICS_REF_POLICY);
	assert_int_equal(metrics_absorb(NULL, "\1\4", 2), -1);
	metrics_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_small_text),
	    cmocka_unit_test(test_escape),
	    cmocka_unit_test(test_host_cap),
	    cmocka_unit_test(test_series_cap),
	    cmocka_unit_test(test_buckets),
	    cmocka_unit_test(test_parse_head),
	    cmocka_unit_test(test_listen_loopback_only),
	    cmocka_unit_test(test_relay),
	    cmocka_unit_test(test_broker_series),
	    cmocka_unit_test(test_relay_full),
	    cmocka_unit_test(test_relay_malformed),
	    cmocka_unit_test(test_relay_host_cap),
	    cmocka_unit_test(test_null),
	    cmocka_unit_test(test_shards_same_text),
	    cmocka_unit_test(test_shards_host_cap),
	    cmocka_unit_test(test_shards_series_cap),
	    cmocka_unit_test(test_shard_api),
	    cmocka_unit_test(test_shards_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
