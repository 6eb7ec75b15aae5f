/*
 * test_logview.c: the audit log review: aggregation by host and by
 * denial, the advice printed for each kind of denial, malformed lines of
 * every kind, reading a file that is being appended to, the host filter,
 * the bounded tables, JSON output and escaping of what the log holds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#define LOGVIEW_INTERNAL
#include "audit/logprint.h"
#include "audit/logview.h"

#define REQ(host, port, dec, extra)                                            \
	"{\"ts\":\"2026-11-29T10:00:00.000Z\",\"sandbox\":\"r1\","             \
	"\"event\":\"request\",\"host\":\"" host "\",\"port\":" #port          \
	",\"decision\":\"" dec "\"" extra "}"

static uint64_t lineno;

/* Feeds the NUL-terminated LINE; returns logview_feed()'s answer. */
static int
feed(struct logview *lv, const char *line)
{
	return logview_feed(lv, line, strlen(line), ++lineno);
}

static void
feed_ok(struct logview *lv, const char *line)
{
	if (feed(lv, line) != 0)
		fail_msg("rejected (%s): %s", logview_why(lv), line);
}

/* Prints LV with O into a string (free it). */
static char *
print(const struct logview *lv, const struct logprint_opts *o)
{
	/* Static: gcc -O2 takes a local's address in open_memstream for a
	 * dangling pointer (-Wdangling-pointer), though the stream's buffer
	 * is on the heap. */
	static char *buf;
	static size_t len;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(logprint_view(lv, f, o), 0);
	assert_int_equal(fclose(f), 0);
	return buf;
}

static char *
print_text(const struct logview *lv)
{
	struct logprint_opts o = {0, 0};

	return print(lv, &o);
}

/* NEEDLE occurs in HAY; returns where. */
static const char *
has(const char *hay, const char *needle)
{
	const char *p = strstr(hay, needle);

	if (p == NULL)
		fail_msg("no \"%s\" in:\n%s", needle, hay);
	return p;
}

static void
test_counts(void **state)
{
	struct logview *lv = logview_new();
	struct logview_host_stats st;
	struct logview_totals t;

	(void)state;
	feed_ok(lv,
	    REQ("GitHub.com", 443, "allow",
	        ",\"conn\":1,\"secret\":\"gh-token\""));
	feed_ok(lv,
	    "{\"event\":\"end\",\"sandbox\":\"r1\",\"conn\":1,"
	    "\"status\":200,\"bytes_up\":1536,\"bytes_down\":5368709120,"
	    "\"ms\":12.5}");
	feed_ok(lv,
	    REQ("github.com", 443, "allow",
	        ",\"conn\":2,\"secret\":\"gh-token\""));
	feed_ok(lv, REQ("github.com", 443, "allow", ",\"secret\":\"other\""));
	feed_ok(lv, REQ("pypi.org", 443, "allow", ",\"conn\":3"));
	feed_ok(lv, "{\"event\":\"end\",\"conn\":3,\"bytes_down\":10}");
	feed_ok(lv,
	    "{\"event\":\"end\",\"sandbox\":\"r2\",\"conn\":3,"
	    "\"bytes_down\":7}");
	feed_ok(lv, "   ");
	assert_int_equal(logview_host(lv, "github.com", 443, &st), 0);
	assert_int_equal(st.requests, 3);
	assert_int_equal(st.allowed, 3);
	assert_int_equal(st.denied, 0);
	assert_int_equal(st.bytes_up, 1536);
	assert_int_equal(st.bytes_down, 5368709120ull);
	assert_int_equal(st.nsecrets, 2);
	assert_int_equal(logview_host(lv, "pypi.org", 443, &st), 0);
	/* Sandbox r2's conn 3 is another connection: no host. */
	assert_int_equal(st.bytes_down, 0);
	assert_int_equal(logview_host(lv, "", 443, &st), -1);
	assert_int_equal(logview_nhosts(lv), 3);
	logview_totals(lv, &t);
	assert_int_equal(t.records, 7);
	assert_int_equal(t.requests, 4);
	assert_int_equal(t.n[LOGVIEW_CLASS_ALLOWED], 4);
	assert_int_equal(t.bytes_down, 5368709120ull + 17);
	assert_int_equal(t.malformed, 0);
	logview_free(lv);
}

/* "count": folded denials and summaries stand for that many requests. */
static void
test_count_field(void **state)
{
	struct logview *lv = logview_new();
	struct logview_host_stats st;
	struct logview_totals t;
	char *out;

	(void)state;
	feed_ok(lv,
	    REQ("evil.test", 80, "deny",
	        ",\"conn\":1,\"reason\":\"no rule allows evil.test:80\""));
	feed_ok(lv,
	    REQ("evil.test", 80, "deny",
	        ",\"conn\":9,\"reason\":\"no rule allows "
	        "evil.test:80\",\"count\":41"));
	feed_ok(lv,
	    REQ("ok.test", 443, "allow",
	        ",\"conn\":0,\"count\":1000,\"summary\":true,"
	        "\"bytes_up\":5"));
	feed_ok(lv, REQ("ok.test", 443, "allow", ",\"count\":0"));
	assert_int_equal(
	    feed(lv, REQ("ok.test", 443, "allow", ",\"count\":-1")), -1);
	assert_int_equal(
	    feed(lv, REQ("ok.test", 443, "allow", ",\"count\":\"2\"")), -1);
	assert_int_equal(logview_host(lv, "evil.test", 80, &st), 0);
	assert_int_equal(st.requests, 42);
	assert_int_equal(st.denied, 42);
	assert_int_equal(
	    logview_denials(lv, "evil.test", 80, "no rule allows evil.test:80"),
	    42);
	assert_int_equal(logview_host(lv, "ok.test", 443, &st), 0);
	assert_int_equal(st.requests, 1000);
	assert_int_equal(st.allowed, 1000);
	assert_int_equal(st.bytes_up, 5);
	logview_totals(lv, &t);
	assert_int_equal(t.records, 4);
	assert_int_equal(t.requests, 1042);
	assert_int_equal(t.n[LOGVIEW_CLASS_DENIED], 42);
	out = print_text(lv);
	has(out, "42x");
	free(out);
	logview_free(lv);
}

static void
test_end_by_conn(void **state)
{
	struct logview *lv = logview_new();
	struct logview_host_stats st;

	(void)state;
	feed_ok(lv, REQ("a.test", 443, "allow", ",\"conn\":1"));
	feed_ok(lv, REQ("b.test", 443, "allow", ",\"conn\":2"));
	feed_ok(lv,
	    "{\"event\":\"end\",\"sandbox\":\"r1\",\"conn\":1,"
	    "\"bytes_up\":5}");
	feed_ok(lv,
	    "{\"event\":\"end\",\"sandbox\":\"r1\",\"conn\":2,"
	    "\"bytes_up\":7}");
	assert_int_equal(logview_host(lv, "a.test", 443, &st), 0);
	assert_int_equal(st.bytes_up, 5);
	assert_int_equal(logview_host(lv, "b.test", 443, &st), 0);
	assert_int_equal(st.bytes_up, 7);
	logview_free(lv);
}

/*
 * Conn 0 is no connection (summaries, dns records, what the sandbox's
 * kernel refused): a record there without a host is not the last one's.
 */
static void
test_conn_zero(void **state)
{
	struct logview *lv = logview_new();
	struct logview_host_stats st;
	char *out;

	(void)state;
	feed_ok(lv,
	    REQ("203.0.113.7", 5555, "deny",
	        ",\"conn\":0,\"method\":\"CONNECT\",\"via\":\"capture\","
	        "\"reason\":\"port 5555 is not captured: no allow rule names "
	        "it; connection refused in the sandbox\""));
	feed_ok(lv,
	    "{\"event\":\"request\",\"sandbox\":\"r1\",\"conn\":0,"
	    "\"via\":\"capture\",\"decision\":\"deny\",\"reason\":"
	    "\"refused in the sandbox: destinations past the first 1024, "
	    "counted\",\"count\":6}");
	assert_int_equal(logview_host(lv, "203.0.113.7", 5555, &st), 0);
	assert_int_equal(st.requests, 1);
	out = print_text(lv);
	has(out, "6x  (no host)");
	free(out);
	logview_free(lv);
}

static const char *const denials[] = {
    REQ("evil.example", 443, "deny",
        ",\"method\":\"CONNECT\",\"reason\":\"no rule allows "
        "evil.example:443\""),
    REQ("github.com", 443, "deny",
        ",\"method\":\"GET\",\"path\":\"/acme/tools/info/refs\",\"rule\":"
        "\"p.conf:4\",\"reason\":\"path /acme/tools/info/refs is not "
        "allowed by rule p.conf:4\""),
    REQ("api.github.com", 443, "deny",
        ",\"method\":\"DELETE\",\"path\":\"/user/repos\",\"rule\":"
        "\"p.conf:6\",\"reason\":\"method DELETE is not allowed by rule "
        "p.conf:6\""),
    REQ("gist.github.com", 443, "deny",
        ",\"rule\":\"p.conf:9\",\"reason\":\"denied by rule p.conf:9\""),
    REQ("pypi.org", 8443, "deny",
        ",\"reason\":\"port 8443 is not allowed for pypi.org (rule "
        "p.conf:2)\""),
    REQ("api.example.com", 80, "deny",
        ",\"reason\":\"credentials are never sent over plain HTTP (rule "
        "p.conf:7)\""),
    REQ("2001:db8::1", 443, "deny",
        ",\"reason\":\"no rule allows [2001:db8::1]:443\""),
    REQ("files.test", 443, "deny",
        ",\"path\":\"/a b/\\\"q\\\"/x\",\"reason\":\"path /a b/\\\"q\\\"/x "
        "is not allowed by rule p.conf:11\""),
    REQ("bad.test", 443, "deny", ",\"reason\":\"bad request: obs-fold\""),
};

static struct logview *
denied_view(void)
{
	struct logview *lv = logview_new();
	size_t i;

	for (i = 0; i < sizeof(denials) / sizeof(denials[0]); i++)
		feed_ok(lv, denials[i]);
	feed_ok(lv, denials[0]);
	feed_ok(lv, denials[0]);
	feed_ok(lv, REQ("github.com", 443, "allow", ""));
	return lv;
}

static void
test_denials(void **state)
{
	struct logview *lv = denied_view();
	struct logview_host_stats st;
	struct logview_totals t;

	(void)state;
	assert_int_equal(logview_denials(lv, "evil.example", 443,
	                     "no rule allows evil.example:443"),
	    3);
	assert_int_equal(logview_denials(lv, "gist.github.com", 443,
	                     "denied by rule p.conf:9"),
	    1);
	assert_int_equal(logview_denials(lv, "gist.github.com", 80,
	                     "denied by rule p.conf:9"),
	    0);
	assert_int_equal(logview_ndenials(lv), 9);
	assert_int_equal(logview_host(lv, "github.com", 443, &st), 0);
	assert_int_equal(st.requests, 2);
	assert_int_equal(st.denied, 1);
	logview_totals(lv, &t);
	assert_int_equal(t.n[LOGVIEW_CLASS_DENIED], 11);
	assert_int_equal(t.n[LOGVIEW_CLASS_ALLOWED], 1);
	logview_free(lv);
}

/*
 * The paths an advice allows stay narrow: the denied path's directory and
 * a star, or the path itself at the root; never the whole host.
 */
static void
test_advice_narrow(void **state)
{
	static const struct {
		const char *reason, *path, *method, *allow;
	} cases[] = {
	    {"path /acme/repo.git/info/refs is not allowed by rule p.conf:4",
	        "/acme/repo.git/info/refs", "GET",
	        "allow h.test:443 { paths /acme/repo.git/info/* }"},
	    {"path /robots.txt is not allowed by rule p.conf:4", "/robots.txt",
	        "GET", "allow h.test:443 { paths /robots.txt }"},
	    {"path / is not allowed by rule p.conf:4", "/", "GET",
	        "allow h.test:443 { paths / }"},
	    {"path /acme is not allowed by rule p.conf:4", NULL, NULL,
	        "allow h.test:443 { paths /acme }"},
	    {"path /a b is not allowed by rule p.conf:4", "/a b", "GET",
	        "allow h.test:443 { paths \"/a b\" }"},
	    {"method DELETE is not allowed by rule p.conf:4", "/user", "DELETE",
	        "allow h.test:443 { methods DELETE paths /user }"},
	    {"method DELETE is not allowed by rule p.conf:4", "/user/x",
	        "DELETE", "allow h.test:443 { methods DELETE paths /user/* }"},
	    /* A pattern cannot spell these, and a star would reach further. */
	    {"path /a?b is not allowed by rule p.conf:4", "/a?b", "GET", ""},
	    {"path /a%b is not allowed by rule p.conf:4", "/a%b", "GET", ""},
	    {"path /* is not allowed by rule p.conf:4", "/*", "GET", ""},
	    {"path /x*y is not allowed by rule p.conf:4", "/x*y", "GET", ""},
	    {"path /a#/b is not allowed by rule p.conf:4", "/a#/b", "GET", ""},
	};
	char reason[128], path[64], method[16];
	struct logview_entry d;
	struct logview_advice a;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&d, 0, sizeof(d));
		snprintf(reason, sizeof(reason), "%s", cases[i].reason);
		snprintf(path, sizeof(path), "%s",
		    cases[i].path != NULL ? cases[i].path : "");
		snprintf(method, sizeof(method), "%s",
		    cases[i].method != NULL ? cases[i].method : "");
		d.host = (char *)"h.test";
		d.port = 443;
		d.reason = reason;
		d.path = cases[i].path != NULL ? path : NULL;
		d.method = cases[i].method != NULL ? method : NULL;
		d.rule = (char *)"p.conf:4";
		logview_advise(&d, &a);
		if (strcmp(a.allow, cases[i].allow) != 0)
			fail_msg("%s: \"%s\", not \"%s\"", cases[i].reason,
			    a.allow, cases[i].allow);
		assert_null(strstr(a.allow, "paths /*"));
		if (a.allow[0] == '\0')
			has(a.note, "no allow line: the log names no usable ");
	}
}

static void
test_text(void **state)
{
	struct logview *lv = denied_view();
	char *out = print_text(lv);
	const char *hosts, *totals;

	(void)state;
	has(out, "Denied (11 requests):\n");
	has(out,
	    "  3x  evil.example:443  no rule allows evil.example:443\n"
	    "      allow evil.example:443\n");
	has(out,
	    "github.com:443  path /acme/tools/info/refs is not allowed"
	    " by rule p.conf:4\n"
	    "      allow github.com:443 { paths /acme/tools/info/* }\n");
	has(out,
	    "      allow api.github.com:443 { methods DELETE paths "
	    "/user/* }\n");
	has(out,
	    "      denied by the deny rule at p.conf:9: an allow cannot "
	    "override a deny");
	has(out, "      allow pypi.org:8443\n");
	has(out, "      no allow can permit this: use HTTPS\n");
	has(out, "      allow [2001:db8::1]:443\n");
	has(out, "      allow files.test:443 { paths \"/a b/\\\"q\\\"/*\" }\n");
	has(out, "  1x  bad.test:443  bad request: obs-fold\n  ");
	hosts = has(out, "\nHosts:\n");
	totals = has(out, "\nTotals:\n");
	assert_true(has(out, "evil.example") < hosts);
	assert_true(hosts < totals);
	/* Most denied first; ties by requests. */
	assert_true(has(hosts, "  evil.example:443 ") <
	    has(hosts, "  github.com:443 "));
	has(totals, "  requests   12 (1 allowed, 11 denied)\n");
	has(totals, "  malformed  0 lines\n");
	has(totals, "  first      2026-11-29T10:00:00.000Z\n");
	assert_null(strstr(out, "incomplete"));
	free(out);
	logview_free(lv);
}

static void
test_denied_only(void **state)
{
	struct logprint_opts o = {1, 0};
	struct logview *lv = denied_view();
	char *out = print(lv, &o);

	(void)state;
	has(out, "allow evil.example:443");
	assert_null(strstr(out, "Hosts:"));
	assert_null(strstr(out, "Totals:"));
	free(out);
	logview_free(lv);
	lv = logview_new();
	feed_ok(lv, REQ("a.test", 443, "allow", ""));
	out = print(lv, &o);
	assert_string_equal(out, "Denied: none\n");
	free(out);
	logview_free(lv);
}

static void
test_units(void **state)
{
	struct logview *lv = logview_new();
	char *out;

	(void)state;
	feed_ok(lv,
	    REQ("a.test", 443, "allow",
	        ",\"bytes_up\":1536,\"bytes_down\":5368709120"));
	feed_ok(lv,
	    REQ("b.test", 443, "allow",
	        ",\"bytes_up\":1023,\"bytes_down\":3145728"));
	out = print_text(lv);
	has(out, "1.5 KiB");
	has(out, "5.0 GiB");
	has(out, "1023 B");
	has(out, "3.0 MiB");
	has(out, "  bytes      2.5 KiB up, 5.0 GiB down\n");
	free(out);
	logview_free(lv);
}

static void
test_refused(void **state)
{
	struct logview *lv = logview_new();
	struct logview_totals t;
	char *out;

	(void)state;
	feed_ok(lv,
	    REQ("internal.test", 443, "allow",
	        ",\"conn\":1,\"rule\":\"p.conf:3\""));
	feed_ok(lv,
	    "{\"event\":\"end\",\"sandbox\":\"r1\",\"conn\":1,"
	    "\"host\":\"internal.test\",\"port\":443,\"status\":403,"
	    "\"rule\":\"p.conf:3\",\"error\":\"internal.test resolves "
	    "to 10.0.0.5:443 (private): not allowed without 'private' "
	    "in the rule\"}");
	/* A policy denial ends with 403 too: not counted twice. */
	feed_ok(lv,
	    REQ("evil.test", 443, "deny",
	        ",\"conn\":2,\"reason\":\"no rule allows evil.test:443\""));
	feed_ok(lv,
	    "{\"event\":\"end\",\"sandbox\":\"r1\",\"conn\":2,"
	    "\"status\":403}");
	logview_totals(lv, &t);
	assert_int_equal(t.n[LOGVIEW_CLASS_REFUSED], 1);
	assert_int_equal(t.n[LOGVIEW_CLASS_DENIED], 1);
	out = print_text(lv);
	has(out, "Denied (2 requests):\n");
	has(out,
	    "      allow internal.test:443 { private }\n"
	    "      before rule p.conf:3");
	free(out);
	logview_free(lv);
}

/*
 * A client that refused the run CA: the CONNECT was allowed, yet it is
 * listed apart and no longer counted as allowed; an alert and a hang-up
 * alike, once per connection; another error is no such failure.
 */
static void
test_distrust(void **state)
{
	struct logview *lv = logview_new();
	struct logview_host_stats hs;
	struct logview_totals t;
	char *out;

	(void)state;
	feed_ok(lv, REQ("git.test", 443, "allow", ",\"conn\":1"));
	feed_ok(lv,
	    "{\"event\":\"end\",\"sandbox\":\"r1\",\"conn\":1,"
	    "\"host\":\"git.test\",\"port\":443,\"status\":200,"
	    "\"error\":\"the client does not trust the run CA (alert "
	    "unknown ca)\"}");
	feed_ok(lv,
	    "{\"event\":\"end\",\"sandbox\":\"r1\",\"conn\":1,"
	    "\"host\":\"git.test\",\"port\":443,\"status\":200,"
	    "\"error\":\"the client does not trust the run CA (alert "
	    "unknown ca)\"}");
	feed_ok(lv, REQ("git.test", 443, "allow", ",\"conn\":2"));
	feed_ok(lv,
	    "{\"event\":\"end\",\"sandbox\":\"r1\",\"conn\":2,"
	    "\"host\":\"git.test\",\"port\":443,\"status\":200,"
	    "\"error\":\"the client ended the TLS handshake (does it trust "
	    "the run CA?)\"}");
	feed_ok(lv, REQ("git.test", 443, "allow", ",\"conn\":3"));
	feed_ok(lv,
	    "{\"event\":\"end\",\"sandbox\":\"r1\",\"conn\":3,"
	    "\"host\":\"git.test\",\"port\":443,\"status\":200,"
	    "\"error\":\"idle for 300 s\"}");
	logview_totals(lv, &t);
	assert_int_equal(t.n[LOGVIEW_CLASS_DISTRUST], 2);
	assert_int_equal(t.n[LOGVIEW_CLASS_ALLOWED], 1);
	assert_int_equal(t.n[LOGVIEW_CLASS_DENIED], 0);
	assert_int_equal(logview_host(lv, "git.test", 443, &hs), 0);
	assert_int_equal(hs.allowed, 1);
	out = print_text(lv);
	has(out, "Denied: none\n");
	has(out,
	    "Refused the run CA (clients that do not trust "
	    "PINHOLE_CA_FILE):\n"
	    "  1x  git.test:443  the client does not trust the run CA "
	    "(alert unknown ca)\n"
	    "  1x  git.test:443  the client ended the TLS handshake");
	has(out,
	    "  distrust   2 allowed, then the client refused the run CA\n");
	free(out);
	logview_free(lv);
}

struct bad {
	const char *line, *why;
};

static const struct bad bad[] = {
    {"not json", "not JSON: "},
    {"[1,2]", "not an object"},
    {"42", "not an object"},
    {"{\"event\":\"request\",\"port\":\"443\"}", "port is not an integer"},
    {"{\"event\":\"request\",\"port\":443.0}", "port is not an integer"},
    {"{\"event\":\"request\",\"port\":70000}", "port 70000 is out of range"},
    {"{\"event\":\"end\",\"bytes_up\":-1}", "bytes_up -1 is out of range"},
    {"{\"host\":\"x\"}", "no event"},
    {"{\"event\":\"start\"}", "event is not request, end or dns"},
    {"{\"event\":7}", "event is not a string"},
    {"{\"event\":\"request\",\"decision\":\"maybe\"}",
        "decision is neither allow nor deny"},
    {"{\"event\":\"request\",\"host\":null}", "host is not a string"},
    {"{\"event\":\"end\",\"ms\":\"5\"}", "ms is not a number"},
    {"{\"event\":\"request\",\"decision\":\"allow\",\"decision\":\"deny\"}",
        "not JSON: duplicate object key"},
    {"{\"event\":\"end\"} {}", "not JSON: "},
    {"{\"event\":\"end\",\"error\":\"a\\u0000b\"}", "not JSON: "},
    {"{\"event\":\"end\",\"x\":\"\x1b[2J\"}", "not JSON: "},
};

static void
test_malformed(void **state)
{
	struct logview *lv = logview_new();
	struct logview_totals t;
	char *huge, *out;
	size_t i;

	(void)state;
	feed_ok(lv, REQ("a.test", 443, "allow", ""));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (feed(lv, bad[i].line) != -1)
			fail_msg("accepted: %s", bad[i].line);
		if (strncmp(logview_why(lv), bad[i].why, strlen(bad[i].why)))
			fail_msg("%s: why \"%s\", want \"%s\"", bad[i].line,
			    logview_why(lv), bad[i].why);
		assert_null(strchr(logview_why(lv), '\x1b'));
	}
	/* A NUL inside the line, and a host too long to be one. */
	assert_int_equal(logview_feed(lv, "{\"event\":\0\"end\"}", 16, 99), -1);
	huge = malloc(LOGVIEW_LINE_MAX + 2);
	assert_non_null(huge);
	snprintf(huge, 300, "{\"event\":\"request\",\"host\":\"%0256d\"}", 0);
	assert_int_equal(feed(lv, huge), -1);
	assert_string_equal(logview_why(lv), "host longer than 255 bytes");
	memset(huge, ' ', LOGVIEW_LINE_MAX + 1);
	memcpy(huge, "{\"event\":\"end\"}", 15);
	assert_int_equal(logview_feed(lv, huge, LOGVIEW_LINE_MAX + 1, 100), -1);
	assert_string_equal(logview_why(lv), "line longer than 1048576 bytes");
	assert_int_equal(logview_feed(lv, huge, LOGVIEW_LINE_MAX, 101), 0);
	free(huge);
	logview_totals(lv, &t);
	assert_int_equal(t.malformed, sizeof(bad) / sizeof(bad[0]) + 3);
	assert_int_equal(t.records, 2);
	out = print_text(lv);
	has(out, "  malformed  20 lines (first at line ");
	free(out);
	logview_free(lv);
}

/* Reads TEXT (LEN bytes) as a file; ERR gets the diagnostics (free it). */
static struct logview *
read_text(const char *text, size_t len, char **err)
{
	struct logview *lv = logview_new();
	size_t errlen = 0;
	FILE *in = fmemopen((void *)(uintptr_t)text, len, "r");
	FILE *ef = open_memstream(err, &errlen);

	assert_non_null(in);
	assert_non_null(ef);
	assert_int_equal(logview_read(lv, in, "audit.jsonl", ef), 0);
	fclose(in);
	fclose(ef);
	return lv;
}

static void
test_read(void **state)
{
	static const char text[] = REQ("a.test", 443, "allow",
	    "") "\n"
	        "oops\n"
	        "\n" REQ("b.test", 443, "deny", "") "\n"
	                                            "[]\n"
	                                            "{\"event\":\"requ";
	struct logview_totals t;
	struct logview *lv;
	char *err, *out;

	(void)state;
	lv = read_text(text, sizeof(text) - 1, &err);
	logview_totals(lv, &t);
	assert_int_equal(t.records, 2);
	assert_int_equal(t.malformed, 2);
	assert_int_equal(t.first_malformed, 2);
	assert_int_equal(t.incomplete, 1);
	assert_string_equal(err,
	    "audit.jsonl:2: malformed record (not JSON: invalid token near "
	    "'oops')\n"
	    "audit.jsonl:5: malformed record (not an object)\n");
	out = print_text(lv);
	has(out, "  1 incomplete line at the end ignored\n");
	free(out);
	free(err);
	logview_free(lv);
}

static void
test_read_long(void **state)
{
	size_t n = 2 * LOGVIEW_LINE_MAX + 100, len;
	struct logview_totals t;
	struct logview *lv;
	char *text, *err;

	(void)state;
	text = malloc(n);
	assert_non_null(text);
	memset(text, 'x', n);
	len = snprintf(text, 200, "%s\n", REQ("a.test", 443, "allow", ""));
	text[len + LOGVIEW_LINE_MAX + 10] = '\n';
	/* Line 3 runs to the end without "\n": incomplete, not malformed. */
	lv = read_text(text, n, &err);
	logview_totals(lv, &t);
	assert_int_equal(t.records, 1);
	assert_int_equal(t.malformed, 1);
	assert_int_equal(t.incomplete, 1);
	assert_string_equal(err,
	    "audit.jsonl:2: malformed record (line "
	    "longer than 1048576 bytes)\n");
	free(err);
	free(text);
	logview_free(lv);
}

static void
test_filter(void **state)
{
	struct logview *lv = logview_new();
	struct logview_host_stats st;
	struct logview_totals t;

	(void)state;
	assert_int_equal(logview_filter_host(lv, "A.test"), 0);
	assert_int_equal(logview_filter_host(lv, "c.test"), 0);
	feed_ok(lv, REQ("a.TEST", 443, "allow", ",\"conn\":1"));
	feed_ok(lv, REQ("b.test", 443, "deny", ",\"conn\":2"));
	feed_ok(lv, REQ("c.test", 80, "deny", ",\"reason\":\"x\""));
	feed_ok(lv,
	    "{\"event\":\"end\",\"sandbox\":\"r1\",\"conn\":1,"
	    "\"bytes_up\":3}");
	feed_ok(lv,
	    "{\"event\":\"end\",\"sandbox\":\"r1\",\"conn\":2,"
	    "\"bytes_up\":4}");
	feed_ok(lv, "{\"event\":\"end\",\"bytes_up\":5}");
	assert_int_equal(feed(lv, "nope"), -1);
	logview_totals(lv, &t);
	assert_int_equal(t.records, 3);
	assert_int_equal(t.requests, 2);
	assert_int_equal(t.bytes_up, 3);
	assert_int_equal(t.malformed, 1);
	assert_int_equal(logview_host(lv, "b.test", 443, &st), -1);
	assert_int_equal(logview_host(lv, "a.test", 443, &st), 0);
	assert_int_equal(logview_denials(lv, "c.test", 80, "x"), 1);
	logview_free(lv);
}

static void
test_bounded(void **state)
{
	struct logview *lv = logview_new();
	struct logview_host_stats st;
	char line[256], *out;
	int i;

	(void)state;
	for (i = 0; i < LOGVIEW_KEYS_MAX + 50; i++) {
		snprintf(line, sizeof(line),
		    "{\"event\":\"request\",\"host\":\"h%d.test\",\"port\":443,"
		    "\"decision\":\"deny\",\"reason\":\"no rule allows "
		    "h%d.test:443\"}",
		    i, i);
		feed_ok(lv, line);
	}
	assert_int_equal(logview_nhosts(lv), LOGVIEW_KEYS_MAX);
	assert_int_equal(logview_ndenials(lv), LOGVIEW_KEYS_MAX);
	assert_int_equal(logview_host(lv, NULL, -1, &st), 0);
	assert_int_equal(st.requests, 50);
	assert_int_equal(logview_denials(lv, NULL, -1, NULL), 50);
	out = print_text(lv);
	has(out, "50x  (others)  other denials\n");
	has(out, "  (others) ");
	free(out);
	logview_free(lv);
}

static void
test_json(void **state)
{
	struct logprint_opts o = {0, 1};
	struct logview *lv = denied_view();
	json_t *root, *d, *h;
	json_error_t e;
	char *out;

	(void)state;
	out = print(lv, &o);
	root = json_loads(out, 0, &e);
	if (root == NULL)
		fail_msg("bad JSON: %s\n%s", e.text, out);
	d = json_array_get(json_object_get(root, "denied"), 0);
	assert_int_equal(json_integer_value(json_object_get(d, "count")), 3);
	assert_string_equal(json_string_value(json_object_get(d, "allow")),
	    "allow evil.example:443");
	assert_string_equal(
	    json_string_value(json_object_get(d, "kind")), "no-rule");
	h = json_array_get(json_object_get(root, "hosts"), 0);
	assert_string_equal(
	    json_string_value(json_object_get(h, "host")), "evil.example");
	assert_int_equal(json_integer_value(json_object_get(h, "port")), 443);
	assert_int_equal(json_integer_value(json_object_get(
	                     json_object_get(root, "totals"), "denied")),
	    11);
	json_decref(root);
	free(out);
	o.denied_only = 1;
	out = print(lv, &o);
	root = json_loads(out, 0, &e);
	assert_non_null(root);
	assert_int_equal(json_object_size(root), 1);
	assert_non_null(json_object_get(root, "denied"));
	json_decref(root);
	free(out);
	logview_free(lv);
}

static void
test_escape(void **state)
{
	struct logview *lv = logview_new();
	char *out;

	(void)state;
	feed_ok(lv,
	    REQ("x.test", 443, "deny",
	        ",\"reason\":\"a\\u001b[31mb\\u009bc\\u202ed\\u00e9\","
	        "\"secret\":\"tok\\u0007en\""));
	out = print_text(lv);
	has(out, "a\\x1b[31mb\\xc2\\x9bc\\xe2\\x80\\xaed\xc3\xa9\n");
	has(out, "tok\\x07en");
	assert_null(strchr(out, '\x1b'));
	assert_null(strchr(out, '\x07'));
	free(out);
	logview_free(lv);
}

/* CP as UTF-8 into BUF (5 bytes); returns its length. */
static size_t
utf8(uint32_t cp, char *buf)
{
	size_t n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
	size_t i;

	for (i = n - 1; i > 0; i--) {
		buf[i] = (char)(0x80 | (cp & 0x3f));
		cp >>= 6;
	}
	buf[0] = (char)(n == 1 ? cp : (0xf00 >> n & 0xff) | cp);
	buf[n] = '\0';
	return n;
}

/* S as logview_esc_put() prints it; checks logview_esc_buf() agrees. */
static char *
esc(const char *s)
{
	static char *buf;
	static size_t len;
	char cut[4096];
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	logview_esc_put(f, s);
	assert_int_equal(fclose(f), 0);
	logview_esc_buf(cut, sizeof(cut), s);
	assert_string_equal(cut, buf);
	return buf;
}

/* "<" CP ">" prints with each byte of CP as \xNN. */
static void
escaped_cp(uint32_t cp)
{
	char in[16], want[32], c[5];
	size_t i, n = utf8(cp, c);
	char *out;

	snprintf(in, sizeof(in), "<%s>", c);
	want[0] = '<';
	for (i = 0; i < n; i++)
		snprintf(want + 1 + 4 * i, 5, "\\x%02x", (unsigned char)c[i]);
	strcat(want, ">");
	out = esc(in);
	if (strcmp(out, want) != 0)
		fail_msg("U+%04X: %s, not %s", cp, out, want);
	free(out);
}

/* Every class of character a hostile line could use, escaped. */
static void
test_escape_classes(void **state)
{
	static const uint32_t cps[] = {
	    0x01, 0x09, 0x0a, 0x0d, 0x1b, 0x7f, /* C0, DEL */
	    0x80, 0x85, 0x9b, 0x9f, /* C1: NEL, CSI */
	    0x202a, 0x202b, 0x202c, 0x202d, 0x202e, /* embeddings, overrides */
	    0x2066, 0x2067, 0x2068, 0x2069, /* isolates */
	    0x200e, 0x200f, 0x061c, /* LRM, RLM, ALM */
	    0x2028, 0x2029, /* line, paragraph separators */
	    0x200b, 0x200c, 0x200d, 0x2060, 0xfeff, /* zero-width */
	    0x00ad, 0x0600, 0x180e, 0x2061, 0x206f, 0xfff9, /* other Cf */
	    0x034f, 0x115f, 0x3164, 0xffa0, 0xfe0f, 0x17b4, /* invisible */
	    0xe0001, 0xe0041, 0xe007f, 0xe0100, /* tags, selectors */
	    0x1bca0, 0x1d173, 0x13430, /* format controls past the BMP */
	    0xfdd0, 0xfffe, 0xffff, 0x1fffe, 0x10ffff, /* noncharacters */
	};
	size_t i;

	(void)state;
	assert_true(logview_cp_table_ok());
	for (i = 0; i < sizeof(cps) / sizeof(cps[0]); i++)
		escaped_cp(cps[i]);
}

/* Valid UTF-8 text passes untouched; invalid UTF-8 is escaped. */
static void
test_escape_utf8(void **state)
{
	static const char *const ok[] = {
	    "plain ASCII ~!@#$%^&*()_+{}|:\"<>?`-=[]\\;',./",
	    "caf\xc3\xa9 \xc2\xa0 \xc2\xa1", /* é, NBSP, ¡ */
	    "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e", /* 日本語 */
	    "\xd8\xb3\xd9\x84\xd8\xa7\xd9\x85", /* Arabic letters */
	    "\xd7\xa9\xd7\x9c\xd7\x95\xd7\x9d", /* Hebrew letters */
	    "\xf0\x9f\x98\x80 \xe2\x82\xac \xef\xbf\xbd", /* 😀 € U+FFFD */
	    "", "\xe2\x80\x8a\xe2\x80\xaf\xe2\x81\x9f", /* spaces kept */
	    "\xf3\xb0\x80\x80", /* private use */
	};
	static const struct {
		const char *in, *out;
	} invalid[] = {
	    {"a\x80z", "a\\x80z"}, /* lone continuation */
	    {"a\xc0\x80z", "a\\xc0\\x80z"}, /* overlong NUL */
	    {"a\xc1\xbfz", "a\\xc1\\xbfz"},
	    {"a\xe0\x80\xafz", "a\\xe0\\x80\\xafz"}, /* overlong '/' */
	    {"a\xed\xa0\x80z", "a\\xed\\xa0\\x80z"}, /* surrogate */
	    {"a\xf4\x90\x80\x80z", "a\\xf4\\x90\\x80\\x80z"}, /* > U+10FFFF */
	    {"a\xf5\x80\x80\x80z", "a\\xf5\\x80\\x80\\x80z"},
	    {"a\xe2\x80", "a\\xe2\\x80"}, /* cut at the end */
	    {"a\xe2\x80z", "a\\xe2\\x80z"}, /* cut inside */
	    {"\xff\xfe", "\\xff\\xfe"},
	};
	size_t i;
	char *out;

	(void)state;
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		out = esc(ok[i]);
		assert_string_equal(out, ok[i]);
		free(out);
	}
	for (i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		out = esc(invalid[i].in);
		assert_string_equal(out, invalid[i].out);
		free(out);
	}
}

/* --json: valid JSON in ASCII, whatever the log held, and the same text. */
static void
test_escape_json(void **state)
{
	struct logprint_opts o = {0, 1};
	struct logview *lv = logview_new();
	const char *reason = "a\xe2\x80\xa8"
	                     "b\xe2\x80\xae"
	                     "c\x7f"
	                     "d\xc2\x9b"
	                     "e\xef\xbb\xbf"
	                     "f\xc3\xa9";
	json_error_t e;
	json_t *root, *d;
	char *out;
	size_t i;

	(void)state;
	feed_ok(lv,
	    REQ("x.test", 443, "deny",
	        ",\"reason\":\"a\\u2028b\\u202ec\\u007fd\\u009be\\ufefff"
	        "\\u00e9\""));
	out = print(lv, &o);
	for (i = 0; out[i] != '\0'; i++)
		if ((unsigned char)out[i] >= 0x7f ||
		    ((unsigned char)out[i] < 0x20 && out[i] != '\n'))
			fail_msg(
			    "byte 0x%02x at %zu", (unsigned char)out[i], i);
	has(out, "a\\u2028b\\u202Ec\\u007Fd\\u009Be\\uFEFFf\\u00E9");
	root = json_loads(out, 0, &e);
	assert_non_null(root);
	d = json_array_get(json_object_get(root, "denied"), 0);
	assert_string_equal(
	    json_string_value(json_object_get(d, "reason")), reason);
	json_decref(root);
	free(out);
	logview_free(lv);
}

/* "dns" records: a section of their own, counted, escaped, in JSON too. */
static void
test_lookups(void **state)
{
	struct logprint_opts json = {0, 1};
	struct logview *lv = logview_new();
	struct logview_totals t;
	char *out;

	(void)state;
	out = print_text(lv);
	assert_null(strstr(out, "Looked up directly"));
	free(out);
	feed_ok(lv,
	    "{\"event\":\"dns\",\"host\":\"x.test\",\"qtype\":"
	    "\"A\",\"answer\":\"refused\"}");
	feed_ok(lv,
	    "{\"event\":\"dns\",\"host\":\"X.Test\",\"qtype\":"
	    "\"AAAA\",\"answer\":\"refused\"}");
	feed_ok(lv, "{\"event\":\"dns\",\"host\":\"e\\u001bvil.test\"}");
	feed_ok(lv, "{\"event\":\"dns\",\"answer\":\"refused\",\"count\":7}");
	assert_int_not_equal(
	    feed(lv, "{\"event\":\"dns\",\"qtype\":\"AAAAAAAAAAAAAAAAAAAA\"}"),
	    0);
	logview_totals(lv, &t);
	assert_int_equal(t.lookups, 10);
	assert_int_equal(t.requests, 0);
	out = print_text(lv);
	has(has(out, "Looked up directly and refused (10 names"),
	    "  2x  x.test\n");
	has(out, "  7x  (others)\n");
	has(out, "e\\x1bvil.test");
	has(out, "Denied: none");
	assert_null(strchr(out, '\x1b'));
	free(out);
	out = print(lv, &json);
	has(out, "\"looked_up\"");
	has(out, "\"name\": \"x.test\"");
	free(out);
	logview_free(lv);
}

/* END for connection CONN of run r1, with EXTRA fields. */
#define END(conn, extra)                                                       \
	"{\"sandbox\":\"r1\",\"conn\":" #conn ",\"event\":\"end\"" extra "}"

/*
 * A log with a request of every class, twice on one host, a folded
 * denial, a 403 after a denial (not a refusal) and a server's own 502
 * (not a failure), and a looked-up name (not a request).
 */
static void
feed_classes(struct logview *lv)
{
	feed_ok(lv, REQ("a.test", 443, "allow", ",\"conn\":1"));
	feed_ok(lv, END(1, ",\"status\":200,\"bytes_down\":5"));
	feed_ok(lv, REQ("a.test", 443, "allow", ",\"conn\":2"));
	feed_ok(lv, END(2, ",\"status\":502")); /* the server's own */
	feed_ok(lv,
	    REQ("b.test", 443, "deny",
	        ",\"conn\":3,\"count\":3,\"reason\":\"no rule allows "
	        "b.test:443\""));
	feed_ok(lv, END(3, ",\"status\":403"));
	feed_ok(lv, REQ("intranet.test", 80, "allow", ",\"conn\":4"));
	feed_ok(lv,
	    END(4,
	        ",\"status\":403,\"error\":\"intranet.test resolves to "
	        "10.0.0.1:80 (private): not allowed without 'private' in "
	        "the rule\""));
	feed_ok(lv, REQ("down.test", 80, "allow", ",\"conn\":5"));
	feed_ok(lv,
	    END(5,
	        ",\"status\":502,\"error\":\"connect to down.test:80: "
	        "Connection refused\""));
	feed_ok(lv, REQ("down.test", 80, "allow", ",\"conn\":6"));
	feed_ok(lv, END(6, ",\"status\":504,\"error\":\"connect timed out\""));
	feed_ok(lv, REQ("a.test", 443, "allow", ",\"conn\":7"));
	feed_ok(lv,
	    END(7,
	        ",\"status\":200,\"error\":\"the client does not trust "
	        "the run CA (alert unknown ca)\""));
	feed_ok(lv, REQ("a.test", 443, "deny", ",\"reason\":\"path /x\""));
	feed_ok(lv, "{\"event\":\"dns\",\"host\":\"x.test\"}");
	/* Every request record is counted by its decision. */
	assert_int_not_equal(
	    feed(lv, "{\"event\":\"request\",\"host\":\"c.test\"}"), 0);
}

/* The sum of the classes of N (in the order of enum logview_class). */
static uint64_t
sum(const uint64_t *n)
{
	uint64_t s = 0;
	int c;

	for (c = 0; c < LOGVIEW_CLASS_NCLASSES; c++)
		s += n[c];
	return s;
}

static int
cmp_none(const void *a, const void *b)
{
	(void)a;
	(void)b;
	return 0;
}

/* The sum of logview_entry_count() over list L. */
static uint64_t
list_sum(const struct logview *lv, enum logview_list l)
{
	const struct logview_entry **v;
	uint64_t s = 0;
	size_t i, n = 0;

	v = logview_sorted(lv, l, cmp_none, &n);
	assert_non_null(v);
	for (i = 0; i < n; i++) {
		s += logview_entry_count(v[i]);
		if (l == LOGVIEW_HOSTS)
			assert_int_equal(sum(v[i]->n), v[i]->requests);
	}
	free(v);
	return s;
}

/*
 * One request, one class, the same in every section: the classes add up
 * to the requests per host and in the totals, the denials section counts
 * denied and refused, and --json carries the numbers the text shows.
 */
static void
test_classes(void **state)
{
	struct logprint_opts json = {0, 1};
	struct logview *lv = logview_new();
	struct logview_host_stats st;
	struct logview_totals t;
	json_t *o, *tj;
	char *out;
	int c;

	(void)state;
	feed_classes(lv);
	logview_totals(lv, &t);
	assert_int_equal(t.requests, 10);
	assert_int_equal(t.n[LOGVIEW_CLASS_ALLOWED], 2);
	assert_int_equal(t.n[LOGVIEW_CLASS_DENIED], 4);
	assert_int_equal(t.n[LOGVIEW_CLASS_REFUSED], 1);
	assert_int_equal(t.n[LOGVIEW_CLASS_FAILED], 2);
	assert_int_equal(t.n[LOGVIEW_CLASS_DISTRUST], 1);
	assert_int_equal(t.lookups, 1);
	assert_int_equal(sum(t.n), t.requests);
	assert_int_equal(list_sum(lv, LOGVIEW_HOSTS), t.requests);
	assert_int_equal(list_sum(lv, LOGVIEW_DENIALS),
	    t.n[LOGVIEW_CLASS_DENIED] + t.n[LOGVIEW_CLASS_REFUSED]);
	assert_int_equal(
	    list_sum(lv, LOGVIEW_DISTRUST), t.n[LOGVIEW_CLASS_DISTRUST]);
	assert_int_equal(logview_host(lv, "a.test", 443, &st), 0);
	assert_int_equal(st.requests, 4);
	assert_int_equal(st.allowed, 2);
	assert_int_equal(st.denied, 1);
	assert_int_equal(st.distrust, 1);
	assert_int_equal(logview_host(lv, "intranet.test", 80, &st), 0);
	assert_int_equal(st.allowed + st.refused, 1);
	assert_int_equal(st.refused, 1);
	assert_int_equal(logview_host(lv, "down.test", 80, &st), 0);
	assert_int_equal(st.failed, 2);

	out = print_text(lv);
	has(out, "Denied (5 requests):\n");
	has(out,
	    "  HOST:PORT         REQUESTS  ALLOWED  DENIED  REFUSED  FAILED  "
	    "DISTRUST    BYTES UP  BYTES DOWN  SECRETS\n");
	has(out,
	    "  intranet.test:80         1        0       0        1       0  "
	    "       0         0 B         0 B  -\n");
	has(out,
	    "  requests   10 (2 allowed, 4 denied, 1 refused, 2 failed, 1 "
	    "distrust)\n"
	    "  refused    1 allowed, then refused by the proxy (403)\n"
	    "  failed     2 allowed, then failed upstream");
	has(out, "  lookups    1 name looked up directly (not requests)\n");
	free(out);

	out = print(lv, &json);
	o = json_loads(out, 0, NULL);
	assert_non_null(o);
	tj = json_object_get(o, "totals");
	assert_int_equal(
	    json_integer_value(json_object_get(tj, "requests")), t.requests);
	assert_int_equal(
	    json_integer_value(json_object_get(tj, "lookups")), t.lookups);
	for (c = 0; c < LOGVIEW_CLASS_NCLASSES; c++)
		assert_int_equal(json_integer_value(json_object_get(
		                     tj, logview_class_name(c))),
		    t.n[c]);
	json_decref(o);
	free(out);
	logview_free(lv);
}

/* A request of run r1 on CONN that arrived VIA, with EXTRA fields. */
#define VREQ(conn, via, host, port, dec, extra)                                \
	"{\"sandbox\":\"r1\",\"conn\":" #conn ",\"event\":\"request\","        \
	"\"method\":\"CONNECT\",\"via\":\"" via "\",\"host\":\"" host          \
	"\",\"port\":" #port ",\"decision\":\"" dec "\"" extra "}"

/*
 * "via": captured and SOCKS requests are marked in the tables and
 * grouped with a hint; a port no listener captures and UDP get their own
 * advice; a value the reader does not know is read, not refused.
 */
static void
test_via(void **state)
{
	struct logprint_opts json = {0, 1};
	struct logview *lv = logview_new();
	struct logview_host_stats st;
	json_t *o, *a;
	char *out;

	(void)state;
	feed_ok(lv, VREQ(1, "capture", "api.test", 443, "allow", ""));
	feed_ok(lv, END(1, ",\"via\":\"capture\",\"status\":200"));
	feed_ok(lv, VREQ(2, "proxy", "api.test", 443, "allow", ""));
	feed_ok(lv, VREQ(3, "socks", "github.com", 22, "allow", ""));
	feed_ok(lv,
	    VREQ(4, "capture", "db.test", 5555, "deny",
	        ",\"reason\":\"port 5555 is not captured: no allow rule "
	        "names it\""));
	feed_ok(lv,
	    "{\"sandbox\":\"r1\",\"conn\":5,\"event\":\"request\","
	    "\"method\":\"UDP\",\"via\":\"capture\",\"host\":\"192.0.2.9\","
	    "\"port\":5000,\"decision\":\"deny\",\"reason\":\"UDP to "
	    "192.0.2.9:5000 is not captured\"}");
	feed_ok(lv, VREQ(6, "capture", "192.0.2.7", 443, "allow", ""));
	feed_ok(lv, VREQ(7, "tun", "new.test", 443, "allow", ""));
	assert_int_not_equal(
	    feed(lv, VREQ(8, "much-too-long", "x.test", 443, "allow", "")), 0);
	assert_int_equal(logview_host(lv, "api.test", 443, &st), 0);
	assert_int_equal(st.requests, 2);

	out = print_text(lv);
	has(out, "  api.test:443 (proxy, captured) ");
	has(out, "  github.com:22 (socks) ");
	has(out, "  new.test:443 ");
	assert_null(strstr(out, "new.test:443 ("));
	has(has(out, "Denied (2 requests):\n"),
	    "  1x  db.test:5555 (captured)  port 5555 is not captured: no "
	    "allow rule names it\n"
	    "      allow db.test:5555\n");
	has(out,
	    "  1x  192.0.2.9:5000 (captured)  UDP to 192.0.2.9:5000 is not "
	    "captured\n"
	    "      no allow can permit this: UDP other than DNS never leaves "
	    "the sandbox\n");
	has(has(out,
	        "Captured (4 connections from programs that ignore the "
	        "proxy variables):\n"),
	    "  1x  api.test:443\n"
	    "      api.test was resolved by a program that ignores the proxy "
	    "variables; it was captured\n");
	has(out,
	    "  1x  db.test:5555  (1 denied)\n"
	    "      to let it through: allow db.test:5555\n");
	has(out,
	    "  1x  192.0.2.7:443\n"
	    "      a program that ignores the proxy variables connected to "
	    "192.0.2.7 itself; it was captured\n");
	free(out);

	out = print(lv, &json);
	o = json_loads(out, 0, NULL);
	assert_non_null(o);
	a = json_object_get(o, "captured");
	assert_int_equal(json_array_size(a), 4);
	has(out, "\"kind\": \"not-captured\"");
	has(out, "\"kind\": \"udp\"");
	has(out, "\"denied_hint\": \"to let it through: allow db.test:5555\"");
	has(out,
	    "\"via\": [\n        \"proxy\",\n        \"capture\"\n      ]");
	json_decref(o);
	free(out);
	logview_free(lv);
}

/*
 * The sandbox's refused ICMP sockets (method ICMP or RAW, no host): listed
 * among the denials with their hint, one per reason, and in the captured
 * list as "(no host)" with the same hint; in JSON kind "icmp".  A record
 * with a host and method ICMP is no such note: no hint.
 */
static void
test_icmp(void **state)
{
	struct logprint_opts json = {0, 1};
	struct logview *lv = logview_new();
	char *out;

	(void)state;
	feed_ok(lv,
	    "{\"sandbox\":\"r1\",\"conn\":0,\"event\":\"request\","
	    "\"method\":\"ICMP\",\"via\":\"capture\",\"decision\":"
	    "\"deny\",\"reason\":\"ICMP (ping) is not carried\"}");
	feed_ok(lv,
	    "{\"sandbox\":\"r1\",\"conn\":0,\"event\":\"request\","
	    "\"method\":\"RAW\",\"via\":\"capture\",\"decision\":"
	    "\"deny\",\"reason\":\"a raw socket is not carried\"}");
	feed_ok(lv,
	    VREQ(0, "capture", "192.0.2.9", 5555, "deny",
	        ",\"reason\":\"port 5555 is not captured: no allow rule "
	        "names it\""));
	out = print_text(lv);
	has(has(out, "Denied (3 requests):\n"),
	    "  1x  (no host) (captured)  ICMP (ping) is not carried\n"
	    "      ICMP never leaves the sandbox; no rule can allow it\n");
	has(out,
	    "  1x  (no host) (captured)  a raw socket is not carried\n"
	    "      ICMP never leaves the sandbox; no rule can allow it\n");
	has(out,
	    "  2x  (no host)  (2 denied)\n"
	    "      ICMP never leaves the sandbox; no rule can allow it\n");
	has(out,
	    "  1x  192.0.2.9:5555  (1 denied)\n"
	    "      to let it through: allow 192.0.2.9:5555\n");
	free(out);
	out = print(lv, &json);
	has(out, "\"kind\": \"icmp\"");
	has(out,
	    "\"note\": \"ICMP never leaves the sandbox; no rule can "
	    "allow it\"");
	free(out);
	logview_free(lv);

	lv = logview_new();
	feed_ok(lv,
	    "{\"sandbox\":\"r1\",\"conn\":1,\"event\":\"request\","
	    "\"method\":\"ICMP\",\"host\":\"a.test\",\"port\":1,"
	    "\"decision\":\"deny\",\"reason\":\"no rule allows a.test:1\"}");
	out = print_text(lv);
	assert_null(strstr(out, "ICMP never leaves"));
	free(out);
	logview_free(lv);
}

/* A log without "via" (older): no mark, no captured section, in JSON too. */
static void
test_via_absent(void **state)
{
	struct logprint_opts json = {0, 1};
	struct logview *lv = logview_new();
	char *out;

	(void)state;
	feed_ok(lv, REQ("a.test", 443, "allow", ""));
	feed_ok(lv,
	    REQ("b.test", 443, "deny",
	        ",\"reason\":\"no rule allows b.test:443\""));
	out = print_text(lv);
	assert_null(strstr(out, "Captured"));
	assert_null(strstr(out, "(captured)"));
	has(out, "  1x  b.test:443  no rule allows b.test:443\n");
	free(out);
	out = print(lv, &json);
	assert_null(strstr(out, "\"via\""));
	assert_null(strstr(out, "\"captured\""));
	free(out);
	logview_free(lv);
}

/*
 * The stub's answers with capture: a name the policy names gets a
 * synthetic address (or no data) and is not listed as denied; any other
 * NXDOMAIN, with its hint.
 */
static void
test_lookup_answers(void **state)
{
	struct logprint_opts json = {0, 1};
	struct logview *lv = logview_new();
	struct logview_totals t;
	char *out;

	(void)state;
	feed_ok(lv,
	    "{\"event\":\"dns\",\"host\":\"api.test\",\"qtype\":\"A\","
	    "\"answer\":\"synthetic\"}");
	feed_ok(lv,
	    "{\"event\":\"dns\",\"host\":\"api.test\",\"qtype\":\"MX\","
	    "\"answer\":\"nodata\"}");
	feed_ok(lv,
	    "{\"event\":\"dns\",\"host\":\"nothere.test\",\"qtype\":\"A\","
	    "\"answer\":\"nxdomain\",\"count\":3}");
	logview_totals(lv, &t);
	assert_int_equal(t.lookups, 5);
	out = print_text(lv);
	has(has(out,
	        "Looked up directly and denied (3 names; programs that "
	        "do this ignore http_proxy/https_proxy):\n"),
	    "  3x  nothere.test: the policy names no such host (NXDOMAIN in "
	    "the sandbox)\n"
	    "      to let a program reach a name: allow NAME:PORT (its "
	    "lookups");
	assert_null(strstr(out, "x  api.test"));
	free(out);
	out = print(lv, &json);
	has(out, "\"answers\": [\n        \"synthetic\",\n        \"nodata\"");
	has(out, "\"denied\": 3");
	free(out);

	/* Only allowed names: no section of denied lookups. */
	logview_free(lv);
	lv = logview_new();
	feed_ok(lv,
	    "{\"event\":\"dns\",\"host\":\"api.test\",\"qtype\":\"A\","
	    "\"answer\":\"synthetic\"}");
	out = print_text(lv);
	assert_null(strstr(out, "Looked up directly"));
	has(out, "  lookups    1 name looked up directly (not requests)\n");
	free(out);
	logview_free(lv);
}

static void
test_ts(void **state)
{
	struct logview *lv = logview_new();
	struct logview_totals t;

	(void)state;
	feed_ok(lv, "{\"event\":\"end\",\"ts\":\"2026-11-29T10:00:05.000Z\"}");
	feed_ok(lv, "{\"event\":\"end\",\"ts\":\"2026-11-29T10:00:01.000Z\"}");
	feed_ok(lv, "{\"event\":\"end\",\"ts\":\"2026-11-29T10:00:09.000Z\"}");
	feed_ok(lv, "{\"event\":\"end\"}");
	logview_totals(lv, &t);
	assert_string_equal(t.first_ts, "2026-11-29T10:00:01.000Z");
	assert_string_equal(t.last_ts, "2026-11-29T10:00:09.000Z");
	logview_free(lv);
	logview_free(NULL);
}

/* A broker's record: REQ with sandbox SB and client UID, CMD. */
#define CREQ(sb, uid, cmd, host, dec)                                          \
	"{\"ts\":\"2026-11-29T10:00:00.000Z\",\"sandbox\":\"" sb "\","         \
	"\"client_uid\":" #uid ",\"client_pid\":77,\"client_cmd\":\"" cmd      \
	"\",\"conn\":1,\"event\":\"request\",\"host\":\"" host                 \
	"\",\"port\":443,\"decision\":\"" dec "\"}"

/*
 * A broker's central log: two users' sandboxes and a refusal.  The
 * Clients section counts each uid's sandboxes, requests and denials and
 * lists the refusal; a log of one client shows none.
 */
static void
test_clients(void **state)
{
	struct logprint_opts o = {0, 1};
	struct logview *lv = logview_new();
	struct logview_totals t;
	json_t *root, *c;
	char *out, line[1024];
	int i;

	(void)state;
	feed_ok(lv, CREQ("s1", 1001, "git", "github.com", "allow"));
	feed_ok(lv, CREQ("s1", 1001, "git", "evil.test", "deny"));
	feed_ok(lv, CREQ("s2", 1001, "curl", "github.com", "allow"));
	feed_ok(lv,
	    "{\"sandbox\":\"s2\",\"client_uid\":1001,\"conn\":1,"
	    "\"event\":\"end\",\"status\":200,\"bytes_down\":5}");
	feed_ok(lv, CREQ("s3", 1002, "npm", "registry.npmjs.org", "allow"));
	feed_ok(lv,
	    "{\"ts\":\"2026-11-29T10:00:01.000Z\",\"sandbox\":\"b\","
	    "\"client_uid\":1003,\"client_pid\":9,\"client_cmd\":\"sh\","
	    "\"conn\":0,\"event\":\"client\",\"decision\":\"deny\","
	    "\"reason\":\"policy x is not granted to uid 1003 "
	    "(carol)\",\"policy\":\"x\"}");
	feed_ok(lv,
	    "{\"event\":\"client\",\"decision\":\"deny\","
	    "\"reason\":\"policy x is not granted to uid 1003\","
	    "\"client_uid\":1003,\"policy\":\"x\"}");
	feed_ok(lv,
	    "{\"event\":\"client\",\"decision\":\"allow\","
	    "\"client_uid\":1002,\"policy\":\"npm\"}");
	/* The longest policy and reason kept, twice: one entry. */
	for (i = 0; i < 2; i++) {
		snprintf(line, sizeof(line),
		    "{\"event\":\"client\",\"decision\":\"deny\","
		    "\"client_uid\":4294967295,\"policy\":\"%0100d\","
		    "\"reason\":\"%0600d\"}",
		    0, 0);
		feed_ok(lv, line);
	}
	logview_totals(lv, &t);
	assert_int_equal(t.records, 10);
	assert_int_equal(t.requests, 4);
	assert_int_equal(t.n[LOGVIEW_CLASS_DENIED], 1);
	assert_int_equal(t.malformed, 0);
	out = print_text(lv);
	has(out,
	    "\nClients (2 uids, 3 sandboxes):\n"
	    "  UID         SANDBOXES  REQUESTS    DENIED  COMMANDS\n"
	    "  1001                2         3         1  git,curl\n"
	    "  1002                1         1         0  npm\n"
	    "  refused by the broker:\n"
	    "  2x  uid 1003 asked for policy x: not granted\n");
	has(out, "  2x  uid 4294967295 asked for policy 0000000000");
	free(out);
	out = print(lv, &o);
	assert_non_null(root = json_loads(out, 0, NULL));
	c = json_array_get(json_object_get(root, "clients"), 0);
	assert_int_equal(json_integer_value(json_object_get(c, "uid")), 1001);
	assert_int_equal(
	    json_integer_value(json_object_get(c, "sandboxes")), 2);
	assert_int_equal(json_integer_value(json_object_get(c, "denied")), 1);
	c = json_array_get(json_object_get(root, "refusals"), 0);
	assert_int_equal(json_integer_value(json_object_get(c, "count")), 2);
	assert_string_equal(
	    json_string_value(json_object_get(c, "policy")), "x");
	json_decref(root);
	free(out);
	logview_free(lv);
	/* One client (a user's own copy): no section. */
	lv = logview_new();
	feed_ok(lv, CREQ("s1", 1001, "git", "github.com", "allow"));
	feed_ok(lv, CREQ("s1", 1001, "git", "evil.test", "deny"));
	out = print_text(lv);
	assert_null(strstr(out, "Clients"));
	free(out);
	out = print(lv, &o);
	assert_null(strstr(out, "clients"));
	free(out);
	logview_free(lv);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_counts),
	    cmocka_unit_test(test_clients),
	    cmocka_unit_test(test_end_by_conn),
	    cmocka_unit_test(test_conn_zero),
	    cmocka_unit_test(test_denials),
	    cmocka_unit_test(test_text),
	    cmocka_unit_test(test_denied_only),
	    cmocka_unit_test(test_units),
	    cmocka_unit_test(test_refused),
	    cmocka_unit_test(test_distrust),
	    cmocka_unit_test(test_malformed),
	    cmocka_unit_test(test_read),
	    cmocka_unit_test(test_read_long),
	    cmocka_unit_test(test_count_field),
	    cmocka_unit_test(test_filter),
	    cmocka_unit_test(test_bounded),
	    cmocka_unit_test(test_json),
	    cmocka_unit_test(test_advice_narrow),
	    cmocka_unit_test(test_escape),
	    cmocka_unit_test(test_escape_classes),
	    cmocka_unit_test(test_escape_utf8),
	    cmocka_unit_test(test_escape_json),
	    cmocka_unit_test(test_ts),
	    cmocka_unit_test(test_lookups),
	    cmocka_unit_test(test_classes),
	    cmocka_unit_test(test_via),
	    cmocka_unit_test(test_icmp),
	    cmocka_unit_test(test_via_absent),
	    cmocka_unit_test(test_lookup_answers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
