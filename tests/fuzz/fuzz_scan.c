/*
 * fuzz_scan.c: libFuzzer target for the streaming search of scan.c.
 *
 * Input: byte 0 = number of patterns (1-4) and byte 1 their length
 * (1-24), then the patterns, then byte K, the piece size (1-64), then the
 * stream.  The stream is fed in pieces of K bytes, restarting after each
 * match where it ended; every match end, its pattern, and the held count
 * after every piece are checked against a naive search of the whole
 * stream, once with each way of skipping bytes at the root (SSSE3 by
 * pairs, scalar by single bytes: scan_simd()).  A violation abort()s.
 *
 *	./fuzz_scan -max_total_time=60 tests/fuzz/corpus/scan
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_INTERNAL
#include "proxy/scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define NPAT 4
#define PLEN 24

static void
check(int ok)
{
	if (!ok)
		abort();
}

/* Does a pattern end at S[N-1]? */
static int
naive_end(const uint8_t (*pat)[PLEN], size_t np, size_t pl, const uint8_t *s,
    size_t n)
{
	size_t i;

	for (i = 0; i < np; i++)
		if (n >= pl && memcmp(s + n - pl, pat[i], pl) == 0)
			return 1;
	return 0;
}

/* The longest suffix of S[0..N) that is a proper prefix of a pattern. */
static size_t
naive_held(const uint8_t (*pat)[PLEN], size_t np, size_t pl, const uint8_t *s,
    size_t n)
{
	size_t best = 0, i, k;

	for (i = 0; i < np; i++)
		for (k = best + 1; k < pl && k <= n; k++)
			if (memcmp(s + n - k, pat[i], k) == 0)
				best = k;
	return best;
}

/* Feeds S in pieces of K; checks every match and held count. */
static void
feed(const struct scan *sc, const uint8_t (*pat)[PLEN], size_t np, size_t pl,
    const uint8_t *s, size_t len, size_t k)
{
	uint32_t st = SCAN_START;
	size_t pos = 0, n, end, last = 0;
	unsigned id;

	while (pos < len) {
		n = len - pos < k ? len - pos : k;
		if (scan_feed(sc, &st, s + pos, n, &end, &id)) {
			/* No match was missed before this one. */
			for (; last < pos + end - 1; last++)
				check(!naive_end(pat, np, pl, s, last + 1));
			check(id < np && pos + end >= pl &&
			    memcmp(s + pos + end - pl, pat[id], pl) == 0);
			last = pos + end;
			pos += end;
			continue;
		}
		pos += n;
		for (; last < pos; last++)
			check(!naive_end(pat, np, pl, s, last + 1));
		check(scan_held(sc, st) == naive_held(pat, np, pl, s, pos));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t pat[NPAT][PLEN];
	struct scan *sc;
	size_t np, pl, i, k;
	int simd;

	if (size < 3)
		return 0;
	np = 1 + data[0] % NPAT;
	pl = 1 + data[1] % PLEN;
	data += 2;
	size -= 2;
	if (size < np * pl + 1)
		return 0;
	if ((sc = scan_new()) == NULL)
		abort();
	for (i = 0; i < np; i++) {
		memcpy(pat[i], data + i * pl, pl);
		check(scan_add(sc, pat[i], pl, (unsigned)i) == 0);
	}
	check(scan_compile(sc) == 0);
	data += np * pl;
	k = 1 + data[0] % 64;
	for (simd = 0; simd < 2; simd++) {
		scan_simd(sc, simd);
		feed(sc, (const uint8_t(*)[PLEN])pat, np, pl, data + 1,
		    size - np * pl - 1, k);
	}
	scan_free(sc);
	return 0;
}
