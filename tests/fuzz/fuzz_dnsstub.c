/*
 * fuzz_dnsstub.c: libFuzzer target for proxy/dnsstub.c, the reader of
 * the DNS queries a sandboxed program sends to its stub.
 *
 * The input is one query (as a UDP datagram brings it), then the same
 * bytes as a TCP stream cut by its length prefixes.  Each accepted query
 * is answered twice: without capture (REFUSED), and with capture under a
 * fixed policy (names under "a" and "test" allowed, under "no.test"
 * denied), through one map of synthetic addresses for the whole run.
 *
 * Checks: an accepted query's name is a canonical host name of at most
 * 253 bytes (lower case, labels of letters, digits, '-' and '_') and its
 * question lies inside the input; an answer is never longer than the
 * buffer, never sent to a response, echoes the id, has QR set and is the
 * question as asked for an accepted query; with capture, NXDOMAIN or
 * NOERROR as the policy says, a record exactly for A and AAAA in class
 * IN, named by a pointer to the question, holding a synthetic address
 * that maps back to the name; the audit word fits its field (16 bytes);
 * the map stays within SYNTH_MAX; a TCP frame's length is a query's
 * length or 0.  A violation abort()s.
 *
 *	./fuzz_dnsstub -max_total_time=60 tests/fuzz/corpus/dnsstub
 */
#include <sys/socket.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "policy/target.h"
#include "proxy/dnsstub.h"
#include "proxy/synth.h"

static const char policy_text[] = "allow *.a\n"
                                  "allow *.test:22\n"
                                  "deny *.no.test\n";

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

/* Does NAME end in the label sequence SUFFIX (".a"), below it? */
static int
under(const char *name, const char *suffix)
{
	size_t n = strlen(name), k = strlen(suffix);

	return n > k && strcmp(name + n - k, suffix) == 0;
}

/* The answer to accepted query Q of P (N bytes) in OUT (LEN bytes). */
static void
check_capture(const uint8_t *p, const struct dnsstub_query *q,
    const struct dnsstub_answer *a, const uint8_t *out, size_t len,
    struct synth *sy)
{
	int allowed =
	    (under(q->host.name, ".a") || under(q->host.name, ".test")) &&
	    !under(q->host.name, ".no.test");
	int rec =
	    allowed && q->qclass == 1 && (q->qtype == 1 || q->qtype == 28);
	size_t alen = q->qtype == 1 ? 4 : 16;
	char back[TARGET_HOST_MAX];

	check(a->word != NULL && strlen(a->word) < 16);
	check((out[3] & 0x80) &&
	    (out[3] & 0x0f) == (allowed ? DNSSTUB_NOERROR : DNSSTUB_NXDOMAIN));
	check(memcmp(out + 12, p + 12, q->qend - 12) == 0);
	check(out[7] == rec && out[9] == 0 && out[11] == 0);
	if (!rec) {
		check(len == q->qend);
		return;
	}
	check(len == q->qend + 12 + alen);
	out += q->qend;
	check(out[0] == 0xc0 && out[1] == 12 && out[2] == 0 &&
	    out[3] == q->qtype && out[4] == 0 && out[5] == 1 &&
	    out[11] == alen);
	check(synth_name(sy, alen == 4 ? AF_INET : AF_INET6, out + 12, back,
	          sizeof(back)) == 0 &&
	    strcmp(back, q->host.name) == 0);
	check(synth_count(sy) <= SYNTH_MAX);
}

static void
one(const uint8_t *p, size_t n, const struct policy *pol, struct synth *sy)
{
	struct dnsstub_query q;
	struct dnsstub_answer a;
	uint8_t out[DNSSTUB_ANSWER_MAX];
	int err = dnsstub_parse(p, n, &q);
	size_t len;

	if (err == DNSSTUB_OK) {
		check_name(&q);
		check(q.qend >= 12 + 1 + 4 && q.qend <= n &&
		    q.qend <= DNSSTUB_QUERY_MAX);
		dnsstub_decide(&q, NULL, NULL, &a);
		check(a.rcode == DNSSTUB_REFUSED && a.rtype == 0);
	}
	len = dnsstub_respond(p, n, err, &q, &a, out);
	check(len <= sizeof(out));
	if (len == 0) {
		check(n < 12 || err == DNSSTUB_E_RESPONSE);
		return;
	}
	check(len >= 12 && (out[2] & 0x80) && out[0] == p[0] && out[1] == p[1]);
	if (err != DNSSTUB_OK)
		return;
	check(len == q.qend && memcmp(out + 12, p + 12, len - 12) == 0);
	dnsstub_decide(&q, pol, sy, &a);
	len = dnsstub_respond(p, n, err, &q, &a, out);
	check(len <= sizeof(out) && out[0] == p[0] && out[1] == p[1]);
	check_capture(p, &q, &a, out, len, sy);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct policy *pol;
	static struct synth *sy;
	size_t off = 0, len;

	if (pol == NULL &&
	    (policy_load_string("fuzz.conf", policy_text,
	         sizeof(policy_text) - 1, NULL, NULL, &pol) != 0 ||
	        (sy = synth_new()) == NULL))
		abort();
	one(data, size, pol, sy);
	while (off + 2 <= size) {
		len = dnsstub_tcp_len(data + off);
		check(len == 0 || (len >= 12 && len <= DNSSTUB_QUERY_MAX));
		if (len == 0 || off + 2 + len > size)
			break;
		one(data + off + 2, len, pol, sy);
		off += 2 + len;
	}
	return 0;
}
