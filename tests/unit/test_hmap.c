/*
 * test_hmap.c: the removable hash map of common/: insert, find, remove,
 * iteration (with removal on the way), many keys in one bucket, binary
 * keys, SipHash-2-4 against the reference vectors, a seed per map.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define HMAP_INTERNAL
#include "common/hmap.h"

#define N 500

struct item {
	int id;
	struct hmap_entry link;
	char key[16];
	int seen;
};

static struct item items[N];

static void
fill(struct hmap *m)
{
	int i;

	for (i = 0; i < N; i++) {
		items[i].id = i;
		items[i].seen = 0;
		snprintf(items[i].key, sizeof(items[i].key), "host%d.test", i);
		hmap_insert(
		    m, &items[i].link, items[i].key, strlen(items[i].key));
	}
}

static struct item *
get(struct hmap *m, const char *key)
{
	return HMAP_ITEM(hmap_find(m, key, strlen(key)), struct item, link);
}

/* Every item once; returns how many. */
static int
walk(struct hmap *m)
{
	struct hmap_entry *e;
	int n = 0;

	for (e = hmap_first(m); e != NULL; e = hmap_next(m, e)) {
		HMAP_ITEM(e, struct item, link)->seen++;
		n++;
	}
	return n;
}

static void
check(size_t nbuckets)
{
	struct hmap *m = hmap_new(nbuckets);
	struct item *it;
	int i;

	assert_non_null(m);
	fill(m);
	assert_int_equal(hmap_count(m), N);
	for (i = 0; i < N; i++) {
		it = get(m, items[i].key);
		assert_ptr_equal(it, &items[i]);
	}
	assert_null(get(m, "host1.tes"));
	assert_null(get(m, "host1.test."));
	assert_null(get(m, ""));
	/* Remove the even ones: the odd ones stay findable. */
	for (i = 0; i < N; i += 2)
		hmap_remove(m, &items[i].link);
	assert_int_equal(hmap_count(m), N / 2);
	for (i = 0; i < N; i++) {
		it = get(m, items[i].key);
		assert_ptr_equal(it, i % 2 ? &items[i] : NULL);
	}
	assert_int_equal(walk(m), N / 2);
	for (i = 0; i < N; i++)
		assert_int_equal(items[i].seen, i % 2);
	/* Back in, under the same key. */
	hmap_insert(m, &items[0].link, items[0].key, strlen(items[0].key));
	assert_ptr_equal(get(m, "host0.test"), &items[0]);
	hmap_free(m);
}

static void
test_basic(void **state)
{
	(void)state;
	check(64);
	check(1000); /* rounded up to 1024 */
}

static void
test_one_bucket(void **state)
{
	struct hmap *m = hmap_new(1);

	(void)state;
	assert_int_equal(hmap_bucket_count(m), 1);
	hmap_free(m);
	check(1);
	check(0);
}

static void
test_remove_while_iterating(void **state)
{
	size_t sizes[] = {1, 8, 1024};
	struct hmap_entry *e, *next;
	struct hmap *m;
	size_t s;
	int i, n;

	(void)state;
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		m = hmap_new(sizes[s]);
		fill(m);
		n = 0;
		for (e = hmap_first(m); e != NULL; e = next) {
			next = hmap_next(m, e);
			HMAP_ITEM(e, struct item, link)->seen++;
			hmap_remove(m, e);
			n++;
		}
		assert_int_equal(n, N);
		assert_int_equal(hmap_count(m), 0);
		assert_null(hmap_first(m));
		for (i = 0; i < N; i++)
			assert_int_equal(items[i].seen, 1);
		hmap_free(m);
	}
}

struct bin {
	struct hmap_entry link;
	uint8_t key[9];
};

static void
test_binary_keys(void **state)
{
	struct hmap *m = hmap_new(16);
	struct bin a = {.key = {4, 192, 0, 2, 1}};
	struct bin b = {.key = {4, 192, 0, 2, 1, 0, 0, 0, 1}};
	uint8_t k[9] = {4, 192, 0, 2, 1};

	(void)state;
	hmap_insert(m, &a.link, a.key, sizeof(a.key));
	hmap_insert(m, &b.link, b.key, sizeof(b.key));
	assert_ptr_equal(hmap_find(m, k, 9), &a.link);
	assert_null(hmap_find(m, k, 5));
	k[8] = 1;
	assert_ptr_equal(hmap_find(m, k, 9), &b.link);
	hmap_remove(m, &a.link);
	k[8] = 0;
	assert_null(hmap_find(m, k, 9));
	hmap_free(m);
	hmap_free(NULL);
}

/* The reference vectors of SipHash-2-4: key 00..0f, message 00..len-1. */
static void
test_siphash(void **state)
{
	const uint64_t k[2] = {0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};
	uint8_t msg[16];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)i;
	assert_true(hmap_siphash(k, msg, 0) == 0x726fdb47dd0e0e31ULL);
	assert_true(hmap_siphash(k, msg, 8) == 0x93f5f5799a932462ULL);
	assert_true(hmap_siphash(k, msg, 15) == 0xa129ca6149be45e5ULL);
}

static void
test_seed_per_map(void **state)
{
	struct hmap *a = hmap_new(1024), *b = hmap_new(1024);
	char key[32];
	int i, same = 0;

	(void)state;
	for (i = 0; i < 64; i++) {
		snprintf(key, sizeof(key), "name%d.test", i);
		same += hmap_hash(a, key, strlen(key)) ==
		    hmap_hash(b, key, strlen(key));
		assert_true(hmap_hash(a, key, strlen(key)) ==
		    hmap_hash(a, key, strlen(key)));
	}
	assert_int_equal(same, 0);
	hmap_free(a);
	hmap_free(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_basic),
	    cmocka_unit_test(test_one_bucket),
	    cmocka_unit_test(test_remove_while_iterating),
	    cmocka_unit_test(test_binary_keys),
	    cmocka_unit_test(test_siphash),
	    cmocka_unit_test(test_seed_per_map),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
