/*
 * test_metrics.c: proxy/metrics.c: counting and the exact text of a small
 * case, label escaping (a rule file name with a quote, a backslash and a
 * newline), the host cap (later hosts under host="other"), the series
 * cap, cumulative histogram buckets at their bounds, and the request-head
 * parser of the responder (every cut of a good head is MORE), and the
 * addresses it refuses to listen on (anything but loopback or unix:).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	    cmocka_unit_test(test_null),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
