/*
 * fuzz_inject.c: libFuzzer target for the stand-in tripwire and swap of
 * inject.c (inject_leak, inject_add_field: Basic decoding, percent
 * decoding, the runs of fields), on request heads from the sandbox.
 *
 * The policy binds NPM (header X-Api-Key too) on reg.test and nothing on
 * other.test.  Every 0x01 byte of the input becomes the run's stand-in,
 * so that the fuzzer can place it anywhere; the result is parsed with
 * http_parse_request().  Checked, for a head that parses: a stand-in in
 * the target, or anywhere toward other.test, is a leak; toward reg.test,
 * when no leak is found, every field can be written and the stand-in
 * does not remain as is in what goes upstream.  A violation abort()s.
 *
 *	./fuzz_inject -max_total_time=60 tests/fuzz/corpus/inject
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "policy/policy.h"
#include "policy/secret.h"
#include "proxy/http.h"
#include "proxy/inject.h"

int LLVMFuzzerInitialize(int *, char ***);
int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define MAXLEN 8192

static struct policy *pol;
static struct inject_standins *si;
static struct policy_decision bound, other;
static const char *standin;

static void
check(int ok)
{
	if (!ok)
		abort();
}

static void
decide(const char *host, struct policy_decision *d)
{
	struct policy_request q = {0};
	struct target_host h;

	check(target_host_parse(host, strlen(host), &h) == 0);
	q.host = &h;
	q.port = 443;
	q.tls = 1;
	q.method = "GET";
	q.path = "/";
	check(policy_decide(pol, &q, d) == POLICY_ALLOW);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char text[] =
	    "secret npm env PH_FUZZ_NPM\n"
	    "allow reg.test { placeholder NPM npm header X-Api-Key }\n"
	    "allow other.test { methods GET }\n";

	(void)argc;
	(void)argv;
	setenv("PH_FUZZ_NPM", "npm_0123456789abcdefghijABCDEFGHIJ012345", 1);
	check(policy_load_string(
	          "f.conf", text, strlen(text), NULL, NULL, &pol) == 0);
	check(secret_store_load(policy_secrets(pol), NULL, NULL) == 0);
	check((si = inject_standins_new(pol)) != NULL);
	standin = inject_standin_value(si, 0);
	decide("reg.test", &bound);
	decide("other.test", &other);
	return 0;
}

/* DATA with every 0x01 replaced by the stand-in, in a new buffer. */
static char *
expand(const uint8_t *data, size_t size, size_t *len)
{
	size_t n = strlen(standin), i, o = 0;
	char *buf = malloc(size * n + 1);

	check(buf != NULL);
	for (i = 0; i < size; i++)
		if (data[i] == 1) {
			memcpy(buf + o, standin, n);
			o += n;
		} else
			buf[o++] = (char)data[i];
	*len = o;
	return buf;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why = NULL, *used = NULL;
	struct http_head h;
	struct evbuffer *out;
	size_t len, i;
	char *buf;
	int r;

	if (size > MAXLEN)
		return 0;
	buf = expand(data, size, &len);
	r = http_parse_request(buf, len, &h, &why);
	if (r <= 0) {
		free(buf);
		return 0;
	}
	if (memmem(h.target, h.target_len, standin, strlen(standin)) != NULL) {
		check(inject_leak(si, &h, &bound, 1, NULL) == 0);
		check(inject_leak(si, &h, &other, 1, NULL) == 0);
	}
	if (memmem(buf, (size_t)r, standin, strlen(standin)) != NULL)
		check(inject_leak(si, &h, &other, 1, NULL) == 0 &&
		    inject_leak(si, &h, NULL, 1, NULL) == 0 &&
		    inject_leak(si, &h, &bound, 0, NULL) == 0);
	if (inject_leak(si, &h, &bound, 1, NULL) == -1) {
		check((out = evbuffer_new()) != NULL);
		for (i = 0; i < h.nfields; i++)
			check(inject_add_field(
			          out, &h.fields[i], si, &bound, &used) == 0);
		check(
		    evbuffer_search(out, standin, strlen(standin), NULL).pos ==
		    -1);
		evbuffer_free(out);
	}
	free(buf);
	return 0;
}
