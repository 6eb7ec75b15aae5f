/*
 * fuzz_dnsstub.c: libFuzzer target for proxy/dnsstub.c, the reader of
 * the DNS queries a sandboxed program sends to its stub.
 *
 * The input is one query (as a UDP datagram brings it), then the same
 * bytes as a TCP stream cut by its length prefixes.
 *
 * Checks: an accepted query's name is a canonical host name of at most
 * 253 bytes (lower case, labels of letters, digits, '-' and '_') and its
 * question lies inside the input; an answer is never longer than the
 * buffer, never sent to a response, echoes the id, has QR set and is the
 * question as asked for an accepted query; a TCP frame's length is a
 * query's length or 0.  A violation abort()s.
 *
 *	./fuzz_dnsstub -max_total_time=60 tests/fuzz/corpus/dnsstub
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/dnsstub.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check(int ok)
{
	if (!ok)
		abort();
}

static void
check_name(const struct dnsstub_query *q)
{
	const char *s = q->host.name;
	size_t i, label = 0;

	check(
	    q->host.len == strlen(s) && q->host.len > 0 && q->host.len <= 253);
	for (i = 0; s[i] != '\0'; i++) {
		if (s[i] == '.') {
			check(label > 0);
			label = 0;
			continue;
		}
		check((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_');
		check(++label <= 63);
	}
	check(label > 0);
}

static void
one(const uint8_t *p, size_t n)
{
	struct dnsstub_query q;
	uint8_t out[DNSSTUB_ANSWER_MAX];
	int err = dnsstub_parse(p, n, &q);
	size_t len;

	if (err == DNSSTUB_OK) {
		check_name(&q);
		check(q.qend >= 12 + 1 + 4 && q.qend <= n &&
		    q.qend <= DNSSTUB_QUERY_MAX);
	}
	len = dnsstub_respond(p, n, err, &q, out);
	check(len <= sizeof(out));
	if (len == 0) {
		check(n < 12 || err == DNSSTUB_E_RESPONSE);
		return;
	}
	check(len >= 12 && (out[2] & 0x80) && out[0] == p[0] && out[1] == p[1]);
	if (err == DNSSTUB_OK)
		check(len == q.qend && memcmp(out + 12, p + 12, len - 12) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0, len;

	one(data, size);
	while (off + 2 <= size) {
		len = dnsstub_tcp_len(data + off);
		check(len == 0 || (len >= 12 && len <= DNSSTUB_QUERY_MAX));
		if (len == 0 || off + 2 + len > size)
			break;
		one(data + off + 2, len);
		off += 2 + len;
	}
	return 0;
}
