/*
 * fuzz_chunked.c: libFuzzer target for http_chunked_scan().
 *
 * The first byte K says how many of the next bytes (K % 8) are piece
 * sizes; the rest is a chunked body.  It is scanned whole, byte by byte
 * (when short), and in pieces of the given sizes, each piece in an
 * exact-size heap copy.  All must agree: the same error or not, and the
 * same end and bytes consumed.  A violation abort()s.
 *
 *	./fuzz_chunked -max_total_time=60 tests/fuzz/corpus/chunked
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define BYTEWISE_MAX 4096

struct result {
	int error;
	int done;
	size_t consumed;
};

static void
check(int ok)
{
	if (!ok)
		abort();
}

static ssize_t
scan_piece(struct http_chunked *c, const uint8_t *data, size_t n, int *done)
{
	const char *why = NULL;
	char *buf;
	ssize_t r;

	if ((buf = malloc(n > 0 ? n : 1)) == NULL)
		abort();
	memcpy(buf, data, n);
	r = http_chunked_scan(c, buf, n, done, &why);
	check(r >= -1 && r <= (ssize_t)n);
	check((r < 0) == (why != NULL));
	check(r < 0 || *done || (size_t)r == n);
	free(buf);
	return r;
}

/* Scans DATA in pieces of STEPS[i % NSTEPS] bytes (0 counts as 1). */
static struct result
scan(const uint8_t *data, size_t len, const uint8_t *steps, size_t nsteps)
{
	struct result res = {0, 0, 0};
	struct http_chunked c;
	size_t off = 0, i = 0, n;
	ssize_t r;

	http_chunked_init(&c);
	while (off < len && !res.done) {
		n = nsteps == 0 ? len : steps[i++ % nsteps];
		n = n == 0 ? 1 : n;
		n = n < len - off ? n : len - off;
		if ((r = scan_piece(&c, data + off, n, &res.done)) < 0) {
			res.error = 1;
			break;
		}
		res.consumed += (size_t)r;
		off += n;
	}
	return res;
}

static void
check_same(struct result a, struct result b)
{
	check(a.error == b.error);
	if (!a.error)
		check(a.done == b.done && a.consumed == b.consumed);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t one = 1;
	struct result whole, other;
	size_t nsteps;

	if (size == 0)
		return 0;
	nsteps = data[0] % 8;
	if (size < 1 + nsteps)
		return 0;
	data += 1;
	size -= 1;
	whole = scan(data + nsteps, size - nsteps, NULL, 0);
	other = scan(data + nsteps, size - nsteps, data, nsteps);
	check_same(whole, other);
	if (size - nsteps <= BYTEWISE_MAX) {
		other = scan(data + nsteps, size - nsteps, &one, 1);
		check_same(whole, other);
	}
	return 0;
}
