/*
 * bench_policy.c: what a policy decision costs, at 10 and 10,000 rules.
 *
 * A policy of N rules is generated as text, in a realistic mix: about 60%
 * exact host names, 20% "*.suffix" wildcards, 10% CIDR blocks (IPv4 and
 * IPv6) and 10% rules with paths and methods, with a deny every twentieth
 * rule.  Then it measures
 *   - load: policy_load_string() of the whole text (parse, index, second
 *     pass), in milliseconds;
 *   - decide: ns per policy_decide() over a fixed mix of requests (hits on
 *     every kind of rule, and misses), in the tunnel phase and in the
 *     request phase, without and with target_host_parse() of the request
 *     host in the timed loop (the proxy parses each request's host).
 * Every figure is the median of RUNS runs.  The targets: under
 * 1 us per decision at 10,000 rules, and a 10,000-rule load under 50 ms.
 *
 *	cmake --build build --target bench_policy && ./build/bench_policy
 *	./build/bench_policy -n 1000000 -r 15
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/xmalloc.h"
#include "policy/policy.h"
#include "policy/target.h"

#define NREQ 4096 /* requests cycled through, a power of two */
#define MAXRUNS 101

struct buf {
	char *p;
	size_t len, cap;
};

struct bench_req {
	char host[TARGET_HOST_MAX];
	struct target_host h;
	uint16_t port;
	const char *method;
	char path[64];
};

struct bench {
	unsigned nrules;
	struct buf text;
	struct bench_req *req; /* NREQ of them */
	struct policy *p;
	long decisions;
	int runs;
};

struct result {
	double load_ms;
	double ns[2][2]; /* [request phase][with host parse] */
	double allowed; /* share of allowed requests, request phase */
};

static volatile unsigned sink;

static void bufprintf(struct buf *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

static void
bufprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0)
			fatalx("vsnprintf failed");
		if ((size_t)n < b->cap - b->len)
			break;
		b->cap = b->cap * 2 + n + 1;
		b->p = xreallocarray(b->p, b->cap, 1);
	}
	b->len += n;
}

static uint64_t
rng_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1DULL;
}

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* --- the policy --------------------------------------------------------- */

/* Rule I's kind: 0-5 exact, 6-7 wildcard, 8 CIDR, 9 paths/methods. */
static unsigned
rule_kind(unsigned i)
{
	return (i * 7) % 10;
}

static void
gen_rule(struct buf *b, unsigned i)
{
	static const char *const ports[] = {"", ":443", ":80,443", ":8080"};
	const char *verb = i % 20 == 19 ? "deny" : "allow";

	switch (rule_kind(i)) {
	case 6:
	case 7:
		bufprintf(b, "%s *.w%u.example.net:443\n", verb, i);
		break;
	case 8:
		if (i % 2)
			bufprintf(b, "allow 10.%u.%u.0/24:443\n", i >> 8 & 255,
			    i & 255);
		else
			bufprintf(b, "allow [2001:db8:%x::]/48:443\n", i);
		break;
	case 9:
		bufprintf(b,
		    "allow api%u.example.org:443 {\n"
		    "\tpaths /v1/* /repos/org%u/*\n"
		    "\tmethods GET POST\n}\n",
		    i, i);
		break;
	default:
		bufprintf(b, "%s h%u.svc%u.example.com%s\n", verb, i, i % 97,
		    ports[i % 4]);
		break;
	}
}

static void
gen_policy(struct bench *bn)
{
	unsigned i;

	bn->text.len = 0;
	bufprintf(&bn->text, "# bench_policy: %u rules\n", bn->nrules);
	for (i = 0; i < bn->nrules; i++)
		gen_rule(&bn->text, i);
}

/* --- the requests ------------------------------------------------------- */

/* A rule index of kind K (the first one if few rules), or a miss. */
static unsigned
pick_rule(const struct bench *bn, uint64_t *s, unsigned k)
{
	unsigned i, j;

	for (j = 0; j < 64; j++) {
		i = rng_next(s) % bn->nrules;
		if (rule_kind(i) == k || (k == 0 && rule_kind(i) < 6))
			return i;
	}
	for (i = 0; i < bn->nrules; i++)
		if (rule_kind(i) == k)
			return i;
	return 0;
}

static void
gen_hit(const struct bench *bn, uint64_t *s, struct bench_req *q, unsigned k)
{
	unsigned i = pick_rule(bn, s, k);

	q->port = 443;
	if (k == 0)
		snprintf(q->host, sizeof(q->host), "h%u.svc%u.example.com", i,
		    i % 97);
	else if (k == 6)
		snprintf(q->host, sizeof(q->host), "x%u.w%u.example.net",
		    (unsigned)(rng_next(s) % 1000), i);
	else if (k == 8 && i % 2)
		snprintf(q->host, sizeof(q->host), "10.%u.%u.%u", i >> 8 & 255,
		    i & 255, (unsigned)(rng_next(s) % 254 + 1));
	else if (k == 8)
		snprintf(q->host, sizeof(q->host), "2001:db8:%x::%x", i,
		    (unsigned)(rng_next(s) % 65535 + 1));
	else {
		snprintf(q->host, sizeof(q->host), "api%u.example.org", i);
		q->method = rng_next(s) % 4 ? "GET" : "DELETE";
		snprintf(q->path, sizeof(q->path),
		    rng_next(s) % 3 ? "/v1/items/%u" : "/other/%u", i);
	}
}

static void
gen_miss(uint64_t *s, struct bench_req *q)
{
	unsigned v = rng_next(s) % 100000;

	q->port = rng_next(s) % 2 ? 443 : 8443;
	switch (rng_next(s) % 3) {
	case 0:
		snprintf(
		    q->host, sizeof(q->host), "nohost%u.example.invalid", v);
		break;
	case 1:
		snprintf(q->host, sizeof(q->host), "a%u.b.c.d.example.com", v);
		break;
	default:
		snprintf(q->host, sizeof(q->host), "192.0.2.%u", v % 256);
		break;
	}
}

/* 25% exact hits, 15% wildcard, 10% CIDR, 15% paths rules, 35% misses. */
static void
gen_requests(struct bench *bn)
{
	struct bench_req *q;
	uint64_t s = 0x9E3779B97F4A7C15ULL;
	unsigned i, k;

	for (i = 0; i < NREQ; i++) {
		q = &bn->req[i];
		memset(q, 0, sizeof(*q));
		q->method = "GET";
		snprintf(q->path, sizeof(q->path), "/index.html");
		k = rng_next(&s) % 100;
		if (k < 25)
			gen_hit(bn, &s, q, 0);
		else if (k < 40)
			gen_hit(bn, &s, q, 6);
		else if (k < 50)
			gen_hit(bn, &s, q, 8);
		else if (k < 65)
			gen_hit(bn, &s, q, 9);
		else
			gen_miss(&s, q);
		if (target_host_parse(q->host, strlen(q->host), &q->h) != 0)
			fatalx("bad request host %s", q->host);
	}
}

/* --- measuring ---------------------------------------------------------- */

static void
load_diag(void *arg, const struct policy_diag *d)
{
	(void)arg;
	if (!d->warning)
		log_warnx("%s:%u:%u: %s", d->file ? d->file : "-", d->line,
		    d->col, d->msg);
}

static double
time_load(struct bench *bn)
{
	struct policy *p;
	double t0, t1;

	t0 = now_ns();
	if (policy_load_string("bench.conf", bn->text.p, bn->text.len,
	        load_diag, NULL, &p) != 0)
		fatalx("the generated policy does not load");
	t1 = now_ns();
	policy_free(bn->p);
	bn->p = p;
	return (t1 - t0) / 1e6;
}

/* One run: ns per decision, request phase or tunnel, parse or not. */
static double
time_decide(const struct bench *bn, int request, int parse)
{
	struct policy_request req = {0};
	struct policy_decision d;
	struct target_host h;
	const struct bench_req *q;
	unsigned allowed = 0;
	double t0, t1;
	long i;

	req.tls = 1;
	t0 = now_ns();
	for (i = 0; i < bn->decisions; i++) {
		q = &bn->req[i & (NREQ - 1)];
		if (parse &&
		    target_host_parse(q->host, strlen(q->host), &h) != 0)
			fatalx("bad host");
		req.host = parse ? &h : &q->h;
		req.port = q->port;
		req.method = request ? q->method : NULL;
		req.path = q->path;
		allowed += policy_decide(bn->p, &req, &d) == POLICY_ALLOW;
	}
	t1 = now_ns();
	sink += allowed;
	return (t1 - t0) / bn->decisions;
}

static double
share_allowed(const struct bench *bn)
{
	struct policy_request req = {0};
	struct policy_decision d;
	unsigned i, n = 0;

	for (i = 0; i < NREQ; i++) {
		req.host = &bn->req[i].h;
		req.port = bn->req[i].port;
		req.tls = 1;
		req.method = bn->req[i].method;
		req.path = bn->req[i].path;
		n += policy_decide(bn->p, &req, &d) == POLICY_ALLOW;
	}
	return 100.0 * n / NREQ;
}

static void
measure(struct bench *bn, struct result *res)
{
	double v[MAXRUNS];
	int r, request, parse;

	gen_policy(bn);
	gen_requests(bn);
	for (r = 0; r < bn->runs; r++)
		v[r] = time_load(bn);
	res->load_ms = median(v, bn->runs);
	for (request = 0; request < 2; request++)
		for (parse = 0; parse < 2; parse++) {
			for (r = 0; r < bn->runs; r++)
				v[r] = time_decide(bn, request, parse);
			res->ns[request][parse] = median(v, bn->runs);
		}
	res->allowed = share_allowed(bn);
	policy_free(bn->p);
	bn->p = NULL;
}

static void
print_result(const struct bench *bn, const struct result *res)
{
	printf("%6u %8zu %9.3f %9.1f %9.1f %9.1f %9.1f %7.1f%%\n", bn->nrules,
	    bn->text.len, res->load_ms, res->ns[0][0], res->ns[0][1],
	    res->ns[1][0], res->ns[1][1], res->allowed);
}

static __attribute__((noreturn)) void
usage(void)
{
	fprintf(stderr, "usage: bench_policy [-n decisions] [-r runs]\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	static const unsigned sizes[] = {10, 10000};
	struct bench bn;
	struct result res;
	size_t i;
	int ch;

	log_init("bench_policy", 0);
	memset(&bn, 0, sizeof(bn));
	bn.decisions = 1000000;
	bn.runs = 15;
	while ((ch = getopt(argc, argv, "n:r:")) != -1) {
		if (ch == 'n' && (bn.decisions = atol(optarg)) > 0)
			continue;
		if (ch == 'r' && (bn.runs = atoi(optarg)) > 0 &&
		    bn.runs <= MAXRUNS)
			continue;
		usage();
	}
	bn.req = xcalloc(NREQ, sizeof(*bn.req));
	bn.text.cap = 4096;
	bn.text.p = xmalloc(bn.text.cap);
	printf("median of %d runs; %ld decisions per run over %d requests\n",
	    bn.runs, bn.decisions, NREQ);
	printf("%6s %8s %9s %9s %9s %9s %9s %8s\n", "rules", "bytes", "load ms",
	    "tunnel", "+parse", "request", "+parse", "allowed");
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		bn.nrules = sizes[i];
		measure(&bn, &res);
		print_result(&bn, &res);
	}
	printf("tunnel/request: ns per policy_decide(); +parse: with "
	       "target_host_parse()\nof the request host in the loop; "
	       "allowed: request phase.\n");
	free(bn.req);
	free(bn.text.p);
	return 0;
}
