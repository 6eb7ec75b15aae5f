/*
 * fuzz_peek.c: libFuzzer target for proxy/peek.c, the reader of the
 * first bytes a sandboxed program sends on a captured connection.
 *
 * Checks: a found name is canonical (target_host_parse of it gives it
 * back); a result for N bytes never depends on the bytes past N; every
 * prefix of a whole hello is "more"; a
 * classification made is kept when more bytes come; a found or absent
 * name is the same when bytes follow the record; peek_sni() on what is
 * not classified TLS says "bad".  A violation abort()s.
 *
 *	./fuzz_peek -max_total_time=30 tests/fuzz/corpus/peek
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/target.h"
#include "proxy/peek.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check(int ok)
{
	if (!ok)
		abort();
}

static void
check_found(const struct target_host *h)
{
	struct target_host again;

	check(h->len == strlen(h->name) && h->len > 0);
	check(target_host_parse(h->name, h->len, &again) == 0);
	check(again.kind == h->kind && strcmp(again.name, h->name) == 0);
}

/* Classification of every prefix: "more" until it is told, then fixed. */
static void
check_classify(const uint8_t *p, size_t n)
{
	enum peek_kind k = peek_classify(p, n), first = PEEK_MORE;
	size_t i;

	for (i = 0; i <= n && i <= 64; i++) {
		enum peek_kind ki = peek_classify(p, i);

		if (first == PEEK_MORE)
			first = ki;
		else
			check(ki == first);
	}
	check(n > 64 || k == first);
	if (k != PEEK_TLS && n > 0) {
		struct target_host h;

		check(peek_sni(p, n, &h) == PEEK_SNI_BAD ||
		    (n < 2 && p[0] == 0x16));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct target_host h, h2;
	uint8_t *copy;
	size_t i;
	int r;

	if (size > PEEK_MAX + 16)
		return 0;
	check_classify(data, size);
	/* A private copy, so that reading past SIZE is ASan's to catch. */
	if ((copy = malloc(size + 1)) == NULL)
		return 0;
	memcpy(copy, data, size);
	r = peek_sni(copy, size, &h);
	check(r >= PEEK_SNI_BAD && r <= PEEK_SNI_FOUND);
	if (r == PEEK_SNI_FOUND)
		check_found(&h);
	if (r == PEEK_SNI_FOUND || r == PEEK_SNI_NONE) {
		size_t rec = 5 + ((size_t)data[3] << 8 | data[4]);

		check(rec <= size);
		for (i = 0; i < rec; i += 1 + rec / 64)
			check(peek_sni(copy, i, &h2) == PEEK_SNI_MORE);
		check(peek_sni(copy, rec, &h2) == r);
		if (r == PEEK_SNI_FOUND)
			check(strcmp(h.name, h2.name) == 0);
	}
	free(copy);
	return 0;
}
