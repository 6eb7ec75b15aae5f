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
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/grant.h"
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

/* The broker blocks: every policy has a name and absolute files, and
 * the questions a broker and a gateway ask get answers in range. */
static void
grants_all(const struct policy *p)
{
	static const gid_t gids[] = {100, 2001};
	static const char *const gnames[] = {"users", "ci"};
	const struct grant_user u = {1001, "alice", gids, gnames, 2};
	const struct grant_set *g = policy_grants(p);
	struct sockaddr_in6 s6 = {0};
	struct sockaddr_in s4 = {0};
	const char *const *files, *secret;
	unsigned line;
	size_t i, k, n;
	long r;

	for (i = 0; i < grant_count(g); i++) {
		files = grant_files(g, i, &n);
		if (grant_name(g, i) == NULL || n == 0 ||
		    grant_where(g, i, &line) == NULL ||
		    grant_find(g, grant_name(g, i)) != (long)i)
			abort();
		for (k = 0; k < n; k++)
			if (files[k][0] != '/')
				abort();
		(void)grant_admits_user(g, i, &u);
	}
	s4.sin_family = AF_INET;
	s4.sin_addr.s_addr = htonl(0x0a000307); /* 10.0.3.7 */
	s6.sin6_family = AF_INET6;
	s6.sin6_addr.s6_addr[0] = 0x20;
	s6.sin6_addr.s6_addr[1] = 0x01;
	s6.sin6_addr.s6_addr[2] = 0x0d;
	s6.sin6_addr.s6_addr[3] = 0xb8;
	for (i = 0; i < 4; i++) {
		r = grant_gateway(g,
		    i % 2 ? (const struct sockaddr *)&s6
		          : (const struct sockaddr *)&s4,
		    i < 2 ? NULL : "runner1", &secret);
		if (r >= (long)grant_count(g) || r < -1 ||
		    (r < 0 && secret != NULL))
			abort();
	}
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
		grants_all(p);
	} else if (ndiag == 0)
		abort(); /* a failed load says why */
	policy_free(p);
	free(text);
	return 0;
}
