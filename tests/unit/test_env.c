/*
 * test_env.c: unit tests of netns/env.c, the sandbox's environment.
 *
 * The environment is checked through env_vector(), the NAME=VALUE array
 * execve() receives: what it holds, in which order, how many entries and
 * the NULL at the end, since that is all the command ever sees.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "netns/env.h"

/* The entries of V before its NULL. */
static size_t
count(char *const *v)
{
	size_t n = 0;

	while (v[n] != NULL)
		n++;
	return n;
}

/* How many entries of V are named NAME. */
static size_t
count_name(char *const *v, const char *name)
{
	size_t i, n = 0, len = strlen(name);

	for (i = 0; v[i] != NULL; i++)
		if (strncmp(v[i], name, len) == 0 && v[i][len] == '=')
			n++;
	return n;
}

/* V holds exactly the entries of WANT (NULL-terminated), in that order. */
static void
assert_vector(char *const *v, const char *const *want)
{
	size_t i;

	for (i = 0; want[i] != NULL; i++) {
		assert_non_null(v[i]);
		assert_string_equal(v[i], want[i]);
	}
	assert_null(v[i]);
}

static void
test_new_keeps_listed(void **state)
{
	char *from[] = {
	    "PATH=/usr/bin:/bin",
	    "SECRET_TOKEN=abc",
	    "HOME=/home/u",
	    "USER=u",
	    "LOGNAME=u",
	    "TERM=xterm",
	    "LANG=C.UTF-8",
	    "TZ=UTC",
	    "LC_ALL=C",
	    "LC_CTYPE=en_US.UTF-8",
	    "AWS_SECRET_ACCESS_KEY=k",
	    NULL,
	};
	const char *const want[] = {
	    "PATH=/usr/bin:/bin",
	    "HOME=/home/u",
	    "USER=u",
	    "LOGNAME=u",
	    "TERM=xterm",
	    "LANG=C.UTF-8",
	    "TZ=UTC",
	    "LC_ALL=C",
	    "LC_CTYPE=en_US.UTF-8",
	    NULL,
	};
	struct env *e = env_new(from);

	(void)state;
	assert_vector(env_vector(e), want);
	env_free(e);
}

/* A kept name is a whole name: PATHX is not PATH, nor LC LC_*. */
static void
test_new_drops_prefixes(void **state)
{
	char *from[] = {
	    "PATHX=1",
	    "PAT=2",
	    "HOMEDIR=/x",
	    "USERNAME=u",
	    "LANGUAGE=fr",
	    "TZDIR=/usr/share/zoneinfo",
	    "TERMINFO=/x",
	    "LC=3",
	    "XLC_ALL=4",
	    "xPATH=5",
	    "path=6",
	    "=7",
	    NULL,
	};
	struct env *e = env_new(from);

	(void)state;
	assert_int_equal(count(env_vector(e)), 0);
	assert_null(env_get(e, "PATH"));
	assert_null(env_get(e, "PATHX"));
	env_free(e);
}

/* An entry without '=' is no variable, even if it is a kept name. */
static void
test_new_drops_without_equals(void **state)
{
	char *from[] = {"PATH", "HOME", "LC_ALL", "TZ=UTC", NULL};
	const char *const want[] = {"TZ=UTC", NULL};
	struct env *e = env_new(from);

	(void)state;
	assert_vector(env_vector(e), want);
	env_free(e);
}

/* Empty values are values: PATH= stays, as the shell would keep it. */
static void
test_new_empty_value(void **state)
{
	char *from[] = {"PATH=", "LC_ALL=", NULL};
	const char *const want[] = {"PATH=", "LC_ALL=", NULL};
	struct env *e = env_new(from);

	(void)state;
	assert_vector(env_vector(e), want);
	assert_string_equal(env_get(e, "PATH"), "");
	env_free(e);
}

/* A name twice in the source: one entry, whose value env_get agrees on. */
static void
test_new_duplicates(void **state)
{
	char *from[] = {
	    "PATH=/first",
	    "HOME=/h",
	    "PATH=/second",
	    "LC_ALL=C",
	    NULL,
	};
	struct env *e = env_new(from);
	char **v;

	(void)state;
	v = env_vector(e);
	assert_int_equal(count(v), 3);
	assert_int_equal(count_name(v, "PATH"), 1);
	assert_int_equal(count_name(v, "HOME"), 1);
	assert_non_null(env_get(e, "PATH"));
	assert_true(strcmp(env_get(e, "PATH"), "/first") == 0 ||
	    strcmp(env_get(e, "PATH"), "/second") == 0);
	env_free(e);
}

static void
test_new_null_and_empty(void **state)
{
	char *none[] = {NULL};
	struct env *e;

	(void)state;
	e = env_new(NULL);
	assert_non_null(env_vector(e));
	assert_null(env_vector(e)[0]);
	env_free(e);
	e = env_new(none);
	assert_null(env_vector(e)[0]);
	env_free(e);
}

/* Replacing keeps the entry where it was and adds none. */
static void
test_set_replaces(void **state)
{
	char *from[] = {"PATH=/bin", "HOME=/h", "TERM=vt100", NULL};
	const char *const want[] = {
	    "PATH=/bin",
	    "HOME=/elsewhere",
	    "TERM=vt100",
	    "EDITOR=vi",
	    NULL,
	};
	struct env *e = env_new(from);

	(void)state;
	assert_int_equal(env_set(e, "HOME", "/elsewhere"), 0);
	assert_int_equal(env_set(e, "EDITOR", "vi"), 0);
	assert_vector(env_vector(e), want);
	assert_string_equal(env_get(e, "HOME"), "/elsewhere");
	assert_int_equal(env_set(e, "EDITOR", ""), 0);
	assert_string_equal(env_get(e, "EDITOR"), "");
	assert_int_equal(count(env_vector(e)), 4);
	env_free(e);
}

/* A value may hold '=': only the first one ends the name. */
static void
test_set_value_with_equals(void **state)
{
	struct env *e = env_new(NULL);

	(void)state;
	assert_int_equal(env_set(e, "OPTS", "a=b=c"), 0);
	assert_string_equal(env_vector(e)[0], "OPTS=a=b=c");
	assert_string_equal(env_get(e, "OPTS"), "a=b=c");
	assert_int_equal(env_set(e, "OPTS", "d"), 0);
	assert_int_equal(count(env_vector(e)), 1);
	assert_string_equal(env_get(e, "OPTS"), "d");
	env_free(e);
}

static void
test_set_rejects_bad_names(void **state)
{
	char *from[] = {"PATH=/bin", NULL};
	const char *const want[] = {"PATH=/bin", NULL};
	struct env *e = env_new(from);

	(void)state;
	assert_int_equal(env_set(e, "", "x"), -1);
	assert_int_equal(env_set(e, "PATH=/evil", "x"), -1);
	assert_int_equal(env_set(e, "=", "x"), -1);
	assert_int_equal(env_set(e, "A=B", "x"), -1);
	/* Nothing of a refused call may have reached the vector. */
	assert_vector(env_vector(e), want);
	assert_int_equal(env_name_ok(""), 0);
	assert_int_equal(env_name_ok("A=B"), 0);
	assert_int_equal(env_name_ok("=A"), 0);
	assert_int_equal(env_name_ok("A"), 1);
	assert_int_equal(env_name_ok("LC_ALL"), 1);
	env_free(e);
}

static void
test_keep(void **state)
{
	char *from[] = {
	    "FOOBAR=long",
	    "FOO=1",
	    "BAR=",
	    "SSH_AUTH_SOCK=/s",
	    NULL,
	};
	struct env *e = env_new(NULL);

	(void)state;
	assert_int_equal(env_keep(e, from, "FOO"), 1);
	assert_string_equal(env_get(e, "FOO"), "1");
	assert_int_equal(env_keep(e, from, "BAR"), 1);
	assert_string_equal(env_get(e, "BAR"), "");
	/* Absent, or only a longer name that starts with it: nothing. */
	assert_int_equal(env_keep(e, from, "BAZ"), 0);
	assert_int_equal(env_keep(e, from, "FOOB"), 0);
	assert_int_equal(env_keep(e, from, "FO"), 0);
	assert_int_equal(env_keep(e, NULL, "FOO"), 0);
	assert_null(env_get(e, "BAZ"));
	assert_null(env_get(e, "FOOB"));
	assert_int_equal(count(env_vector(e)), 2);
	env_free(e);
}

/* Keeping a name already set replaces it: no second entry. */
static void
test_keep_replaces(void **state)
{
	char *from[] = {"TERM=xterm", NULL};
	char *src[] = {"TERM=dumb", NULL};
	struct env *e = env_new(from);

	(void)state;
	assert_int_equal(env_keep(e, src, "TERM"), 1);
	assert_int_equal(count(env_vector(e)), 1);
	assert_string_equal(env_get(e, "TERM"), "dumb");
	env_free(e);
}

static void
test_unset_keeps_order(void **state)
{
	char *from[] = {
	    "PATH=/bin",
	    "HOME=/h",
	    "USER=u",
	    "TERM=t",
	    "LANG=C",
	    NULL,
	};
	const char *const want1[] = {
	    "PATH=/bin",
	    "USER=u",
	    "TERM=t",
	    "LANG=C",
	    NULL,
	};
	const char *const want2[] = {"USER=u", "TERM=t", NULL};
	struct env *e = env_new(from);

	(void)state;
	env_unset(e, "HOME");
	assert_vector(env_vector(e), want1);
	/* A missing name, or a prefix of a present one, removes nothing. */
	env_unset(e, "HOME");
	env_unset(e, "PAT");
	env_unset(e, "USERS");
	assert_vector(env_vector(e), want1);
	env_unset(e, "PATH"); /* first */
	env_unset(e, "LANG"); /* last */
	assert_vector(env_vector(e), want2);
	env_unset(e, "USER");
	env_unset(e, "TERM");
	assert_null(env_vector(e)[0]);
	/* And it still grows after being emptied. */
	assert_int_equal(env_set(e, "A", "1"), 0);
	assert_string_equal(env_vector(e)[0], "A=1");
	assert_null(env_vector(e)[1]);
	env_free(e);
}

static void
test_set_proxy(void **state)
{
	char *from[] = {"PATH=/bin", NULL};
	static const char *const names[] = {
	    "http_proxy",
	    "https_proxy",
	    "HTTP_PROXY",
	    "HTTPS_PROXY",
	};
	struct env *e = env_new(from);
	char **v;
	size_t i;

	(void)state;
	/* What the user's --setenv or --keep-env may have put there. */
	assert_int_equal(env_set(e, "http_proxy", "http://evil:1"), 0);
	assert_int_equal(env_set(e, "HTTPS_PROXY", "http://evil:2"), 0);
	assert_int_equal(env_set(e, "all_proxy", "socks5://evil:3"), 0);
	assert_int_equal(env_set(e, "ALL_PROXY", "socks5://evil:4"), 0);
	assert_int_equal(env_set(e, "no_proxy", "*"), 0);
	env_set_proxy(e, 3128);
	v = env_vector(e);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		assert_int_equal(count_name(v, names[i]), 1);
		assert_string_equal(
		    env_get(e, names[i]), "http://127.0.0.1:3128");
	}
	assert_string_equal(env_get(e, "no_proxy"), "localhost,127.0.0.1,::1");
	assert_string_equal(env_get(e, "NO_PROXY"), "localhost,127.0.0.1,::1");
	assert_int_equal(count_name(v, "no_proxy"), 1);
	assert_null(env_get(e, "all_proxy"));
	assert_null(env_get(e, "ALL_PROXY"));
	assert_int_equal(count_name(v, "all_proxy"), 0);
	assert_int_equal(count_name(v, "ALL_PROXY"), 0);
	assert_string_equal(env_get(e, "PATH"), "/bin");
	assert_string_equal(env_get(e, "NODE_USE_ENV_PROXY"), "1");
	/* PATH and the four, the two no_proxy, Node's: nothing else. */
	assert_int_equal(count(v), 8);
	env_free(e);
}

/* The port is printed as given, at the edges of its range too. */
static void
test_set_proxy_ports(void **state)
{
	struct env *e = env_new(NULL);

	(void)state;
	env_set_proxy(e, 1);
	assert_string_equal(env_get(e, "https_proxy"), "http://127.0.0.1:1");
	env_set_proxy(e, 65535);
	assert_string_equal(
	    env_get(e, "https_proxy"), "http://127.0.0.1:65535");
	assert_int_equal(count(env_vector(e)), 7);
	env_free(e);
}

/* Past the first allocation: every entry there, NULL at the end. */
static void
test_vector_grows(void **state)
{
	struct env *e = env_new(NULL);
	char name[32], value[32];
	char **v;
	int i;

	(void)state;
	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "V%d", i);
		snprintf(value, sizeof(value), "%d", i * 7);
		assert_int_equal(env_set(e, name, value), 0);
		assert_int_equal(count(env_vector(e)), (size_t)i + 1);
	}
	v = env_vector(e);
	for (i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "V%d=%d", i, i * 7);
		assert_string_equal(v[i], name);
	}
	assert_null(v[100]);
	for (i = 0; i < 100; i += 2) {
		snprintf(name, sizeof(name), "V%d", i);
		env_unset(e, name);
	}
	v = env_vector(e);
	assert_int_equal(count(v), 50);
	for (i = 0; i < 50; i++) {
		snprintf(
		    name, sizeof(name), "V%d=%d", 2 * i + 1, (2 * i + 1) * 7);
		assert_string_equal(v[i], name);
	}
	env_free(e);
}

static void
test_get(void **state)
{
	char *from[] = {"PATH=/bin", "PATHX=no", "LC_ALL=C", NULL};
	struct env *e = env_new(from);

	(void)state;
	assert_string_equal(env_get(e, "PATH"), "/bin");
	assert_null(env_get(e, "PAT"));
	assert_null(env_get(e, "PATHX")); /* not kept */
	assert_null(env_get(e, "LC_"));
	assert_string_equal(env_get(e, "LC_ALL"), "C");
	env_free(e);
}

static void
test_free_null(void **state)
{
	(void)state;
	env_free(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_new_keeps_listed),
	    cmocka_unit_test(test_new_drops_prefixes),
	    cmocka_unit_test(test_new_drops_without_equals),
	    cmocka_unit_test(test_new_empty_value),
	    cmocka_unit_test(test_new_duplicates),
	    cmocka_unit_test(test_new_null_and_empty),
	    cmocka_unit_test(test_set_replaces),
	    cmocka_unit_test(test_set_value_with_equals),
	    cmocka_unit_test(test_set_rejects_bad_names),
	    cmocka_unit_test(test_keep),
	    cmocka_unit_test(test_keep_replaces),
	    cmocka_unit_test(test_unset_keeps_order),
	    cmocka_unit_test(test_set_proxy),
	    cmocka_unit_test(test_set_proxy_ports),
	    cmocka_unit_test(test_vector_grows),
	    cmocka_unit_test(test_get),
	    cmocka_unit_test(test_free_null),
	};

	return cmocka_run_group_tests_name("env", tests, NULL, NULL);
}
