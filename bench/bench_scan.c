/*
 * bench_scan.c: what the response search costs by itself (issue 9,
 * item 4).  Builds the search the proxy builds for a policy of NSECRETS
 * secrets (40-byte tokens, as is, Base64 at three alignments and
 * base64url, %XX in both cases), then feeds BYTES of data in 16 KiB
 * pieces, as the proxy's reads come, and prints MB/s (10^6 bytes) for
 * three kinds of data: random bytes, Base64 text (the alphabet of most
 * patterns, so the automaton leaves its root often) and a JSON-like text.
 * Median of RUNS runs, in CPU time of the thread (the machine is shared).
 *
 *	cmake --build build --target bench_scan && ./build/bench_scan
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proxy/scan.h"

#define PIECE 16384
#define DATA (64 * 1024 * 1024)
#define RUNS 7

static double
now(void)
{
	struct timespec ts;

	clock_gettime(
	    CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: the machine is shared */
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static uint32_t seed = 2463534242u;

static uint32_t
rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 17;
	seed ^= seed << 5;
	return seed;
}

static void
fill(uint8_t *d, size_t n, int kind)
{
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
	                          "qrstuvwxyz0123456789+/";
	static const char json[] =
	    "{\"name\": \"pinhole\", \"version\": "
	    "\"1.0.0\", \"dist\": {\"tarball\": "
	    "\"https://registry.test/p/-/p-1.0.0.tgz\"}}\n";
	size_t i;

	for (i = 0; i < n; i++)
		d[i] = kind == 0 ? (uint8_t)rnd()
		    : kind == 1  ? (uint8_t)b64[rnd() % 64]
		                 : (uint8_t)json[i % (sizeof(json) - 1)];
}

int
main(int argc, char **argv)
{
	static const char *const kinds[] = {"random", "base64", "json"};
	int nsecrets = argc > 1 ? atoi(argv[1]) : 3, k, r, s;
	struct scan *sc = scan_new();
	uint8_t *data = malloc(DATA), tok[40];
	double t[RUNS], t0;
	uint32_t st;
	size_t i, end;
	unsigned id;

	if (sc == NULL || data == NULL)
		return 1;
	for (s = 0; s < nsecrets; s++) {
		for (i = 0; i < sizeof(tok); i++)
			tok[i] =
			    (uint8_t) "abcdefghijklmnopqrstuvwxyz0123456789"
			        [rnd() % 36];
		if (scan_add_value(sc, tok, sizeof(tok), (unsigned)s,
		        SCAN_RAW | SCAN_BASE64 | SCAN_PERCENT) != 0)
			return 1;
	}
	if (scan_compile(sc) != 0)
		return 1;
	printf("%d secrets, %zu patterns; %d MiB in %d-byte pieces, "
	       "median of %d\n",
	    nsecrets, scan_count(sc), DATA >> 20, PIECE, RUNS);
	for (k = 0; k < 3; k++) {
		fill(data, DATA, k);
		for (r = 0; r < RUNS; r++) {
			st = SCAN_START;
			t0 = now();
			for (i = 0; i < DATA; i += PIECE)
				if (scan_feed(
				        sc, &st, data + i, PIECE, &end, &id))
					st = SCAN_START; /* by chance */
			t[r] = now() - t0;
		}
		qsort(t, RUNS, sizeof(t[0]), cmp);
		printf("%-8s %8.0f MB/s\n", kinds[k], DATA / t[RUNS / 2] / 1e6);
	}
	scan_free(sc);
	free(data);
	return 0;
}
