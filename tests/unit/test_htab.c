/*
 * test_htab.c: the hash table of common/: insertion order of ids kept per
 * key, binary keys, growth across many keys, misses, htab_try_add().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/htab.h"

static void
test_add_find(void **state)
{
	struct htab *t = htab_new();
	const struct htab_list *l;

	(void)state;
	htab_add(t, "github.com", 10, 0, 7);
	htab_add(t, "github.com", 10, 0, 3);
	htab_add(t, "pypi.org", 8, 0, 1);
	htab_add(t, "pypi.org", 8, 2, 9);
	assert_int_equal(htab_count(t), 2);
	l = htab_find(t, "github.com", 10);
	assert_non_null(l);
	assert_int_equal(l->n, 2);
	assert_int_equal(l->ids[0], 7);
	assert_int_equal(l->ids[1], 3);
	assert_int_equal(l[1].n, 0);
	l = htab_find(t, "pypi.org", 8);
	assert_int_equal(l[0].n, 1);
	assert_int_equal(l[2].n, 1);
	assert_int_equal(l[2].ids[0], 9);
	assert_null(htab_find(t, "github.co", 9));
	assert_null(htab_find(t, "github.com.", 11));
	assert_null(htab_find(t, "", 0));
	htab_free(t);
}

static void
test_binary_keys(void **state)
{
	static const uint8_t a[] = {4, 8, 10, 0}, b[] = {4, 8, 10, 1};
	struct htab *t = htab_new();

	(void)state;
	htab_add(t, a, sizeof(a), 0, 1);
	htab_add(t, b, sizeof(b), 0, 2);
	assert_int_equal(htab_find(t, a, sizeof(a))->ids[0], 1);
	assert_int_equal(htab_find(t, b, sizeof(b))->ids[0], 2);
	assert_null(htab_find(t, a, 3));
	htab_free(t);
}

static void
test_growth(void **state)
{
	struct htab *t = htab_new();
	const struct htab_list *l;
	char key[32];
	uint32_t i;

	(void)state;
	for (i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "host%u.example", i);
		htab_add(t, key, strlen(key), 0, i);
	}
	assert_int_equal(htab_count(t), 20000);
	for (i = 0; i < 20000; i++) {
		snprintf(key, sizeof(key), "host%u.example", i);
		l = htab_find(t, key, strlen(key));
		assert_non_null(l);
		assert_int_equal(l->n, 1);
		assert_int_equal(l->ids[0], i);
	}
	assert_null(htab_find(t, "host20000.example", 17));
	htab_free(t);
	htab_free(NULL);
}

/* htab_try_add() keeps what htab_add() keeps, and says so with 0. */
static void
test_try_add(void **state)
{
	struct htab *t = htab_new();
	const struct htab_list *l;
	char key[32];
	uint32_t i;

	(void)state;
	for (i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "k%u", i % 500);
		assert_int_equal(htab_try_add(t, key, strlen(key), 1, i), 0);
	}
	assert_int_equal(htab_count(t), 500);
	l = htab_find(t, "k7", 2);
	assert_non_null(l);
	assert_int_equal(l[0].n, 0);
	assert_int_equal(l[1].n, 2);
	assert_int_equal(l[1].ids[0], 7);
	assert_int_equal(l[1].ids[1], 507);
	htab_free(t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_add_find),
	    cmocka_unit_test(test_binary_keys),
	    cmocka_unit_test(test_growth),
	    cmocka_unit_test(test_try_add),
	};

	return cmocka_run_group_tests_name("htab", tests, NULL, NULL);
}
