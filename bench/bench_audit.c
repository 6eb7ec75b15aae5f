/*
 * bench_audit.c: what an audit record costs the proxy, formatted and
 * written with audit_write() to /dev/null (the write(2) is in the figure,
 * the disk is not).
 *
 * Each "request" is the two records of an intercepted keep-alive request,
 * as proxy/session.c writes them: the decision ("request", allowed, with
 * rule and injected secret's name) and the "end" (status, bytes, ms).
 * Prints ns per record, records/s and CPU us per request pair, the median
 * of RUNS runs.  With -t N, N threads share one struct audit (the workers
 * of `pinhole proxy --workers N`): the figures are then per thread's
 * record, and lock contention shows as a higher CPU cost.
 *
 * It uses the public audit.h only, so the same file builds against an
 * older audit.c (bench/README.md, "audit writer"):
 *	cmake --build build --target bench_audit && ./build/bench_audit
 *	./build/bench_audit -n 200000 -r 7 -t 2
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"

#define MAXRUNS 101
#define MAXTHREADS 64

struct bench {
	struct audit *a;
	long n; /* request pairs per thread and run */
	int bad;
	pthread_t t;
};

static double
now(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The two records of request I on connection CONN. */
static int
write_pair(struct audit *a, uint64_t conn, long i)
{
	struct audit_rec r;
	int rc;

	audit_rec_init(&r, "request", conn);
	r.method = "GET";
	r.via = "proxy";
	r.host = "api.example.com";
	r.port = 443;
	r.path = "/repos/acme/widgets/pulls?state=open";
	r.decision = "allow";
	r.rule_file = "/etc/pinhole/ci.conf";
	r.rule_line = 12;
	r.secret = "gh-token";
	rc = audit_write(a, &r);
	audit_rec_init(&r, "end", conn);
	r.method = "GET";
	r.via = "proxy";
	r.host = "api.example.com";
	r.port = 443;
	r.path = "/repos/acme/widgets/pulls?state=open";
	r.rule_file = "/etc/pinhole/ci.conf";
	r.rule_line = 12;
	r.addr = "192.0.2.10";
	r.status = 200;
	r.bytes_up = 412 + i % 7;
	r.bytes_down = 5321 + i % 13;
	r.ms = i % 5;
	r.secret = "gh-token";
	return rc | audit_write(a, &r);
}

static void *
run(void *arg)
{
	struct bench *b = arg;
	long i;

	for (i = 0; i < b->n; i++)
		b->bad |= write_pair(b->a, (uint64_t)(i / 100), i) != 0;
	return NULL;
}

static int
cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/* One run: NT threads of N pairs each; *CPU and *WALL in seconds. */
static int
one_run(struct audit *a, long n, int nt, double *cpu, double *wall)
{
	struct bench b[MAXTHREADS];
	double c0 = now(CLOCK_PROCESS_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);
	int i, bad = 0;

	for (i = 0; i < nt; i++) {
		b[i].a = a;
		b[i].n = n;
		b[i].bad = 0;
		if (pthread_create(&b[i].t, NULL, run, &b[i]) != 0)
			return -1;
	}
	for (i = 0; i < nt; i++) {
		pthread_join(b[i].t, NULL);
		bad |= b[i].bad;
	}
	*cpu = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
	*wall = now(CLOCK_MONOTONIC) - w0;
	return bad ? -1 : 0;
}

int
main(int argc, char **argv)
{
	double cpu[MAXRUNS], wall[MAXRUNS], recs;
	long n = 100000;
	int runs = 5, nt = 1, c, i;
	struct audit *a;
	char err[256];

	while ((c = getopt(argc, argv, "n:r:t:")) != -1) {
		if (c == 'n')
			n = atol(optarg);
		else if (c == 'r')
			runs = atoi(optarg);
		else if (c == 't')
			nt = atoi(optarg);
		else
			return 2;
	}
	if (n < 1 || runs < 1 || runs > MAXRUNS || nt < 1 || nt > MAXTHREADS)
		return 2;
	if ((a = audit_open(
	         "/dev/null", "0123456789abcdef", err, sizeof(err))) == NULL) {
		fprintf(stderr, "bench_audit: %s\n", err);
		return 1;
	}
	for (i = 0; i < runs; i++)
		if (one_run(a, n, nt, &cpu[i], &wall[i]) != 0) {
			fprintf(stderr, "bench_audit: audit_write failed\n");
			return 1;
		}
	audit_close(a);
	qsort(cpu, (size_t)runs, sizeof(double), cmp);
	qsort(wall, (size_t)runs, sizeof(double), cmp);
	recs = 2.0 * (double)n * nt;
	printf("threads %d, %ld request pairs each, median of %d runs:\n", nt,
	    n, runs);
	printf("  %.0f ns CPU per record, %.2f us CPU per request "
	       "(2 records)\n",
	    cpu[runs / 2] / recs * 1e9, cpu[runs / 2] / recs * 2e6);
	printf("  %.0f records/s (wall)\n", recs / wall[runs / 2]);
	return 0;
}
