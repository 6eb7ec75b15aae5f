/*
 * test_synth.c: the synthetic addresses of proxy/synth.c: a name keeps
 * its address, addresses map back (IPv4, IPv6, IPv4-mapped), the blocks'
 * edges, the least recently used name goes past SYNTH_MAX, a forgotten
 * address is refused, an address comes back only after the block has
 * gone round, and one map serves a thread that maps and one that looks
 * up at once.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "policy/target.h"
#include "proxy/synth.h"

/* The name ADDR stands for, copied out (synth_name), or NULL. */
static const char *
name_of(struct synth *s, int family, const uint8_t *addr)
{
	static char name[TARGET_HOST_MAX];

	return synth_name(s, family, addr, name, sizeof(name)) == 0 ? name
	                                                            : NULL;
}

static void
test_map_and_back(void **state)
{
	struct synth *s = synth_new();
	uint8_t v4[4], v6[16], v4b[4], v6b[16], m[16];
	char text[INET6_ADDRSTRLEN];

	(void)state;
	assert_non_null(s);
	assert_int_equal(synth_map(s, "a.test", v4, v6), 0);
	assert_true(synth_is_synthetic(AF_INET, v4));
	assert_true(synth_is_synthetic(AF_INET6, v6));
	inet_ntop(AF_INET, v4, text, sizeof(text));
	assert_string_equal(text, "198.18.0.1");
	inet_ntop(AF_INET6, v6, text, sizeof(text));
	assert_string_equal(text, "2001:2::1");
	assert_string_equal(name_of(s, AF_INET, v4), "a.test");
	assert_string_equal(name_of(s, AF_INET6, v6), "a.test");
	memset(m, 0, 10);
	m[10] = m[11] = 0xff;
	memcpy(m + 12, v4, 4);
	assert_string_equal(name_of(s, AF_INET6, m), "a.test");
	/* The same name, the same addresses; another name, others. */
	assert_int_equal(synth_map(s, "a.test", v4b, v6b), 0);
	assert_memory_equal(v4, v4b, 4);
	assert_memory_equal(v6, v6b, 16);
	assert_int_equal(synth_map(s, "b.test", v4b, v6b), 0);
	assert_memory_not_equal(v4, v4b, 4);
	assert_int_equal(synth_count(s), 2);
	synth_free(s);
}

static void
test_not_synthetic(void **state)
{
	struct synth *s = synth_new();
	uint8_t a[16];

	(void)state;
	inet_pton(AF_INET, "198.17.255.255", a);
	assert_false(synth_is_synthetic(AF_INET, a));
	assert_null(name_of(s, AF_INET, a));
	inet_pton(AF_INET, "198.20.0.0", a);
	assert_false(synth_is_synthetic(AF_INET, a));
	inet_pton(AF_INET, "198.19.255.255", a);
	assert_true(synth_is_synthetic(AF_INET, a));
	assert_null(name_of(s, AF_INET, a)); /* never handed out */
	inet_pton(AF_INET, "198.18.0.7", a);
	assert_null(name_of(s, AF_INET, a)); /* not mapped */
	inet_pton(AF_INET6, "2001:db8::1", a);
	assert_false(synth_is_synthetic(AF_INET6, a));
	inet_pton(AF_INET6, "2001:2:0:1::1", a);
	assert_true(synth_is_synthetic(AF_INET6, a));
	assert_null(name_of(s, AF_INET6, a)); /* not of our form */
	synth_free(s);
}

static void
test_least_recently_used_goes(void **state)
{
	struct synth *s = synth_new();
	uint8_t first[4], v4[4], v6[16];
	char name[32];
	int i;

	(void)state;
	assert_int_equal(synth_map(s, "first.test", first, v6), 0);
	for (i = 0; i < SYNTH_MAX; i++) {
		snprintf(name, sizeof(name), "n%d.test", i);
		assert_int_equal(synth_map(s, name, v4, v6), 0);
		if (i == 10) /* first.test used again: it stays */
			assert_non_null(name_of(s, AF_INET, first));
	}
	assert_int_equal(synth_count(s), SYNTH_MAX);
	assert_string_equal(name_of(s, AF_INET, first), "first.test");
	/* n0.test was the least recently used: forgotten, refused. */
	inet_pton(AF_INET, "198.18.0.2", v4);
	assert_null(name_of(s, AF_INET, v4));
	synth_free(s);
}

static void
test_block_goes_round(void **state)
{
	struct synth *s = synth_new();
	uint8_t v4[4], v6[16], one[4];
	char name[32];
	int i, span = 1 << (32 - SYNTH_V4_PREFIX);

	(void)state;
	assert_int_equal(synth_map(s, "keep.test", one, v6), 0);
	/* Every other address once; keep.test stays in use throughout. */
	for (i = 0; i < span - 3; i++) {
		snprintf(name, sizeof(name), "r%d.test", i);
		assert_int_equal(synth_map(s, name, v4, v6), 0);
		assert_memory_not_equal(v4, one, 4);
		if (i % 1000 == 0)
			assert_non_null(name_of(s, AF_INET, one));
	}
	/* The cursor wraps and skips the address still in use. */
	assert_int_equal(synth_map(s, "next.test", v4, v6), 0);
	assert_memory_not_equal(v4, one, 4);
	assert_true(synth_count(s) <= SYNTH_MAX);
	synth_free(s);
}

/*
 * Threads (synth.h): one maps names without end, evicting, as a run's
 * DNS stub does; another looks addresses up, as every loop's proxy does.
 * Without the map's lock its lists and tables tear (a crash, a report
 * under ASan, or a name that is not one).  Each thread counts what went
 * wrong; the test's thread asserts (cmocka is not for other threads).
 */
struct race {
	struct synth *s;
	uint8_t keep[4]; /* keep.test's, mapped again and again */
	atomic_int done;
	int bad_map, bad_keep, bad_name;
};

static void *
race_mapper(void *arg)
{
	struct race *r = arg;
	uint8_t v4[4], v6[16];
	char name[32];
	int i;

	for (i = 0; i < 3 * SYNTH_MAX; i++) {
		snprintf(name, sizeof(name), "m%d.test", i);
		if (synth_map(r->s, name, v4, v6) != 0)
			r->bad_map++;
		if (i % 64 == 0 &&
		    (synth_map(r->s, "keep.test", v4, v6) != 0 ||
		        memcmp(v4, r->keep, 4) != 0))
			r->bad_map++;
	}
	atomic_store(&r->done, 1);
	return NULL;
}

/* NAME is keep.test or mN.test, whole. */
static int
name_ok(const char *name)
{
	size_t n = strlen(name);

	if (strcmp(name, "keep.test") == 0)
		return 1;
	return n > 6 && name[0] == 'm' &&
	    strspn(name + 1, "0123456789") == n - 6 &&
	    strcmp(name + n - 5, ".test") == 0;
}

static void *
race_looker(void *arg)
{
	struct race *r = arg;
	char name[TARGET_HOST_MAX];
	uint8_t a[4] = {198, 18, 0, 0};
	unsigned i = 0;

	while (!atomic_load(&r->done)) {
		if (synth_name(r->s, AF_INET, r->keep, name, sizeof(name)) !=
		        0 ||
		    strcmp(name, "keep.test") != 0)
			r->bad_keep++;
		/* Addresses handed out lately, and the ones before. */
		a[2] = (uint8_t)((i >> 8) & 0x3f);
		a[3] = (uint8_t)i++;
		if (synth_name(r->s, AF_INET, a, name, sizeof(name)) == 0 &&
		    !name_ok(name))
			r->bad_name++;
	}
	return NULL;
}

static void
test_threads(void **state)
{
	struct race r = {0};
	uint8_t v6[16];
	pthread_t mapper, looker;

	(void)state;
	assert_non_null(r.s = synth_new());
	assert_int_equal(synth_map(r.s, "keep.test", r.keep, v6), 0);
	atomic_init(&r.done, 0);
	assert_int_equal(pthread_create(&looker, NULL, race_looker, &r), 0);
	assert_int_equal(pthread_create(&mapper, NULL, race_mapper, &r), 0);
	assert_int_equal(pthread_join(mapper, NULL), 0);
	assert_int_equal(pthread_join(looker, NULL), 0);
	assert_int_equal(r.bad_map, 0);
	assert_int_equal(r.bad_keep, 0);
	assert_int_equal(r.bad_name, 0);
	assert_int_equal(synth_count(r.s), SYNTH_MAX);
	synth_free(r.s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_map_and_back),
	    cmocka_unit_test(test_not_synthetic),
	    cmocka_unit_test(test_least_recently_used_goes),
	    cmocka_unit_test(test_block_goes_round),
	    cmocka_unit_test(test_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
