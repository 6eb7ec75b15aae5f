/*
 * test_synth.c: the synthetic addresses of proxy/synth.c: a name keeps
 * its address, addresses map back (IPv4, IPv6, IPv4-mapped), the blocks'
 * edges, the least recently used name goes past SYNTH_MAX, a forgotten
 * address is refused, and an address comes back only after the block
 * has gone round.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "proxy/synth.h"

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
	assert_string_equal(synth_name(s, AF_INET, v4), "a.test");
	assert_string_equal(synth_name(s, AF_INET6, v6), "a.test");
	memset(m, 0, 10);
	m[10] = m[11] = 0xff;
	memcpy(m + 12, v4, 4);
	assert_string_equal(synth_name(s, AF_INET6, m), "a.test");
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
	assert_null(synth_name(s, AF_INET, a));
	inet_pton(AF_INET, "198.20.0.0", a);
	assert_false(synth_is_synthetic(AF_INET, a));
	inet_pton(AF_INET, "198.19.255.255", a);
	assert_true(synth_is_synthetic(AF_INET, a));
	assert_null(synth_name(s, AF_INET, a)); /* never handed out */
	inet_pton(AF_INET, "198.18.0.7", a);
	assert_null(synth_name(s, AF_INET, a)); /* not mapped */
	inet_pton(AF_INET6, "2001:db8::1", a);
	assert_false(synth_is_synthetic(AF_INET6, a));
	inet_pton(AF_INET6, "2001:2:0:1::1", a);
	assert_true(synth_is_synthetic(AF_INET6, a));
	assert_null(synth_name(s, AF_INET6, a)); /* not of our form */
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
			assert_non_null(synth_name(s, AF_INET, first));
	}
	assert_int_equal(synth_count(s), SYNTH_MAX);
	assert_string_equal(synth_name(s, AF_INET, first), "first.test");
	/* n0.test was the least recently used: forgotten, refused. */
	inet_pton(AF_INET, "198.18.0.2", v4);
	assert_null(synth_name(s, AF_INET, v4));
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
			assert_non_null(synth_name(s, AF_INET, one));
	}
	/* The cursor wraps and skips the address still in use. */
	assert_int_equal(synth_map(s, "next.test", v4, v6), 0);
	assert_memory_not_equal(v4, one, 4);
	assert_true(synth_count(s) <= SYNTH_MAX);
	synth_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_map_and_back),
	    cmocka_unit_test(test_not_synthetic),
	    cmocka_unit_test(test_least_recently_used_goes),
	    cmocka_unit_test(test_block_goes_round),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
