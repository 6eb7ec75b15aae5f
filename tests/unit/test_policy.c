/*
 * test_policy.c: decisions of policy_decide() (policy/policy.c).
 *
 * Table-driven: each case names a policy text, a request as the proxy
 * would make it (host through target_host_parse, path through
 * target_path_normalise, method NULL for the tunnel phase), and the
 * expected verdict, deciding rule line (0: no rule decided), interception
 * flag (tunnel phase) and a substring of the reason.  Policies are loaded
 * under the name "p.conf".  Secrets are defined with "env": loading reads
 * no value.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define POLICY_INTERNAL
#include "common/ph_err.h"
#include "common/xmalloc.h"
#include "policy/policy.h"
#include "tests/unit/fixture.h"

#define NAME "p.conf"

struct dcase {
	const char *policy;
	const char *host;
	uint16_t port;
	int tls;
	const char *method; /* NULL: tunnel phase */
	const char *path;
	enum policy_verdict verdict;
	unsigned line; /* deciding rule, 0: none */
	int intercept; /* tunnel phase only */
	const char *reason; /* substring */
};

#define A POLICY_ALLOW
#define D POLICY_DENY
/* A CONNECT to HOST:PORT. */
#define TUN(pol, host, port, v, line, icpt, reason)                            \
	{                                                                      \
		pol, host, port, 1, NULL, NULL, v, line, icpt, reason          \
	}
/* A request inside TLS. */
#define TLS(pol, host, port, m, path, v, line, reason)                         \
	{                                                                      \
		pol, host, port, 1, m, path, v, line, 0, reason                \
	}
/* A plain-HTTP request. */
#define HTTP(pol, host, port, m, path, v, line, reason)                        \
	{                                                                      \
		pol, host, port, 0, m, path, v, line, 0, reason                \
	}

struct fixture {
	struct policy *p;
	const char *text; /* the policy P was loaded from */
	size_t nerr;
};

static int
setup(void **state)
{
	*state = xcalloc(1, sizeof(struct fixture));
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	policy_free(f->p);
	free(f);
	return 0;
}

/* Loads TEXT as NAME (unless already loaded); it must have no errors. */
static void
use_policy_as(struct fixture *f, const char *name, const char *text)
{
	if (f->p != NULL && f->text == text)
		return;
	policy_free(f->p);
	f->p = NULL;
	f->text = NULL;
	f->p = fixture_policy_as(name, text, 0);
	f->text = text;
}

static void
use_policy(struct fixture *f, const char *text)
{
	use_policy_as(f, NAME, text);
}

/* Decides a request like the proxy: normalised host and path. */
static enum policy_verdict
decide(struct fixture *f, const char *host, uint16_t port, int tls,
    const char *method, const char *path, struct policy_decision *d)
{
	struct policy_request q = {0};
	struct target_host h;
	char norm[1024];
	int r;

	if ((r = target_host_parse(host, strlen(host), &h)) != 0)
		fail_msg("host %s: %s", host, target_strerror(r));
	q.host = &h;
	q.port = port;
	q.tls = tls;
	q.method = method;
	if (method != NULL) {
		if ((r = target_path_normalise(
		         path, strlen(path), norm, sizeof(norm))) != 0)
			fail_msg("path %s: %s", path, target_strerror(r));
		q.path = norm;
	}
	return policy_decide(f->p, &q, d);
}

static int
case_ok(const struct dcase *c, enum policy_verdict v,
    const struct policy_decision *d)
{
	if (v != d->verdict || v != c->verdict || d->rule_line != c->line ||
	    strstr(d->reason, c->reason) == NULL ||
	    strchr(d->reason, '\n') != NULL)
		return 0;
	/* policy.h: a reason for denials, "" for allows. */
	if ((v == A) != (d->reason[0] == '\0'))
		return 0;
	if (d->intercept != (c->method == NULL ? c->intercept : 0))
		return 0;
	if (c->line == 0)
		return d->rule == NULL && d->rule_file == NULL;
	return d->rule != NULL && d->rule->line == c->line &&
	    d->rule_file != NULL && strcmp(d->rule_file, NAME) == 0;
}

static void
run_cases(struct fixture *f, const struct dcase *c, size_t n)
{
	struct policy_decision d;
	enum policy_verdict v;
	size_t i;

	for (i = 0; i < n; i++, c++) {
		use_policy(f, c->policy);
		v = decide(f, c->host, c->port, c->tls, c->method, c->path, &d);
		if (case_ok(c, v, &d))
			continue;
		fail_msg(
		    "case %zu: %s %s:%u%s%s: got %s rule %s:%u "
		    "intercept %d reason \"%s\"; want %s rule %u intercept %d "
		    "reason ~\"%s\"",
		    i, c->method ? c->method : "CONNECT", c->host, c->port,
		    c->path ? " " : "", c->path ? c->path : "",
		    v == A ? "allow" : "deny", d.rule_file ? d.rule_file : "-",
		    d.rule_line, d.intercept, d.reason,
		    c->verdict == A ? "allow" : "deny", c->line, c->intercept,
		    c->reason);
	}
}

#define RUN(f, cases) run_cases(f, cases, sizeof(cases) / sizeof(cases[0]))

/* --- hosts ---------------------------------------------------------------- */

static const char p_hosts[] = "allow 127.0.0.1:8080\n" /* 1 */
                              "allow example.com:8080\n" /* 2 */
                              "allow [2001:db8::1]:8080\n" /* 3 */
                              "allow 10.0.0.0/8:8080\n" /* 4 */
                              "allow localhost:8080\n"; /* 5 */

static const struct dcase host_cases[] = {
    TUN(p_hosts, "example.com", 8080, A, 2, 0, ""),
    TUN(p_hosts, "EXAMPLE.COM", 8080, A, 2, 0, ""),
    TUN(p_hosts, "example.com.", 8080, A, 2, 0, ""),
    TUN(p_hosts, "ExAmPlE.cOm.", 8080, A, 2, 0, ""),
    TUN(p_hosts, "www.example.com", 8080, D, 0, 0, "no rule allows"),
    TUN(p_hosts, "127.0.0.1", 8080, A, 1, 0, ""),
    TUN(p_hosts, "127.1", 8080, A, 1, 0, ""),
    TUN(p_hosts, "127.0.1", 8080, A, 1, 0, ""),
    TUN(p_hosts, "0x7f.0.0.1", 8080, A, 1, 0, ""),
    TUN(p_hosts, "0177.0.0.1", 8080, A, 1, 0, ""),
    TUN(p_hosts, "2130706433", 8080, A, 1, 0, ""),
    TUN(p_hosts, "0x7f000001", 8080, A, 1, 0, ""),
    TUN(p_hosts, "127.0.0.1.", 8080, A, 1, 0, ""),
    TUN(p_hosts, "[::ffff:127.0.0.1]", 8080, A, 1, 0, ""),
    TUN(p_hosts, "::ffff:7f00:1", 8080, A, 1, 0, ""),
    TUN(p_hosts, "127.0.0.2", 8080, D, 0, 0, "no rule allows 127.0.0.2:8080"),
    TUN(p_hosts, "2130706434", 8080, D, 0, 0, "no rule allows 127.0.0.2"),
    TUN(p_hosts, "[2001:db8::1]", 8080, A, 3, 0, ""),
    TUN(p_hosts, "[2001:DB8:0::1]", 8080, A, 3, 0, ""),
    TUN(p_hosts, "2001:db8:0:0:0:0:0:1", 8080, A, 3, 0, ""),
    TUN(p_hosts, "[2001:db8::2]", 8080, D, 0, 0,
        "no rule allows [2001:db8::2]:8080"),
    TUN(p_hosts, "10.0.0.1", 8080, A, 4, 0, ""),
    TUN(p_hosts, "012.1.2.3", 8080, A, 4, 0, ""),
    TUN(p_hosts, "0xa.0xff.0.1", 8080, A, 4, 0, ""),
    TUN(p_hosts, "167772161", 8080, A, 4, 0, ""),
    TUN(p_hosts, "10.16777215", 8080, A, 4, 0, ""),
    TUN(p_hosts, "[::ffff:10.1.2.3]", 8080, A, 4, 0, ""),
    TUN(p_hosts, "[::ffff:a01:203]", 8080, A, 4, 0, ""),
    /* Names match name rules only, addresses address rules only. */
    TUN(p_hosts, "localhost", 8080, A, 5, 0, ""),
    TUN(p_hosts, "LOCALHOST.", 8080, A, 5, 0, ""),
    TUN(p_hosts, "localhost.localdomain", 8080, D, 0, 0, "no rule"),
    TUN(p_hosts, "127.0.0.1.nip.io", 8080, D, 0, 0, "no rule"),
};

static void
test_host_normalisation(void **state)
{
	RUN(*state, host_cases);
}

static const char p_wild[] = "allow *.example.com\n"; /* 1 */

static const struct dcase wild_cases[] = {
    TUN(p_wild, "example.com", 443, D, 0, 0, "no rule allows example.com:443"),
    TUN(p_wild, "a.example.com", 443, A, 1, 0, ""),
    TUN(p_wild, "a.b.example.com", 80, A, 1, 0, ""),
    TUN(p_wild, "A.Example.COM.", 443, A, 1, 0, ""),
    TUN(p_wild, "badexample.com", 443, D, 0, 0, "no rule"),
    TUN(p_wild, "example.com.evil.test", 443, D, 0, 0, "no rule"),
    TUN(p_wild, "a.example.co", 443, D, 0, 0, "no rule"),
    TUN(p_wild, "10.1.2.3", 443, D, 0, 0, "no rule"),
};

static void
test_wildcard_not_apex(void **state)
{
	RUN(*state, wild_cases);
}

static const char p_any[] = "allow *:8443\n"; /* 1 */

static const struct dcase any_cases[] = {
    TUN(p_any, "example.com", 8443, A, 1, 0, ""),
    TUN(p_any, "a.b.example.com", 8443, A, 1, 0, ""),
    TUN(p_any, "10.1.2.3", 8443, A, 1, 0, ""),
    TUN(p_any, "0x7f.1", 8443, A, 1, 0, ""),
    TUN(p_any, "[2001:db8::1]", 8443, A, 1, 0, ""),
    TUN(p_any, "[::1]", 8443, A, 1, 0, ""),
    TUN(p_any, "anything.test", 22, D, 0, 0,
        "port 22 is not allowed for anything.test (rule p.conf:1)"),
    TUN(p_any, "10.1.2.3", 443, D, 0, 0,
        "port 443 is not allowed for 10.1.2.3"),
};

/* "*" matches every name and every address. */
static void
test_any_target(void **state)
{
	RUN(*state, any_cases);
}

/* --- ports --------------------------------------------------------------- */

static const char p_ports[] = "allow a.test\n" /* 1 */
                              "allow r.test:22,8000-8100\n" /* 2 */
                              "allow e.test:1,65535\n" /* 3 */
                              "deny  d.test\n" /* 4 */
                              "allow d.test:8080\n"; /* 5 */

static const struct dcase port_cases[] = {
    /* allow without ports: 80 and 443. */
    TUN(p_ports, "a.test", 80, A, 1, 0, ""),
    TUN(p_ports, "a.test", 443, A, 1, 0, ""),
    TUN(p_ports, "a.test", 81, D, 0, 0, "port 81 is not allowed"),
    TUN(p_ports, "a.test", 442, D, 0, 0, "port 442 is not allowed"),
    TUN(p_ports, "a.test", 8080, D, 0, 0,
        "port 8080 is not allowed for a.test (rule p.conf:1)"),
    /* Lists and ranges: N-1, N, M, M+1. */
    TUN(p_ports, "r.test", 21, D, 0, 0, "port 21 is not allowed"),
    TUN(p_ports, "r.test", 22, A, 2, 0, ""),
    TUN(p_ports, "r.test", 23, D, 0, 0, "port 23 is not allowed"),
    TUN(p_ports, "r.test", 7999, D, 0, 0, "port 7999"),
    TUN(p_ports, "r.test", 8000, A, 2, 0, ""),
    TUN(p_ports, "r.test", 8050, A, 2, 0, ""),
    TUN(p_ports, "r.test", 8100, A, 2, 0, ""),
    TUN(p_ports, "r.test", 8101, D, 0, 0, "port 8101"),
    TUN(p_ports, "e.test", 1, A, 3, 0, ""),
    TUN(p_ports, "e.test", 2, D, 0, 0, "port 2 "),
    TUN(p_ports, "e.test", 65534, D, 0, 0, "port 65534"),
    TUN(p_ports, "e.test", 65535, A, 3, 0, ""),
    /* deny without ports: every port. */
    TUN(p_ports, "d.test", 8080, D, 4, 0, "denied by rule p.conf:4"),
    TUN(p_ports, "d.test", 1, D, 4, 0, "denied by rule p.conf:4"),
    TUN(p_ports, "d.test", 443, D, 4, 0, "denied by rule p.conf:4"),
    TUN(p_ports, "d.test", 65535, D, 4, 0, "denied by rule p.conf:4"),
    TLS(p_ports, "d.test", 8080, "GET", "/", D, 4, "denied by rule"),
};

static void
test_ports(void **state)
{
	RUN(*state, port_cases);
}

/* --- address blocks ------------------------------------------------------ */

static const char p_cidr[] = "allow 10.0.0.0/8:443\n" /* 1 */
                             "allow 192.168.1.128/25:443\n" /* 2 */
                             "allow 0.0.0.0/0:8443\n" /* 3 */
                             "allow 203.0.113.9/32:443\n" /* 4 */
                             "allow [2001:db8::]/32:443\n" /* 5 */
                             "allow [2001:db8::5]/128:8443\n" /* 6 */
                             "allow [::]/0:9443\n"; /* 7 */

static const struct dcase cidr_cases[] = {
    TUN(p_cidr, "10.0.0.0", 443, A, 1, 0, ""),
    TUN(p_cidr, "10.255.255.255", 443, A, 1, 0, ""),
    /* Outside: only the /0 rule on port 8443 names the address. */
    TUN(p_cidr, "9.255.255.255", 443, D, 0, 0,
        "port 443 is not allowed for 9.255.255.255 (rule p.conf:3)"),
    TUN(p_cidr, "11.0.0.0", 443, D, 0, 0, "port 443 is not allowed"),
    TUN(p_cidr, "192.168.1.128", 443, A, 2, 0, ""),
    TUN(p_cidr, "192.168.1.255", 443, A, 2, 0, ""),
    TUN(p_cidr, "192.168.1.127", 443, D, 0, 0, "port 443 is not allowed"),
    TUN(p_cidr, "192.168.2.128", 443, D, 0, 0, "port 443 is not allowed"),
    /* /0 holds every IPv4 address, and no IPv6 one. */
    TUN(p_cidr, "0.0.0.0", 8443, A, 3, 0, ""),
    TUN(p_cidr, "255.255.255.255", 8443, A, 3, 0, ""),
    TUN(p_cidr, "10.1.2.3", 8443, A, 3, 0, ""),
    TUN(p_cidr, "[2001:db8::4]", 8443, D, 0, 0, "port 8443"),
    /* /32: one address. */
    TUN(p_cidr, "203.0.113.9", 443, A, 4, 0, ""),
    TUN(p_cidr, "203.0.113.8", 443, D, 0, 0, "port 443 is not allowed"),
    TUN(p_cidr, "203.0.113.10", 443, D, 0, 0, "port 443 is not allowed"),
    TUN(p_cidr, "[2001:db8::]", 443, A, 5, 0, ""),
    TUN(p_cidr, "[2001:db8:ffff:ffff:ffff:ffff:ffff:ffff]", 443, A, 5, 0, ""),
    TUN(p_cidr, "[2001:db9::]", 443, D, 0, 0,
        "port 443 is not allowed for 2001:db9:: (rule p.conf:7)"),
    TUN(p_cidr, "[2001:db7:ffff:ffff:ffff:ffff:ffff:ffff]", 443, D, 0, 0,
        "port 443 is not allowed"),
    /* /128: one address. */
    TUN(p_cidr, "[2001:db8::5]", 8443, A, 6, 0, ""),
    TUN(p_cidr, "[2001:db8::6]", 8443, D, 0, 0, "port 8443"),
    /* ::/0 holds every IPv6 address; mapped IPv4 is IPv4. */
    TUN(p_cidr, "[1::]", 9443, A, 7, 0, ""),
    TUN(p_cidr, "[2001:db8::5]", 9443, A, 7, 0, ""),
    TUN(p_cidr, "[::]", 9443, A, 7, 0, ""),
    TUN(p_cidr, "1.2.3.4", 9443, D, 0, 0, "port 9443"),
    TUN(p_cidr, "[::ffff:1.2.3.4]", 9443, D, 0, 0, "port 9443"),
};

static void
test_cidr_edges(void **state)
{
	RUN(*state, cidr_cases);
}

/* --- which rule decides -------------------------------------------------- */

static const char p_deny[] = "allow a.test\n" /* 1 */
                             "deny  a.test:443\n" /* 2 */
                             "allow *\n" /* 3 */
                             "deny  10.0.0.0/8\n" /* 4 */
                             "deny  *.evil.test\n"; /* 5 */

static const struct dcase deny_cases[] = {
    TUN(p_deny, "a.test", 443, D, 2, 0, "denied by rule p.conf:2"),
    TUN(p_deny, "a.test", 80, A, 1, 0, ""),
    TLS(p_deny, "a.test", 443, "GET", "/", D, 2, "denied by rule p.conf:2"),
    TUN(p_deny, "b.test", 443, A, 3, 0, ""),
    TUN(p_deny, "10.1.2.3", 443, D, 4, 0, "denied by rule p.conf:4"),
    TUN(p_deny, "11.1.2.3", 443, A, 3, 0, ""),
    TUN(p_deny, "x.evil.test", 80, D, 5, 0, "denied by rule p.conf:5"),
    TUN(p_deny, "evil.test", 80, A, 3, 0, ""),
};

static void
test_deny_wins(void **state)
{
	RUN(*state, deny_cases);
}

static const char p_first[] =
    "secret one env ONE\n" /* 1 */
    "secret two env TWO\n" /* 2 */
    "allow api.test:443 { inject header X-One one }\n" /* 3 */
    "allow api.test:443 { inject header X-Two two }\n" /* 4 */
    "allow *.api.test:443\n" /* 5 */
    "allow x.api.test:443 { methods GET }\n"; /* 6 */

static const struct dcase first_cases[] = {
    TUN(p_first, "api.test", 443, A, 3, 1, ""),
    TLS(p_first, "api.test", 443, "GET", "/", A, 3, ""),
    /* A later rule's options do not turn interception on. */
    TUN(p_first, "x.api.test", 443, A, 5, 0, ""),
    TLS(p_first, "x.api.test", 443, "POST", "/", A, 5, ""),
};

static void
test_first_allow_decides(void **state)
{
	struct fixture *f = *state;
	struct policy_decision d;

	RUN(f, first_cases);
	assert_int_equal(decide(f, "api.test", 443, 1, "GET", "/", &d), A);
	assert_int_equal(d.ninject, 1);
	assert_string_equal(d.inject[0].header, "X-One");
	assert_string_equal(d.inject[0].secret_name, "one");
}

static const char p_fall[] = "secret gh env GH_TOKEN\n" /* 1 */
                             "allow github.com:443 {\n" /* 2 */
                             "    paths  /acme/widgets.git/* /acme/widgets/*\n"
                             "    inject basic x-access-token gh\n"
                             "}\n"
                             "allow github.com:443\n"; /* 6 */

static const struct dcase fall_cases[] = {
    TUN(p_fall, "github.com", 443, A, 2, 1, ""),
    TLS(p_fall, "github.com", 443, "GET", "/acme/widgets.git/info/refs", A, 2,
        ""),
    TLS(p_fall, "github.com", 443, "POST", "/acme/widgets/pulls", A, 2, ""),
    TLS(p_fall, "github.com", 443, "GET", "/other/repo", A, 6, ""),
    TLS(p_fall, "github.com", 443, "GET", "/acme/widgets.git", A, 6, ""),
    HTTP(p_fall, "github.com", 80, "GET", "/", D, 0,
        "port 80 is not allowed for github.com (rule p.conf:2)"),
};

/* A rule with paths that does not match lets a later rule decide. */
static void
test_paths_fall_through(void **state)
{
	struct fixture *f = *state;
	struct policy_decision d;

	RUN(f, fall_cases);
	assert_int_equal(
	    decide(f, "github.com", 443, 1, "GET", "/other/repo", &d), A);
	assert_int_equal(d.ninject, 0);
	assert_int_equal(d.nplaceholder, 0);
	assert_int_equal(decide(f, "github.com", 443, 1, "GET",
	                     "/acme/widgets.git/info/refs", &d),
	    A);
	assert_int_equal(d.ninject, 1);
}

/* --- paths ---------------------------------------------------------------- */

static const char p_trav[] =
    "allow github.com:443 { paths /acme/widgets.git/* }\n"; /* 1 */

static const struct dcase trav_cases[] = {
    TLS(p_trav, "github.com", 443, "GET", "/acme/widgets.git/info/refs", A, 1,
        ""),
    TLS(p_trav, "github.com", 443, "GET", "/acme/widgets.git/../secret.git", D,
        0, "path /acme/secret.git is not allowed by rule p.conf:1"),
    TLS(p_trav, "github.com", 443, "GET", "/acme/widgets.git/%2e%2e/secret.git",
        D, 0, "path /acme/secret.git is not allowed"),
    TLS(p_trav, "github.com", 443, "GET", "/acme/widgets.git/%2E%2E/secret.git",
        D, 0, "/acme/secret.git"),
    TLS(p_trav, "github.com", 443, "GET", "/acme/widgets.git/.%2e/secret.git",
        D, 0, "/acme/secret.git"),
    TLS(p_trav, "github.com", 443, "GET",
        "/acme/widgets.git/a/../../secret.git/x", D, 0, "/acme/secret.git/x"),
    TLS(p_trav, "github.com", 443, "GET",
        "/acme//widgets.git/./info/%72efs?service=git-upload-pack", A, 1, ""),
    TLS(p_trav, "github.com", 443, "GET", "/acme/widgets.git", D, 0,
        "path /acme/widgets.git is not allowed"),
    TLS(p_trav, "github.com", 443, "GET", "/acme/widgets.git/", A, 1, ""),
    TLS(p_trav, "github.com", 443, "GET", "/ACME/widgets.git/x", D, 0,
        "is not allowed"),
    TLS(p_trav, "github.com", 443, "GET", "/../acme/widgets.git/x", A, 1, ""),
};

static void
test_path_traversal(void **state)
{
	RUN(*state, trav_cases);
}

/* An encoded slash never reaches the policy: the path is refused. */
static void
test_encoded_slash_refused(void **state)
{
	static const char *const bad[] = {
	    "/acme/widgets.git%2f..%2fsecret.git",
	    "/acme/widgets.git/..%2Fsecret.git",
	    "/acme/widgets.git/..%5csecret.git",
	    "/acme/widgets.git/..\\secret.git",
	};
	char out[256];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(target_path_normalise(
		                     bad[i], strlen(bad[i]), out, sizeof(out)),
		    PH_ERR_ENCODED_SLASH);
}

/* --- methods -------------------------------------------------------------- */

static const char p_methods[] =
    "allow api.test:443 { methods GET POST }\n"; /* 1 */

static const struct dcase method_cases[] = {
    TUN(p_methods, "api.test", 443, A, 1, 1, ""),
    TLS(p_methods, "api.test", 443, "GET", "/x", A, 1, ""),
    TLS(p_methods, "api.test", 443, "POST", "/x", A, 1, ""),
    TLS(p_methods, "api.test", 443, "get", "/x", D, 0,
        "method get is not allowed by rule p.conf:1"),
    TLS(p_methods, "api.test", 443, "HEAD", "/x", D, 0,
        "method HEAD is not allowed"),
    TLS(p_methods, "api.test", 443, "DELETE", "/x", D, 0,
        "method DELETE is not allowed"),
    TLS(p_methods, "api.test", 443, "GETX", "/x", D, 0, "method GETX"),
};

/* --- upgrade ------------------------------------------------------------- */

static const char p_upgrade[] =
    "allow ws.test:443 { paths /ws/*; upgrade websocket }\n" /* 1 */
    "allow api.test:443 { paths /api/* }\n" /* 2 */
    "allow open.test:443\n" /* 3 */
    "allow two.test:443 { methods GET; upgrade h2c WebSocket }\n"; /* 4 */

/* Decides with an Upgrade list UP; returns the verdict, fills *D. */
static enum policy_verdict
decide_up(struct fixture *f, const char *host, const char *path, const char *up,
    struct policy_decision *d)
{
	struct policy_request q = {0};
	struct target_host h;

	assert_int_equal(target_host_parse(host, strlen(host), &h), 0);
	q.host = &h;
	q.port = 443;
	q.tls = 1;
	q.method = "GET";
	q.path = path;
	q.upgrade = up;
	return policy_decide(f->p, &q, d);
}

static void
test_upgrade(void **state)
{
	static const struct {
		const char *host, *path, *up;
		enum policy_verdict v;
		const char *reason;
	} c[] = {
	    {"ws.test", "/ws/chat", "websocket", A, ""},
	    {"ws.test", "/ws/chat", "WebSocket", A, ""},
	    {"ws.test", "/ws/chat", " websocket ", A, ""},
	    {"ws.test", "/ws/chat", "websocket/13", A, ""},
	    {"ws.test", "/ws/chat", NULL, A, ""},
	    {"ws.test", "/ws/chat", "h2c", D,
	        "upgrade to 'h2c' is not allowed by rule p.conf:1"},
	    {"ws.test", "/ws/chat", "websocket, h2c", D, "upgrade to"},
	    {"ws.test", "/ws/chat", "websocket,websocketx", D, "upgrade to"},
	    {"ws.test", "/ws/chat", "websocket x", D, "upgrade to"},
	    {"ws.test", "/ws/chat", "", D, "upgrade to"},
	    {"ws.test", "/ws/chat", "(too long)", D, "upgrade to"},
	    {"ws.test", "/other", "websocket", D, "path /other"},
	    /* Paths or methods without "upgrade": no switch of protocols. */
	    {"api.test", "/api/x", "websocket", D,
	        "upgrade to 'websocket' is not allowed by rule p.conf:2"},
	    {"api.test", "/api/x", NULL, A, ""},
	    /* No paths, no methods: anything goes, as before. */
	    {"open.test", "/x", "websocket", A, ""},
	    {"open.test", "/x", "anything", A, ""},
	    {"two.test", "/x", "h2c,websocket", A, ""},
	    {"two.test", "/x", "HTTP/2.0", D, "upgrade to"},
	};
	struct policy_decision d;
	size_t i;

	use_policy(*state, p_upgrade);
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		if (decide_up(*state, c[i].host, c[i].path, c[i].up, &d) !=
		        c[i].v ||
		    strstr(d.reason, c[i].reason) == NULL)
			fail_msg("case %zu: %s %s upgrade %s: got %d \"%s\"", i,
			    c[i].host, c[i].path, c[i].up ? c[i].up : "-",
			    d.verdict, d.reason);
	}
	decide_up(*state, "ws.test", "/ws/a", "websocket", &d);
	assert_int_equal(d.nupgrade, 1);
	assert_string_equal(d.upgrade[0], "websocket");
}

static void
test_methods(void **state)
{
	RUN(*state, method_cases);
}

/* --- deny rules with paths or methods ----------------------------------- */

static const char p_denypaths[] =
    "allow git.test:443\n" /* 1 */
    "deny  git.test:443 { paths /admin/* }\n" /* 2 */
    "deny  git.test { methods DELETE }\n" /* 3 */
    "allow other.test:443\n" /* 4 */
    "deny  other.test:8443 { paths /x/* }\n"; /* 5 */

static const struct dcase denypath_cases[] = {
    /* The tunnel is allowed but intercepted, to see each request. */
    TUN(p_denypaths, "git.test", 443, A, 1, 1, ""),
    TLS(p_denypaths, "git.test", 443, "GET", "/admin/users", D, 2,
        "denied by rule p.conf:2"),
    TLS(p_denypaths, "git.test", 443, "GET", "/x/../admin/users", D, 2, ""),
    TLS(p_denypaths, "git.test", 443, "GET", "/admin", A, 1, ""),
    TLS(p_denypaths, "git.test", 443, "GET", "/ok", A, 1, ""),
    TLS(p_denypaths, "git.test", 443, "DELETE", "/ok", D, 3,
        "denied by rule p.conf:3"),
    /* A deny on another port does not cover this one. */
    TUN(p_denypaths, "other.test", 443, A, 4, 0, ""),
    TLS(p_denypaths, "other.test", 443, "GET", "/x/y", A, 4, ""),
};

static void
test_deny_with_paths(void **state)
{
	RUN(*state, denypath_cases);
}

/* --- plain HTTP and credentials ----------------------------------------- */

static const char p_plain[] = "secret k env K\n" /* 1 */
                              "allow api.test { inject bearer k }\n" /* 2 */
                              "allow www.test\n"; /* 3 */

static const struct dcase plain_cases[] = {
    HTTP(p_plain, "api.test", 80, "GET", "/", D, 2,
        "credentials are never sent over plain HTTP"),
    TLS(p_plain, "api.test", 443, "GET", "/", A, 2, ""),
    TUN(p_plain, "api.test", 443, A, 2, 1, ""),
    HTTP(p_plain, "www.test", 80, "GET", "/", A, 3, ""),
    TUN(p_plain, "www.test", 443, A, 3, 0, ""),
};

static void
test_plain_http_inject(void **state)
{
	struct fixture *f = *state;
	struct policy_decision d;

	RUN(f, plain_cases);
	/* The refusal carries no credential. */
	assert_int_equal(decide(f, "api.test", 80, 0, "GET", "/", &d), D);
	assert_int_equal(d.ninject, 0);
	assert_null(d.inject);
}

/* --- interception -------------------------------------------------------- */

static const char p_intercept[] =
    "secret k env K\n" /* 1 */
    "allow p.test:443 { paths /x/* }\n" /* 2 */
    "allow m.test:443 { methods GET }\n" /* 3 */
    "allow i.test:443 { inject bearer k }\n" /* 4 */
    "allow h.test:443 { placeholder TOKEN k }\n" /* 5 */
    "allow plain.test:443\n" /* 6 */
    "allow priv.test:443 { private }\n" /* 7 */
    "allow ca.test:443 { upstream-ca /ca.pem }\n" /* 8 */
    "allow *.w.test:443\n" /* 9 */
    "allow x.w.test:443 { inject bearer k }\n"; /* 10 */

static const struct dcase intercept_cases[] = {
    TUN(p_intercept, "p.test", 443, A, 2, 1, ""),
    TUN(p_intercept, "m.test", 443, A, 3, 1, ""),
    TUN(p_intercept, "i.test", 443, A, 4, 1, ""),
    TUN(p_intercept, "h.test", 443, A, 5, 1, ""),
    TUN(p_intercept, "plain.test", 443, A, 6, 0, ""),
    TUN(p_intercept, "priv.test", 443, A, 7, 0, ""),
    TUN(p_intercept, "ca.test", 443, A, 8, 0, ""),
    /* Rule 10 never decides, so its inject does not intercept. */
    TUN(p_intercept, "x.w.test", 443, A, 9, 0, ""),
    /* The request phase never sets intercept. */
    TLS(p_intercept, "p.test", 443, "GET", "/x/y", A, 2, ""),
};

static void
test_intercept(void **state)
{
	RUN(*state, intercept_cases);
}

/* --- decision fields ----------------------------------------------------- */

static void
test_allow_private(void **state)
{
	static const char pol[] = "allow priv.test:443 { private }\n"
	                          "allow pub.test:443\n"
	                          "allow 10.0.0.0/8:443\n"
	                          "allow *:8443\n"
	                          "allow 10.9.9.9:8443 { methods GET }\n";
	struct fixture *f = *state;
	struct policy_decision d;

	use_policy(f, pol);
	assert_int_equal(decide(f, "priv.test", 443, 1, NULL, NULL, &d), A);
	assert_int_equal(d.allow_private, 1);
	assert_int_equal(decide(f, "pub.test", 443, 1, NULL, NULL, &d), A);
	assert_int_equal(d.allow_private, 0);
	/* An address rule names the address itself. */
	assert_int_equal(decide(f, "10.1.2.3", 443, 1, NULL, NULL, &d), A);
	assert_int_equal(d.allow_private, 1);
	/* "*" names no address. */
	assert_int_equal(decide(f, "10.1.2.3", 8443, 1, NULL, NULL, &d), A);
	assert_int_equal(d.rule_line, 4);
	assert_int_equal(d.allow_private, 0);
	assert_int_equal(decide(f, "[::1]", 8443, 1, NULL, NULL, &d), A);
	assert_int_equal(d.allow_private, 0);
}

static void collect(void *arg, const char *text);

static void
test_upstream_ca(void **state)
{
	static const char pol[] =
	    "allow git.test:8443 { private; upstream-ca /etc/ca.pem; "
	    "methods GET POST }\n"
	    "allow rel.test:443 { upstream-ca ca.pem; paths /* }\n"
	    "allow sys.test:443 { paths /* }\n";
	struct fixture *f = *state;
	struct policy_decision d;
	char buf[256];

	use_policy_as(f, "conf/p.conf", pol);
	assert_int_equal(decide(f, "git.test", 8443, 1, NULL, NULL, &d), A);
	assert_string_equal(d.upstream_ca, "/etc/ca.pem");
	assert_int_equal(d.intercept, 1);
	assert_int_equal(d.allow_private, 1);
	assert_int_equal(decide(f, "git.test", 8443, 1, "GET", "/", &d), A);
	assert_string_equal(d.upstream_ca, "/etc/ca.pem");
	assert_int_equal(decide(f, "rel.test", 443, 1, NULL, NULL, &d), A);
	assert_string_equal(d.upstream_ca, "conf/ca.pem");
	assert_int_equal(decide(f, "sys.test", 443, 1, NULL, NULL, &d), A);
	assert_null(d.upstream_ca);
	buf[0] = '\0';
	policy_upstream_cas(f->p, collect, buf);
	assert_string_equal(buf, "/etc/ca.pem conf/ca.pem ");
}

static void
test_inject_fields(void **state)
{
	static const char pol[] =
	    "secret gh env GH\nsecret api env API\n"
	    "allow github.com:443 { inject basic x-access-token gh }\n"
	    "allow api.test:443 { inject header X-Api-Key api }\n"
	    "allow b.test:443 { inject bearer api }\n";
	struct fixture *f = *state;
	struct policy_decision d;
	const struct policy_inject *in;

	use_policy(f, pol);
	assert_int_equal(decide(f, "github.com", 443, 1, "GET", "/", &d), A);
	assert_int_equal(d.ninject, 1);
	in = &d.inject[0];
	assert_int_equal(in->kind, POLICY_INJECT_BASIC);
	assert_string_equal(in->header, "Authorization");
	assert_string_equal(in->user, "x-access-token");
	assert_string_equal(in->secret_name, "gh");
	assert_non_null(in->secret);
	assert_string_equal(secret_name(in->secret), "gh");
	assert_int_equal(d.nplaceholder, 0);

	assert_int_equal(decide(f, "api.test", 443, 1, "GET", "/", &d), A);
	in = &d.inject[0];
	assert_int_equal(in->kind, POLICY_INJECT_HEADER);
	assert_string_equal(in->header, "X-Api-Key");
	assert_null(in->user);
	assert_string_equal(in->secret_name, "api");
	assert_string_equal(secret_name(in->secret), "api");

	assert_int_equal(decide(f, "b.test", 443, 1, NULL, NULL, &d), A);
	in = &d.inject[0];
	assert_int_equal(in->kind, POLICY_INJECT_BEARER);
	assert_string_equal(in->header, "Authorization");
	assert_null(in->user);
	assert_string_equal(secret_name(in->secret), "api");
}

static void
test_placeholder_fields(void **state)
{
	static const char pol[] =
	    "secret npm env NPM\n"
	    "allow registry.test { placeholder NPM_TOKEN npm }\n";
	struct fixture *f = *state;
	struct policy_decision d;

	use_policy(f, pol);
	assert_int_equal(decide(f, "registry.test", 443, 1, "GET", "/", &d), A);
	assert_int_equal(d.ninject, 0);
	assert_int_equal(d.nplaceholder, 1);
	assert_string_equal(d.placeholder[0].env, "NPM_TOKEN");
	assert_string_equal(d.placeholder[0].secret_name, "npm");
	assert_non_null(d.placeholder[0].secret);
	assert_string_equal(secret_name(d.placeholder[0].secret), "npm");
	/* In plain HTTP the stand-in is not swapped for the value. */
	assert_int_equal(decide(f, "registry.test", 80, 0, "GET", "/", &d), A);
	assert_int_equal(d.nplaceholder, 0);
}

static void
collect(void *arg, const char *text)
{
	char *buf = arg;

	strcat(buf, text);
	strcat(buf, " ");
}

/* Writes target T as the policy names it: "name", "*.suffix", "a/len". */
static void
collect_target(void *arg, const struct target_pattern *t)
{
	char *buf = arg, addr[INET6_ADDRSTRLEN];

	switch (t->kind) {
	case TARGET_PATTERN_ANY:
		strcat(buf, "*");
		break;
	case TARGET_PATTERN_WILD:
		strcat(buf, "*.");
		/* FALLTHROUGH */
	case TARGET_PATTERN_NAME:
		strcat(buf, t->name);
		break;
	case TARGET_PATTERN_BLOCK:
		inet_ntop(t->family == 4 ? AF_INET : AF_INET6, t->addr, addr,
		    sizeof(addr));
		sprintf(buf + strlen(buf), "%s/%u", addr, t->plen);
		break;
	}
	strcat(buf, " ");
}

static void
collect_env(void *arg, const struct policy_placeholder *ph)
{
	char *buf = arg;

	strcat(buf, ph->env);
	strcat(buf, "=");
	strcat(buf, ph->secret_name);
	strcat(buf, " ");
}

/* The names the run CA may sign for, and each placeholder variable once. */
static void
test_intercept_targets(void **state)
{
	static const char pol[] =
	    "secret a env A\n"
	    "secret b env B\n"
	    "allow plain.test\n"
	    "allow git.test:443 *.pkg.test { paths /x/* }\n"
	    "allow 10.1.0.0/16 { methods GET }\n"
	    "allow 127.0.0.1 ::1 { inject bearer a }\n"
	    "deny evil.test { paths /bad/* }\n"
	    "deny worse.test\n"
	    "allow reg.test { placeholder A_TOKEN a }\n"
	    "allow reg2.test { placeholder A_TOKEN a  placeholder B_TOKEN b "
	    "}\n";
	struct fixture *f = *state;
	char buf[512] = "";

	use_policy(f, pol);
	policy_intercept_targets(f->p, collect_target, buf);
	assert_string_equal(buf,
	    "git.test *.pkg.test 10.1.0.0/16 "
	    "127.0.0.1/32 ::1/128 evil.test reg.test "
	    "reg2.test ");
	buf[0] = '\0';
	policy_placeholders(f->p, collect_env, buf);
	assert_string_equal(buf, "A_TOKEN=a B_TOKEN=b ");
}

static void
test_rule_file_as_given(void **state)
{
	static const char pol[] = "\nallow a.test\ndeny b.test\n";
	struct fixture *f = *state;
	struct policy_decision d;

	use_policy_as(f, "conf/ci.conf", pol);
	assert_int_equal(decide(f, "a.test", 443, 1, NULL, NULL, &d), A);
	assert_string_equal(d.rule_file, "conf/ci.conf");
	assert_int_equal(d.rule_line, 2);
	assert_string_equal(d.rule->file, "conf/ci.conf");
	assert_int_equal(decide(f, "b.test", 443, 1, NULL, NULL, &d), D);
	assert_string_equal(d.rule_file, "conf/ci.conf");
	assert_int_equal(d.rule_line, 3);
	assert_string_equal(d.reason, "denied by rule conf/ci.conf:3");
}

/* Every field is set, whatever *D held before. */
static void
test_decision_reset(void **state)
{
	struct fixture *f = *state;
	struct policy_decision d;

	use_policy(f, "allow a.test\n");
	memset(&d, 0xa5, sizeof(d));
	assert_int_equal(decide(f, "b.test", 443, 1, NULL, NULL, &d), D);
	assert_int_equal(d.verdict, D);
	assert_null(d.rule);
	assert_null(d.rule_file);
	assert_int_equal(d.rule_line, 0);
	assert_int_equal(d.intercept, 0);
	assert_int_equal(d.allow_private, 0);
	assert_null(d.upstream_ca);
	assert_null(d.inject);
	assert_int_equal(d.ninject, 0);
	assert_null(d.placeholder);
	assert_int_equal(d.nplaceholder, 0);
	assert_string_equal(d.reason, "no rule allows b.test:443");
}

/* A long host name gives a reason cut to fit, still one line. */
static void
test_reason_long_host(void **state)
{
	struct fixture *f = *state;
	struct policy_decision d;
	char host[254];
	size_t i;

	use_policy(f, "allow a.test\n");
	for (i = 0; i < 253; i++)
		host[i] = (i % 64 == 63) ? '.' : 'a';
	host[253] = '\0';
	assert_int_equal(decide(f, host, 443, 1, NULL, NULL, &d), D);
	assert_true(strlen(d.reason) < sizeof(d.reason));
	assert_null(strchr(d.reason, '\n'));
	assert_int_equal(strncmp(d.reason, "no rule allows aaaa", 19), 0);
}

/* --- names the DNS stub answers (policy_host_may_allow) ------------------ */

/* policy_host_may_allow for HOST, parsed as the stub parses names. */
static int
may(const struct policy *p, const char *host)
{
	struct target_host h;

	if (target_host_parse(host, strlen(host), &h) != 0)
		fail_msg("host %s does not parse", host);
	return policy_host_may_allow(p, &h);
}

static void
test_host_may_allow(void **state)
{
	static const char pol[] =
	    "allow exact.test\n"
	    "allow *.wild.test:8443\n"
	    "allow db.test:5432\n"
	    "allow api.test { paths /v1/* }\n"
	    "allow 192.0.2.1\n"
	    "allow all.test\n"
	    "deny all.test\n" /* no ports: all of them */
	    "allow one.test:443,8080\n"
	    "deny one.test:443\n" /* one port: 8080 is still allowed */
	    "allow both.test:443\n"
	    "deny both.test:443-444\n" /* every port the allow names */
	    "allow *.under.test\n"
	    "deny bad.under.test\n"
	    "allow paths.test\n"
	    "deny paths.test { paths /admin/* }\n"; /* some requests */
	struct fixture *f = *state;

	use_policy(f, pol);
	assert_true(may(f->p, "exact.test"));
	assert_true(may(f->p, "EXACT.Test")); /* names are lower-cased */
	assert_true(may(f->p, "exact.test.")); /* the trailing dot */
	assert_false(may(f->p, "sub.exact.test"));
	assert_true(may(f->p, "a.wild.test")); /* any port will do */
	assert_true(may(f->p, "a.b.wild.test"));
	assert_false(may(f->p, "wild.test")); /* not the apex */
	assert_true(may(f->p, "db.test"));
	assert_true(may(f->p, "api.test")); /* some requests */
	assert_false(may(f->p, "192.0.2.1")); /* addresses: never */
	assert_false(may(f->p, "[2001:db8::1]"));
	assert_false(may(f->p, "all.test"));
	assert_true(may(f->p, "one.test"));
	assert_false(may(f->p, "both.test"));
	assert_true(may(f->p, "good.under.test"));
	assert_false(may(f->p, "bad.under.test"));
	assert_true(may(f->p, "paths.test"));
	assert_false(may(f->p, "other.test"));
	assert_false(may(f->p, "test"));
}

static void
test_host_may_allow_any(void **state)
{
	struct fixture *f = *state;

	use_policy(f, "allow *\ndeny *.bad.test\n");
	assert_true(may(f->p, "anything.example"));
	assert_false(may(f->p, "x.bad.test"));
	assert_true(may(f->p, "bad.test"));
	use_policy(f, "deny *\nallow a.test\n");
	assert_false(may(f->p, "a.test"));
	use_policy(f, "# nothing\n");
	assert_false(may(f->p, "a.test"));
}

/* pinhole run --allow: its text is one more file. */
static void
test_host_may_allow_extra(void **state)
{
	struct fixture *f = *state;
	size_t nerr = 0;

	assert_int_equal(policy_load_extra(NULL, 0, "--allow",
	                     "allow cli.test:22\n", fixture_diag, &nerr, &f->p),
	    0);
	assert_true(may(f->p, "cli.test"));
	assert_false(may(f->p, "other.test"));
}

/* --- scale --------------------------------------------------------------- */

/* Rule i (line i + 1) has one of four shapes, by i % 4. */
static char *
large_policy(unsigned n)
{
	char *text = xmalloc((size_t)n * 48 + 1);
	size_t len = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		switch (i % 4) {
		case 0:
			len += (size_t)sprintf(
			    text + len, "allow h%u.example.com:443\n", i);
			break;
		case 1:
			len += (size_t)sprintf(
			    text + len, "allow *.w%u.example.org\n", i);
			break;
		case 2:
			len += (size_t)sprintf(text + len,
			    "allow 10.%u.%u.0/24:8000-8100\n", i >> 8, i & 255);
			break;
		default:
			len += (size_t)sprintf(
			    text + len, "deny d%u.example.net\n", i);
			break;
		}
	return text;
}

static void
test_large_policy(void **state)
{
	static const struct {
		const char *host;
		uint16_t port;
		enum policy_verdict v;
		unsigned line;
		const char *reason;
	} probes[] = {
	    {"h0.example.com", 443, A, 1, ""},
	    {"h9996.example.com", 443, A, 9997, ""},
	    {"h9996.example.com", 80, D, 0, "port 80 is not allowed"},
	    {"x.w9997.example.org", 80, A, 9998, ""},
	    {"a.b.w1.example.org", 443, A, 2, ""},
	    {"w1.example.org", 443, D, 0, "no rule allows"},
	    {"10.39.14.7", 8050, A, 9999, ""}, /* 9998 = 39 * 256 + 14 */
	    {"10.0.2.255", 8000, A, 3, ""},
	    {"10.39.14.7", 8101, D, 0, "port 8101"},
	    {"10.39.15.7", 8050, D, 0, "no rule allows"},
	    {"d9999.example.net", 443, D, 10000, "denied by rule p.conf:10000"},
	    {"d3.example.net", 1, D, 4, "denied"},
	    {"nothing.example.com", 443, D, 0, "no rule allows"},
	};
	struct fixture *f = *state;
	struct policy_decision d;
	char *text = large_policy(10000);
	size_t i;

	f->nerr = 0;
	if (policy_load_string(
	        NAME, text, strlen(text), fixture_diag, &f->nerr, &f->p) != 0)
		fail_msg("the generated policy does not load");
	free(text);
	assert_int_equal(policy_rule_count(f->p), 10000);
	assert_int_equal(policy_warning_count(f->p), 0);
	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		decide(f, probes[i].host, probes[i].port, 1, NULL, NULL, &d);
		if (d.verdict != probes[i].v || d.rule_line != probes[i].line ||
		    strstr(d.reason, probes[i].reason) == NULL)
			fail_msg("probe %s:%u: got %d rule %u \"%s\"",
			    probes[i].host, probes[i].port, d.verdict,
			    d.rule_line, d.reason);
	} /* the DNS stub's question, through the same index */
	assert_true(may(f->p, "h9996.example.com"));
	assert_true(may(f->p, "x.w9997.example.org"));
	assert_false(may(f->p, "d9999.example.net"));
	assert_false(may(f->p, "nothing.example.com"));
}

/* --- capture ports (issue 12) -------------------------------------------- */

static void
test_capture_ports(void **state)
{
	static const char text[] =
	    "allow a.test:22,5432\n"
	    "allow b.test\n"
	    "allow c.test:8000-8003\n"
	    "deny d.test:9999\n"
	    "allow e.test:10000-10256\n" /* 257 ports: too wide */
	    "allow f.test:10000\n" /* captured all the same */
	    "allow 203.0.113.0/24:2222\n"
	    "allow g.test:20000-20255\n"; /* 256: captured */
	struct fixture *f = *state;
	uint16_t ports[300], few[3];
	size_t skipped = 99, n, i;

	use_policy(f, text);
	n = policy_capture_ports(f->p, ports, 300, &skipped);
	assert_int_equal(n, 2 + 2 + 4 + 1 + 1 + 256);
	assert_int_equal(skipped, 256); /* 10001..10256 */
	assert_int_equal(ports[0], 22);
	assert_int_equal(ports[1], 80);
	assert_int_equal(ports[2], 443);
	assert_int_equal(ports[3], 2222);
	assert_int_equal(ports[4], 5432);
	assert_int_equal(ports[5], 8000);
	assert_int_equal(ports[8], 8003);
	assert_int_equal(ports[9], 10000);
	assert_int_equal(ports[10], 20000);
	assert_int_equal(ports[n - 1], 20255);
	for (i = 1; i < n; i++)
		assert_true(ports[i - 1] < ports[i]);
	for (i = 0; i < n; i++)
		assert_int_not_equal(ports[i], 9999);
	/* At most MAX, the lowest first. */
	assert_int_equal(policy_capture_ports(f->p, few, 3, &skipped), 3);
	assert_int_equal(few[2], 443);
}

static void
test_capture_ports_default(void **state)
{
	struct fixture *f = *state;
	uint16_t ports[8];
	size_t skipped = 99;

	/* No allow rule: 80 and 443 all the same; "*" is too wide. */
	use_policy(f, "deny x.test\nallow y.test:*\n");
	assert_int_equal(policy_capture_ports(f->p, ports, 8, &skipped), 2);
	assert_int_equal(ports[0], 80);
	assert_int_equal(ports[1], 443);
	assert_int_equal(skipped, 65535 - 2);
}

#define T(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_host_normalisation),
	    T(test_wildcard_not_apex),
	    T(test_any_target),
	    T(test_ports),
	    T(test_cidr_edges),
	    T(test_deny_wins),
	    T(test_first_allow_decides),
	    T(test_paths_fall_through),
	    T(test_path_traversal),
	    T(test_encoded_slash_refused),
	    T(test_methods),
	    T(test_upgrade),
	    T(test_deny_with_paths),
	    T(test_plain_http_inject),
	    T(test_intercept),
	    T(test_allow_private),
	    T(test_upstream_ca),
	    T(test_inject_fields),
	    T(test_placeholder_fields),
	    T(test_intercept_targets),
	    T(test_rule_file_as_given),
	    T(test_decision_reset),
	    T(test_reason_long_host),
	    T(test_host_may_allow),
	    T(test_host_may_allow_any),
	    T(test_host_may_allow_extra),
	    T(test_large_policy),
	    T(test_capture_ports),
	    T(test_capture_ports_default),
	};

	return cmocka_run_group_tests_name("policy", tests, NULL, NULL);
}
