/*
 * fuzz_policy_parse.c: libFuzzer target for the policy parser.
 *
 * Feeds the input to policy_load_string() and, when it loads, asks the
 * policy a few fixed questions in both phases, then frees it: a leak,
 * an overflow or a broken invariant shows up under the sanitizers.
 * Inputs naming "include" are skipped, so that a run never reads files
 * (the parser resolves includes against the file system).  No secret is
 * ever read: loading a policy does not touch values.
 *
 *	./fuzz_policy_parse -max_total_time=60 tests/fuzz/corpus/policy_parse
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "policy/target.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

struct fuzz_req {
	const char *host;
	uint16_t port;
	const char *method; /* NULL: tunnel phase */
	const char *path;
	int tls;
};

static const struct fuzz_req reqs[] = {
    {"example.com", 443, NULL, NULL, 1},
    {"a.example.com", 443, "GET", "/a/b", 1},
    {"github.com", 443, "POST", "/acme/widgets.git/info/refs", 1},
    {"x.test", 80, "GET", "/", 0},
    {"10.1.2.3", 8080, NULL, NULL, 0},
    {"10.1.2.3", 80, "PUT", "/x/y", 0},
    {"2001:db8::1", 443, "DELETE", "/", 1},
    {"::1", 22, NULL, NULL, 0},
};

/* Every diagnostic has a message on one line, and a file when placed. */
static void
diag(void *arg, const struct policy_diag *d)
{
	size_t *n = arg;

	if (d->msg == NULL || strchr(d->msg, '\n') != NULL ||
	    (d->line != 0 && d->file == NULL))
		abort();
	(*n)++;
}

static void
decide_all(const struct policy *p)
{
	struct policy_request req = {0};
	struct policy_decision d;
	struct target_host h;
	size_t i;

	for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		if (target_host_parse(reqs[i].host, strlen(reqs[i].host), &h) !=
		    0)
			abort();
		req.host = &h;
		req.port = reqs[i].port;
		req.tls = reqs[i].tls;
		req.method = reqs[i].method;
		req.path = reqs[i].path;
		/* Every other request asks to switch protocols. */
		req.upgrade =
		    req.method != NULL && i % 2 ? "websocket, h2c" : NULL;
		policy_decide(p, &req, &d);
		if (memchr(d.reason, '\0', sizeof(d.reason)) == NULL)
			abort();
		if ((d.rule == NULL) != (d.rule_file == NULL) ||
		    (d.verdict == POLICY_ALLOW && d.rule == NULL))
			abort();
		if (d.intercept &&
		    (req.method != NULL || d.verdict != POLICY_ALLOW))
			abort();
	}
}

static void
query_all(const struct policy *p)
{
	struct target_host out[4];
	unsigned t;

	(void)policy_log_path(p);
	(void)policy_rule_count(p);
	(void)policy_warning_count(p);
	(void)policy_secrets(p);
	for (t = 0; t < POLICY_TIMEOUT_MAX; t++)
		if (policy_timeout(p, t) == 0)
			abort();
	(void)policy_resolve(p, "git.test", out, 4);
	(void)policy_resolve(p, "example.com", out, 4);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy *p = NULL;
	size_t ndiag = 0;
	char *text;
	int r;

	if (memmem(data, size, "include", 7) != NULL)
		return 0;
	/* An exact copy, so that reading past SIZE is caught. */
	if ((text = malloc(size ? size : 1)) == NULL)
		return 0;
	memcpy(text, data, size);
	r = policy_load_string("fuzz.conf", text, size, diag, &ndiag, &p);
	if ((r == 0) != (p != NULL))
		abort();
	if (p != NULL) {
		decide_all(p);
		query_all(p);
	} else if (ndiag == 0)
		abort(); /* a failed load says why */
	policy_free(p);
	free(text);
	return 0;
}
