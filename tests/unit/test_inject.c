/*
 * test_inject.c: unit tests of proxy/inject.c, injected fields and
 * placeholder stand-ins.
 *
 * Policies are loaded from strings with secrets from the environment
 * (variables PH_TEST_INJECT_*, set before each load), and decisions come
 * from policy_decide() as the proxy asks for them.  Request heads for
 * inject_leak() are parsed with http_parse_request() from a buffer built
 * around the stand-in, so that fields point into it as in the proxy.
 * Everything appended to an evbuffer is compared byte for byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <ctype.h>
#include <event2/buffer.h>
#include <openssl/evp.h>

#include "policy/policy.h"
#include "proxy/http.h"
#include "proxy/inject.h"
#include "tests/unit/fixture.h"

#define ALNUM "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
#define HEADLEN 4096

struct fixture {
	struct policy *p;
	struct inject_standins *si;
	struct evbuffer *out;
	char head[HEADLEN];
	struct http_head h;
	size_t nerr;
};

static int
setup(void **state)
{
	struct fixture *f;

	if ((f = calloc(1, sizeof(*f))) == NULL ||
	    (f->out = evbuffer_new()) == NULL) {
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	inject_standins_free(f->si);
	policy_free(f->p);
	evbuffer_free(f->out);
	free(f);
	return 0;
}

/* Loads TEXT; with LOAD, reads the secrets' values too. */
static void
load_as(struct fixture *f, const char *text, int load)
{
	f->p = fixture_policy(text, load);
	if ((f->si = inject_standins_new(f->p)) == NULL)
		fail_msg("inject_standins_new");
}

static void
load(struct fixture *f, const char *text)
{
	load_as(f, text, 1);
}

static void
set(const char *var, const char *value)
{
	assert_int_equal(setenv(var, value, 1), 0);
}

/* The stand-in for variable ENV. */
static const char *
standin(const struct fixture *f, const char *env)
{
	size_t i;

	for (i = 0; i < inject_standins_count(f->si); i++)
		if (strcmp(inject_standin_env(f->si, i), env) == 0)
			return inject_standin_value(f->si, i);
	fail_msg("no stand-in for %s", env);
	return NULL;
}

/* A request inside TLS (or not) to HOST:443 for PATH. */
static enum policy_verdict
decide(struct fixture *f, const char *host, int tls, const char *path,
    struct policy_decision *d)
{
	struct policy_request q = {0};
	struct target_host h;

	assert_int_equal(target_host_parse(host, strlen(host), &h), 0);
	q.host = &h;
	q.port = tls ? 443 : 80;
	q.tls = tls;
	q.method = "GET";
	q.path = path;
	return policy_decide(f->p, &q, d);
}

/* Parses the request head printed from FMT into f->h. */
static void parse_head(struct fixture *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
parse_head(struct fixture *f, const char *fmt, ...)
{
	const char *why = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(f->head, sizeof(f->head), fmt, ap);
	va_end(ap);
	assert_true(n > 0 && (size_t)n < sizeof(f->head));
	if (http_parse_request(f->head, (size_t)n, &f->h, &why) != n)
		fail_msg("head does not parse (%s):\n%s", why ? why : "short",
		    f->head);
}

/* Empties f->out and returns what it held, NUL-terminated, to free. */
static char *
take(struct fixture *f)
{
	size_t n = evbuffer_get_length(f->out);
	char *s = malloc(n + 1);

	assert_non_null(s);
	assert_int_equal(evbuffer_remove(f->out, s, n), (int)n);
	s[n] = '\0';
	return s;
}

static void
assert_out(struct fixture *f, const char *want)
{
	char *got = take(f);

	if (strcmp(got, want) != 0) {
		fprintf(stderr, "  got:  \"%s\"\n  want: \"%s\"\n", got, want);
		free(got);
		fail();
	}
	free(got);
}

/* --- stand-ins ------------------------------------------------------------ */

/* One stand-in per variable, however many rules bind it. */
static void
test_standin_per_variable(void **state)
{
	static const char pol[] =
	    "secret npm env PH_TEST_INJECT_NPM\n"
	    "secret gh env PH_TEST_INJECT_GH\n"
	    "allow registry.test { placeholder NPM_TOKEN npm }\n"
	    "allow mirror.test { placeholder NPM_TOKEN npm "
	    " placeholder GH_TOKEN gh }\n"
	    "allow plain.test\n";
	struct fixture *f = *state;

	set("PH_TEST_INJECT_NPM", "npm_0123456789abcdefghijABCDEFGHIJ012345");
	set("PH_TEST_INJECT_GH", "ghp_0123456789abcdefghijABCDEFGHIJ012345");
	load(f, pol);
	assert_int_equal(inject_standins_count(f->si), 2);
	assert_string_equal(inject_standin_env(f->si, 0), "NPM_TOKEN");
	assert_string_equal(inject_standin_env(f->si, 1), "GH_TOKEN");
	assert_string_not_equal(
	    inject_standin_value(f->si, 0), inject_standin_value(f->si, 1));
	assert_null(inject_standin_env(f->si, 2));
	assert_null(inject_standin_value(f->si, 2));
	assert_int_equal(inject_standins_count(NULL), 0);
	inject_standins_free(NULL);
}

/* A policy without placeholders has no stand-ins. */
static void
test_standin_none(void **state)
{
	static const char pol[] = "secret k env PH_TEST_INJECT_K\n"
	                          "allow api.test:443 { inject bearer k }\n";
	struct fixture *f = *state;

	set("PH_TEST_INJECT_K", "tok123");
	load(f, pol);
	assert_int_equal(inject_standins_count(f->si), 0);
	assert_null(inject_standin_value(f->si, 0));
}

#define B64URL ALNUM "-_"

struct shape {
	const char *head; /* the value starts with it */
	size_t fill; /* then this many bytes of FILLSET */
	const char *fillset; /* NULL for ALNUM */
	const char *tail; /* then this, NULL for none */
	size_t len; /* the stand-in's length */
	const char *prefix; /* the stand-in's prefix, "" for none */
	const char *alpha; /* its body's alphabet; with a prefix, other
	                      bytes of the value (separators) stay */
};

static const struct shape shapes[] = {
    {"npm_", 36, NULL, NULL, 40, "npm_", ALNUM},
    {"ghp_", 36, NULL, NULL, 40, "ghp_", ALNUM},
    {"gho_", 36, NULL, NULL, 40, "gho_", ALNUM},
    {"ghs_", 36, NULL, NULL, 40, "ghs_", ALNUM},
    {"glpat-", 20, B64URL, NULL, 26, "glpat-", B64URL},
    {"sk-proj-", 40, NULL, NULL, 48, "sk-", ALNUM}, /* '-' stays */
    {"tok123", 0, NULL, NULL, 20, "", ALNUM}, /* short: the minimum */
    {"npm_", 3, NULL, NULL, 20, "npm_", ALNUM}, /* short: the minimum */
    {"ab_c", 0, NULL, NULL, 20, "", ALNUM}, /* "ab_" is no listed prefix */
    {"github_pat_", 30, NULL, NULL, 41, "github_pat_", ALNUM},
    /* github_pat_, 22 alnum, '_', 59 alnum: the '_' stays */
    {"github_pat_11ABCDEFG0abcdefghijkl_", 59, NULL, NULL, 93, "github_pat_",
        ALNUM},
    /* a PyPI macaroon: '-' and '_' are of its alphabet */
    {"pypi-AgEIcHlwaS5vcmc-_", 150, B64URL, "_-", 174, "pypi-", B64URL},
    {"550e8400-", 27, NULL, NULL, 36, "", ALNUM}, /* a UUID's start */
    {"", 20, NULL, NULL, 20, "", ALNUM},
    {"", 21, NULL, NULL, 21, "", ALNUM},
    {"abcdefghijk_", 20, NULL, NULL, 32, "", ALNUM}, /* no listed prefix */
    {"abcdefghijkl_", 20, NULL, NULL, 33, "", ALNUM},
    {"ab", 30, NULL, "-x", 34, "", ALNUM}, /* no prefix: '-' goes */
    {"a.b.c", 20, NULL, NULL, 25, "", ALNUM}, /* dots, but no JWT */
    {"", 512, NULL, NULL, 512, "", ALNUM},
    {"", 513, NULL, NULL, 512, "", ALNUM}, /* the maximum */
    {"npm_", 700, NULL, NULL, 512, "npm_", ALNUM},
};

#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* The value of shape S, to free. */
static char *
shape_value(const struct shape *s)
{
	const char *set = s->fillset != NULL ? s->fillset : ALNUM;
	const char *tail = s->tail != NULL ? s->tail : "";
	size_t n = strlen(s->head), i;
	char *v = malloc(n + s->fill + strlen(tail) + 1);

	assert_non_null(v);
	memcpy(v, s->head, n);
	for (i = 0; i < s->fill; i++)
		v[n + i] = set[(i * 7 + 3) % strlen(set)];
	strcpy(v + n + s->fill, tail);
	return v;
}

static char *
shapes_policy(void)
{
	static char text[8192];
	size_t i, n = 0;

	for (i = 0; i < NSHAPES; i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n,
		    "secret s%zu env PH_TEST_INJECT_S%zu\n", i, i);
	n += (size_t)snprintf(text + n, sizeof(text) - n, "allow reg.test {");
	for (i = 0; i < NSHAPES; i++)
		n += (size_t)snprintf(
		    text + n, sizeof(text) - n, " placeholder V%zu s%zu", i, i);
	snprintf(text + n, sizeof(text) - n, " }\n");
	return text;
}

/*
 * Is stand-in SI of shape S for VALUE: its length and prefix, then bytes
 * of its alphabet, but for a listed prefix the value's separators where
 * they were?
 */
static int
shape_ok(const struct shape *s, const char *value, const char *si)
{
	size_t pre = strlen(s->prefix), vlen = strlen(value), i;

	if (strlen(si) != s->len || strncmp(si, s->prefix, pre) != 0 ||
	    strcmp(si, value) == 0)
		return 0;
	for (i = pre; i < s->len; i++) {
		if (pre > 0 && i < vlen && strchr(s->alpha, value[i]) == NULL) {
			if (si[i] != value[i])
				return 0;
		} else if (strchr(s->alpha, si[i]) == NULL)
			return 0;
	}
	return 1;
}

/*
 * The secret's length (20 to 512), a listed token prefix when it has one
 * (never other bytes of the secret) and its format's separators, then
 * bytes of the body's alphabet; never the value itself.
 */
static void
test_standin_shape(void **state)
{
	struct fixture *f = *state;
	char var[64], env[16], *values[NSHAPES];
	const char *si;
	size_t i;

	for (i = 0; i < NSHAPES; i++) {
		values[i] = shape_value(&shapes[i]);
		snprintf(var, sizeof(var), "PH_TEST_INJECT_S%zu", i);
		set(var, values[i]);
	}
	load(f, shapes_policy());
	assert_int_equal(inject_standins_count(f->si), NSHAPES);
	for (i = 0; i < NSHAPES; i++) {
		snprintf(env, sizeof(env), "V%zu", i);
		assert_string_equal(inject_standin_env(f->si, i), env);
		si = inject_standin_value(f->si, i);
		if (!shape_ok(&shapes[i], values[i], si))
			fail_msg("value %s: stand-in %s (want %zu bytes, "
			         "prefix \"%s\")",
			    values[i], si, shapes[i].len, shapes[i].prefix);
		free(values[i]);
	}
}

/* Base64url of S without padding, in OUT. */
static void
b64url(const char *s, char *out, size_t outlen)
{
	unsigned char buf[512];
	int n = EVP_EncodeBlock(buf, (const unsigned char *)s, (int)strlen(s));
	int i, j = 0;

	assert_true(n > 0 && (size_t)n < outlen);
	for (i = 0; i < n && buf[i] != '='; i++)
		out[j++] = buf[i] == '+' ? '-' : buf[i] == '/' ? '_' : buf[i];
	out[j] = '\0';
}

/*
 * A JWT keeps its header (its "alg"); payload and signature are random
 * base64url of the same lengths.  Three dotted parts whose first is no
 * JSON with "alg" are no JWT: letters and digits, nothing kept.
 */
static void
test_standin_jwt(void **state)
{
	static const char pol[] =
	    "secret jwt env PH_TEST_INJECT_JWT\n"
	    "secret fake env PH_TEST_INJECT_FAKE\n"
	    "allow reg.test { placeholder JWT jwt placeholder FAKE fake }\n";
	struct fixture *f = *state;
	char hdr[128], body[256], jwt[512], fake[512];
	const char *si, *dot;
	size_t hl;

	b64url("{\"alg\":\"RS256\",\"typ\":\"JWT\"}", hdr, sizeof(hdr));
	b64url("{\"sub\":\"1234567890\",\"name\":\"A B\",\"iat\":1516239022}",
	    body, sizeof(body));
	snprintf(jwt, sizeof(jwt), "%s.%s.%s", hdr, body,
	    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c");
	b64url("{\"typ\":\"JWT\"}", fake, sizeof(fake));
	strcat(fake, ".abcdefghijklmnop.qrstuvwxyz");
	set("PH_TEST_INJECT_JWT", jwt);
	set("PH_TEST_INJECT_FAKE", fake);
	load(f, pol);
	si = standin(f, "JWT");
	hl = strlen(hdr);
	assert_int_equal(strlen(si), strlen(jwt));
	assert_memory_equal(si, jwt, hl + 1);
	assert_non_null(dot = strchr(si + hl + 1, '.'));
	assert_int_equal(dot - si, hl + 1 + strlen(body));
	assert_null(strchr(dot + 1, '.'));
	assert_int_equal(strspn(si, B64URL "."), strlen(si));
	assert_string_not_equal(si, jwt);
	si = standin(f, "FAKE");
	assert_int_equal(strlen(si), strlen(fake));
	assert_int_equal(strspn(si, ALNUM), strlen(si));
}

/* Each run makes new stand-ins; a stand-in is worthless elsewhere. */
static void
test_standin_random(void **state)
{
	static const char pol[] =
	    "secret npm env PH_TEST_INJECT_NPM\n"
	    "allow registry.test { placeholder NPM_TOKEN npm }\n";
	struct fixture *f = *state;
	struct inject_standins *again;
	const char *a, *b;

	set("PH_TEST_INJECT_NPM", "npm_0123456789abcdefghijABCDEFGHIJ012345");
	load(f, pol);
	assert_non_null(again = inject_standins_new(f->p));
	a = inject_standin_value(f->si, 0);
	b = inject_standin_value(again, 0);
	assert_int_equal(strlen(a), strlen(b));
	assert_memory_equal(a, b, 4);
	assert_string_not_equal(a + 4, b + 4);
	inject_standins_free(again);
}

/* Before the values are read, a stand-in has the minimum shape. */
static void
test_standin_unloaded(void **state)
{
	static const char pol[] =
	    "secret npm env PH_TEST_INJECT_UNSET\n"
	    "allow registry.test { placeholder NPM_TOKEN npm }\n";
	struct fixture *f = *state;
	const char *si;

	unsetenv("PH_TEST_INJECT_UNSET");
	load_as(f, pol, 0);
	si = standin(f, "NPM_TOKEN");
	assert_int_equal(strlen(si), 20);
	assert_int_equal(strspn(si, ALNUM), 20);
}

/* --- leaks ---------------------------------------------------------------- */

static const char leak_pol[] =
    "secret npm env PH_TEST_INJECT_NPM\n"
    "secret gh env PH_TEST_INJECT_GH\n"
    "allow registry.test { placeholder NPM_TOKEN npm }\n"
    "allow github.test { placeholder GH_TOKEN gh }\n"
    "allow other.test\n";

static void
load_leak_policy(struct fixture *f)
{
	set("PH_TEST_INJECT_NPM", "npm_0123456789abcdefghijABCDEFGHIJ012345");
	set("PH_TEST_INJECT_GH", "ghp_0123456789abcdefghijABCDEFGHIJ012345");
	load(f, leak_pol);
}

/* In a field value: fine where its rule binds it, a leak elsewhere. */
static void
test_leak_field(void **state)
{
	struct fixture *f = *state;
	struct policy_decision d, other, plain;

	load_leak_policy(f);
	parse_head(f,
	    "GET /pkg HTTP/1.1\r\nHost: registry.test\r\n"
	    "Authorization: Bearer %s\r\nAccept: */*\r\n\r\n",
	    standin(f, "NPM_TOKEN"));
	assert_int_equal(
	    decide(f, "registry.test", 1, "/pkg", &d), POLICY_ALLOW);
	assert_int_equal(d.nplaceholder, 1);
	assert_int_equal(inject_leak(f->si, &f->h, &d, 1, NULL), -1);
	/* Another host, even one that binds another variable. */
	assert_int_equal(decide(f, "other.test", 1, "/pkg", &other), 1);
	assert_int_equal(inject_leak(f->si, &f->h, &other, 1, NULL), 0);
	assert_int_equal(decide(f, "github.test", 1, "/pkg", &other), 1);
	assert_int_equal(inject_leak(f->si, &f->h, &other, 1, NULL), 0);
	/* A denied request (the proxy passes no decision). */
	assert_int_equal(inject_leak(f->si, &f->h, NULL, 1, NULL), 0);
	/* Plain HTTP: even the binding rule's decision does not cover it. */
	assert_int_equal(inject_leak(f->si, &f->h, &d, 0, NULL), 0);
	assert_int_equal(decide(f, "registry.test", 0, "/pkg", &plain), 1);
	assert_int_equal(plain.nplaceholder, 0);
	assert_int_equal(inject_leak(f->si, &f->h, &plain, 0, NULL), 0);
}

/* In the request target (the query), and which stand-in is named. */
static void
test_leak_target(void **state)
{
	struct fixture *f = *state;
	struct policy_decision d, other;

	load_leak_policy(f);
	assert_int_equal(decide(f, "github.test", 1, "/search", &d), 1);
	assert_int_equal(decide(f, "other.test", 1, "/search", &other), 1);
	/* Never swapped in the target: refused even toward its own host. */
	parse_head(f,
	    "GET /search?q=x&token=%s HTTP/1.1\r\nHost: github.test\r\n\r\n",
	    standin(f, "GH_TOKEN"));
	assert_int_equal(inject_leak(f->si, &f->h, &d, 1, NULL), 1);
	assert_int_equal(inject_leak(f->si, &f->h, &other, 1, NULL), 1);
	/* In the path too. */
	parse_head(f, "GET /%s/x HTTP/1.1\r\nHost: github.test\r\n\r\n",
	    standin(f, "GH_TOKEN"));
	assert_int_equal(inject_leak(f->si, &f->h, &d, 1, NULL), 1);
	assert_int_equal(inject_leak(f->si, &f->h, &other, 1, NULL), 1);
	/* Both: the one in the target is named first. */
	parse_head(f,
	    "GET /search?t=%s HTTP/1.1\r\nHost: github.test\r\n"
	    "X-Npm: %s\r\n\r\n",
	    standin(f, "GH_TOKEN"), standin(f, "NPM_TOKEN"));
	assert_int_equal(inject_leak(f->si, &f->h, &d, 1, NULL), 1);
	parse_head(f,
	    "GET /search HTTP/1.1\r\nHost: github.test\r\n"
	    "Authorization: token %s\r\nX-Npm: %s\r\n\r\n",
	    standin(f, "GH_TOKEN"), standin(f, "NPM_TOKEN"));
	assert_int_equal(inject_leak(f->si, &f->h, &d, 1, NULL), 0);
	assert_int_equal(inject_leak(f->si, &f->h, &other, 1, NULL), 1);
}

/* No stand-in, or only part of one: no leak. */
static void
test_leak_absent(void **state)
{
	struct fixture *f = *state;
	struct policy_decision other;
	const char *si;

	load_leak_policy(f);
	si = standin(f, "NPM_TOKEN");
	assert_int_equal(decide(f, "other.test", 1, "/", &other), 1);
	parse_head(f,
	    "GET /?q=npm_ HTTP/1.1\r\nHost: other.test\r\n"
	    "Authorization: Bearer npm_0123456789abcdefghijABCDEFGHIJ012345"
	    "\r\n\r\n");
	assert_int_equal(inject_leak(f->si, &f->h, &other, 1, NULL), -1);
	assert_int_equal(inject_leak(f->si, &f->h, &other, 0, NULL), -1);
	parse_head(f, "GET /?q=%.*s HTTP/1.1\r\nHost: other.test\r\n\r\n",
	    (int)strlen(si) - 1, si);
	assert_int_equal(inject_leak(f->si, &f->h, &other, 1, NULL), -1);
	assert_int_equal(inject_leak(NULL, &f->h, &other, 0, NULL), -1);
}

/* --- swapping ------------------------------------------------------------- */

#define NPM "npm_0123456789abcdefghijABCDEFGHIJ012345"
#define GH "ghp_0123456789abcdefghijABCDEFGHIJ012345"

/* Swaps S; returns what was appended, to free. */
static char *
swap(struct fixture *f, const char *s, const struct policy_decision *d,
    const char **used)
{
	assert_int_equal(
	    inject_add_swapped(f->out, s, strlen(s), f->si, d, used), 0);
	return take(f);
}

/* Every occurrence of a bound stand-in, at the start, inside, at the end. */
static void
test_swap_bound(void **state)
{
	static const char pol[] =
	    "secret npm env PH_TEST_INJECT_NPM\n"
	    "secret gh env PH_TEST_INJECT_GH\n"
	    "allow registry.test { placeholder NPM_TOKEN npm "
	    " placeholder GH_TOKEN gh }\n";
	struct fixture *f = *state;
	struct policy_decision d;
	const char *n, *g, *used;
	char in[2048], want[2048], *got;

	set("PH_TEST_INJECT_NPM", NPM);
	set("PH_TEST_INJECT_GH", GH);
	load(f, pol);
	n = standin(f, "NPM_TOKEN");
	g = standin(f, "GH_TOKEN");
	assert_int_equal(decide(f, "registry.test", 1, "/", &d), 1);

	used = NULL;
	got = swap(f, n, &d, &used);
	assert_string_equal(got, NPM);
	assert_string_equal(used, "npm");
	free(got);

	snprintf(in, sizeof(in), "%s,%s", n, n);
	got = swap(f, in, &d, &used);
	assert_string_equal(got, NPM "," NPM);
	free(got);

	snprintf(in, sizeof(in), "Bearer %s and %s%s", n, n, n);
	got = swap(f, in, &d, &used);
	assert_string_equal(got, "Bearer " NPM " and " NPM NPM);
	free(got);

	/* Two variables, in the order they come. */
	snprintf(in, sizeof(in), "a=%s&b=%s&c=%s", g, n, g);
	snprintf(want, sizeof(want), "a=%s&b=%s&c=%s", GH, NPM, GH);
	used = NULL;
	got = swap(f, in, &d, &used);
	assert_string_equal(got, want);
	assert_true(strcmp(used, "gh") == 0 || strcmp(used, "npm") == 0);
	free(got);

	/* Nothing to swap: as is, *USED untouched. */
	used = "untouched";
	got = swap(f, "no stand-in here", &d, &used);
	assert_string_equal(got, "no stand-in here");
	assert_string_equal(used, "untouched");
	free(got);
	assert_int_equal(
	    inject_add_swapped(f->out, "", 0, f->si, &d, &used), 0);
	assert_int_equal(evbuffer_get_length(f->out), 0);
}

/* A stand-in its rule does not bind stays a stand-in. */
static void
test_swap_unbound(void **state)
{
	struct fixture *f = *state;
	struct policy_decision d, plain;
	const char *n, *g, *used = "untouched";
	char in[1024], want[1024], *got;

	load_leak_policy(f);
	n = standin(f, "NPM_TOKEN");
	g = standin(f, "GH_TOKEN");
	assert_int_equal(decide(f, "registry.test", 1, "/", &d), 1);
	snprintf(in, sizeof(in), "%s %s", g, n);
	snprintf(want, sizeof(want), "%s %s", g, NPM);
	got = swap(f, in, &d, &used);
	assert_string_equal(got, want);
	assert_string_equal(used, "npm");
	free(got);

	used = "untouched";
	assert_int_equal(decide(f, "other.test", 1, "/", &d), 1);
	got = swap(f, in, &d, &used);
	assert_string_equal(got, in);
	assert_string_equal(used, "untouched");
	free(got);

	assert_int_equal(decide(f, "registry.test", 0, "/", &plain), 1);
	got = swap(f, in, &plain, &used);
	assert_string_equal(got, in);
	assert_string_equal(used, "untouched");
	free(got);
}

/* A bound secret without a value: -1, the request must not go. */
static void
test_swap_no_value(void **state)
{
	static const char pol[] =
	    "secret npm env PH_TEST_INJECT_UNSET\n"
	    "allow registry.test { placeholder NPM_TOKEN npm }\n";
	struct fixture *f = *state;
	struct policy_decision d;
	const char *used = NULL;
	char in[256];

	unsetenv("PH_TEST_INJECT_UNSET");
	load_as(f, pol, 0);
	assert_int_equal(decide(f, "registry.test", 1, "/", &d), 1);
	snprintf(in, sizeof(in), "x %s", standin(f, "NPM_TOKEN"));
	assert_int_equal(
	    inject_add_swapped(f->out, in, strlen(in), f->si, &d, &used), -1);
	assert_null(used);
}

/* --- injected fields ------------------------------------------------------ */

static const char fields_pol[] =
    "secret gh env PH_TEST_INJECT_TOK\n"
    "secret api env PH_TEST_INJECT_API\n"
    "secret ab env PH_TEST_INJECT_AB\n"
    "allow github.test:443 { inject basic x-access-token gh }\n"
    "allow short.test:443 { inject basic u ab }\n"
    "allow bearer.test:443 { inject bearer api }\n"
    "allow api.test:443 { inject header X-Api-Key api }\n"
    "allow both.test:443 { inject basic x-access-token gh "
    " inject header X-Api-Key api }\n"
    "allow plain.test\n";

static void
load_fields_policy(struct fixture *f)
{
	set("PH_TEST_INJECT_TOK", "tok123");
	set("PH_TEST_INJECT_API", "k3y-v4lue");
	set("PH_TEST_INJECT_AB", "ab");
	load(f, fields_pol);
}

static void
assert_fields(struct fixture *f, const char *host, const char *want)
{
	struct policy_decision d;

	assert_int_equal(decide(f, host, 1, "/", &d), POLICY_ALLOW);
	assert_int_equal(inject_add_fields(f->out, &d), 0);
	assert_out(f, want);
}

static void
test_fields(void **state)
{
	struct fixture *f = *state;

	load_fields_policy(f);
	/* base64("x-access-token:tok123"), base64("u:ab") with padding. */
	assert_fields(f, "github.test",
	    "Authorization: Basic eC1hY2Nlc3MtdG9rZW46dG9rMTIz\r\n");
	assert_fields(f, "short.test", "Authorization: Basic dTphYg==\r\n");
	assert_fields(f, "bearer.test", "Authorization: Bearer k3y-v4lue\r\n");
	assert_fields(f, "api.test", "X-Api-Key: k3y-v4lue\r\n");
	assert_fields(f, "both.test",
	    "Authorization: Basic eC1hY2Nlc3MtdG9rZW46dG9rMTIz\r\n"
	    "X-Api-Key: k3y-v4lue\r\n");
	assert_fields(f, "plain.test", "");
}

/* The client's copy of an injected field goes, whatever its case. */
static void
test_replaces(void **state)
{
	static const struct {
		const char *host, *name;
		int replaces;
	} cases[] = {
	    {"github.test", "Authorization", 1},
	    {"github.test", "authorization", 1},
	    {"github.test", "AUTHORIZATION", 1},
	    {"github.test", "Authorizatio", 0},
	    {"github.test", "Authorizations", 0},
	    {"github.test", "X-Api-Key", 0},
	    {"api.test", "x-api-key", 1},
	    {"api.test", "X-API-KEY", 1},
	    {"api.test", "Authorization", 0},
	    {"both.test", "authorization", 1},
	    {"both.test", "x-Api-kEY", 1},
	    {"both.test", "Cookie", 0},
	    {"plain.test", "Authorization", 0},
	};
	struct fixture *f = *state;
	struct policy_decision d;
	size_t i;

	load_fields_policy(f);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(decide(f, cases[i].host, 1, "/", &d), 1);
		if (inject_replaces(&d, cases[i].name, strlen(cases[i].name)) !=
		    cases[i].replaces)
			fail_msg("%s %s: want %d", cases[i].host, cases[i].name,
			    cases[i].replaces);
	}
	/* The length counts, not a NUL. */
	assert_int_equal(decide(f, "api.test", 1, "/", &d), 1);
	assert_int_equal(inject_replaces(&d, "X-Api-Key: v", 9), 1);
	assert_int_equal(inject_replaces(&d, "X-Api-Key", 8), 0);
}

/* A secret without a value: -1, the request must not go. */
static void
test_fields_no_value(void **state)
{
	static const char pol[] = "secret k env PH_TEST_INJECT_UNSET\n"
	                          "allow api.test:443 { inject bearer k }\n";
	struct fixture *f = *state;
	struct policy_decision d;

	unsetenv("PH_TEST_INJECT_UNSET");
	load_as(f, pol, 0);
	assert_int_equal(decide(f, "api.test", 1, "/", &d), 1);
	assert_int_equal(inject_add_fields(f->out, &d), -1);
}

/* --- item 9.15: the forms a stand-in may take toward another host ------- */

static const char forms_pol[] =
    "secret npm env PH_TEST_INJECT_NPM\n"
    "allow registry.test { placeholder NPM_TOKEN npm header X-Api-Key }\n"
    "allow other.test\n";

/* Base64 of S, to free. */
static char *
b64(const char *s)
{
	size_t n = strlen(s);
	char *e = malloc(4 * ((n + 2) / 3) + 1);

	assert_non_null(e);
	EVP_EncodeBlock((unsigned char *)e, (const unsigned char *)s, (int)n);
	return e;
}

/* The head printed from FMT, toward HOST: leak WANT (-1: none). */
static void leaks(struct fixture *f, const char *host, long want,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
leaks(struct fixture *f, const char *host, long want, const char *fmt, ...)
{
	struct policy_decision d;
	const char *where = NULL;
	char head[HEADLEN];
	va_list ap;
	long got;

	va_start(ap, fmt);
	vsnprintf(head, sizeof(head), fmt, ap);
	va_end(ap);
	assert_int_equal(decide(f, host, 1, "/", &d), POLICY_ALLOW);
	parse_head(f, "%s", head);
	got = inject_leak(f->si, &f->h, &d, 1, &where);
	if (got != want)
		fail_msg("%s: got %ld, want %ld, for:\n%s", host, got, want,
		    f->head);
	if (want >= 0)
		assert_non_null(where);
}

static void
test_leak_forms(void **state)
{
	struct fixture *f = *state;
	char buf[512], enc[512], *e;
	const char *si;
	size_t i, n, half;

	set("PH_TEST_INJECT_NPM", NPM);
	load(f, forms_pol);
	si = standin(f, "NPM_TOKEN");
	half = strlen(si) / 2;
	/* Split across two fields' values, and across a name and a value. */
	snprintf(buf, sizeof(buf), "%.*s\r\nX-B: %s", (int)half, si, si + half);
	leaks(f, "other.test", 0,
	    "GET / HTTP/1.1\r\nHost: other.test\r\nX-A: %s\r\n\r\n", buf);
	snprintf(buf, sizeof(buf), "%.*s: %s", (int)half, si, si + half);
	leaks(f, "other.test", 0,
	    "GET / HTTP/1.1\r\nHost: other.test\r\n%s\r\n\r\n", buf);
	/* In a field name, also in lower case. */
	leaks(f, "other.test", 0,
	    "GET / HTTP/1.1\r\nHost: other.test\r\nX-%s: 1\r\n\r\n", si);
	for (i = 0; si[i] != '\0'; i++)
		buf[i] = (char)tolower((unsigned char)si[i]);
	buf[i] = '\0';
	leaks(f, "other.test", 0,
	    "GET / HTTP/1.1\r\nHost: other.test\r\n%s: 1\r\n\r\n", buf);
	/* Percent-encoded in the path, every byte; and twice over. */
	for (i = n = 0; si[i] != '\0'; i++)
		n += (size_t)snprintf(
		    enc + n, sizeof(enc) - n, "%%%02X", (unsigned char)si[i]);
	leaks(f, "other.test", 0,
	    "GET /a/%s HTTP/1.1\r\nHost: other.test\r\n\r\n", enc);
	for (i = n = 0; si[i] != '\0'; i++)
		n += (size_t)snprintf(
		    enc + n, sizeof(enc) - n, "%%25%02x", (unsigned char)si[i]);
	leaks(f, "other.test", 0,
	    "GET /?q=%s HTTP/1.1\r\nHost: other.test\r\n\r\n", enc);
	/* Base64 in a field toward another host: Basic, or on its own. */
	snprintf(buf, sizeof(buf), "x-access-token:%s", si);
	e = b64(buf);
	leaks(f, "other.test", 0,
	    "GET / HTTP/1.1\r\nHost: other.test\r\nAuthorization: Basic "
	    "%s\r\n\r\n",
	    e);
	free(e);
	e = b64(si);
	leaks(f, "other.test", 0,
	    "GET / HTTP/1.1\r\nHost: other.test\r\nX: %s\r\n\r\n", e);
	free(e);
	/* Toward its own host: Authorization and X-Api-Key, not X-Other. */
	leaks(f, "registry.test", -1,
	    "GET / HTTP/1.1\r\nHost: registry.test\r\nX-Api-Key: %s\r\n\r\n",
	    si);
	leaks(f, "registry.test", -1,
	    "GET / HTTP/1.1\r\nHost: registry.test\r\nx-api-key: %s\r\n\r\n",
	    si);
	leaks(f, "registry.test", 0,
	    "GET / HTTP/1.1\r\nHost: registry.test\r\nX-Other: %s\r\n\r\n", si);
	leaks(f, "registry.test", 0,
	    "GET /?t=%s HTTP/1.1\r\nHost: registry.test\r\n\r\n", si);
	snprintf(buf, sizeof(buf), "__token__:%s", si);
	e = b64(buf);
	leaks(f, "registry.test", -1,
	    "GET / HTTP/1.1\r\nHost: registry.test\r\nAuthorization: Basic "
	    "%s\r\n\r\n",
	    e);
	free(e);
	/* Nothing there: no leak. */
	leaks(f, "other.test", -1,
	    "GET /%s HTTP/1.1\r\nHost: other.test\r\nX-A: npm_\r\n\r\n",
	    "plain");
}

/* Appends field NAME: VALUE as the proxy would; returns it, to free. */
static char *
field(struct fixture *f, const struct policy_decision *d, const char *name,
    const char *value, const char **used)
{
	char head[1024];
	struct http_head h;
	const char *why = NULL;
	int n;

	n = snprintf(head, sizeof(head),
	    "GET / HTTP/1.1\r\nHost: x.test\r\n%s: %s\r\n\r\n", name, value);
	assert_int_equal(http_parse_request(head, (size_t)n, &h, &why), n);
	assert_int_equal(
	    inject_add_field(f->out, &h.fields[1], f->si, d, used), 0);
	return take(f);
}

static void
test_field_swap(void **state)
{
	struct fixture *f = *state;
	struct policy_decision d, other;
	char in[512], want[512], *e, *got;
	const char *si, *used = NULL;

	set("PH_TEST_INJECT_NPM", NPM);
	load(f, forms_pol);
	si = standin(f, "NPM_TOKEN");
	assert_int_equal(decide(f, "registry.test", 1, "/", &d), 1);
	assert_int_equal(decide(f, "other.test", 1, "/", &other), 1);
	/* Bearer and token. */
	snprintf(in, sizeof(in), "Bearer %s", si);
	got = field(f, &d, "Authorization", in, &used);
	assert_string_equal(got, "Authorization: Bearer " NPM "\r\n");
	assert_string_equal(used, "npm");
	free(got);
	/* Basic: the stand-in as password, as user, both. */
	snprintf(in, sizeof(in), "x-access-token:%s", si);
	e = b64(in);
	snprintf(in, sizeof(in), "basic  %s", e);
	free(e);
	e = b64("x-access-token:" NPM);
	snprintf(want, sizeof(want), "authorization: Basic %s\r\n", e);
	free(e);
	got = field(f, &d, "authorization", in, &used);
	assert_string_equal(got, want);
	free(got);
	snprintf(in, sizeof(in), "%s:%s", si, si);
	e = b64(in);
	snprintf(in, sizeof(in), "Basic %s", e);
	free(e);
	e = b64(NPM ":" NPM);
	snprintf(want, sizeof(want), "Authorization: Basic %s\r\n", e);
	free(e);
	got = field(f, &d, "Authorization", in, &used);
	assert_string_equal(got, want);
	free(got);
	/* Not valid Base64: as is (the tripwire has looked at it). */
	got = field(f, &d, "Authorization", "Basic !!!!", &used);
	assert_string_equal(got, "Authorization: Basic !!!!\r\n");
	free(got);
	/* A listed header; another field stays as it is. */
	got = field(f, &d, "X-Api-Key", si, &used);
	assert_string_equal(got, "X-Api-Key: " NPM "\r\n");
	free(got);
	snprintf(want, sizeof(want), "X-Other: %s\r\n", si);
	got = field(f, &d, "X-Other", si, &used);
	assert_string_equal(got, want);
	free(got);
	/* Another host: nothing swapped. */
	snprintf(in, sizeof(in), "Bearer %s", si);
	snprintf(want, sizeof(want), "Authorization: Bearer %s\r\n", si);
	got = field(f, &other, "Authorization", in, &used);
	assert_string_equal(got, want);
	free(got);
}

/* The "header NAME" pairs of placeholder, and what they may name. */
static void
test_placeholder_headers_syntax(void **state)
{
	static const char *const bad[] = {
	    "allow a.test { placeholder T npm header }\n",
	    "allow a.test { placeholder T npm header Host }\n",
	    "allow a.test { placeholder T npm header Authorization }\n",
	    "allow a.test { placeholder T npm header Proxy-Authorization }\n",
	    "allow a.test { placeholder T npm header X-A header x-a }\n",
	    "allow a.test { placeholder T npm header \"X A\" }\n",
	    "allow a.test { placeholder T npm hdr X-A }\n",
	};
	struct fixture *f = *state;
	struct policy *p = NULL;
	struct policy_decision d;
	char text[256];
	size_t i;

	set("PH_TEST_INJECT_NPM", NPM);
	load(f,
	    "secret npm env PH_TEST_INJECT_NPM\n"
	    "allow a.test { placeholder T npm header X-A header X-B "
	    "methods GET }\n");
	assert_int_equal(decide(f, "a.test", 1, "/", &d), 1);
	assert_int_equal(d.nplaceholder, 1);
	assert_int_equal(d.placeholder[0].nheaders, 2);
	assert_string_equal(d.placeholder[0].headers[0], "X-A");
	assert_string_equal(d.placeholder[0].headers[1], "X-B");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text),
		    "secret npm env PH_TEST_INJECT_NPM\n%s", bad[i]);
		f->nerr = 0;
		if (policy_load_string("p.conf", text, strlen(text),
		        fixture_diag, &f->nerr, &p) == 0 &&
		    f->nerr == 0)
			fail_msg("accepted: %s", bad[i]);
		policy_free(p);
		p = NULL;
	}
}

#define T(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_standin_per_variable),
	    T(test_standin_none),
	    T(test_standin_shape),
	    T(test_standin_jwt),
	    T(test_standin_random),
	    T(test_standin_unloaded),
	    T(test_leak_field),
	    T(test_leak_target),
	    T(test_leak_absent),
	    T(test_swap_bound),
	    T(test_swap_unbound),
	    T(test_swap_no_value),
	    T(test_fields),
	    T(test_replaces),
	    T(test_fields_no_value),
	    T(test_leak_forms),
	    T(test_field_swap),
	    T(test_placeholder_headers_syntax),
	};

	return cmocka_run_group_tests_name("inject", tests, NULL, NULL);
}
