/*
 * test_target.c: host, port, authority, URL and path normalisation.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/ph_err.h"
#include "policy/target.h"

struct host_case {
	const char *in;
	int err;
	enum target_kind kind;
	const char *canon;
};

static const struct host_case host_cases[] = {
    {"example.com", 0, TARGET_NAME, "example.com"},
    {"GitHub.COM", 0, TARGET_NAME, "github.com"},
    {"github.com.", 0, TARGET_NAME, "github.com"},
    {"github.com..", PH_ERR_INVALID, 0, NULL},
    {".github.com", PH_ERR_INVALID, 0, NULL},
    {"a..b", PH_ERR_INVALID, 0, NULL},
    {"", PH_ERR_INVALID, 0, NULL},
    {".", PH_ERR_INVALID, 0, NULL},
    {"under_score.test", 0, TARGET_NAME, "under_score.test"},
    {"xn--bcher-kva.de", 0, TARGET_NAME, "xn--bcher-kva.de"},
    {"b\xc3\xbc"
     "cher.de",
        PH_ERR_NON_ASCII, 0, NULL},
    {"ex ample.com", PH_ERR_INVALID, 0, NULL},
    {"ex*ample.com", PH_ERR_INVALID, 0, NULL},
    {"a/b", PH_ERR_INVALID, 0, NULL},
    /* Numeric IPv4 spellings, as browsers read them. */
    {"127.0.0.1", 0, TARGET_V4, "127.0.0.1"},
    {"127.1", 0, TARGET_V4, "127.0.0.1"},
    {"127.0.1", 0, TARGET_V4, "127.0.0.1"},
    {"0x7f.0.0.1", 0, TARGET_V4, "127.0.0.1"},
    {"0X7F.1", 0, TARGET_V4, "127.0.0.1"},
    {"0177.0.0.1", 0, TARGET_V4, "127.0.0.1"},
    {"2130706433", 0, TARGET_V4, "127.0.0.1"},
    {"0x7f000001", 0, TARGET_V4, "127.0.0.1"},
    {"017700000001", 0, TARGET_V4, "127.0.0.1"},
    {"127.0.0.1.", 0, TARGET_V4, "127.0.0.1"},
    {"0", 0, TARGET_V4, "0.0.0.0"},
    {"0x", 0, TARGET_V4, "0.0.0.0"},
    {"4294967295", 0, TARGET_V4, "255.255.255.255"},
    {"4294967296", PH_ERR_INVALID, 0, NULL},
    {"256.0.0.1", PH_ERR_INVALID, 0, NULL},
    {"1.2.3.256", PH_ERR_INVALID, 0, NULL},
    {"1.2.3.4.5", PH_ERR_INVALID, 0, NULL},
    {"1.2.65535", 0, TARGET_V4, "1.2.255.255"},
    {"1.2.65536", PH_ERR_INVALID, 0, NULL},
    {"08.0.0.1", PH_ERR_INVALID, 0, NULL},
    {"example.123", PH_ERR_INVALID, 0, NULL},
    {"example.0x1g", 0, TARGET_NAME, "example.0x1g"},
    {"123.example", 0, TARGET_NAME, "123.example"},
    /* IPv6, with and without brackets; mapped forms become IPv4. */
    {"::1", 0, TARGET_V6, "::1"},
    {"[::1]", 0, TARGET_V6, "::1"},
    {"[2001:DB8:0:0:0:0:0:1]", 0, TARGET_V6, "2001:db8::1"},
    {"[::ffff:127.0.0.1]", 0, TARGET_V4, "127.0.0.1"},
    {"::ffff:7f00:1", 0, TARGET_V4, "127.0.0.1"},
    {"[fe80::1%25eth0]", PH_ERR_INVALID, 0, NULL},
    {"fe80::1%eth0", PH_ERR_INVALID, 0, NULL},
    {"[::1", PH_ERR_INVALID, 0, NULL},
    {"1::2::3", PH_ERR_INVALID, 0, NULL},
};

static void
test_host_table(void **state)
{
	struct target_host h;
	size_t i;
	int r;

	(void)state;
	for (i = 0; i < sizeof(host_cases) / sizeof(host_cases[0]); i++) {
		const struct host_case *c = &host_cases[i];

		r = target_host_parse(c->in, strlen(c->in), &h);
		if (r != c->err)
			fail_msg("'%s': got %d, want %d", c->in, r, c->err);
		if (r != 0)
			continue;
		if (h.kind != c->kind || strcmp(h.name, c->canon) != 0)
			fail_msg("'%s': got %s kind %d, want %s kind %d", c->in,
			    h.name, h.kind, c->canon, c->kind);
		assert_int_equal(h.len, strlen(h.name));
	}
}

static void
test_host_length_limits(void **state)
{
	struct target_host h;
	char buf[300];

	(void)state;
	memset(buf, 'a', 63);
	memcpy(buf + 63, ".com", 5);
	assert_int_equal(target_host_parse(buf, strlen(buf), &h), 0);
	memset(buf, 'a', 64);
	memcpy(buf + 64, ".com", 5);
	assert_int_equal(
	    target_host_parse(buf, strlen(buf), &h), PH_ERR_TOO_LONG);
	/* 253 bytes is the longest name; 254 is refused. */
	memset(buf, 0, sizeof(buf));
	for (size_t i = 0; i < 253; i++)
		buf[i] = i % 50 == 49 ? '.' : 'a';
	assert_int_equal(target_host_parse(buf, 253, &h), 0);
	buf[253] = 'a';
	assert_int_equal(target_host_parse(buf, 254, &h), PH_ERR_TOO_LONG);
}

static void
test_host_v4_addr_bytes(void **state)
{
	static const uint8_t want[4] = {10, 1, 2, 3};
	struct target_host h;

	(void)state;
	assert_int_equal(target_host_parse("[::ffff:10.1.2.3]", 17, &h), 0);
	assert_int_equal(h.kind, TARGET_V4);
	assert_memory_equal(h.addr, want, 4);
}

static void
test_port(void **state)
{
	uint16_t p = 0;

	(void)state;
	assert_int_equal(target_port_parse("443", 3, &p), 0);
	assert_int_equal(p, 443);
	assert_int_equal(target_port_parse("65535", 5, &p), 0);
	assert_int_equal(p, 65535);
	assert_int_equal(target_port_parse("1", 1, &p), 0);
	assert_int_equal(target_port_parse("0", 1, &p), PH_ERR_PORT);
	assert_int_equal(target_port_parse("65536", 5, &p), PH_ERR_PORT);
	assert_int_equal(target_port_parse("000443", 6, &p), PH_ERR_PORT);
	assert_int_equal(target_port_parse("", 0, &p), PH_ERR_PORT);
	assert_int_equal(target_port_parse("+80", 3, &p), PH_ERR_PORT);
	assert_int_equal(target_port_parse("8o", 2, &p), PH_ERR_PORT);
}

static void
test_authority(void **state)
{
	struct target_host h;
	uint16_t p;

	(void)state;
	assert_int_equal(
	    target_authority_parse("github.com:443", 14, &h, &p), 0);
	assert_string_equal(h.name, "github.com");
	assert_int_equal(p, 443);
	assert_int_equal(target_authority_parse("github.com", 10, &h, &p), 0);
	assert_int_equal(p, 0);
	assert_int_equal(target_authority_parse("[::1]:8443", 10, &h, &p), 0);
	assert_string_equal(h.name, "::1");
	assert_int_equal(p, 8443);
	assert_int_equal(target_authority_parse("[::1]", 5, &h, &p), 0);
	assert_int_equal(p, 0);
	assert_int_equal(target_authority_parse("127.1:80", 8, &h, &p), 0);
	assert_string_equal(h.name, "127.0.0.1");
	assert_int_equal(
	    target_authority_parse("::1:443", 7, &h, &p), PH_ERR_INVALID);
	assert_int_equal(
	    target_authority_parse("u:p@host:80", 11, &h, &p), PH_ERR_INVALID);
	assert_int_equal(
	    target_authority_parse("[::1]x", 6, &h, &p), PH_ERR_INVALID);
	assert_int_equal(
	    target_authority_parse("host:", 5, &h, &p), PH_ERR_PORT);
	assert_int_equal(
	    target_authority_parse("host:0", 6, &h, &p), PH_ERR_PORT);
	assert_int_equal(target_authority_parse("", 0, &h, &p), PH_ERR_INVALID);
}

struct path_case {
	const char *in;
	int err;
	const char *out;
};

static const struct path_case path_cases[] = {
    {"/", 0, "/"},
    {"/a", 0, "/a"},
    {"/a/", 0, "/a/"},
    {"/a/b/c", 0, "/a/b/c"},
    {"//a///b//", 0, "/a/b/"},
    {"/a/.", 0, "/a/"},
    {"/a/./b", 0, "/a/b"},
    {"/a/..", 0, "/"},
    {"/a/../", 0, "/"},
    {"/..", 0, "/"},
    {"/../../etc/passwd", 0, "/etc/passwd"},
    {"/acme/widgets.git/../secret.git", 0, "/acme/secret.git"},
    {"/acme/widgets.git//../secret.git", 0, "/acme/secret.git"},
    {"/acme/widgets.git/%2e%2e/secret.git", 0, "/acme/secret.git"},
    {"/acme/widgets.git/%2E%2e/secret.git", 0, "/acme/secret.git"},
    {"/acme/widgets.git/.%2e/secret.git", 0, "/acme/secret.git"},
    {"/a/b/../../c/", 0, "/c/"},
    {"/a/...", 0, "/a/..."},
    {"/a/..b", 0, "/a/..b"},
    {"/a?x=/../../y", 0, "/a"},
    {"/a/..?x", 0, "/"},
    {"/a#frag", 0, "/a"},
    {"/x%41%42", 0, "/xAB"},
    {"/%7Euser", 0, "/~user"},
    {"/caf%C3%A9", 0, "/caf\xc3\xa9"},
    {"/%3F", 0, "/?"},
    {"/a%2fb", PH_ERR_ENCODED_SLASH, NULL},
    {"/a%2Fb", PH_ERR_ENCODED_SLASH, NULL},
    {"/a%5cb", PH_ERR_ENCODED_SLASH, NULL},
    {"/a\\b", PH_ERR_ENCODED_SLASH, NULL},
    {"/a%00", PH_ERR_NUL, NULL},
    {"/a%0a", PH_ERR_NUL, NULL},
    {"/a%7f", PH_ERR_NUL, NULL},
    {"/a\tb", PH_ERR_NUL, NULL},
    {"/a b", PH_ERR_INVALID, NULL},
    {"/a%", PH_ERR_INVALID, NULL},
    {"/a%4", PH_ERR_INVALID, NULL},
    {"/a%zz", PH_ERR_INVALID, NULL},
    {"/\xc3\xa9", PH_ERR_INVALID, NULL},
    {"a/b", PH_ERR_INVALID, NULL},
    {"", PH_ERR_INVALID, NULL},
    {"*", PH_ERR_INVALID, NULL},
    /* ';' parameters: kept on named segments, refused on dot segments. */
    {"/a;v=1/b", 0, "/a;v=1/b"},
    {"/a/b;jsessionid=x", 0, "/a/b;jsessionid=x"},
    {"/a/..x;y/b", 0, "/a/..x;y/b"},
    {"/a/...;x", 0, "/a/...;x"},
    {"/a/b%3bc", 0, "/a/b;c"},
    {"/allowed/..;/admin", PH_ERR_DOT_PARAM, NULL},
    {"/allowed/..;x/admin", PH_ERR_DOT_PARAM, NULL},
    {"/allowed/.;x/admin", PH_ERR_DOT_PARAM, NULL},
    {"/allowed/.;/admin", PH_ERR_DOT_PARAM, NULL},
    {"/allowed/%2e%2e;/admin", PH_ERR_DOT_PARAM, NULL},
    {"/allowed/%2E.;x", PH_ERR_DOT_PARAM, NULL},
    {"/allowed/..%3b/admin", PH_ERR_DOT_PARAM, NULL},
    {"/allowed/..;", PH_ERR_DOT_PARAM, NULL},
    {"/a/b/;/../c", PH_ERR_DOT_PARAM, NULL},
    {"/a/;x", PH_ERR_DOT_PARAM, NULL},
    {"/;", PH_ERR_DOT_PARAM, NULL},
    /* Percent-decoded bytes must be shortest-form UTF-8. */
    {"/caf%C3%A9/x", 0, "/caf\xc3\xa9/x"},
    {"/%E2%82%AC", 0, "/\xe2\x82\xac"},
    {"/%F0%9F%98%80", 0, "/\xf0\x9f\x98\x80"},
    {"/%EF%BF%BF", 0, "/\xef\xbf\xbf"},
    {"/%C0%AE%C0%AE/admin", PH_ERR_BAD_UTF8, NULL},
    {"/a/%C0%AF", PH_ERR_BAD_UTF8, NULL},
    {"/a/%c1%9c", PH_ERR_BAD_UTF8, NULL},
    {"/a/%E0%80%AE", PH_ERR_BAD_UTF8, NULL},
    {"/a/%F0%80%80%AE", PH_ERR_BAD_UTF8, NULL},
    {"/a/%ED%A0%80", PH_ERR_BAD_UTF8, NULL},
    {"/a/%F4%90%80%80", PH_ERR_BAD_UTF8, NULL},
    {"/a/%F5%80%80%80", PH_ERR_BAD_UTF8, NULL},
    {"/a/%80", PH_ERR_BAD_UTF8, NULL},
    {"/a/%C3", PH_ERR_BAD_UTF8, NULL},
    {"/a/%C3?x", PH_ERR_BAD_UTF8, NULL},
    {"/a/%C3/b", PH_ERR_BAD_UTF8, NULL},
    {"/a/%E2%82", PH_ERR_BAD_UTF8, NULL},
    {"/a/%FF", PH_ERR_BAD_UTF8, NULL},
    /* A decoded "%25" may not be followed by two hex digits. */
    {"/a%25", 0, "/a%"},
    {"/a%25zz", 0, "/a%zz"},
    {"/a%252", 0, "/a%2"},
    {"/100%25/b", 0, "/100%/b"},
    {"/a/%252e%252e/admin", PH_ERR_DOUBLE_ENCODED, NULL},
    {"/a/%252f", PH_ERR_DOUBLE_ENCODED, NULL},
    {"/a/%252E", PH_ERR_DOUBLE_ENCODED, NULL},
    {"/a/%25%32%65", PH_ERR_DOUBLE_ENCODED, NULL},
    {"/a/%2541", PH_ERR_DOUBLE_ENCODED, NULL},
};

static void
test_path_table(void **state)
{
	char out[256];
	size_t i;
	int r;

	(void)state;
	for (i = 0; i < sizeof(path_cases) / sizeof(path_cases[0]); i++) {
		const struct path_case *c = &path_cases[i];

		memset(out, 'x', sizeof(out));
		r = target_path_normalise(
		    c->in, strlen(c->in), out, sizeof(out));
		if (r != c->err)
			fail_msg("'%s': got %d, want %d", c->in, r, c->err);
		/* A refused path leaves a string: the proxy logs it. */
		if (r != 0 && out[0] != '\0')
			fail_msg("'%s': refused, but OUT is not \"\"", c->in);
		if (r == 0 && strcmp(out, c->out) != 0)
			fail_msg(
			    "'%s': got '%s', want '%s'", c->in, out, c->out);
	}
}

static void
test_utf8_valid(void **state)
{
	(void)state;
	assert_int_equal(target_utf8_valid("", 0), 1);
	assert_int_equal(target_utf8_valid("caf\xc3\xa9", 5), 1);
	assert_int_equal(target_utf8_valid("\xc0\xae", 2), 0);
	assert_int_equal(target_utf8_valid("\xe0\x80\xae", 3), 0);
	assert_int_equal(target_utf8_valid("\xc3", 1), 0);
	assert_int_equal(target_utf8_valid("\xed\xa0\x80", 3), 0);
}

static void
test_path_buffer(void **state)
{
	char out[8];

	(void)state;
	/* LEN + 2 bytes always suffice; fewer must fail, not overflow. */
	assert_int_equal(target_path_normalise("/abcdef", 7, out, 9 - 1), 0);
	assert_string_equal(out, "/abcdef");
	assert_int_equal(
	    target_path_normalise("/abcdefgh", 9, out, sizeof(out)),
	    PH_ERR_TOO_LONG);
	assert_int_equal(
	    target_path_normalise("/", 1, out, 1), PH_ERR_TOO_LONG);
}

static void
test_url(void **state)
{
	struct target_url u;
	char path[128];

	(void)state;
	assert_int_equal(target_url_parse("https://GitHub.com/acme/w.git/"
	                                  "info/refs?service=git-upload-pack",
	                     63, &u, path, sizeof(path)),
	    0);
	assert_true(u.tls);
	assert_int_equal(u.port, 443);
	assert_string_equal(u.host.name, "github.com");
	assert_string_equal(path, "/acme/w.git/info/refs");
	assert_int_equal(
	    target_url_parse("http://127.1", 12, &u, path, sizeof(path)), 0);
	assert_false(u.tls);
	assert_int_equal(u.port, 80);
	assert_string_equal(u.host.name, "127.0.0.1");
	assert_string_equal(path, "/");
	assert_int_equal(
	    target_url_parse("HTTP://[::1]:8080?q", 19, &u, path, sizeof(path)),
	    0);
	assert_int_equal(u.port, 8080);
	assert_string_equal(u.host.name, "::1");
	assert_string_equal(path, "/");
	assert_int_equal(
	    target_url_parse("ftp://x/", 8, &u, path, sizeof(path)),
	    PH_ERR_INVALID);
	assert_int_equal(
	    target_url_parse("https://u:p@x/", 14, &u, path, sizeof(path)),
	    PH_ERR_INVALID);
	assert_int_equal(
	    target_url_parse("https:///x", 10, &u, path, sizeof(path)),
	    PH_ERR_INVALID);
	assert_int_equal(
	    target_url_parse("https://x/%2f", 13, &u, path, sizeof(path)),
	    PH_ERR_ENCODED_SLASH);
}

static void
test_url_bounds(void **state)
{
	static const char nul[] = "http://a\0evil.example/x";
	struct target_url u;
	char path[64], *exact;

	(void)state;
	/* A NUL inside the authority is refused, not taken as its end. */
	assert_int_equal(
	    target_url_parse(nul, sizeof(nul) - 1, &u, path, sizeof(path)),
	    PH_ERR_INVALID);
	/* Only LEN bytes are read: no terminator after them. */
	exact = malloc(18);
	assert_non_null(exact);
	memcpy(exact, "HTTP://Example.COM", 18);
	assert_int_equal(
	    target_url_parse(exact, 18, &u, path, sizeof(path)), 0);
	assert_string_equal(u.host.name, "example.com");
	assert_int_equal(
	    target_url_parse(exact, 10, &u, path, sizeof(path)), 0);
	assert_string_equal(u.host.name, "exa");
	free(exact);
}

/* The one reader of address blocks: rules and the run CA's constraints. */
static void
test_cidr(void **state)
{
	static const struct {
		const char *in;
		enum target_cidr_result want;
		int family;
		unsigned plen, host_bits;
		uint8_t net[4];
	} cases[] = {
	    {"10.0.0.0/8", TARGET_CIDR_OK, 4, 8, 0, {10, 0, 0, 0}},
	    {"10.1.2.3/8", TARGET_CIDR_OK, 4, 8, 1, {10, 0, 0, 0}},
	    {"192.0.2.255/25", TARGET_CIDR_OK, 4, 25, 1, {192, 0, 2, 128}},
	    {"127.0.0.1", TARGET_CIDR_OK, 4, 32, 0, {127, 0, 0, 1}},
	    {"0.0.0.0/0", TARGET_CIDR_OK, 4, 0, 0, {0}},
	    {"::ffff:10.0.0.0/104", TARGET_CIDR_OK, 4, 8, 0, {10, 0, 0, 0}},
	    {"::/0", TARGET_CIDR_OK, 6, 0, 0, {0}},
	    {"::ffff:10.0.0.0/95", TARGET_CIDR_MAPPED, 0, 0, 0, {0}},
	    {"10.0.0.0/33", TARGET_CIDR_PLEN, 0, 0, 0, {0}},
	    {"10.0.0.0/", TARGET_CIDR_PLEN, 0, 0, 0, {0}},
	    {"10.0.0.0/x", TARGET_CIDR_PLEN, 0, 0, 0, {0}},
	    {"10.0.0.0/0008", TARGET_CIDR_PLEN, 0, 0, 0, {0}},
	    {"::/129", TARGET_CIDR_PLEN, 0, 0, 0, {0}},
	    {"example.com/8", TARGET_CIDR_ADDR, 0, 0, 0, {0}},
	    {"/8", TARGET_CIDR_ADDR, 0, 0, 0, {0}},
	};
	struct target_cidr c;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (target_cidr_parse(cases[i].in, strlen(cases[i].in), &c) !=
		    cases[i].want)
			fail_msg("%s: wrong result", cases[i].in);
		if (cases[i].want != TARGET_CIDR_OK)
			continue;
		assert_int_equal(c.family, cases[i].family);
		assert_int_equal(c.plen, cases[i].plen);
		assert_int_equal(c.host_bits, cases[i].host_bits);
		if (c.family == 4)
			assert_memory_equal(c.addr, cases[i].net, 4);
	}
	assert_int_equal(target_cidr_parse("::/129", 6, &c), TARGET_CIDR_PLEN);
	assert_int_equal(c.maxlen, 128);
}

static void
test_strerror(void **state)
{
	(void)state;
	assert_non_null(strstr(target_strerror(PH_ERR_NON_ASCII), "xn--"));
	assert_non_null(strstr(target_strerror(PH_ERR_PORT), "65535"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_host_table),
	    cmocka_unit_test(test_host_length_limits),
	    cmocka_unit_test(test_host_v4_addr_bytes),
	    cmocka_unit_test(test_port),
	    cmocka_unit_test(test_authority),
	    cmocka_unit_test(test_path_table),
	    cmocka_unit_test(test_path_buffer),
	    cmocka_unit_test(test_utf8_valid),
	    cmocka_unit_test(test_url),
	    cmocka_unit_test(test_url_bounds),
	    cmocka_unit_test(test_cidr),
	    cmocka_unit_test(test_strerror),
	};

	return cmocka_run_group_tests_name("target", tests, NULL, NULL);
}
