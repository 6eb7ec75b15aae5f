/*
 * test_parse.c: unit tests of the policy parser (policy/parse.c) and of
 * the second pass and accessors it feeds (policy/policy.c).
 *
 * Every diagnostic of a load goes through collect(), which keeps a copy,
 * so a test can assert the exact FILE:LINE:COL and a distinctive part of
 * the message.  Include tests write files into a mkdtemp directory per
 * test, under one directory per run in $TMPDIR (or /tmp), both removed by
 * the teardowns.
 *
 * Tests marked "Regression:" once failed against the engine.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define POLICY_INTERNAL
#include "common/ph_err.h"
#include "common/xmalloc.h"
#include "policy/check.h"
#include "policy/grant.h"
#include "policy/parse.h"
#include "policy/policy.h"
#include "tests/unit/fixture.h"

/* The name string policies are loaded under. */
#define NAME "t.conf"
#define MAXDIAG 64
#define MAXPATHS 48

struct diag {
	int warning;
	char *file; /* "" when the diagnostic names no file */
	unsigned line, col;
	char *msg;
};

struct fixture {
	struct policy *p;
	struct diag d[MAXDIAG];
	size_t n, nerr, nwarn; /* nerr/nwarn count all, even past MAXDIAG */
	char dir[PATH_MAX]; /* this test's temp directory */
	char *paths[MAXPATHS];
	size_t npaths;
};

static char tmproot[PATH_MAX];

/* --- fixture and helpers ------------------------------------------------- */

static void
collect(void *arg, const struct policy_diag *pd)
{
	struct fixture *f = arg;
	struct diag *d;

	assert_non_null(pd->msg);
	assert_null(strchr(pd->msg, '\n'));
	if (pd->warning)
		f->nwarn++;
	else
		f->nerr++;
	if (f->n == MAXDIAG)
		return;
	d = &f->d[f->n++];
	d->warning = pd->warning;
	d->file = xstrdup(pd->file != NULL ? pd->file : "");
	d->line = pd->line;
	d->col = pd->col;
	d->msg = xstrdup(pd->msg);
}

static void
reset(struct fixture *f)
{
	size_t i;

	policy_free(f->p);
	f->p = NULL;
	for (i = 0; i < f->n; i++) {
		free(f->d[i].file);
		free(f->d[i].msg);
	}
	f->n = f->nerr = f->nwarn = 0;
}

static int
group_setup(void **state)
{
	(void)state;
	return fixture_tmpdir(tmproot, sizeof(tmproot), "test_parse");
}

static int
group_teardown(void **state)
{
	(void)state;
	return fixture_rmtree(tmproot);
}

static int
setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));

	if (snprintf(f->dir, sizeof(f->dir), "%s/t.XXXXXX", tmproot) >=
	        (int)sizeof(f->dir) ||
	    mkdtemp(f->dir) == NULL) {
		fprintf(stderr, "mkdtemp %s: %s\n", f->dir, strerror(errno));
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
	size_t i;
	int r;

	reset(f);
	for (i = 0; i < f->npaths; i++)
		free(f->paths[i]);
	r = fixture_rmtree(f->dir);
	free(f);
	return r;
}

/* Prints every diagnostic kept, to explain a failure. */
static void
dump(const struct fixture *f)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		fprintf(stderr, "  diag: %s:%u:%u: %s%s\n", f->d[i].file,
		    f->d[i].line, f->d[i].col,
		    f->d[i].warning ? "warning: " : "", f->d[i].msg);
}

/* Loads TEXT as the file NAME; checks the result/policy contract. */
static int
load_as(struct fixture *f, const char *name, const char *text, size_t len)
{
	int r;

	reset(f);
	r = policy_load_string(name, text, len, collect, f, &f->p);
	if (r == 0)
		assert_non_null(f->p);
	else {
		assert_int_equal(r, PH_ERR_POLICY);
		assert_null(f->p);
	}
	return r;
}

static int
load(struct fixture *f, const char *text)
{
	return load_as(f, NAME, text, strlen(text));
}

static int
load_files(struct fixture *f, const char *const *files, size_t n)
{
	int r;

	reset(f);
	r = policy_load(files, n, collect, f, &f->p);
	if (r == 0)
		assert_non_null(f->p);
	else {
		assert_int_equal(r, PH_ERR_POLICY);
		assert_null(f->p);
	}
	return r;
}

/* Returns a path under this test's directory, freed at teardown. */
static const char *
tpath(struct fixture *f, const char *rel)
{
	assert_true(f->npaths < MAXPATHS);
	f->paths[f->npaths] = xasprintf("%s/%s", f->dir, rel);
	return f->paths[f->npaths++];
}

static void
mksubdir(struct fixture *f, const char *rel)
{
	assert_int_equal(mkdir(tpath(f, rel), 0700), 0);
}

/* Writes TEXT to REL under this test's directory; returns its path. */
static const char *
mkfile(struct fixture *f, const char *rel, const char *text)
{
	const char *path = tpath(f, rel);
	size_t len = strlen(text);
	int fd;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_int_not_equal(fd, -1);
	assert_int_equal(write(fd, text, len), (ssize_t)len);
	assert_int_equal(close(fd), 0);
	return path;
}

static const struct diag *
find_diag(const struct fixture *f, const char *file, int warning, unsigned line,
    unsigned col, const char *sub)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (f->d[i].warning == warning && f->d[i].line == line &&
		    f->d[i].col == col && strcmp(f->d[i].file, file) == 0 &&
		    strstr(f->d[i].msg, sub) != NULL)
			return &f->d[i];
	return NULL;
}

/* Asserts a diagnostic FILE:LINE:COL whose message contains SUB. */
static void
expect_at(const struct fixture *f, const char *file, int warning, unsigned line,
    unsigned col, const char *sub)
{
	if (find_diag(f, file, warning, line, col, sub) != NULL)
		return;
	dump(f);
	fail_msg("no %s %s:%u:%u containing \"%s\"",
	    warning ? "warning" : "error", file, line, col, sub);
}

static void
expect_error(
    const struct fixture *f, unsigned line, unsigned col, const char *sub)
{
	expect_at(f, NAME, 0, line, col, sub);
}

static void
expect_warning(
    const struct fixture *f, unsigned line, unsigned col, const char *sub)
{
	expect_at(f, NAME, 1, line, col, sub);
}

static void
expect_counts(const struct fixture *f, size_t nerr, size_t nwarn)
{
	if (f->nerr == nerr && f->nwarn == nwarn)
		return;
	dump(f);
	fail_msg("%zu errors and %zu warnings, expected %zu and %zu", f->nerr,
	    f->nwarn, nerr, nwarn);
}

/* TEXT fails to load with exactly one error, at LINE:COL, saying SUB. */
static void
one_error(struct fixture *f, const char *text, unsigned line, unsigned col,
    const char *sub)
{
	assert_int_equal(load(f, text), PH_ERR_POLICY);
	if (f->nerr != 1) {
		dump(f);
		fail_msg("%zu errors for \"%s\", expected 1", f->nerr, text);
	}
	expect_error(f, line, col, sub);
}

/* TEXT loads without any diagnostic. */
static void
clean(struct fixture *f, const char *text)
{
	if (load(f, text) == 0 && f->nerr == 0 && f->nwarn == 0)
		return;
	dump(f);
	fail_msg("\"%s\" does not load cleanly", text);
}

static const struct rule_target *
target_of(const struct fixture *f, size_t rule, size_t i)
{
	const struct policy_rule *r = policy_rule_at(f->p, rule);

	assert_non_null(r);
	assert_true(i < r->ntargets);
	return policy_target_at(f->p, r->first_target + i);
}

static void
assert_ports(
    const struct rule_target *t, const struct port_range *want, size_t n)
{
	size_t i;

	assert_int_equal(t->nports, n);
	for (i = 0; i < n; i++) {
		assert_int_equal(t->ports[i].lo, want[i].lo);
		assert_int_equal(t->ports[i].hi, want[i].hi);
	}
}

static void
assert_v6(const struct rule_target *t, const char *addr, unsigned plen)
{
	uint8_t a[16];

	assert_int_equal(inet_pton(AF_INET6, addr, a), 1);
	assert_int_equal(t->kind, RT_CIDR);
	assert_int_equal(t->family, 6);
	assert_int_equal(t->plen, plen);
	assert_memory_equal(t->addr, a, 16);
}

static void
assert_v4(const struct rule_target *t, const char *addr, unsigned plen)
{
	uint8_t a[4];

	assert_int_equal(inet_pton(AF_INET, addr, a), 1);
	assert_int_equal(t->kind, RT_CIDR);
	assert_int_equal(t->family, 4);
	assert_int_equal(t->plen, plen);
	assert_memory_equal(t->addr, a, 4);
}

/* --- keyword tables and edit distance ------------------------------------ */

static void
test_keywords_sorted(void **state)
{
	size_t i;

	(void)state;
	assert_true(parse_nkeywords > 0);
	for (i = 1; i < parse_nkeywords; i++)
		if (strcmp(parse_keywords[i - 1], parse_keywords[i]) >= 0)
			fail_msg("parse_keywords: '%s' before '%s'",
			    parse_keywords[i - 1], parse_keywords[i]);
}

static void
test_options_sorted(void **state)
{
	size_t i;

	(void)state;
	assert_true(parse_noptions > 0);
	for (i = 1; i < parse_noptions; i++)
		if (strcmp(parse_options[i - 1], parse_options[i]) >= 0)
			fail_msg("parse_options: '%s' before '%s'",
			    parse_options[i - 1], parse_options[i]);
}

/* Every keyword and option is found by the bsearch: none is "unknown". */
static void
test_keywords_all_found(void **state)
{
	struct fixture *f = *state;
	char text[128];
	size_t i;

	for (i = 0; i < parse_nkeywords; i++) {
		snprintf(text, sizeof(text), "%s\n", parse_keywords[i]);
		load(f, text);
		assert_null(find_diag(f, NAME, 0, 1, 1, "unknown"));
	}
	for (i = 0; i < parse_noptions; i++) {
		snprintf(text, sizeof(text), "allow a.test {\n%s\n}\n",
		    parse_options[i]);
		load(f, text);
		assert_null(find_diag(f, NAME, 0, 2, 1, "unknown"));
	}
}

static void
test_distance(void **state)
{
	(void)state;
	assert_int_equal(parse_distance("allow", "allow"), 0);
	assert_int_equal(parse_distance("alow", "allow"), 1);
	assert_int_equal(parse_distance("allow", "alow"), 1);
	assert_int_equal(parse_distance("dney", "deny"), 2);
	assert_int_equal(parse_distance("inejct", "inject"), 2);
	assert_int_equal(parse_distance("a", "b"), 1);
	assert_int_equal(parse_distance("", ""), 0);
	assert_int_equal(parse_distance("", "ab"), 2);
	/* Capped at 3. */
	assert_int_equal(parse_distance("", "abcdef"), 3);
	assert_int_equal(parse_distance("kitten", "sitting"), 3);
	assert_int_equal(parse_distance("include", "placeholder"), 3);
	assert_int_equal(
	    parse_distance("a-name-that-is-longer-than-thirty-two-bytes",
	        "a-name-that-is-longer-than-thirty-two-bytes"),
	    3);
}

/* --- errors ------------------------------------------------------------ */

static void
test_err_unknown_keyword_hint(void **state)
{
	one_error(*state, "alow a.test\n", 1, 1,
	    "unknown keyword 'alow'; did you mean 'allow'?");
}

static void
test_err_unknown_keyword_no_hint(void **state)
{
	struct fixture *f = *state;

	one_error(f, "frobnicate x\n", 1, 1, "unknown keyword 'frobnicate'");
	assert_null(strstr(f->d[0].msg, "did you mean"));
}

static void
test_err_bare_target_hint(void **state)
{
	one_error(
	    *state, "\npypi.org\n", 2, 1, "did you mean 'allow pypi.org'?");
}

static void
test_err_option_at_top_level(void **state)
{
	one_error(*state, "paths /a/*\n", 1, 1, "'paths' is a rule option");
}

static void
test_err_keyword_in_block(void **state)
{
	one_error(*state, "allow a.test {\n  log x.jsonl\n}\n", 2, 3,
	    "'log' cannot appear inside a rule's { }");
}

static void
test_err_unknown_option_hint(void **state)
{
	one_error(*state, "allow a.test {\n  inejct header X-K k\n}\n", 2, 3,
	    "unknown option 'inejct'; did you mean 'inject'?");
}

static void
test_err_usage(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(load(f,
	                     "allow\nsecret k\ninclude\n"
	                     "allow a.test { upstream-ca }\n"),
	    PH_ERR_POLICY);
	expect_counts(f, 4, 0);
	expect_error(f, 1, 1, "usage: allow TARGET");
	expect_error(f, 2, 1, "usage: secret NAME");
	expect_error(f, 3, 1, "usage: include PATTERN");
	expect_error(f, 4, 16, "usage: upstream-ca PATH");
}

static void
test_err_bad_port(void **state)
{
	static const struct {
		const char *ports, *msg;
	} cases[] = {
	    {"0", "bad port '0'"},
	    {"65536", "bad port '65536'"},
	    {"x", "bad port 'x'"},
	    {"", "bad port ''"},
	    {"80,", "bad port ''"},
	    {"10-5", "bad port range '10-5'"},
	    {"80-", "bad port '80-'"},
	};
	struct fixture *f = *state;
	char text[64];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(
		    text, sizeof(text), "allow a.test:%s\n", cases[i].ports);
		one_error(f, text, 1, 7, cases[i].msg);
	}
}

static void
test_err_cidr_prefix_length(void **state)
{
	struct fixture *f = *state;

	one_error(
	    f, "allow 10.0.0.0/33\n", 1, 7, "bad prefix length '/33' (0-32)");
	one_error(f, "allow 2001:db8::/129\n", 1, 7,
	    "bad prefix length '/129' (0-128)");
	one_error(f, "allow 10.0.0.0/x\n", 1, 7, "bad prefix length '/x'");
	one_error(f, "allow 10.0.0.0/\n", 1, 7, "bad prefix length");
}

static void
test_err_cidr_host_bits_v4(void **state)
{
	one_error(*state, "allow 203.0.113.7/24\n", 1, 7,
	    "'203.0.113.7/24' has host bits set; did you mean "
	    "'203.0.113.0/24'?");
}

static void
test_err_cidr_host_bits_v6(void **state)
{
	struct fixture *f = *state;

	one_error(f, "allow 2001:db8::1/32\n", 1, 7,
	    "has host bits set; did you mean '2001:db8::/32'?");
	one_error(f, "allow [2001:db8:ff::]/40:443\n", 1, 7,
	    "did you mean '2001:db8::/40'?");
}

static void
test_err_wildcard_inside(void **state)
{
	struct fixture *f = *state;

	one_error(f, "allow a.*.com\n", 1, 7,
	    "a wildcard may only be the whole first label");
	one_error(f, "allow *foo.com\n", 1, 7,
	    "a wildcard may only be the whole first label");
	one_error(f, "allow *.*.com\n", 1, 7,
	    "a wildcard may only be the whole first label");
}

static void
test_err_wildcard_on_address(void **state)
{
	one_error(*state, "allow *.10.0.0.1\n", 1, 7,
	    "'*.' needs a name, not an address");
}

static void
test_err_idn_host(void **state)
{
	struct fixture *f = *state;

	one_error(f,
	    "allow b\xc3\xbc"
	    "cher.de\n",
	    1, 7, "xn--");
	expect_error(f, 1, 7, "non-ASCII");
}

static void
test_err_bad_host(void **state)
{
	struct fixture *f = *state;

	/* A numeric last label makes it an IPv4 address, a bad one here. */
	one_error(f, "allow build.42\n", 1, 7, "bad host 'build.42'");
	one_error(f, "allow 256.1.1.1\n", 1, 7, "bad host '256.1.1.1'");
	one_error(f, "allow a..test\n", 1, 7, "bad host 'a..test'");
	one_error(f, "allow [::1\n", 1, 7, "missing ']'");
}

static void
test_err_unterminated_quote(void **state)
{
	struct fixture *f = *state;

	one_error(f, "log \"abc\n", 1, 5, "unterminated quoted string");
	/* The next line is read normally. */
	assert_int_equal(load(f, "log \"abc\nalow a.test\n"), PH_ERR_POLICY);
	expect_counts(f, 2, 0);
	expect_error(f, 2, 1, "did you mean 'allow'");
}

static void
test_err_lbrace_own_line(void **state)
{
	one_error(*state, "allow a.test\n{ private }\n", 2, 1,
	    "'{' must follow allow or deny on the same line");
}

static void
test_err_unexpected_rbrace(void **state)
{
	one_error(*state, "allow a.test\n}\n", 2, 1, "unexpected '}'");
}

static void
test_err_lbrace_after_keyword(void **state)
{
	one_error(*state, "log x.jsonl {\n}\n", 1, 13,
	    "'{' may only follow allow or deny");
}

static void
test_err_unclosed_block(void **state)
{
	one_error(
	    *state, "allow a.test {\n private\n", 1, 14, "'{' is never closed");
}

static void
test_err_text_after_rbrace(void **state)
{
	struct fixture *f = *state;

	one_error(f, "allow a.test { private } foo\n", 1, 26,
	    "unexpected 'foo' after '}'");
	one_error(f, "allow a.test { private }}\n", 1, 25,
	    "unexpected '}' after '}'");
}

static void
test_err_lbrace_in_block(void **state)
{
	one_error(*state, "allow a.test {\n paths /a {\n }\n}\n", 2, 11,
	    "unexpected '{' inside a rule");
}

static void
test_err_duplicate_log(void **state)
{
	one_error(*state, "log a.jsonl\nlog b.jsonl\n", 2, 1,
	    "log is already set at t.conf:1");
}

static void
test_err_duplicate_resolve(void **state)
{
	/* Host names are normalised before they are compared. */
	one_error(*state,
	    "resolve a.test 192.0.2.1\nresolve A.Test. 192.0.2.2\n", 2, 9,
	    "a.test already has addresses");
}

static void
test_err_resolve_not_a_name(void **state)
{
	struct fixture *f = *state;

	one_error(f, "resolve *.a.test 192.0.2.1\n", 1, 9,
	    "'*.a.test' is not a host name");
	one_error(f, "resolve 192.0.2.1 192.0.2.2\n", 1, 9,
	    "'192.0.2.1' is not a host name");
}

static void
test_err_resolve_not_an_address(void **state)
{
	one_error(*state, "resolve a.test b.test\n", 1, 16,
	    "'b.test' is not an IPv4 or IPv6 address");
}

static void
test_err_secret_redefined(void **state)
{
	one_error(*state,
	    "secret k env A\n\nsecret k env B\n"
	    "allow a.test:443 { inject bearer k }\n",
	    3, 8, "secret 'k' is already defined at t.conf:1");
}

static void
test_err_secret_unknown_source(void **state)
{
	struct fixture *f = *state;

	one_error(f, "secret k fiel /x\n", 1, 10,
	    "unknown secret source 'fiel' (did you mean 'file'?)");
	one_error(
	    f, "secret k vault x\n", 1, 10, "unknown secret source 'vault'");
	assert_null(strstr(f->d[0].msg, "did you mean"));
}

static void
test_err_secret_env_bad_var(void **state)
{
	struct fixture *f = *state;

	one_error(f, "secret k env 1BAD\n", 1, 14,
	    "bad environment variable name '1BAD'");
	one_error(f, "secret k env A-B\n", 1, 14,
	    "bad environment variable name 'A-B'");
}

static void
test_err_secret_bad_name_or_words(void **state)
{
	struct fixture *f = *state;

	one_error(f, "secret k/x env A\n", 1, 8, "bad secret name 'k/x'");
	one_error(f, "secret k file a b\n", 1, 17, "file takes one word");
	one_error(f, "secret k env A B\n", 1, 16, "env takes one word");
}

static void
test_err_undefined_secret_inject(void **state)
{
	one_error(*state,
	    "secret gh-token env T\n"
	    "allow a.test:443 { inject bearer gh-tokn }\n",
	    2, 34, "undefined secret 'gh-tokn'; did you mean 'gh-token'?");
}

static void
test_err_undefined_secret_basic(void **state)
{
	one_error(*state,
	    "secret gh-token env T\n"
	    "allow a.test:443 { inject basic x-access-token gh-tokn }\n",
	    2, 48, "undefined secret 'gh-tokn'; did you mean 'gh-token'?");
}

static void
test_err_undefined_secret_placeholder(void **state)
{
	struct fixture *f = *state;

	one_error(f, "allow a.test:443 { placeholder TOKEN nope }\n", 1, 38,
	    "undefined secret 'nope'; define it with 'secret nope file");
	one_error(f,
	    "secret npm-token env T\n"
	    "allow a.test:443 { placeholder TOKEN npm-tokn }\n",
	    2, 38, "did you mean 'npm-token'?");
}

/* Secrets may be defined after the rule that uses them. */
static void
test_secret_defined_after_use(void **state)
{
	clean(*state, "allow a.test:443 { inject bearer k }\nsecret k env A\n");
}

/* Patterns obey the request rules: no "..;", overlong UTF-8 or "%". */
static void
test_err_path_pattern_ambiguous(void **state)
{
	struct fixture *f = *state;

	/* ';' ends a statement unless quoted. */
	one_error(f, "allow a.test { paths \"/a/..;/b\" }\n", 1, 22,
	    "';' parameters");
	one_error(
	    f, "allow a.test { paths \"/a/.;x\" }\n", 1, 22, "';' parameters");
	one_error(f, "allow a.test { paths /a\xc0\xae }\n", 1, 22, "UTF-8");
	one_error(
	    f, "allow a.test { paths /a\xe0\x80\xae/* }\n", 1, 22, "UTF-8");
	one_error(f, "allow a.test { paths /a/%252e }\n", 1, 22, "no '%'");
	clean(f, "allow a.test { paths \"/a;v=1/*\" /caf\xc3\xa9 }\n");
}

static void
test_upgrade_option(void **state)
{
	struct fixture *f = *state;
	const struct policy_rule *r;

	clean(f, "allow a.test { paths /ws/*; upgrade websocket h2c }\n");
	r = policy_rule_at(f->p, 0);
	assert_int_equal(r->nupgrade, 2);
	assert_string_equal(r->upgrade[0], "websocket");
	assert_string_equal(r->upgrade[1], "h2c");
	/* Several options on one line: upgrade runs to the next keyword. */
	clean(f, "allow a.test { upgrade websocket methods GET }\n");
	r = policy_rule_at(f->p, 0);
	assert_int_equal(r->nupgrade, 1);
	assert_int_equal(r->nmethods, 1);
	one_error(f, "allow a.test { paths /x; upgrade }\n", 1, 26,
	    "usage: upgrade PROTOCOL");
	one_error(f, "allow a.test { paths /x; upgrade HTTP/2.0 }\n", 1, 34,
	    "bad upgrade protocol 'HTTP/2.0'");
	one_error(f, "deny a.test { paths /x; upgrade websocket }\n", 1, 25,
	    "'upgrade' cannot be used in a deny rule");
	/* Without paths or methods every upgrade passes already. */
	assert_int_equal(load(f, "allow a.test { upgrade websocket }\n"), 0);
	expect_counts(f, 0, 1);
	expect_warning(f, 1, 16, "upgrade has no effect");
}

static void
test_err_deny_options(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(load(f,
	                     "deny a.test {\n"
	                     " inject bearer k\n"
	                     " private\n"
	                     " placeholder X k\n"
	                     " upstream-ca /ca.pem\n"
	                     " paths /a/*\n"
	                     " methods GET\n"
	                     "}\n"),
	    PH_ERR_POLICY);
	expect_counts(f, 4, 0);
	expect_error(f, 2, 2, "'inject' cannot be used in a deny rule");
	expect_error(f, 3, 2, "'private' cannot be used in a deny rule");
	expect_error(f, 4, 2, "'placeholder' cannot be used in a deny rule");
	expect_error(f, 5, 2, "'upstream-ca' cannot be used in a deny rule");
}

static void
test_err_inject_framing_header(void **state)
{
	static const char *const hdrs[] = {"Host", "Content-Length",
	    "Transfer-Encoding", "host", "Connection", "Proxy-Authorization"};
	struct fixture *f = *state;
	char text[128], msg[64];
	size_t i;

	for (i = 0; i < sizeof(hdrs) / sizeof(hdrs[0]); i++) {
		snprintf(text, sizeof(text),
		    "secret k env A\n"
		    "allow a.test:443 { inject header %s k }\n",
		    hdrs[i]);
		snprintf(
		    msg, sizeof(msg), "cannot inject %s: it frames", hdrs[i]);
		one_error(f, text, 2, 34, msg);
	}
}

static void
test_err_inject_duplicate_header(void **state)
{
	struct fixture *f = *state;

	one_error(f,
	    "secret k env A\n"
	    "allow a.test:443 { inject header X-K k; inject header x-k k }\n",
	    2, 41, "this rule already injects x-k");
	one_error(f,
	    "secret k env A\n"
	    "allow a.test:443 { inject basic u k; inject bearer k }\n",
	    2, 38, "this rule already injects Authorization");
}

static void
test_err_inject_basic_user_colon(void **state)
{
	one_error(*state,
	    "secret k env A\nallow a.test:443 { inject basic a:b k }\n", 2, 33,
	    "bad user 'a:b' for basic");
}

static void
test_err_inject_usage(void **state)
{
	struct fixture *f = *state;

	one_error(f, "allow a.test:443 { inject token k }\n", 1, 27,
	    "usage: inject basic USER SECRET");
	one_error(f, "allow a.test:443 { inject header X-K }\n", 1, 20,
	    "usage: inject");
}

static void
test_err_placeholder_two_secrets(void **state)
{
	one_error(*state,
	    "secret a env A\nsecret b env B\n"
	    "allow a.test:443 { placeholder TOK a }\n"
	    "allow b.test:443 { placeholder TOK b }\n",
	    4, 36,
	    "placeholder TOK is already bound to secret 'a' at t.conf:3");
}

static void
test_err_placeholder_in_rule(void **state)
{
	struct fixture *f = *state;

	one_error(f,
	    "secret a env A\n"
	    "allow a.test:443 { placeholder TOK a; placeholder TOK a }\n",
	    2, 51, "placeholder TOK is already set for this rule");
	one_error(f, "secret a env A\nallow a.test:443 { placeholder 1X a }\n",
	    2, 32, "bad environment variable name '1X'");
}

/* The same variable bound to the same secret in two rules is fine. */
static void
test_placeholder_same_secret_twice(void **state)
{
	clean(*state,
	    "secret a env A\n"
	    "allow a.test:443 { placeholder TOK a }\n"
	    "allow b.test:443 { placeholder TOK a }\n");
}

static void
test_err_bad_duration(void **state)
{
	struct fixture *f = *state;

	one_error(f, "timeout connect 0s\n", 1, 17, "bad duration '0s'");
	one_error(f, "timeout head 5x\n", 1, 14, "bad duration '5x'");
	one_error(f, "timeout idle 25h\n", 1, 14, "bad duration '25h'");
	one_error(f, "timeout idle 1.5s\n", 1, 14, "bad duration '1.5s'");
	one_error(f, "timeout idle s\n", 1, 14, "bad duration 's'");
	one_error(f, "timeout idle 99999999999999999999999s\n", 1, 14,
	    "bad duration");
}

static void
test_err_timeout_unknown(void **state)
{
	one_error(*state, "timeout read 1s\n", 1, 9,
	    "unknown timeout 'read'; use connect, head or idle");
}

static void
test_err_path_pattern(void **state)
{
	static const char *const bad[] = {
	    "a/b", "*", "/a%2f", "/a?x=1", "/a\\\\b"};
	struct fixture *f = *state;
	char text[128];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "allow a.test:443 { paths %s }\n",
		    bad[i]);
		one_error(f, text, 1, 26, "bad path pattern");
	}
}

static void
test_err_nul_byte(void **state)
{
	static const char text[] = "allow a.test\n\0allow b.test\n";
	struct fixture *f = *state;

	assert_int_equal(
	    load_as(f, NAME, text, sizeof(text) - 1), PH_ERR_POLICY);
	expect_counts(f, 1, 0);
	expect_error(f, 2, 1, "NUL byte");
}

static void
test_err_control_byte(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(load(f, "allow a.test\x01\n"), PH_ERR_POLICY);
	expect_error(f, 1, 13, "unexpected control byte 0x01");
	/* Regression: the byte is skipped, the rest of the line not re-read. */
	assert_int_equal(load(f,
	                     "allow a.test\x01"
	                     "b.test\n"),
	    PH_ERR_POLICY);
	expect_counts(f, 1, 0);
	assert_non_null(find_diag(f, NAME, 0, 1, 13, "control byte"));
}

/* --- includes ------------------------------------------------------------ */

static void
test_err_include_missing(void **state)
{
	struct fixture *f = *state;
	const char *files[1];

	files[0] =
	    mkfile(f, "main.conf", "allow a.test\ninclude nothere.conf\n");
	assert_int_equal(load_files(f, files, 1), PH_ERR_POLICY);
	expect_counts(f, 1, 0);
	expect_at(f, files[0], 0, 2, 9, "cannot open");
	expect_at(f, files[0], 0, 2, 9, tpath(f, "nothere.conf"));
}

/* A line of a file that is no policy, as /etc/shadow's first. */
#define SHADOW_LINE                                                            \
	"root:$6$saltsalt$0123456789abcdefghijklmnopqrstuvwxyzABCDEF:19000:0:" \
	"99999:7:::\n"

/* Does any diagnostic's message hold SUB? */
static int
any_msg_has(const struct fixture *f, const char *sub)
{
	size_t i;

	for (i = 0; i < f->n; i++)
		if (strstr(f->d[i].msg, sub) != NULL)
			return 1;
	return 0;
}

/* An include that is no policy: at most 40 bytes of a word, escaped. */
static void
test_include_excerpt(void **state)
{
	struct fixture *f = *state;
	const char *files[1], *other;

	other = mkfile(f, "other.conf", SHADOW_LINE "caf\xc3\xa9\n");
	assert_int_equal(chmod(other, 0644), 0);
	files[0] = mkfile(f, "main.conf", "include other.conf\n");
	assert_int_equal(load_files(f, files, 1), PH_ERR_POLICY);
	expect_counts(f, 2, 0);
	expect_at(f, other, 0, 1, 1,
	    "unknown keyword 'root:$6$saltsalt$0123456789abcdefghijklm...'");
	assert_false(any_msg_has(f, "nopqrstuvwxyz"));
	assert_false(any_msg_has(f, "19000"));
	expect_at(f, other, 0, 2, 1, "'caf\\xc3\\xa9'");
	assert_false(any_msg_has(f, "\xc3"));
	/* The same file named on the command line: the same excerpt. */
	files[0] = other;
	assert_int_equal(load_files(f, files, 1), PH_ERR_POLICY);
	expect_at(
	    f, other, 0, 1, 1, "'root:$6$saltsalt$0123456789abcdefghijklm...'");
	assert_false(any_msg_has(f, "nopqrstuvwxyz"));
}

/* A word longer than any message buffer is cut all the same. */
static void
test_excerpt_long_word(void **state)
{
	struct fixture *f = *state;
	char text[3000], a41[42];

	memset(text, 'A', 2000);
	snprintf(text + 2000, sizeof(text) - 2000, "SECRET\nallow ");
	memset(text + 2013, 'B', 900);
	snprintf(text + 2913, sizeof(text) - 2913, "SECRET\n");
	memset(a41, 'A', 41);
	a41[41] = '\0';
	assert_int_equal(load(f, text), PH_ERR_POLICY);
	expect_counts(f, 2, 0);
	assert_false(any_msg_has(f, "SECRET"));
	assert_false(any_msg_has(f, a41));
	assert_true(any_msg_has(f, "AAAA..."));
	assert_true(any_msg_has(f, "BBBB..."));
}

/* An include other users cannot read: the place, never its text. */
static void
test_include_withheld(void **state)
{
	struct fixture *f = *state;
	const char *files[1], *other;

	other = mkfile(f, "shadow", SHADOW_LINE "allow a.test { bogus }\n");
	assert_int_equal(chmod(other, 0640), 0);
	files[0] = mkfile(f, "main.conf", "include shadow\nallow b.test\n");
	assert_int_equal(load_files(f, files, 1), PH_ERR_POLICY);
	expect_counts(f, 2, 0);
	expect_at(f, other, 0, 1, 1, "its text is not quoted");
	expect_at(f, other, 0, 2, 16, "its text is not quoted");
	assert_false(any_msg_has(f, "root"));
	assert_false(any_msg_has(f, "bogus"));
	/* A policy named on the command line is the user's own choice. */
	files[0] = other;
	assert_int_equal(load_files(f, files, 1), PH_ERR_POLICY);
	expect_at(f, other, 0, 2, 16, "unknown option 'bogus'");
}

/*
 * An include the real user cannot read is refused before it is opened;
 * root reads it, and then quotes nothing of it (mode 000).
 */
static void
test_include_unreadable(void **state)
{
	struct fixture *f = *state;
	const char *files[1], *other;

	other = mkfile(f, "locked.conf", SHADOW_LINE);
	assert_int_equal(chmod(other, 0), 0);
	files[0] = mkfile(f, "main.conf", "include locked.conf\n");
	assert_int_equal(load_files(f, files, 1), PH_ERR_POLICY);
	expect_counts(f, 1, 0);
	if (getuid() != 0)
		expect_at(f, files[0], 0, 1, 9, "not readable by uid");
	else
		expect_at(f, other, 0, 1, 1, "its text is not quoted");
	assert_false(any_msg_has(f, "root:"));
}

static void
test_err_load_missing_file(void **state)
{
	struct fixture *f = *state;
	const char *files[1];

	files[0] = tpath(f, "none.conf");
	assert_int_equal(load_files(f, files, 1), PH_ERR_POLICY);
	expect_counts(f, 1, 0);
	expect_at(f, files[0], 0, 0, 0, "cannot open");
}

static void
test_err_include_cycle(void **state)
{
	struct fixture *f = *state;
	const char *files[1], *b;

	files[0] = mkfile(f, "a.conf", "allow a.test\ninclude b.conf\n");
	b = mkfile(f, "b.conf", "include a.conf\nallow b.test\n");
	assert_int_equal(load_files(f, files, 1), PH_ERR_POLICY);
	expect_counts(f, 1, 0);
	expect_at(f, b, 0, 1, 9, "include cycle");
	expect_at(f, b, 0, 1, 9, files[0]);
	expect_at(f, b, 0, 1, 9, b);
}

static void
test_err_include_self(void **state)
{
	struct fixture *f = *state;
	const char *files[1];

	files[0] = mkfile(f, "a.conf", "include a.conf\n");
	assert_int_equal(load_files(f, files, 1), PH_ERR_POLICY);
	expect_counts(f, 1, 0);
	expect_at(f, files[0], 0, 1, 9, "include cycle");
}

static void
test_warn_include_twice(void **state)
{
	struct fixture *f = *state;
	const char *files[1];

	files[0] = mkfile(
	    f, "main.conf", "include c.conf\ninclude c.conf\nallow m.test\n");
	mkfile(f, "c.conf", "allow c.test\n");
	assert_int_equal(load_files(f, files, 1), 0);
	expect_counts(f, 0, 1);
	expect_at(f, files[0], 1, 2, 9, "already included");
	expect_at(f, files[0], 1, 2, 9, "skipped");
	/* The rules of c.conf are there once: no "never decides" warning. */
	assert_int_equal(policy_rule_count(f->p), 2);
}

static void
test_include_glob_sorted(void **state)
{
	struct fixture *f = *state;
	struct policy_decision d;
	struct policy_request q = {0};
	struct target_host h;
	const char *files[1], *a, *b;
	const struct policy_rule *r;

	files[0] = mkfile(f, "main.conf",
	    "allow first.test\ninclude d/*.conf\nallow last.test\n");
	mksubdir(f, "d");
	b = mkfile(f, "d/b.conf", "allow same.test:443\nallow b.test\n");
	a = mkfile(f, "d/a.conf",
	    "allow same.test:443 { private }\n"
	    "allow a.test\n");
	mkfile(f, "d/notes.txt", "not a policy\n");
	mkfile(f, "a.conf", "allow decoy.test\n");
	assert_int_equal(load_files(f, files, 1), 0);
	/* d/b.conf:1 comes after d/a.conf:1, which decides for it. */
	expect_counts(f, 0, 1);
	expect_at(f, b, 1, 1, 1, "never decides");
	expect_at(f, b, 1, 1, 1, a);

	assert_int_equal(policy_rule_count(f->p), 6);
	r = policy_rule_at(f->p, 0);
	assert_string_equal(r->file, files[0]);
	assert_int_equal(r->line, 1);
	r = policy_rule_at(f->p, 1);
	assert_string_equal(r->file, a);
	assert_int_equal(r->line, 1);
	r = policy_rule_at(f->p, 2);
	assert_string_equal(r->file, a);
	assert_int_equal(r->line, 2);
	r = policy_rule_at(f->p, 3);
	assert_string_equal(r->file, b);
	assert_int_equal(r->line, 1);
	r = policy_rule_at(f->p, 4);
	assert_string_equal(r->file, b);
	assert_int_equal(r->line, 2);
	r = policy_rule_at(f->p, 5);
	assert_string_equal(r->file, files[0]);
	assert_int_equal(r->line, 3);

	assert_int_equal(target_host_parse("same.test", 9, &h), 0);
	q.host = &h;
	q.port = 443;
	assert_int_equal(policy_decide(f->p, &q, &d), POLICY_ALLOW);
	assert_string_equal(d.rule_file, a);
	assert_int_equal(d.rule_line, 1);
	assert_int_equal(d.allow_private, 1);
}

/* An include inside an included file is relative to that file. */
static void
test_include_relative_to_includer(void **state)
{
	struct fixture *f = *state;
	const char *files[1], *leaf;
	const struct rule_target *t;

	files[0] = mkfile(f, "top.conf", "include sub/mid.conf\n");
	mksubdir(f, "sub");
	mkfile(f, "sub/mid.conf", "include leaf.conf\n");
	leaf = mkfile(f, "sub/leaf.conf", "allow leaf.test\n");
	mkfile(f, "leaf.conf", "allow decoy.test\n");
	assert_int_equal(load_files(f, files, 1), 0);
	expect_counts(f, 0, 0);
	assert_int_equal(policy_rule_count(f->p), 1);
	assert_string_equal(policy_rule_at(f->p, 0)->file, leaf);
	t = target_of(f, 0, 0);
	assert_int_equal(t->kind, RT_EXACT);
	assert_string_equal(t->host, "leaf.test");
}

static void
test_include_glob_no_match(void **state)
{
	struct fixture *f = *state;
	const char *files[1];

	files[0] = mkfile(
	    f, "main.conf", "include none/*.conf extra-*.conf\nallow a.test\n");
	assert_int_equal(load_files(f, files, 1), 0);
	expect_counts(f, 0, 0);
	assert_int_equal(policy_rule_count(f->p), 1);
}

/* Writes a chain of N files, each including the next; returns the first. */
static const char *
include_chain(struct fixture *f, const char *dir, unsigned n)
{
	char rel[64], text[64];
	const char *first = NULL, *path;
	unsigned i;

	mksubdir(f, dir);
	for (i = 0; i < n; i++) {
		snprintf(rel, sizeof(rel), "%s/f%02u.conf", dir, i);
		if (i + 1 < n)
			snprintf(
			    text, sizeof(text), "include f%02u.conf\n", i + 1);
		else
			snprintf(text, sizeof(text), "allow deep.test\n");
		path = mkfile(f, rel, text);
		if (i == 0)
			first = path;
	}
	return first;
}

static void
test_include_depth_limit(void **state)
{
	struct fixture *f = *state;
	const char *files[1];

	/* 16 files, 15 nested includes: within the limit. */
	files[0] = include_chain(f, "ok", 16);
	assert_int_equal(load_files(f, files, 1), 0);
	expect_counts(f, 0, 0);
	assert_int_equal(policy_rule_count(f->p), 1);
	/* 18 files, 17 nested includes: over it, one error. */
	files[0] = include_chain(f, "deep", 18);
	assert_int_equal(load_files(f, files, 1), PH_ERR_POLICY);
	expect_counts(f, 1, 0);
	assert_non_null(strstr(f->d[0].msg, "nested deeper than 16"));
}

/* Several -p files read in order, as one policy. */
static void
test_load_several_files(void **state)
{
	struct fixture *f = *state;
	const char *files[2];

	files[0] = mkfile(f, "one.conf", "secret k env A\nallow one.test\n");
	files[1] =
	    mkfile(f, "two.conf", "allow two.test:443 { inject bearer k }\n");
	assert_int_equal(load_files(f, files, 2), 0);
	expect_counts(f, 0, 0);
	assert_int_equal(policy_rule_count(f->p), 2);
	assert_string_equal(policy_rule_at(f->p, 0)->file, files[0]);
	assert_string_equal(policy_rule_at(f->p, 1)->file, files[1]);
}

/* --- all errors, in order ------------------------------------------------ */

static void
test_all_errors_reported(void **state)
{
	struct fixture *f = *state;
	size_t i;

	assert_int_equal(load(f,
	                     "alow a.test\n"
	                     "allow b.test:0\n"
	                     "allow c.test\n"
	                     "timeout idle 5x\n"),
	    PH_ERR_POLICY);
	assert_null(f->p);
	expect_counts(f, 3, 0);
	assert_int_equal(f->n, 3);
	expect_error(f, 1, 1, "unknown keyword 'alow'");
	expect_error(f, 2, 7, "bad port '0'");
	expect_error(f, 4, 14, "bad duration '5x'");
	for (i = 1; i < f->n; i++)
		assert_true(f->d[i - 1].line < f->d[i].line);
}

/*
 * Regression: policy.h promises diagnostics "in file order", so errors found
 * by the second pass (here an undefined secret on line 1) come before later
 * parse errors (here line 2).
 */
static void
test_diags_in_file_order(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(load(f,
	                     "allow a.test:443 { inject bearer nope }\n"
	                     "alow b.test\n"),
	    PH_ERR_POLICY);
	expect_counts(f, 2, 0);
	expect_error(f, 1, 34, "undefined secret 'nope'");
	expect_error(f, 2, 1, "unknown keyword 'alow'");
	if (f->d[0].line != 1) {
		dump(f);
		fail_msg("diagnostics not in file order");
	}
}

/* More than 200 diagnostics: 200 shown, then one line saying so. */
static void
test_too_many_diags(void **state)
{
	struct fixture *f = *state;
	char *text = xmalloc(300 * 16 + 1);
	size_t i, len = 0;

	for (i = 0; i < 300; i++)
		len += (size_t)sprintf(text + len, "alow a%zu.test\n", i);
	assert_int_equal(load(f, text), PH_ERR_POLICY);
	free(text);
	/* 200 shown and the "too many" line. */
	assert_int_equal(f->nerr, 201);
}

/* --- warnings (second pass) ---------------------------------------------- */

static void
test_warn_allow_shadowed_by_deny(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(load(f, "deny a.test\nallow a.test\n"), 0);
	expect_counts(f, 0, 1);
	expect_warning(f, 2, 1,
	    "this allow can never match: the deny at t.conf:1 covers it");
	/* A deny covers wherever it stands. */
	assert_int_equal(load(f, "allow a.test:443\ndeny a.test\n"), 0);
	expect_counts(f, 0, 1);
	expect_warning(f, 1, 1, "the deny at t.conf:2 covers it");
}

static void
test_warn_allow_shadowed_by_wider_deny(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(
	    load(f, "deny *.a.test\nallow x.a.test y.z.a.test\n"), 0);
	expect_counts(f, 0, 1);
	expect_warning(f, 2, 1, "can never match");
	assert_int_equal(
	    load(f, "deny 10.0.0.0/8\nallow 10.1.0.0/16:443\n"), 0);
	expect_counts(f, 0, 1);
	expect_warning(f, 2, 1, "can never match");
	assert_int_equal(load(f, "deny *\nallow [2001:db8::1]:443\n"), 0);
	expect_counts(f, 0, 1);
	expect_warning(f, 2, 1, "can never match");
}

static void
test_no_warn_partial_deny(void **state)
{
	struct fixture *f = *state;

	/* The apex is not under the wildcard. */
	clean(f, "deny *.a.test\nallow a.test\n");
	/* Port 80 stays allowed. */
	clean(f, "deny a.test:443\nallow a.test\n");
	/* A deny with paths denies only some requests. */
	clean(f, "deny a.test { paths /x/* }\nallow a.test\n");
	/* b.test stays allowed. */
	clean(f, "deny a.test\nallow a.test b.test\n");
}

static void
test_warn_allow_never_decides(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(load(f,
	                     "allow a.test\n"
	                     "allow a.test:443 { inject bearer k }\n"
	                     "secret k env A\n"),
	    0);
	expect_counts(f, 0, 1);
	expect_warning(
	    f, 2, 1, "this allow never decides: the earlier allow at t.conf:1");
	assert_int_equal(load(f, "allow *.a.test\nallow x.a.test:443\n"), 0);
	expect_counts(f, 0, 1);
	expect_warning(f, 2, 1, "never decides");
	assert_int_equal(
	    load(f, "allow 10.0.0.0/8:*\nallow 10.1.0.0/16:443\n"), 0);
	expect_counts(f, 0, 1);
	expect_warning(f, 2, 1, "never decides");
	assert_int_equal(load(f, "allow *:*\nallow 10.0.0.0/8 b.test\n"), 0);
	expect_counts(f, 0, 1);
	expect_warning(f, 2, 1, "never decides");
}

/* Each target covered, some by a deny and some by an earlier allow. */
static void
test_warn_never_decides_mixed(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(
	    load(f, "deny a.test\nallow b.test\nallow a.test b.test\n"), 0);
	expect_counts(f, 0, 1);
	expect_warning(f, 3, 1, "the earlier allow at t.conf:2");
}

static void
test_no_warn_earlier_allow_constrained(void **state)
{
	struct fixture *f = *state;

	clean(f, "allow a.test { paths /x/* }\nallow a.test\n");
	clean(f, "allow a.test { methods GET }\nallow a.test\n");
}

static void
test_no_warn_earlier_allow_some_ports(void **state)
{
	struct fixture *f = *state;

	clean(f, "allow a.test:443\nallow a.test\n");
	clean(f, "allow a.test:1-442,444-65535\nallow a.test:443\n");
	clean(f, "allow 10.1.0.0/16:*\nallow 10.0.0.0/8\n");
	clean(f, "allow *.a.test\nallow a.test\n");
	clean(f, "allow a.test\nallow a.test b.test\n");
}

static void
test_warn_secret_unused(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(load(f, "allow a.test\nsecret k env A\n"), 0);
	expect_counts(f, 0, 1);
	expect_warning(f, 2, 8, "secret 'k' is never used");
}

static void
test_warn_inject_port_80(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(
	    load(f, "secret k env A\nallow a.test:80 { inject bearer k }\n"),
	    0);
	expect_counts(f, 0, 1);
	expect_warning(f, 2, 1, "inject can never apply");
	expect_warning(f, 2, 1, "plain HTTP");
	clean(f, "secret k env A\nallow a.test { inject bearer k }\n");
}

/* Options that need requests on a port that carries none: errors. */
static void
test_err_request_options_plain_port(void **state)
{
	struct fixture *f = *state;

	one_error(f, "allow github.com:22 { paths /x/* }\n", 1, 7,
	    "github.com:22: port 22 carries ssh, not HTTP: pinhole cannot "
	    "see requests there, so paths cannot apply; allow it without "
	    "them (an opaque tunnel)");
	one_error(f,
	    "secret k env A\n"
	    "allow db.test:5432,3306 {\n    methods GET\n"
	    "    inject bearer k\n}\n",
	    2, 7,
	    "db.test:3306: ports 3306 (mysql) and 5432 (postgresql) carry no "
	    "HTTP: pinhole cannot see requests there, so methods and "
	    "inject cannot apply");
	one_error(f,
	    "secret k env A\nallow 10.0.0.0/8:25 { placeholder T k }\n", 2, 7,
	    "10.0.0.0/8:25: port 25 carries smtp");
	one_error(f, "allow [2001:db8::1]:6379 { paths /; upgrade ws }\n", 1, 7,
	    "[2001:db8::1]:6379: port 6379 carries redis, not HTTP: "
	    "pinhole cannot see requests there, so paths and upgrade");
	one_error(f, "deny *.example.com:22-23 { paths /x }\n", 1, 6,
	    "*.example.com:22: ports 22 (ssh) and 23 (telnet) carry no "
	    "HTTP: pinhole cannot see requests there, so paths cannot "
	    "apply; deny it without them");
	one_error(f, "allow a.test:22,23,25,53,110 { paths /x }\n", 1, 7,
	    "ports 22 (ssh), 23 (telnet), 25 (smtp), 53 (dns) and more "
	    "carry");
	/* Without request options, or on ports that may carry HTTP: clean. */
	clean(f, "allow github.com:22 db.test:5432,3306\n");
	clean(f, "deny a.test:22\nallow b.test:22,443\n");
	clean(f,
	    "allow a.test:* { paths /x }\nallow b.test:1-1000 { paths /y }\n");
	clean(f, "allow a.test:8080,8443 { paths /x }\n");
}

/* A rule mixing such a port with HTTP ones: an error too, naming the way out. */
static void
test_err_request_options_mixed_ports(void **state)
{
	struct fixture *f = *state;

	one_error(f, "allow a.test:443 github.com:22,443 { paths /org/* }\n", 1,
	    18,
	    "github.com:22: port 22 carries ssh, not HTTP: pinhole cannot "
	    "see requests there, so paths cannot apply there (and its "
	    "connections would fail under this rule); move that port to a "
	    "rule of its own without them (an opaque tunnel)");
	one_error(f, "allow a.test:443,5432,993 { methods GET }\n", 1, 7,
	    "ports 993 (imaps) and 5432 (postgresql) carry no HTTP");
	one_error(f, "allow a.test:443,5432,993 { methods GET }\n", 1, 7,
	    "move those ports to a rule of its own");
}

/* The table of non-HTTP ports is sorted (bsearch) and answers. */
static void
test_port_protocol(void **state)
{
	unsigned p, last = 0;

	(void)state;
	assert_string_equal(check_port_protocol(22), "ssh");
	assert_string_equal(check_port_protocol(5432), "postgresql");
	assert_string_equal(check_port_protocol(27017), "mongodb");
	assert_null(check_port_protocol(80));
	assert_null(check_port_protocol(443));
	assert_null(check_port_protocol(8080));
	assert_null(check_port_protocol(0));
	/* Every answer is found by bsearch only if the table is sorted. */
	for (p = 1; p <= 65535; p++)
		if (check_port_protocol((uint16_t)p) != NULL)
			last++;
	assert_int_equal(last, 21);
}

static void
test_warn_upstream_ca_no_intercept(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(
	    load(f, "allow a.test:443 { upstream-ca /ca.pem }\n"), 0);
	expect_counts(f, 0, 1);
	expect_warning(f, 1, 20, "upstream-ca has no effect");
	clean(f, "allow a.test:443 { upstream-ca /ca.pem; paths /x/* }\n");
}

static void
test_warn_methods_lower_case(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(load(f, "allow a.test:443 { methods get Post }\n"), 0);
	expect_counts(f, 0, 2);
	expect_warning(f, 1, 28, "did you mean 'GET'?");
	expect_warning(f, 1, 32, "did you mean 'POST'?");
}

static void
test_warn_path_not_normal(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(
	    load(f, "allow a.test:443 { paths /a/../b /a//b /./c }\n"), 0);
	expect_counts(f, 0, 3);
	expect_warning(f, 1, 26, "write '/b'");
	expect_warning(f, 1, 34, "write '/a/b'");
	expect_warning(f, 1, 40, "write '/c'");
}

static void
test_warnings_do_not_fail(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(load(f,
	                     "secret k env A\n"
	                     "allow a.test\n"
	                     "allow a.test:443 { methods get }\n"
	                     "deny b.test\nallow b.test\n"),
	    0);
	assert_int_equal(f->nerr, 0);
	assert_int_equal(f->nwarn, 4);
	assert_int_equal(policy_warning_count(f->p), 4);
	assert_int_equal(policy_rule_count(f->p), 4);
}

/* --- valid syntax -------------------------------------------------------- */

static void
test_comments(void **state)
{
	struct fixture *f = *state;

	clean(f, "# top\n   # indented\n\nallow a.test # trailing\n#\n");
	assert_int_equal(policy_rule_count(f->p), 1);
	assert_int_equal(policy_rule_at(f->p, 0)->line, 4);
}

/*
 * Regression: pinhole.conf(5) says '#' starts a comment unless inside a
 * quoted word, so "a.test#x" is the word "a.test" and a comment.
 */
static void
test_comment_after_word(void **state)
{
	struct fixture *f = *state;

	clean(f, "allow a.test# no blank before the comment\n");
	assert_int_equal(policy_rule_count(f->p), 1);
	assert_string_equal(target_of(f, 0, 0)->host, "a.test");
}

static void
test_semicolons(void **state)
{
	struct fixture *f = *state;
	const struct policy_rule *r;

	clean(f, "allow a.test; allow b.test;deny c.test;\n");
	assert_int_equal(policy_rule_count(f->p), 3);
	r = policy_rule_at(f->p, 1);
	assert_int_equal(r->line, 1);
	assert_int_equal(r->col, 15);
	r = policy_rule_at(f->p, 2);
	assert_int_equal(r->deny, 1);
	assert_int_equal(r->col, 28);
}

static void
test_line_continuation(void **state)
{
	struct fixture *f = *state;
	const struct rule_target *t;

	clean(f, "allow a.test \\\n      b.test\nallow c.test\n");
	assert_int_equal(policy_rule_count(f->p), 2);
	assert_int_equal(policy_rule_at(f->p, 0)->ntargets, 2);
	t = target_of(f, 0, 1);
	assert_string_equal(t->host, "b.test");
	assert_int_equal(t->col, 7);
	assert_int_equal(policy_rule_at(f->p, 1)->line, 3);
}

static void
test_crlf(void **state)
{
	struct fixture *f = *state;

	clean(f, "allow a.test\r\nallow b.test \\\r\n c.test\r\n");
	assert_int_equal(policy_rule_count(f->p), 2);
	assert_int_equal(policy_rule_at(f->p, 1)->ntargets, 2);
}

static void
test_quoted_words(void **state)
{
	struct fixture *f = *state;

	clean(f, "log \"/v/my \\\"log\\\"\\\\x #;{}\"\nallow \"a.test\"\n");
	assert_string_equal(policy_log_path(f->p), "/v/my \"log\"\\x #;{}");
	assert_string_equal(target_of(f, 0, 0)->host, "a.test");
}

/*
 * Regression: the example in pinhole.conf(5), paths "/release notes/..."
 * (with a trailing star), must load: decoded request paths
 * ("/release%20notes/x") do contain spaces.
 */
static void
test_quoted_path_with_blank(void **state)
{
	struct fixture *f = *state;
	const struct policy_rule *r;

	clean(f, "allow docs.example.com:443 { paths \"/release notes/*\" }\n");
	r = policy_rule_at(f->p, 0);
	assert_int_equal(r->npaths, 1);
	assert_string_equal(r->paths[0], "/release notes/*");
	one_error(f, "allow a.test:443 { paths \"/a\tb\" }\n", 1, 26,
	    "bad path pattern");
	/* Decoded request paths may hold UTF-8 (%C3%BC): so may patterns. */
	clean(f,
	    "allow a.test:443 { paths \"/b\xc3\xbc"
	    "cher/*\" }\n");
	assert_string_equal(policy_rule_at(f->p, 0)->paths[0],
	    "/b\xc3\xbc"
	    "cher/*");
}

static void
test_several_targets(void **state)
{
	static const struct port_range p8443[] = {{8443, 8443}};
	struct fixture *f = *state;
	const struct rule_target *t;

	clean(f, "allow a.test *.b.test 10.0.0.0/8 [::1]:8443 *\n");
	assert_int_equal(policy_rule_count(f->p), 1);
	assert_int_equal(policy_rule_at(f->p, 0)->ntargets, 5);
	t = target_of(f, 0, 0);
	assert_int_equal(t->kind, RT_EXACT);
	assert_string_equal(t->host, "a.test");
	assert_int_equal(t->col, 7);
	t = target_of(f, 0, 1);
	assert_int_equal(t->kind, RT_WILD);
	assert_string_equal(t->host, "b.test");
	assert_v4(target_of(f, 0, 2), "10.0.0.0", 8);
	t = target_of(f, 0, 3);
	assert_v6(t, "::1", 128);
	assert_ports(t, p8443, 1);
	assert_int_equal(target_of(f, 0, 4)->kind, RT_ANY);
}

static void
test_one_line_block(void **state)
{
	struct fixture *f = *state;
	const struct policy_rule *r;

	clean(
	    f, "secret k env A\nallow x.test { inject header X-Api-Key k }\n");
	r = policy_rule_at(f->p, 0);
	assert_int_equal(r->ninject, 1);
	assert_int_equal(r->inject[0].kind, POLICY_INJECT_HEADER);
	assert_string_equal(r->inject[0].header, "X-Api-Key");
	assert_null(r->inject[0].user);
	assert_string_equal(r->inject[0].secret_name, "k");
	assert_non_null(r->inject[0].secret);
	/* Empty blocks, and a ';' after the block. */
	clean(f, "allow x.test {}\nallow y.test { } ; allow z.test\n");
	assert_int_equal(policy_rule_count(f->p), 3);
}

static void
test_block_options(void **state)
{
	struct fixture *f = *state;
	const struct policy_rule *r;

	clean(f,
	    "secret gh env GH\nsecret npm env NPM\n"
	    "allow git.test:8443 {\n"
	    "    paths   /acme/widgets.git/* \\\n"
	    "            /acme/widgets/*\n"
	    "    paths   /x\n"
	    "    methods GET POST; methods PUT\n"
	    "    private\n"
	    "    upstream-ca /etc/ca.pem\n"
	    "    inject  basic x-access-token gh\n"
	    "    placeholder NPM_TOKEN npm\n"
	    "}\n");
	r = policy_rule_at(f->p, 0);
	assert_int_equal(r->deny, 0);
	assert_int_equal(r->line, 3);
	/* paths and methods add up. */
	assert_int_equal(r->npaths, 3);
	assert_string_equal(r->paths[0], "/acme/widgets.git/*");
	assert_string_equal(r->paths[1], "/acme/widgets/*");
	assert_string_equal(r->paths[2], "/x");
	assert_int_equal(r->nmethods, 3);
	assert_string_equal(r->methods[0], "GET");
	assert_string_equal(r->methods[2], "PUT");
	assert_int_equal(r->private_ok, 1);
	assert_string_equal(r->upstream_ca, "/etc/ca.pem");
	assert_int_equal(r->ninject, 1);
	assert_int_equal(r->inject[0].kind, POLICY_INJECT_BASIC);
	assert_string_equal(r->inject[0].header, "Authorization");
	assert_string_equal(r->inject[0].user, "x-access-token");
	assert_string_equal(r->inject[0].secret_name, "gh");
	assert_int_equal(r->nplaceholder, 1);
	assert_string_equal(r->placeholder[0].env, "NPM_TOKEN");
	assert_string_equal(r->placeholder[0].secret_name, "npm");
	assert_non_null(r->placeholder[0].secret);
}

/* Several options on one line, as in DESIGN.md. */
static void
test_options_share_a_line(void **state)
{
	struct fixture *f = *state;
	const struct policy_rule *r;

	assert_int_equal(load(f,
	                     "allow git.test:8443 { private  upstream-ca "
	                     "/etc/ssl/test-ca.pem }\n"),
	    0);
	expect_counts(f, 0, 1);
	expect_warning(f, 1, 32, "upstream-ca has no effect");
	r = policy_rule_at(f->p, 0);
	assert_int_equal(r->private_ok, 1);
	assert_string_equal(r->upstream_ca, "/etc/ssl/test-ca.pem");
	clean(f, "allow a.test:443 { paths /a/* /b/* methods GET }\n");
	r = policy_rule_at(f->p, 0);
	assert_int_equal(r->npaths, 2);
	assert_int_equal(r->nmethods, 1);
}

static void
test_deny_block(void **state)
{
	struct fixture *f = *state;
	const struct policy_rule *r;

	clean(f,
	    "allow a.test\ndeny a.test { paths /admin/*; methods DELETE }\n");
	r = policy_rule_at(f->p, 1);
	assert_int_equal(r->deny, 1);
	assert_int_equal(r->npaths, 1);
	assert_int_equal(r->nmethods, 1);
}

static void
test_target_any_port(void **state)
{
	static const struct port_range p443[] = {{443, 443}};
	struct fixture *f = *state;
	const struct rule_target *t;

	clean(f, "allow *:443\n");
	t = target_of(f, 0, 0);
	assert_int_equal(t->kind, RT_ANY);
	assert_ports(t, p443, 1);
}

static void
test_target_v6_with_port(void **state)
{
	static const struct port_range p443[] = {{443, 443}};
	static const struct port_range p2[] = {{443, 443}, {8443, 8443}};
	struct fixture *f = *state;
	const struct rule_target *t;

	clean(f, "allow [2001:db8::1]:443 [2001:DB8::10]:443,8443\n");
	t = target_of(f, 0, 0);
	assert_v6(t, "2001:db8::1", 128);
	assert_ports(t, p443, 1);
	t = target_of(f, 0, 1);
	assert_v6(t, "2001:db8::10", 128);
	assert_ports(t, p2, 2);
}

static void
test_target_v6_block(void **state)
{
	static const struct port_range p443[] = {{443, 443}};
	struct fixture *f = *state;

	clean(f,
	    "allow [2001:db8::]/32 2001:db8::/32 [2001:db8::]/32:443 "
	    "2001:db8:feed::/48\n");
	assert_v6(target_of(f, 0, 0), "2001:db8::", 32);
	assert_v6(target_of(f, 0, 1), "2001:db8::", 32);
	assert_v6(target_of(f, 0, 2), "2001:db8::", 32);
	assert_ports(target_of(f, 0, 2), p443, 1);
	assert_v6(target_of(f, 0, 3), "2001:db8:feed::", 48);
	/* ::/0 loads, with the warning that it takes in ::1. */
	assert_int_equal(load(f, "allow ::/0\n"), 0);
	expect_counts(f, 0, 1);
	expect_warning(f, 1, 7, "takes in loopback (::1)");
	assert_v6(target_of(f, 0, 0), "::", 0);
}

/* A wide block names loopback or metadata by accident: warn, once each. */
static void
test_warn_wide_block(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(load(f,
	                     "allow 0.0.0.0/0:80\n"
	                     "allow 10.0.0.0/8 169.254.0.0/16\n"
	                     "allow [fd00::]/8:443\n"),
	    0);
	expect_counts(f, 0, 3);
	expect_warning(f, 1, 7, "takes in loopback (127.0.0.0/8)");
	expect_warning(f, 2, 18, "metadata address 169.254.169.254");
	expect_warning(f, 3, 7, "metadata address fd00:ec2::254");
	/* Naming the block itself, or its address, is meant: no warning. */
	clean(f,
	    "allow 127.0.0.0/8 127.0.0.1 10.0.0.0/8 169.254.169.254 "
	    "[::1]:443 2600::/12\n");
}

static void
test_target_v4_mapped_block(void **state)
{
	struct fixture *f = *state;

	clean(f, "allow ::ffff:10.0.0.0/104 [::ffff:192.168.0.0]/112:443\n");
	assert_v4(target_of(f, 0, 0), "10.0.0.0", 8);
	assert_v4(target_of(f, 0, 1), "192.168.0.0", 16);
}

/*
 * Regression: an IPv4-mapped address without a prefix length is the IPv4
 * address (pinhole.conf(5)), not a block needing a /96 prefix.
 */
static void
test_target_v4_mapped_address(void **state)
{
	static const struct port_range p8080[] = {{8080, 8080}};
	struct fixture *f = *state;

	clean(f, "allow [::ffff:127.0.0.1]:8080 ::ffff:10.0.0.1\n");
	assert_v4(target_of(f, 0, 0), "127.0.0.1", 32);
	assert_ports(target_of(f, 0, 0), p8080, 1);
	assert_v4(target_of(f, 0, 1), "10.0.0.1", 32);
}

static void
test_target_host_normalised(void **state)
{
	struct fixture *f = *state;
	const struct rule_target *t;

	clean(f,
	    "allow PyPI.ORG. *.GitHubUserContent.com 127.1 0x7f.0.0.2 "
	    "2130706435\n");
	t = target_of(f, 0, 0);
	assert_int_equal(t->kind, RT_EXACT);
	assert_string_equal(t->host, "pypi.org");
	t = target_of(f, 0, 1);
	assert_int_equal(t->kind, RT_WILD);
	assert_string_equal(t->host, "githubusercontent.com");
	assert_v4(target_of(f, 0, 2), "127.0.0.1", 32);
	assert_v4(target_of(f, 0, 3), "127.0.0.2", 32);
	assert_v4(target_of(f, 0, 4), "127.0.0.3", 32);
}

static void
test_ports_merged(void **state)
{
	static const struct port_range merged[] = {{80, 90}};
	static const struct port_range sorted[] = {{80, 80}, {443, 443}};
	static const struct port_range adjacent[] = {{1, 7}};
	static const struct port_range two[] = {{22, 22}, {8000, 8100}};
	struct fixture *f = *state;

	clean(f,
	    "allow a.test:80,81-90,85 b.test:443,80 c.test:1-5,7,6 "
	    "d.test:8000-8100,22\n");
	assert_ports(target_of(f, 0, 0), merged, 1);
	assert_ports(target_of(f, 0, 1), sorted, 2);
	assert_ports(target_of(f, 0, 2), adjacent, 1);
	assert_ports(target_of(f, 0, 3), two, 2);
}

static void
test_ports_default_and_star(void **state)
{
	static const struct port_range all[] = {{1, 65535}};
	static const struct port_range web[] = {{80, 80}, {443, 443}};
	struct fixture *f = *state;

	clean(f,
	    "allow a.test b.test:* 10.0.0.0/8\n"
	    "deny c.test d.test:*\n");
	assert_ports(target_of(f, 0, 0), web, 2);
	assert_ports(target_of(f, 0, 1), all, 1);
	assert_ports(target_of(f, 0, 2), web, 2);
	assert_ports(target_of(f, 1, 0), all, 1);
	assert_ports(target_of(f, 1, 1), all, 1);
}

static void
test_relative_paths(void **state)
{
	static const char text[] =
	    "secret k file tok\nsecret abs file /etc/tok\n"
	    "log audit.jsonl\n"
	    "allow a.test:443 { inject bearer k; upstream-ca ca.pem }\n"
	    "allow b.test:443 { inject header X-K abs; upstream-ca /ca.pem }\n";
	struct fixture *f = *state;
	struct secret *s;

	assert_int_equal(load_as(f, "conf/p.conf", text, strlen(text)), 0);
	expect_counts(f, 0, 0);
	s = secret_store_find(policy_secrets(f->p), "k");
	assert_non_null(s);
	assert_int_equal(secret_source(s), SECRET_FILE);
	assert_string_equal(secret_origin(s), "conf/tok");
	s = secret_store_find(policy_secrets(f->p), "abs");
	assert_string_equal(secret_origin(s), "/etc/tok");
	assert_string_equal(policy_log_path(f->p), "conf/audit.jsonl");
	assert_string_equal(
	    policy_rule_at(f->p, 0)->upstream_ca, "conf/ca.pem");
	assert_string_equal(policy_rule_at(f->p, 1)->upstream_ca, "/ca.pem");
	assert_string_equal(policy_rule_at(f->p, 0)->file, "conf/p.conf");
}

static void
test_relative_paths_in_file(void **state)
{
	struct fixture *f = *state;
	const char *files[1];

	mksubdir(f, "etc");
	files[0] = mkfile(f, "etc/p.conf",
	    "secret k file tok\nlog audit.jsonl\n"
	    "allow a.test:443 { inject bearer k; upstream-ca ca.pem }\n");
	assert_int_equal(load_files(f, files, 1), 0);
	expect_counts(f, 0, 0);
	assert_string_equal(
	    secret_origin(secret_store_find(policy_secrets(f->p), "k")),
	    tpath(f, "etc/tok"));
	assert_string_equal(policy_log_path(f->p), tpath(f, "etc/audit.jsonl"));
	assert_string_equal(
	    policy_rule_at(f->p, 0)->upstream_ca, tpath(f, "etc/ca.pem"));
}

static void
test_secret_sources(void **state)
{
	struct fixture *f = *state;
	struct secret *s;

	clean(f,
	    "secret e env NPM_TOKEN\n"
	    "secret x exec /usr/bin/vault kv get -field=token secret/ci\n"
	    "allow a.test:443 { inject bearer e; inject header X-V x }\n");
	s = secret_store_find(policy_secrets(f->p), "e");
	assert_int_equal(secret_source(s), SECRET_ENV);
	assert_string_equal(secret_origin(s), "NPM_TOKEN");
	s = secret_store_find(policy_secrets(f->p), "x");
	assert_int_equal(secret_source(s), SECRET_EXEC);
	assert_string_equal(secret_origin(s), "/usr/bin/vault");
	/* Loading reads no value. */
	assert_null(secret_value(s, &(size_t){0}));
}

/* exec env VAR[,VAR...] COMMAND: the variables the helper also gets. */
static void
test_secret_exec_env(void **state)
{
	struct fixture *f = *state;
	const char *const *names;
	struct secret *s;
	size_t n;

	clean(f,
	    "secret x exec env VAULT_ADDR,VAULT_NAMESPACE /usr/bin/vault kv "
	    "get\n"
	    "allow a.test:443 { inject bearer x }\n");
	s = secret_store_find(policy_secrets(f->p), "x");
	assert_string_equal(secret_origin(s), "/usr/bin/vault");
	names = secret_exec_env(s, &n);
	assert_int_equal(n, 2);
	assert_string_equal(names[0], "VAULT_ADDR");
	assert_string_equal(names[1], "VAULT_NAMESPACE");
	one_error(f, "secret x exec env A,,B /bin/true\n", 1, 19,
	    "exec env: bad environment variable name ''");
	one_error(f, "secret x exec env A=1 /bin/true\n", 1, 19,
	    "bad environment variable name 'A=1'");
	one_error(f, "secret x exec env /bin/true\n", 1, 15,
	    "usage: secret NAME exec env VAR[,VAR...] COMMAND");
}

/* ca cert PATH key PATH, in either order; once; nothing else. */
static void
test_ca(void **state)
{
	struct fixture *f = *state;
	const char *cert, *key;

	clean(f, "allow a.test\n");
	assert_int_equal(policy_ca(f->p, &cert, &key), 0);
	clean(f, "ca cert /etc/pinhole/ca.pem key /etc/pinhole/ca.key\n");
	assert_int_equal(policy_ca(f->p, &cert, &key), 1);
	assert_string_equal(cert, "/etc/pinhole/ca.pem");
	assert_string_equal(key, "/etc/pinhole/ca.key");
	clean(f, "ca key /k.pem cert /c.pem\n");
	assert_int_equal(policy_ca(f->p, &cert, &key), 1);
	assert_string_equal(cert, "/c.pem");
	assert_string_equal(key, "/k.pem");
	one_error(f, "ca cert /c.pem\n", 1, 1, "usage: ca cert PATH key PATH");
	one_error(f, "ca cert /c.pem cert /k.pem\n", 1, 4, "usage: ca cert");
	one_error(f, "ca cert /a key /b\nca cert /c key /d\n", 2, 1,
	    "ca is already set at t.conf:1");
}

/* trust PATH: repeatable, in order, with where it was written. */
static void
test_trust(void **state)
{
	struct fixture *f = *state;
	const struct policy_trust *t;

	clean(f, "allow a.test\n");
	assert_null(policy_trust_at(f->p, 0));
	clean(f, "trust /etc/pinhole/a.pem\nallow a.test\n  trust /b.pem\n");
	t = policy_trust_at(f->p, 0);
	assert_non_null(t);
	assert_string_equal(t->path, "/etc/pinhole/a.pem");
	assert_int_equal(t->line, 1);
	t = policy_trust_at(f->p, 1);
	assert_non_null(t);
	assert_string_equal(t->path, "/b.pem");
	assert_int_equal(t->line, 3);
	assert_int_equal(t->col, 3);
	assert_null(policy_trust_at(f->p, 2));
	one_error(f, "trust\n", 1, 1, "usage: trust PATH");
	one_error(f, "trust /a /b\n", 1, 1, "usage: trust PATH");
}

static void
test_log_path(void **state)
{
	struct fixture *f = *state;

	clean(f, "allow a.test\n");
	assert_null(policy_log_path(f->p));
	clean(f, "log stderr\n");
	assert_string_equal(policy_log_path(f->p), "stderr");
	clean(f, "log /var/log/pinhole/egress.jsonl\n");
	assert_string_equal(
	    policy_log_path(f->p), "/var/log/pinhole/egress.jsonl");
}

static void
test_timeout_defaults(void **state)
{
	struct fixture *f = *state;

	clean(f, "allow a.test\n");
	assert_int_equal(policy_timeout(f->p, POLICY_TIMEOUT_CONNECT), 10000);
	assert_int_equal(policy_timeout(f->p, POLICY_TIMEOUT_HEAD), 30000);
	assert_int_equal(policy_timeout(f->p, POLICY_TIMEOUT_IDLE), 300000);
}

static void
test_timeout_overrides(void **state)
{
	struct fixture *f = *state;

	clean(f, "timeout connect 250ms\ntimeout head 2m\ntimeout idle 1h\n");
	assert_int_equal(policy_timeout(f->p, POLICY_TIMEOUT_CONNECT), 250);
	assert_int_equal(policy_timeout(f->p, POLICY_TIMEOUT_HEAD), 120000);
	assert_int_equal(policy_timeout(f->p, POLICY_TIMEOUT_IDLE), 3600000);
	clean(f, "timeout connect 7\ntimeout head 45s\ntimeout idle 24h\n");
	assert_int_equal(policy_timeout(f->p, POLICY_TIMEOUT_CONNECT), 7000);
	assert_int_equal(policy_timeout(f->p, POLICY_TIMEOUT_HEAD), 45000);
	assert_int_equal(policy_timeout(f->p, POLICY_TIMEOUT_IDLE), 86400000);
	clean(f, "timeout idle 1ms\n");
	assert_int_equal(policy_timeout(f->p, POLICY_TIMEOUT_IDLE), 1);
}

static void
test_resolve(void **state)
{
	struct fixture *f = *state;
	struct target_host out[4];

	clean(f,
	    "resolve Git.Test. 127.0.0.1 ::1 0x7f.0.0.2 [2001:db8::7]\n"
	    "resolve other.test 192.0.2.1\n");
	assert_int_equal(policy_resolve(f->p, "git.test", out, 4), 4);
	assert_int_equal(out[0].kind, TARGET_V4);
	assert_string_equal(out[0].name, "127.0.0.1");
	assert_int_equal(out[1].kind, TARGET_V6);
	assert_string_equal(out[1].name, "::1");
	assert_int_equal(out[2].kind, TARGET_V4);
	assert_string_equal(out[2].name, "127.0.0.2");
	assert_int_equal(out[3].kind, TARGET_V6);
	assert_string_equal(out[3].name, "2001:db8::7");
	/* Fewer slots than addresses: fills what fits, returns the count. */
	memset(out, 0, sizeof(out));
	assert_int_equal(policy_resolve(f->p, "git.test", out, 1), 4);
	assert_string_equal(out[0].name, "127.0.0.1");
	assert_int_equal(out[1].len, 0);
	assert_int_equal(policy_resolve(f->p, "other.test", out, 4), 1);
	assert_string_equal(out[0].name, "192.0.2.1");
	assert_int_equal(policy_resolve(f->p, "none.test", out, 4), 0);
}

/* --- broker blocks (grant.h) --------------------------------------------- */

static void
test_broker_clean(void **state)
{
	struct fixture *f = *state;
	const struct grant_set *g;
	const char *const *files;
	char cwd[PATH_MAX], *want;
	const char *text;
	size_t n;

	/* A policy named before the block that defines it; a secret used
	 * only by a login is used. */
	clean(f,
	    "secret s env S\n"
	    "broker {\n"
	    " policy a\n"
	    " login runner s\n"
	    " from 192.0.2.0/24 2001:db8::/32 ::ffff:198.51.100.0/120\n"
	    "}\n"
	    "broker {\n"
	    " policy a a.conf sub/more.conf\n"
	    " policy b-1.x_y /abs/b.conf\n"
	    " users alice 0 1001 a.b_c-d\n"
	    " groups ci 2001\n"
	    "}\n");
	g = policy_grants(f->p);
	assert_non_null(g);
	assert_int_equal(grant_count(g), 2);
	files = grant_files(g, (size_t)grant_find(g, "a"), &n);
	assert_int_equal(n, 2);
	/* Relative to the file's directory (here the current one), made
	 * absolute. */
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	want = xasprintf("%s/a.conf", cwd);
	assert_string_equal(files[0], want);
	free(want);
	files = grant_files(g, (size_t)grant_find(g, "b-1.x_y"), &n);
	assert_string_equal(files[0], "/abs/b.conf");
	/* Relative to the configuration's own directory. */
	text = "broker { policy p p.conf; users 1 }\n";
	assert_int_equal(
	    load_as(f, "/etc/pinhole/broker.conf", text, strlen(text)), 0);
	files = grant_files(policy_grants(f->p), 0, &n);
	assert_string_equal(files[0], "/etc/pinhole/p.conf");
	/* No broker block: no grants. */
	clean(f, "allow a.test\n");
	assert_null(policy_grants(f->p));
}

static void
test_err_broker_policy(void **state)
{
	struct fixture *f = *state;
	char text[256];

	one_error(f,
	    "broker {\n policy a a.conf\n policy a b.conf\n users 1\n}\n", 3, 9,
	    "policy 'a' is already defined at t.conf:2");
	one_error(f,
	    "broker {\n policy a a.conf\n users 1\n}\n"
	    "broker {\n policy a x.conf\n users 2\n}\n",
	    6, 9, "policy 'a' is already defined at t.conf:2");
	one_error(f, "broker {\n policy nope\n users 1\n}\n", 2, 9,
	    "policy 'nope' is not defined");
	one_error(f,
	    "broker {\n policy build b.conf; policy biuld\n users 1\n}\n", 2,
	    30, "did you mean 'build'?");
	one_error(f, "broker {\n policy a/b x.conf\n users 1\n}\n", 2, 9,
	    "bad policy name 'a/b'");
	snprintf(text, sizeof(text),
	    "broker {\n policy %065d x.conf\n users 1\n}\n", 0);
	one_error(f, text, 2, 9, "bad policy name");
	snprintf(text, sizeof(text),
	    "broker {\n policy %064d x.conf\n users 1\n}\n", 0);
	clean(f, text);
	one_error(f, "broker {\n policy\n users 1\n}\n", 2, 2,
	    "usage: policy NAME [FILE...]");
}

static void
test_err_broker_block(void **state)
{
	struct fixture *f = *state;

	one_error(f, "broker {\n users 1\n}\n", 1, 1, "grants no policy");
	assert_int_equal(load(f, "broker {\n policy a a.conf\n}\n"), 0);
	expect_counts(f, 0, 1);
	expect_warning(f, 1, 1, "grants to nobody");
	one_error(f, "broker x {\n policy a a.conf; users 1\n}\n", 1, 8,
	    "usage: broker {");
	one_error(f, "broker\n", 1, 1, "usage: broker {");
	one_error(f, "broker {\n policy a a.conf; users 1\n", 1, 8,
	    "'{' is never closed");
	one_error(f, "broker {\n policy a a.conf; users 1\n { y }\n}\n", 3, 2,
	    "unexpected '{' inside a broker block");
	one_error(f, "broker {\n policy a a.conf; users 1\n usres 2\n}\n", 3, 2,
	    "unknown broker statement 'usres'; did you mean 'users'?");
	one_error(f, "broker {\n policy a a.conf; users 1\n allow x.test\n}\n",
	    3, 2, "'allow' cannot appear inside a broker block");
	one_error(f, "broker {\n policy a a.conf; users 1\n} x\n", 3, 3,
	    "unexpected 'x' after '}'");
}

static void
test_err_broker_rules(void **state)
{
	struct fixture *f = *state;

	one_error(f,
	    "allow a.test\ndeny b.test\n"
	    "broker {\n policy a a.conf\n users 1\n}\n",
	    1, 1,
	    "a broker configuration grants policies; rules go in the policy "
	    "files");
	one_error(f, "broker {\n policy a a.conf\n users 1\n}\nallow a.test\n",
	    5, 1, "rules go in the policy files");
}

static void
test_err_broker_accounts(void **state)
{
	struct fixture *f = *state;

	one_error(f, "broker {\n policy a a.conf\n users alice -bob\n}\n", 3,
	    14, "bad user '-bob'");
	one_error(f, "broker {\n policy a a.conf\n users 4294967295\n}\n", 3, 8,
	    "bad user '4294967295'");
	one_error(f, "broker {\n policy a a.conf\n users 99999999999\n}\n", 3,
	    8, "bad user");
	one_error(f, "broker {\n policy a a.conf\n groups ci al!ce\n}\n", 3, 12,
	    "bad group 'al!ce'");
	one_error(f,
	    "broker {\n policy a a.conf\n users "
	    "abcdefghijklmnopqrstuvwxyz0123456\n}\n",
	    3, 8, "at most 32");
	one_error(f, "broker {\n policy a a.conf\n groups\n}\n", 3, 2,
	    "usage: groups GROUP");
	clean(f, "broker {\n policy a a.conf\n users 4294967294 0 _x x.y\n}\n");
}

static void
test_err_broker_login(void **state)
{
	struct fixture *f = *state;

	one_error(f,
	    "secret s env S\nbroker {\n policy a a.conf\n login u s\n"
	    " login u s\n}\n",
	    5, 8, "login 'u' is already defined at t.conf:4");
	one_error(f, "broker {\n policy a a.conf\n login u nosuch\n}\n", 3, 10,
	    "login u: undefined secret 'nosuch'");
	one_error(f,
	    "secret s env S\nbroker {\n policy a a.conf\n login a:b s\n}\n", 4,
	    8, "bad login 'a:b'");
	one_error(f,
	    "secret s env S\nbroker {\n policy a a.conf\n login u\n}\n", 4, 2,
	    "usage: login USER SECRET");
	one_error(f, "broker {\n policy a a.conf\n login u s/t\n}\n", 3, 10,
	    "bad secret name 's/t'");
}

static void
test_err_broker_from(void **state)
{
	struct fixture *f = *state;

	one_error(f, "broker {\n policy a a.conf\n from 10.0.0.1/8\n}\n", 3, 7,
	    "did you mean '10.0.0.0/8'?");
	one_error(f, "broker {\n policy a a.conf\n from 10.0.0.0/33\n}\n", 3, 7,
	    "bad prefix length");
	one_error(f,
	    "broker {\n policy a a.conf\n from 192.0.2.0/24 gw.test\n}\n", 3,
	    20, "bad address 'gw.test'");
	one_error(f, "broker {\n policy a a.conf\n from ::ffff:10.0.0.0/8\n}\n",
	    3, 7, "at least /96");
	one_error(
	    f, "broker {\n policy a a.conf\n from\n}\n", 3, 2, "usage: from");
}

#define T(t) cmocka_unit_test_setup_teardown(t, setup, teardown)

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    T(test_keywords_sorted),
	    T(test_broker_clean),
	    T(test_err_broker_policy),
	    T(test_err_broker_block),
	    T(test_err_broker_rules),
	    T(test_err_broker_accounts),
	    T(test_err_broker_login),
	    T(test_err_broker_from),
	    T(test_trust),
	    T(test_options_sorted),
	    T(test_keywords_all_found),
	    T(test_distance),
	    T(test_err_unknown_keyword_hint),
	    T(test_err_unknown_keyword_no_hint),
	    T(test_err_bare_target_hint),
	    T(test_err_option_at_top_level),
	    T(test_err_keyword_in_block),
	    T(test_err_unknown_option_hint),
	    T(test_err_usage),
	    T(test_err_bad_port),
	    T(test_err_cidr_prefix_length),
	    T(test_err_cidr_host_bits_v4),
	    T(test_err_cidr_host_bits_v6),
	    T(test_err_wildcard_inside),
	    T(test_err_wildcard_on_address),
	    T(test_err_idn_host),
	    T(test_err_bad_host),
	    T(test_err_unterminated_quote),
	    T(test_err_lbrace_own_line),
	    T(test_err_unexpected_rbrace),
	    T(test_err_lbrace_after_keyword),
	    T(test_err_unclosed_block),
	    T(test_err_text_after_rbrace),
	    T(test_err_lbrace_in_block),
	    T(test_err_duplicate_log),
	    T(test_err_duplicate_resolve),
	    T(test_err_resolve_not_a_name),
	    T(test_err_resolve_not_an_address),
	    T(test_err_secret_redefined),
	    T(test_err_secret_unknown_source),
	    T(test_err_secret_env_bad_var),
	    T(test_err_secret_bad_name_or_words),
	    T(test_err_undefined_secret_inject),
	    T(test_err_undefined_secret_basic),
	    T(test_err_undefined_secret_placeholder),
	    T(test_secret_defined_after_use),
	    T(test_err_deny_options),
	    T(test_upgrade_option),
	    T(test_include_excerpt),
	    T(test_excerpt_long_word),
	    T(test_include_withheld),
	    T(test_include_unreadable),
	    T(test_err_path_pattern_ambiguous),
	    T(test_err_inject_framing_header),
	    T(test_err_inject_duplicate_header),
	    T(test_err_inject_basic_user_colon),
	    T(test_err_inject_usage),
	    T(test_err_placeholder_two_secrets),
	    T(test_err_placeholder_in_rule),
	    T(test_placeholder_same_secret_twice),
	    T(test_err_bad_duration),
	    T(test_err_timeout_unknown),
	    T(test_err_path_pattern),
	    T(test_err_nul_byte),
	    T(test_err_control_byte),
	    T(test_err_include_missing),
	    T(test_err_load_missing_file),
	    T(test_err_include_cycle),
	    T(test_err_include_self),
	    T(test_warn_include_twice),
	    T(test_include_glob_sorted),
	    T(test_include_relative_to_includer),
	    T(test_include_glob_no_match),
	    T(test_include_depth_limit),
	    T(test_load_several_files),
	    T(test_all_errors_reported),
	    T(test_diags_in_file_order),
	    T(test_too_many_diags),
	    T(test_warn_allow_shadowed_by_deny),
	    T(test_warn_allow_shadowed_by_wider_deny),
	    T(test_no_warn_partial_deny),
	    T(test_warn_allow_never_decides),
	    T(test_warn_never_decides_mixed),
	    T(test_no_warn_earlier_allow_constrained),
	    T(test_no_warn_earlier_allow_some_ports),
	    T(test_warn_secret_unused),
	    T(test_warn_inject_port_80),
	    T(test_warn_upstream_ca_no_intercept),
	    T(test_err_request_options_plain_port),
	    T(test_err_request_options_mixed_ports),
	    T(test_port_protocol),
	    T(test_warn_methods_lower_case),
	    T(test_warn_path_not_normal),
	    T(test_warnings_do_not_fail),
	    T(test_comments),
	    T(test_comment_after_word),
	    T(test_semicolons),
	    T(test_line_continuation),
	    T(test_crlf),
	    T(test_quoted_words),
	    T(test_quoted_path_with_blank),
	    T(test_several_targets),
	    T(test_one_line_block),
	    T(test_block_options),
	    T(test_options_share_a_line),
	    T(test_deny_block),
	    T(test_target_any_port),
	    T(test_target_v6_with_port),
	    T(test_target_v6_block),
	    T(test_warn_wide_block),
	    T(test_target_v4_mapped_block),
	    T(test_target_v4_mapped_address),
	    T(test_target_host_normalised),
	    T(test_ports_merged),
	    T(test_ports_default_and_star),
	    T(test_relative_paths),
	    T(test_relative_paths_in_file),
	    T(test_secret_sources),
	    T(test_secret_exec_env),
	    T(test_ca),
	    T(test_log_path),
	    T(test_timeout_defaults),
	    T(test_timeout_overrides),
	    T(test_resolve),
	};

	return cmocka_run_group_tests_name(
	    "parse", tests, group_setup, group_teardown);
}
