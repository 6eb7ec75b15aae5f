/*
 * test_scan.c: unit tests of proxy/scan.c, the streaming multi-pattern
 * search the proxy runs over responses that may echo a secret.
 *
 * Every pattern is fed split at every boundary; the encoded forms are
 * made here independently (OpenSSL's Base64, printf's %02X) and found
 * inside realistic surroundings (a Basic field, a Location query); and
 * random streams are checked against a naive search of the whole stream.
 * The skip over bytes at the root is tested both ways it is done (SSSE3
 * by pairs, scalar by single bytes; scan_simd()), ending at every
 * offset of a 16-byte block.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#define SCAN_INTERNAL
#include "proxy/scan.h"

#define VALUE "ghp_Xy7kQ2mZpL9sT4vB8nR1cW6dF3hJ0aE5uYi"

static struct scan *
make(const char *value, unsigned forms)
{
	struct scan *sc = scan_new();

	assert_non_null(sc);
	assert_int_equal(scan_add_value(sc, value, strlen(value), 7, forms), 0);
	assert_int_equal(scan_compile(sc), 0);
	return sc;
}

/* Where the first match ends in S fed in two pieces at SPLIT, or 0. */
static size_t
find_split(const struct scan *sc, const char *s, size_t len, size_t split)
{
	uint32_t st = SCAN_START;
	size_t end = 0;
	unsigned id = 0;

	if (scan_feed(sc, &st, s, split, &end, &id)) {
		assert_int_equal(id, 7);
		return end;
	}
	if (scan_feed(sc, &st, s + split, len - split, &end, &id)) {
		assert_int_equal(id, 7);
		return split + end;
	}
	return 0;
}

/* S holds a form of the value ending at offset END: found at every split. */
static void
found_everywhere(const struct scan *sc, const char *s, size_t end)
{
	size_t len = strlen(s), split;

	for (split = 0; split <= len; split++)
		assert_int_equal(find_split(sc, s, len, split), end);
}

static void
test_raw_every_split(void **state)
{
	struct scan *sc = make(VALUE, SCAN_RAW);
	char buf[256];

	(void)state;
	snprintf(
	    buf, sizeof(buf), "HTTP/1.1 404 Not Found\r\n\r\n/x?t=%s&y", VALUE);
	found_everywhere(sc, buf, strstr(buf, VALUE) - buf + strlen(VALUE));
	scan_free(sc);
}

static void
test_no_match(void **state)
{
	struct scan *sc = make(VALUE, SCAN_RAW | SCAN_BASE64 | SCAN_PERCENT);
	static const char s[] = "ghp_Xy7kQ2mZpL9sT4vB8nR1cW6dF3hJ0aE5uY "
	                        "plain text with no secret at all";
	uint32_t st = SCAN_START;
	size_t end;
	unsigned id;

	(void)state;
	assert_int_equal(scan_feed(sc, &st, s, strlen(s), &end, &id), 0);
	assert_int_equal(scan_held(sc, st), 0);
	scan_free(sc);
}

/* What is held is exactly the prefix of the value seen so far. */
static void
test_held(void **state)
{
	struct scan *sc = make(VALUE, SCAN_RAW);
	uint32_t st = SCAN_START;
	size_t end, k;
	unsigned id;

	(void)state;
	assert_int_equal(scan_feed(sc, &st, "abc ", 4, &end, &id), 0);
	assert_int_equal(scan_held(sc, st), 0);
	for (k = 0; k + 1 < strlen(VALUE); k++) {
		assert_int_equal(
		    scan_feed(sc, &st, VALUE + k, 1, &end, &id), 0);
		assert_int_equal(scan_held(sc, st), k + 1);
	}
	assert_int_equal(scan_feed(sc, &st, "!", 1, &end, &id), 0);
	assert_int_equal(scan_held(sc, st), 0);
	scan_free(sc);
}

/* "Basic " + base64(user ":" value) for users of every length mod 3. */
static void
test_base64_basic(void **state)
{
	struct scan *sc = make(VALUE, SCAN_BASE64);
	static const char *const users[] = {
	    "", "x", "ab", "x-access-token", "user1", "__token__"};
	unsigned char plain[128], enc[256];
	char field[300];
	size_t i;
	int n;

	(void)state;
	for (i = 0; i < sizeof(users) / sizeof(users[0]); i++) {
		n = snprintf(
		    (char *)plain, sizeof(plain), "%s:%s", users[i], VALUE);
		EVP_EncodeBlock(enc, plain, n);
		snprintf(
		    field, sizeof(field), "Authorization: Basic %s\r\n", enc);
		assert_int_not_equal(
		    find_split(sc, field, strlen(field), 0), 0);
		found_everywhere(
		    sc, field, find_split(sc, field, strlen(field), 0));
	}
	/* The value alone, and base64url. */
	EVP_EncodeBlock(enc, (const unsigned char *)"\xfb\xff" VALUE "\xfe",
	    (int)strlen(VALUE) + 3);
	assert_int_not_equal(
	    find_split(sc, (char *)enc, strlen((char *)enc), 0), 0);
	for (i = 0; enc[i] != '\0'; i++)
		enc[i] = enc[i] == '+' ? '-' : enc[i] == '/' ? '_' : enc[i];
	assert_int_not_equal(
	    find_split(sc, (char *)enc, strlen((char *)enc), 0), 0);
	scan_free(sc);
}

static void
test_percent(void **state)
{
	static const char v[] = "s3cr3t/val+ue=with&reserved";
	struct scan *sc = make(v, SCAN_PERCENT);
	char all[200], part[200], lower[200];
	size_t i, n = 0, m = 0, l = 0;

	(void)state;
	for (i = 0; v[i] != '\0'; i++) {
		n += sprintf(all + n, "%%%02X", (unsigned char)v[i]);
		l += sprintf(lower + l, "%%%02x", (unsigned char)v[i]);
		if (strchr("/+=&", v[i]) != NULL)
			m += sprintf(part + m, "%%%02X", (unsigned char)v[i]);
		else
			part[m++] = v[i];
	}
	part[m] = '\0';
	found_everywhere(sc, all, n);
	found_everywhere(sc, lower, l);
	found_everywhere(sc, part, m);
	/* The raw form was not asked for. */
	assert_int_equal(find_split(sc, v, strlen(v), 0), 0);
	scan_free(sc);
}

static void
test_case(void **state)
{
	struct scan *sc = make("AbCdEfGh12345678", SCAN_CASE);

	(void)state;
	found_everywhere(sc, "x-abcdefgh12345678-", 18);
	found_everywhere(sc, "ABCDEFGH12345678", 16);
	scan_free(sc);
}

/* Forms shorter than SCAN_MIN are left out; an empty set matches nothing. */
static void
test_short(void **state)
{
	struct scan *sc = make("abc", SCAN_RAW | SCAN_BASE64 | SCAN_PERCENT);
	uint32_t st = SCAN_START;
	size_t end;
	unsigned id;

	(void)state;
	assert_int_equal(scan_count(sc), 2); /* the two %XX of all bytes */
	assert_int_equal(scan_feed(sc, &st, "abcabc", 6, &end, &id), 0);
	scan_free(sc);
	sc = scan_new();
	assert_int_equal(scan_compile(sc), 0);
	assert_int_equal(scan_feed(sc, &st, "abc", 3, &end, &id), 0);
	assert_int_equal(scan_held(sc, st), 0);
	scan_free(sc);
}

static void
test_limits(void **state)
{
	struct scan *sc = scan_new();
	char *big = calloc(1, 1024 * 1024 + 1);

	(void)state;
	assert_non_null(big);
	assert_int_equal(scan_add(sc, "", 0, 1), -1);
	assert_int_equal(scan_add(sc, big, 1024 * 1024 + 1, 1), -1);
	assert_int_equal(scan_add(sc, "abcdefgh", 8, 1), 0);
	assert_int_equal(scan_compile(sc), 0);
	assert_int_equal(scan_add(sc, "abcdefgh", 8, 1), -1);
	free(big);
	scan_free(sc);
}

/* Several patterns, overlapping: the first end wins, with its id. */
static void
test_ids(void **state)
{
	struct scan *sc = scan_new();
	uint32_t st = SCAN_START;
	size_t end;
	unsigned id;

	(void)state;
	assert_int_equal(scan_add(sc, "abcdefgh", 8, 1), 0);
	assert_int_equal(scan_add(sc, "cdefghij", 8, 2), 0);
	assert_int_equal(scan_add(sc, "defg", 4, 3), 0);
	assert_int_equal(scan_compile(sc), 0);
	assert_int_equal(scan_feed(sc, &st, "xxabcdefghij", 12, &end, &id), 1);
	assert_int_equal(end, 9);
	assert_int_equal(id, 3);
	assert_int_equal(scan_feed(sc, &st, "hij", 3, &end, &id), 1);
	assert_int_equal(end, 1);
	assert_int_equal(id, 1);
	scan_free(sc);
}

/* The longest suffix of S[0..N) that is a proper prefix of a pattern. */
static size_t
naive_held(char pats[][8], size_t np, const char *s, size_t n)
{
	size_t best = 0, i, k;

	for (i = 0; i < np; i++)
		for (k = 1; k < 8 && k <= n; k++)
			if (k > best && memcmp(s + n - k, pats[i], k) == 0)
				best = k;
	return best;
}

static int
naive_end(char pats[][8], size_t np, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < np; i++)
		if (n >= 8 && memcmp(s + n - 8, pats[i], 8) == 0)
			return 1;
	return 0;
}

/* 2,000 random streams over "ab": every end and held count as naive. */
static void
test_naive(void **state)
{
	char pats[4][8], s[200];
	struct scan *sc;
	uint32_t st;
	size_t np, i, n, end;
	unsigned id, seed = 12345, round;

	(void)state;
	for (round = 0; round < 2000; round++) {
		sc = scan_new();
		np = 1 + (seed = seed * 1103515245 + 12345) % 4;
		for (i = 0; i < np; i++) {
			for (n = 0; n < 8; n++)
				pats[i][n] =
				    "ab"[(seed = seed * 1103515245 + 12345) >>
				            16 &
				        1];
			assert_int_equal(scan_add(sc, pats[i], 8, i), 0);
		}
		assert_int_equal(scan_compile(sc), 0);
		for (n = 0; n < sizeof(s); n++)
			s[n] =
			    "abc"[((seed = seed * 1103515245 + 12345) >> 16) %
			        3];
		st = SCAN_START;
		for (n = 0; n < sizeof(s); n++) {
			int m = scan_feed(sc, &st, s + n, 1, &end, &id);

			assert_int_equal(m, naive_end(pats, np, s, n + 1));
			if (m)
				assert_memory_equal(pats[id], s + n + 1 - 8, 8);
			else
				assert_int_equal(scan_held(sc, st),
				    naive_held(pats, np, s, n + 1));
		}
		scan_free(sc);
	}
}

/*
 * Every form of the value after 0-40 bytes that start no pattern (the
 * skip ends exactly at the form, at every offset of a 16-byte block),
 * split at every point: so the form's first byte is also the last of a
 * buffer.  Both skips.
 */
static void
test_every_form_after_skip(void **state)
{
	struct scan *sc =
	    make(VALUE, SCAN_RAW | SCAN_BASE64 | SCAN_PERCENT | SCAN_CASE);
	const uint8_t *pat;
	char buf[512];
	size_t i, pre, len;
	int simd;

	(void)state;
	/* as is, 2 cases, %XX in 2 cases, Base64 at 3 alignments */
	assert_int_equal(scan_count(sc), 8);
	for (simd = 0; simd < 2; simd++) {
		scan_simd(sc, simd);
		for (i = 0; i < scan_count(sc); i++) {
			pat = scan_pattern(sc, i, &len);
			for (pre = 0; pre <= 40; pre++) {
				memset(buf, ' ', pre);
				memcpy(buf + pre, pat, len);
				buf[pre + len] = '\0';
				found_everywhere(sc, buf, pre + len);
			}
		}
	}
	scan_free(sc);
}

/*
 * A form's first byte last in a buffer, after bytes that leave the root
 * and whose next bytes are no pattern's second: the pair skip must not
 * pass the first byte, and held says 1.
 */
static void
test_first_byte_last(void **state)
{
	struct scan *sc = make(VALUE, SCAN_RAW);
	char buf[64];
	uint32_t st;
	size_t end, n;
	unsigned id;
	int simd;

	(void)state;
	for (simd = 0; simd < 2; simd++) {
		scan_simd(sc, simd);
		for (n = 1; n < sizeof(buf); n++) {
			/* "g " repeated: g begins the value, ' ' follows none */
			for (end = 0; end < n; end++)
				buf[end] = end % 2 ? ' ' : 'g';
			buf[n - 1] = 'g';
			st = SCAN_START;
			assert_int_equal(
			    scan_feed(sc, &st, buf, n, &end, &id), 0);
			assert_int_equal(scan_held(sc, st), 1);
			assert_int_equal(scan_feed(sc, &st, VALUE + 1,
			                     strlen(VALUE) - 1, &end, &id),
			    1);
			assert_int_equal(end, strlen(VALUE) - 1);
		}
	}
	scan_free(sc);
}

/* The longest suffix of S[0..N) that is a proper prefix of PATS[I][0..PL). */
static size_t
naive_held_n(
    const uint8_t (*pats)[8], size_t np, size_t pl, const uint8_t *s, size_t n)
{
	size_t best = 0, i, k;

	for (i = 0; i < np; i++)
		for (k = best + 1; k < pl && k <= n; k++)
			if (memcmp(s + n - k, pats[i], k) == 0)
				best = k;
	return best;
}

/* Does a pattern end at S[N - 1]? */
static int
naive_end_n(
    const uint8_t (*pats)[8], size_t np, size_t pl, const uint8_t *s, size_t n)
{
	size_t i;

	for (i = 0; i < np; i++)
		if (n >= pl && memcmp(s + n - pl, pats[i], pl) == 0)
			return 1;
	return 0;
}

/* S[0..LEN) in pieces of K, restarting after each match: as naive. */
static void
pieces_naive(const struct scan *sc, const uint8_t (*pats)[8], size_t np,
    size_t pl, const uint8_t *s, size_t len, size_t k)
{
	uint32_t st = SCAN_START;
	size_t pos = 0, last = 0, n, end;
	unsigned id;

	while (pos < len) {
		n = len - pos < k ? len - pos : k;
		if (scan_feed(sc, &st, s + pos, n, &end, &id)) {
			for (; last + 1 < pos + end; last++)
				assert_false(
				    naive_end_n(pats, np, pl, s, last + 1));
			assert_true(id < np);
			assert_memory_equal(pats[id], s + pos + end - pl, pl);
			last = pos += end;
			continue;
		}
		pos += n;
		for (; last < pos; last++)
			assert_false(naive_end_n(pats, np, pl, s, last + 1));
		assert_int_equal(
		    scan_held(sc, st), naive_held_n(pats, np, pl, s, pos));
	}
}

/*
 * Patterns of 1-8 bytes over a few letters, in streams of those letters
 * and of bytes that start nothing, fed in pieces of 1-70 bytes with both
 * skips: every match end, pattern and held count as naive.
 */
static void
test_skip_naive(void **state)
{
	uint8_t pats[4][8], s[400];
	struct scan *sc;
	size_t np, pl, i, n, k;
	unsigned seed = 777, round;
	int simd;

#define RND() ((seed = seed * 1103515245 + 12345) >> 16)
	(void)state;
	for (round = 0; round < 1500; round++) {
		sc = scan_new();
		np = 1 + RND() % 4;
		pl = 1 + RND() % 8;
		for (i = 0; i < np; i++) {
			for (n = 0; n < pl; n++)
				pats[i][n] = (uint8_t) "ab\x80\xff"[RND() % 4];
			assert_int_equal(scan_add(sc, pats[i], pl, i), 0);
		}
		assert_int_equal(scan_compile(sc), 0);
		for (n = 0; n < sizeof(s); n++)
			s[n] = RND() % 3 ? (uint8_t)RND()
			                 : (uint8_t) "ab\x80\xff"[RND() % 4];
		k = 1 + RND() % 70;
		for (simd = 0; simd < 2; simd++) {
			scan_simd(sc, simd);
			pieces_naive(sc, (const uint8_t(*)[8])pats, np, pl, s,
			    sizeof(s), k);
			pieces_naive(sc, (const uint8_t(*)[8])pats, np, pl, s,
			    sizeof(s), sizeof(s));
		}
		scan_free(sc);
	}
#undef RND
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_raw_every_split),
	    cmocka_unit_test(test_no_match),
	    cmocka_unit_test(test_held),
	    cmocka_unit_test(test_base64_basic),
	    cmocka_unit_test(test_percent),
	    cmocka_unit_test(test_case),
	    cmocka_unit_test(test_short),
	    cmocka_unit_test(test_limits),
	    cmocka_unit_test(test_ids),
	    cmocka_unit_test(test_naive),
	    cmocka_unit_test(test_every_form_after_skip),
	    cmocka_unit_test(test_first_byte_last),
	    cmocka_unit_test(test_skip_naive),
	};

	return cmocka_run_group_tests_name("scan", tests, NULL, NULL);
}
