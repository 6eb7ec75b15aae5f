/*
 * test_decide.c: unit tests of proxy/decide.c, the policy questions the
 * proxy asks about a CONNECT or a request head.
 *
 * Table-driven: each case is a policy, a CONNECT target or a request head
 * (printed around the stand-in of PH_TEST_DECIDE_TOK when it names
 * "%s"), and the verdict and the words the reason must hold.  Policies are
 * loaded from strings, with secrets from the environment.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define DECIDE_INTERNAL
#include "policy/policy.h"
#include "policy/secret.h"
#include "proxy/decide.h"
#include "proxy/http.h"
#include "proxy/inject.h"
#include "tests/unit/fixture.h"

#define A POLICY_ALLOW
#define D POLICY_DENY

static const char pol_plain[] = "allow plain.test:80\n"
                                "allow tls.test:443\n";

static const char pol_inject[] =
    "secret gh env PH_TEST_DECIDE_TOK\n"
    "allow api.test:443 { inject bearer gh }\n"
    "allow reg.test:443 { placeholder GH_TOKEN gh }\n"
    "allow other.test:443 { methods GET TRACE }\n"
    "allow plain.test:80\n";

static const char pol_paths[] =
    "allow ws.test:443 { paths /ws/*; upgrade websocket }\n"
    "allow api.test:443 { paths /api/* }\n"
    "allow any.test:80\n";

struct fixture {
	struct policy *p;
	struct inject_standins *si;
	char head[4096];
	struct http_head h;
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (f == NULL ||
	    setenv("PH_TEST_DECIDE_TOK", "ghp_realvalue0123456789", 1) != 0)
		return -1;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	inject_standins_free(f->si);
	policy_free(f->p);
	free(f);
	return 0;
}

/* Makes TEXT the policy of F (with its stand-ins). */
static void
use(struct fixture *f, const char *text)
{
	inject_standins_free(f->si);
	policy_free(f->p);
	f->p = fixture_policy(text, 1);
	if ((f->si = inject_standins_new(f->p)) == NULL)
		fail_msg("inject_standins_new");
}

static const char *
standin(const struct fixture *f)
{
	return inject_standins_count(f->si) > 0 ? inject_standin_value(f->si, 0)
	                                        : "";
}

/* Parses HEAD (its "%s" filled with the stand-in) into f->h. */
static void
parse(struct fixture *f, const char *head)
{
	const char *why = NULL;
	int n;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	n = snprintf(f->head, sizeof(f->head), head, standin(f), standin(f));
#pragma GCC diagnostic pop
	assert_true(n > 0 && (size_t)n < sizeof(f->head));
	if (http_parse_request(f->head, (size_t)n, &f->h, &why) != n)
		fail_msg("head does not parse (%s):\n%s", why ? why : "short",
		    f->head);
}

static void
assert_reason(const struct policy_decision *d, const char *want)
{
	if (strstr(d->reason, want) == NULL)
		fail_msg("reason \"%s\" lacks \"%s\"", d->reason, want);
}

/* --- CONNECT -------------------------------------------------------------- */

struct connect_case {
	const char *policy, *host;
	uint16_t port;
	enum policy_verdict verdict;
	int intercept;
	const char *reason;
};

static void
test_connect(void **state)
{
	static const struct connect_case cases[] = {
	    {pol_plain, "tls.test", 443, A, 0, ""},
	    {pol_plain, "tls.test", 8443, D, 0, "port 8443 is not allowed"},
	    {pol_plain, "nowhere.test", 443, D, 0, "no rule"},
	    {pol_inject, "api.test", 443, A, 1, ""},
	    {pol_inject, "reg.test", 443, A, 1, ""},
	    {pol_paths, "ws.test", 443, A, 1, ""},
	};
	struct fixture *f = *state;
	struct policy_decision d;
	struct target_host h;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct connect_case *c = &cases[i];

		use(f, c->policy);
		assert_int_equal(
		    target_host_parse(c->host, strlen(c->host), &h), 0);
		memset(&d, 0, sizeof(d));
		decide_connect(f->p, &h, c->port, &d);
		if (d.verdict != c->verdict)
			fail_msg("case %zu: CONNECT %s:%u: %s", i, c->host,
			    c->port, d.reason);
		if (c->verdict == A)
			assert_int_equal(d.intercept, c->intercept);
		assert_reason(&d, c->reason);
	}
}

/* --- requests ------------------------------------------------------------- */

struct request_case {
	const char *policy;
	int tls; /* inside an intercepted tunnel */
	const char *host;
	uint16_t port;
	const char *path;
	const char *head; /* "%s": the stand-in */
	enum policy_verdict verdict;
	const char *reason;
};

#define GET(x) "GET " x " HTTP/1.1\r\nHost: h\r\n\r\n"

static const struct request_case requests[] = {
    /* plain HTTP and inside TLS */
    {pol_plain, 0, "plain.test", 80, "/", GET("/"), A, ""},
    {pol_plain, 0, "other.test", 80, "/", GET("/"), D, "no rule"},
    {pol_inject, 1, "api.test", 443, "/", GET("/"), A, ""},
    /* TRACE and TRACK on a rule that injects or swaps, not elsewhere */
    {pol_inject, 1, "api.test", 443, "/", "TRACE / HTTP/1.1\r\nHost: h\r\n\r\n",
        D, "TRACE is refused on a rule that injects"},
    {pol_inject, 1, "reg.test", 443, "/", "TRACK / HTTP/1.1\r\nHost: h\r\n\r\n",
        D, "TRACK is refused"},
    {pol_inject, 1, "other.test", 443, "/",
        "TRACE / HTTP/1.1\r\nHost: h\r\n\r\n", A, ""},
    /* stand-ins: swapped in Authorization for their rule's host only */
    {pol_inject, 1, "reg.test", 443, "/",
        "GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer %s\r\n\r\n", A, ""},
    {pol_inject, 1, "other.test", 443, "/",
        "GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer %s\r\n\r\n", D,
        "leak attempt: the stand-in for GH_TOKEN"},
    {pol_inject, 1, "reg.test", 443, "/",
        "GET /?t=%s HTTP/1.1\r\nHost: h\r\n\r\n", D, "leak attempt"},
    {pol_inject, 1, "reg.test", 443, "/",
        "GET / HTTP/1.1\r\nHost: h\r\nX-Other: %s\r\n\r\n", D, "leak attempt"},
    {pol_inject, 0, "plain.test", 80, "/",
        "GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer %s\r\n\r\n", D,
        "to plain.test:80"},
    /* a leak's reason wins over TRACE's */
    {pol_inject, 1, "reg.test", 443, "/",
        "TRACE / HTTP/1.1\r\nHost: h\r\nX-Other: %s\r\n\r\n", D,
        "leak attempt"},
    /* denied anyway: the stand-in still says why */
    {pol_inject, 1, "nowhere.test", 443, "/",
        "GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer %s\r\n\r\n", D,
        "leak attempt"},
    /* paths and upgrade: every Upgrade field is decided */
    {pol_paths, 1, "ws.test", 443, "/ws/chat",
        "GET /ws/chat HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\n"
        "Upgrade: websocket\r\n\r\n",
        A, ""},
    {pol_paths, 1, "ws.test", 443, "/ws/chat",
        "GET /ws/chat HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\n"
        "Upgrade: websocket\r\nUpgrade: h2c\r\n\r\n",
        D, "upgrade to"},
    {pol_paths, 1, "api.test", 443, "/api/x",
        "GET /api/x HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\n"
        "Upgrade: websocket\r\n\r\n",
        D, "upgrade to"},
    {pol_paths, 1, "api.test", 443, "/other", GET("/other"), D, "path"},
    {pol_paths, 0, "any.test", 80, "/x",
        "GET /x HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\n"
        "Upgrade: websocket\r\n\r\n",
        A, ""},
};

static void
test_request(void **state)
{
	struct fixture *f = *state;
	struct policy_decision d;
	struct decide_request r;
	struct target_host h;
	char method[33];
	size_t i;

	for (i = 0; i < sizeof(requests) / sizeof(requests[0]); i++) {
		const struct request_case *c = &requests[i];

		use(f, c->policy);
		parse(f, c->head);
		assert_int_equal(
		    target_host_parse(c->host, strlen(c->host), &h), 0);
		snprintf(method, sizeof(method), "%.*s", (int)f->h.method_len,
		    f->h.method);
		memset(&r, 0, sizeof(r));
		r.host = &h;
		r.port = c->port;
		r.tls = c->tls;
		r.method = method;
		r.path = c->path;
		memset(&d, 0, sizeof(d));
		decide_request(f->p, f->si, &f->h, &r, &d);
		if (d.verdict != c->verdict)
			fail_msg("case %zu: %s %s:%u%s: %s", i, method, c->host,
			    c->port, c->path, d.reason);
		assert_reason(&d, c->reason);
	}
}

/* The Upgrade list: every field, joined; too long names nothing. */
static void
test_upgrade_list(void **state)
{
	struct fixture *f = *state;
	char buf[256], tiny[8];

	use(f, pol_plain);
	parse(f, GET("/"));
	assert_null(decide_upgrade_list(&f->h, buf, sizeof(buf)));
	parse(f,
	    "GET / HTTP/1.1\r\nHost: h\r\nConnection: upgrade\r\n"
	    "Upgrade: websocket\r\nX: y\r\nupgrade: h2c, foo\r\n\r\n");
	assert_string_equal(
	    decide_upgrade_list(&f->h, buf, sizeof(buf)), "websocket,h2c, foo");
	assert_string_equal(
	    decide_upgrade_list(&f->h, tiny, sizeof(tiny)), "(too long)");
}

/* --- reload --------------------------------------------------------------- */

struct reload_case {
	const char *policy, *method, *host;
	uint16_t port;
	const char *path;
	int tls, allowed;
};

/* A reload closes the tunnels the new policy would not open. */
static void
test_still_allowed(void **state)
{
	static const struct reload_case cases[] = {
	    {pol_plain, "CONNECT", "tls.test", 443, NULL, 0, 1},
	    {pol_plain, "CONNECT", "gone.test", 443, NULL, 0, 0},
	    /* a CONNECT tunnel must not now need interception */
	    {pol_inject, "CONNECT", "api.test", 443, NULL, 0, 0},
	    {pol_paths, "CONNECT", "ws.test", 443, NULL, 0, 0},
	    /* after a 101: decided as the request that opened it */
	    {pol_paths, "GET", "ws.test", 443, "/ws/chat", 1, 1},
	    {pol_paths, "GET", "api.test", 443, "/elsewhere", 1, 0},
	    {pol_paths, "GET", "any.test", 80, "/x", 0, 1},
	    {pol_plain, "GET", "any.test", 80, "/x", 0, 0},
	    {pol_plain, "CONNECT", "bad host", 443, NULL, 0, 0},
	};
	struct fixture *f = *state;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct reload_case *c = &cases[i];

		use(f, c->policy);
		if (decide_still_allowed(f->p, c->method, c->host, c->port,
		        c->path, c->tls) != c->allowed)
			fail_msg("case %zu: %s %s:%u", i, c->method, c->host,
			    c->port);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_connect, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_request, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_upgrade_list, setup, teardown),
	    cmocka_unit_test_setup_teardown(
	        test_still_allowed, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
