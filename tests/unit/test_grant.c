/*
 * test_grant.c: the broker blocks (policy/grant.c) as the parser fills
 * them: grant_find, grant_files, grant_admits_user (names and numbers,
 * users and groups, primary and supplementary) and grant_gateway (logins,
 * `from` blocks, file order).  Configurations are loaded from strings
 * named "/etc/pinhole/b.conf", so that their files resolve absolutely.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy/grant.h"
#include "policy/policy.h"

#define NAME "/etc/pinhole/b.conf"

static void
quiet(void *arg, const struct policy_diag *d)
{
	(void)arg;
	if (!d->warning)
		fprintf(
		    stderr, "%s:%u:%u: %s\n", d->file, d->line, d->col, d->msg);
}

static struct policy *
load(const char *text)
{
	struct policy *p = NULL;

	assert_int_equal(
	    policy_load_string(NAME, text, strlen(text), quiet, NULL, &p), 0);
	assert_non_null(p);
	return p;
}

static const char broker_conf[] =
    "secret ci-pass env CI_PASS\n"
    "secret r2 env R2\n"
    "broker {\n"
    "    policy default base.conf git.conf\n"
    "    policy build /srv/build.conf\n"
    "    users alice 1001\n"
    "    groups ci 2001\n"
    "}\n"
    "broker {\n"
    "    policy deploy deploy.conf\n"
    "    policy default\n"
    "    users bob\n"
    "}\n"
    "broker {\n"
    "    policy gw-a\n"
    "    login runner1 ci-pass\n"
    "    from 10.0.3.0/24 2001:db8::/32\n"
    "}\n"
    "broker {\n"
    "    policy gw-b gw-b.conf\n"
    "    policy gw-a gw-a.conf\n"
    "    from 192.0.2.0/24 ::ffff:198.51.100.0/120\n"
    "}\n"
    "broker {\n"
    "    policy gw-c gw-c.conf\n"
    "    login runner2 r2\n"
    "}\n";

static void
test_find_files(void **state)
{
	struct policy *p = load(broker_conf);
	const struct grant_set *g = policy_grants(p);
	const char *const *f;
	unsigned line;
	size_t n;
	long i;

	(void)state;
	assert_non_null(g);
	assert_int_equal(grant_count(g), 6);
	i = grant_find(g, "default");
	assert_true(i >= 0);
	assert_string_equal(grant_name(g, (size_t)i), "default");
	f = grant_files(g, (size_t)i, &n);
	assert_int_equal(n, 2);
	assert_string_equal(f[0], "/etc/pinhole/base.conf");
	assert_string_equal(f[1], "/etc/pinhole/git.conf");
	assert_string_equal(grant_where(g, (size_t)i, &line), NAME);
	assert_int_equal(line, 4);
	f = grant_files(g, (size_t)grant_find(g, "build"), &n);
	assert_int_equal(n, 1);
	assert_string_equal(f[0], "/srv/build.conf");
	/* gw-a is named in block 3, defined in block 4. */
	assert_true(grant_find(g, "gw-a") >= 0);
	assert_int_equal(grant_find(g, "nope"), -1);
	assert_int_equal(grant_find(g, "Default"), -1);
	assert_int_equal(grant_find(NULL, "default"), -1);
	assert_int_equal(grant_count(NULL), 0);
	assert_null(grant_name(g, 99));
	assert_null(grant_files(g, 99, &n));
	assert_int_equal(n, 0);
	policy_free(p);
}

static void
test_no_blocks(void **state)
{
	struct policy *p = load("allow example.com\n");

	(void)state;
	assert_null(policy_grants(p));
	policy_free(p);
}

static int
admits(const struct grant_set *g, const char *policy, uid_t uid,
    const char *name, const gid_t *gids, const char *const *gnames,
    size_t ngids)
{
	struct grant_user u = {uid, name, gids, gnames, ngids};
	long i = grant_find(g, policy);

	assert_true(i >= 0);
	return grant_admits_user(g, (size_t)i, &u);
}

static void
test_admits_user(void **state)
{
	struct policy *p = load(broker_conf);
	const struct grant_set *g = policy_grants(p);
	const gid_t none[] = {100}, ci[] = {100, 2000}, ci_num[] = {2001, 7};
	const char *const none_n[] = {"users"}, *const ci_n[] = {"users", "ci"};
	const char *const nameless[] = {NULL, NULL};

	(void)state;
	/* By name, by number, not by a name another uid has. */
	assert_true(admits(g, "default", 5000, "alice", none, none_n, 1));
	assert_true(admits(g, "build", 1001, NULL, none, none_n, 1));
	assert_false(admits(g, "default", 1002, "mallory", none, none_n, 1));
	assert_false(admits(g, "default", 1002, NULL, none, nameless, 1));
	/* "1001" is a uid: a user called "1001" is not it. */
	assert_false(admits(g, "default", 1002, "1001", none, none_n, 1));
	/* Groups: a supplementary name, a primary number. */
	assert_true(admits(g, "build", 3000, "carol", ci, ci_n, 2));
	assert_true(admits(g, "build", 3000, "carol", ci_num, nameless, 2));
	assert_true(admits(g, "default", 3000, NULL, ci_num, NULL, 2));
	/* bob: default (named again in his block) and deploy, not build. */
	assert_true(admits(g, "default", 4000, "bob", none, none_n, 1));
	assert_true(admits(g, "deploy", 4000, "bob", none, none_n, 1));
	assert_false(admits(g, "build", 4000, "bob", none, none_n, 1));
	assert_false(admits(g, "deploy", 5000, "alice", none, none_n, 1));
	/* Gateway blocks grant no local user. */
	assert_false(admits(g, "gw-a", 1001, "alice", ci, ci_n, 2));
	assert_false(grant_admits_user(g, 99, NULL));
	policy_free(p);
}

static struct sockaddr_storage ss;

static const struct sockaddr *
v4(const char *a)
{
	struct sockaddr_in *s = (struct sockaddr_in *)&ss;

	memset(&ss, 0, sizeof(ss));
	s->sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, a, &s->sin_addr), 1);
	return (const struct sockaddr *)&ss;
}

static const struct sockaddr *
v6(const char *a)
{
	struct sockaddr_in6 *s = (struct sockaddr_in6 *)&ss;

	memset(&ss, 0, sizeof(ss));
	s->sin6_family = AF_INET6;
	assert_int_equal(inet_pton(AF_INET6, a, &s->sin6_addr), 1);
	return (const struct sockaddr *)&ss;
}

/* The policy name grant_gateway gives, or NULL; *SECRET as it sets it. */
static const char *
gw(const struct grant_set *g, const struct sockaddr *sa, const char *user,
    const char **secret)
{
	long i = grant_gateway(g, sa, user, secret);

	if (i < 0) {
		assert_null(*secret);
		return NULL;
	}
	return grant_name(g, (size_t)i);
}

static void
test_gateway(void **state)
{
	struct policy *p = load(broker_conf);
	const struct grant_set *g = policy_grants(p);
	const char *secret = "x";

	(void)state;
	/* A login from its block's addresses: its secret to check. */
	assert_string_equal(gw(g, v4("10.0.3.7"), "runner1", &secret), "gw-a");
	assert_string_equal(secret, "ci-pass");
	assert_string_equal(
	    gw(g, v6("2001:db8::5"), "runner1", &secret), "gw-a");
	assert_string_equal(secret, "ci-pass");
	/* A login from elsewhere: not that block. */
	assert_null(gw(g, v4("10.0.4.7"), "runner1", &secret));
	/* No login from a login block's address: nothing (407). */
	assert_null(gw(g, v4("10.0.3.7"), NULL, &secret));
	assert_null(gw(g, v4("10.0.3.7"), "runner3", &secret));
	/* By address alone: the first policy of the block. */
	assert_string_equal(gw(g, v4("192.0.2.9"), NULL, &secret), "gw-b");
	assert_null(secret);
	assert_string_equal(gw(g, v4("192.0.2.9"), "someone", &secret), "gw-b");
	assert_null(secret);
	/* IPv4-mapped clients are their IPv4 address; the mapped block too. */
	assert_string_equal(
	    gw(g, v6("::ffff:192.0.2.1"), NULL, &secret), "gw-b");
	assert_string_equal(gw(g, v4("198.51.100.200"), NULL, &secret), "gw-b");
	assert_null(gw(g, v4("198.51.101.1"), NULL, &secret));
	/* A login block without `from`: any address. */
	assert_string_equal(
	    gw(g, v4("203.0.113.1"), "runner2", &secret), "gw-c");
	assert_string_equal(secret, "r2");
	assert_string_equal(gw(g, v6("::1"), "runner2", &secret), "gw-c");
	/* Local-user blocks grant no gateway client. */
	assert_null(gw(g, v4("127.0.0.1"), NULL, &secret));
	assert_null(gw(g, NULL, NULL, &secret));
	assert_null(gw(NULL, v4("192.0.2.9"), NULL, &secret));
	policy_free(p);
}

static void
test_gateway_file_order(void **state)
{
	struct policy *p =
	    load("secret s env S\n"
	         "broker { policy one one.conf; from 0.0.0.0/0 }\n"
	         "broker { policy two two.conf\n"
	         "  login u s; from 192.0.2.0/24 }\n"
	         "broker { policy three three.conf\n"
	         "  from 192.0.2.128/25 }\n");
	const struct grant_set *g = policy_grants(p);
	const char *secret;

	(void)state;
	/* The first block that admits decides, even with a login given. */
	assert_string_equal(gw(g, v4("192.0.2.200"), "u", &secret), "one");
	assert_null(secret);
	assert_string_equal(gw(g, v4("192.0.2.200"), NULL, &secret), "one");
	/* Nothing for IPv6 from v4 blocks. */
	assert_null(gw(g, v6("2001:db8::1"), NULL, &secret));
	policy_free(p);
}

static void
test_prefix_edges(void **state)
{
	struct policy *p = load("broker { policy a a.conf\n"
	                        "  from 192.0.2.64/27 2001:db8:0:ff00::/57\n"
	                        "  from 203.0.113.5 }\n");
	const struct grant_set *g = policy_grants(p);
	const char *secret;

	(void)state;
	assert_non_null(gw(g, v4("192.0.2.64"), NULL, &secret));
	assert_non_null(gw(g, v4("192.0.2.95"), NULL, &secret));
	assert_null(gw(g, v4("192.0.2.96"), NULL, &secret));
	assert_null(gw(g, v4("192.0.2.63"), NULL, &secret));
	assert_non_null(gw(g, v6("2001:db8:0:ff00::1"), NULL, &secret));
	assert_non_null(gw(g, v6("2001:db8:0:ff7f:ffff::1"), NULL, &secret));
	assert_null(gw(g, v6("2001:db8:0:ff80::1"), NULL, &secret));
	assert_null(gw(g, v6("2001:db8:0:fe00::1"), NULL, &secret));
	assert_non_null(gw(g, v4("203.0.113.5"), NULL, &secret));
	assert_null(gw(g, v4("203.0.113.4"), NULL, &secret));
	policy_free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_find_files),
	    cmocka_unit_test(test_no_blocks),
	    cmocka_unit_test(test_admits_user),
	    cmocka_unit_test(test_gateway),
	    cmocka_unit_test(test_gateway_file_order),
	    cmocka_unit_test(test_prefix_edges),
	};

	return cmocka_run_group_tests_name("grant", tests, NULL, NULL);
}
