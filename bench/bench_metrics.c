/*
 * bench_metrics.c: what a metrics update costs on a worker's shard, next
 * to the same update on one object (what every update was before shards)
 * and next to a counter shared by all threads with an atomic add (what a
 * shared object would cost).
 *
 * Rows, each in ns of the calling thread's CPU time per call, the median
 * of RUNS runs of N calls:
 *   - request: metrics_request() of a series already known (64 hosts,
 *     two decisions, two rules: the label text, two table look-ups, the
 *     counters and the decision histogram), the proxy's hot call;
 *   - small: the mean of metrics_bytes(), metrics_connection(+1),
 *     metrics_connection(-1) and metrics_connected();
 * on: the root alone (one thread); one shard (one thread); T threads,
 * each on its own shard, at once (ns per call in each thread: equal to
 * one thread's when nothing is shared); and, for scale, T threads doing
 * atomic_fetch_add on one shared counter against T threads each adding
 * to its own (a plain load and store, as a shard does).  A scrape is
 * not running: the cost it adds to a worker is nil, it only reads.
 *
 * Built with -DBENCH_BASE against an older proxy/metrics.c (no shards)
 * it prints the "root" rows only, for a before/after in one sitting:
 *
 *	cmake --build build --target bench_metrics && ./build/bench_metrics
 *	./build/bench_metrics -n 1000000 -r 9 -t 2
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proxy/metrics.h"

#define MAXRUNS 101
#define MAXTHREADS 64
#define NHOSTS 64

static long ncalls = 1000000;
static int runs = 9, nthreads = 2;
static char hosts[NHOSTS][32];

static double
now_ns(void)
{
	struct timespec ts;

	/* the calling thread's CPU time: steady on a loaded machine, and
	 * cache-line stalls between threads still count in it */
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
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
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* Request I of the cycle: 64 hosts, two decisions, two rules. */
static void
request(struct metrics *m, long i)
{
	struct metrics_req r = {.via = "proxy", .decided = 1, .port = 443};

	r.rule_file = "conf/pinhole.conf";
	r.host = hosts[i % NHOSTS];
	r.decision = i & 64 ? "allow" : "deny";
	r.rule_line = i & 128 ? 12 : 40;
	r.decision_us = i & 1023;
	metrics_request(m, &r);
}

/* N requests of known series into M; ns per call. */
static double
run_requests(struct metrics *m, long n)
{
	double t0;
	long i;

	for (i = 0; i < NHOSTS * 4; i++)
		request(m, i); /* every series known from here */
	t0 = now_ns();
	for (i = 0; i < n; i++)
		request(m, i);
	return (now_ns() - t0) / (double)n;
}

/* N small updates into M, four kinds in turn; ns per call. */
static double
run_small(struct metrics *m, long n)
{
	double t0 = now_ns();
	long i;

	for (i = 0; i < n; i += 4) {
		metrics_bytes(m, (uint64_t)i, 2);
		metrics_connection(m, 1);
		metrics_connection(m, -1);
		metrics_connected(m, i & 0xffff);
	}
	return (now_ns() - t0) / (double)n;
}

/* The median of RUNS runs of F on M. */
static double
med(double (*f)(struct metrics *, long), struct metrics *m)
{
	double v[MAXRUNS];
	int i;

	for (i = 0; i < runs; i++)
		v[i] = f(m, ncalls);
	return median(v, runs);
}

static void
row(const char *name, double req, double small)
{
	printf("%-34s %10.1f %10.1f\n", name, req, small);
}

#ifndef BENCH_BASE
struct worker {
	pthread_t tid;
	struct metrics *m;
	double req, small;
};

static pthread_barrier_t start;

static void *
worker_run(void *arg)
{
	struct worker *w = arg;
	double vr[MAXRUNS], vs[MAXRUNS];
	int i;

	for (i = 0; i < runs; i++) {
		pthread_barrier_wait(&start);
		vr[i] = run_requests(w->m, ncalls);
		pthread_barrier_wait(&start);
		vs[i] = run_small(w->m, ncalls);
	}
	w->req = median(vr, runs);
	w->small = median(vs, runs);
	return NULL;
}

/* NTHREADS threads at once, each on a shard of ROOT: mean ns per call. */
static void
run_shards(struct metrics *root, double *req, double *small)
{
	struct worker w[MAXTHREADS];
	int i;

	pthread_barrier_init(&start, NULL, (unsigned)nthreads);
	for (i = 0; i < nthreads; i++) {
		if ((w[i].m = metrics_shard_new(root)) == NULL)
			abort();
		pthread_create(&w[i].tid, NULL, worker_run, &w[i]);
	}
	*req = *small = 0;
	for (i = 0; i < nthreads; i++) {
		pthread_join(w[i].tid, NULL);
		*req += w[i].req / nthreads;
		*small += w[i].small / nthreads;
	}
	pthread_barrier_destroy(&start);
}

/* One counter every thread adds to, or one per thread (a cache line). */
struct counter {
	_Alignas(64) _Atomic uint64_t v;
};
static struct counter counters[MAXTHREADS];
static int shared_counter;

static void *
counter_run(void *arg)
{
	_Atomic uint64_t *c = &counters[shared_counter ? 0 : (intptr_t)arg].v;
	double t0, *ns = malloc(sizeof(*ns));
	long i;

	pthread_barrier_wait(&start);
	t0 = now_ns();
	for (i = 0; i < ncalls; i++) {
		if (shared_counter)
			atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
		else
			atomic_store_explicit(c,
			    atomic_load_explicit(c, memory_order_relaxed) + 1,
			    memory_order_relaxed);
	}
	*ns = (now_ns() - t0) / (double)ncalls;
	return ns;
}

/* Median over runs of the mean ns per add over NTHREADS threads. */
static double
run_counter(int shared)
{
	pthread_t tid[MAXTHREADS];
	double v[MAXRUNS], sum, *ns;
	int r, i;

	shared_counter = shared;
	for (r = 0; r < runs; r++) {
		pthread_barrier_init(&start, NULL, (unsigned)nthreads);
		for (i = 0; i < nthreads; i++)
			pthread_create(
			    &tid[i], NULL, counter_run, (void *)(intptr_t)i);
		for (sum = 0, i = 0; i < nthreads; i++) {
			pthread_join(tid[i], (void **)&ns);
			sum += *ns / nthreads;
			free(ns);
		}
		pthread_barrier_destroy(&start);
		v[r] = sum;
	}
	return median(v, runs);
}
#endif

int
main(int argc, char **argv)
{
	struct metrics *root;
	char name[64];
	int c, i;

	while ((c = getopt(argc, argv, "n:r:t:")) != -1) {
		if (c == 'n')
			ncalls = atol(optarg);
		else if (c == 'r')
			runs = atoi(optarg);
		else if (c == 't')
			nthreads = atoi(optarg);
		else
			return 2;
	}
	if (ncalls < 4 || runs < 1 || runs > MAXRUNS || nthreads < 1 ||
	    nthreads > MAXTHREADS)
		return 2;
	for (i = 0; i < NHOSTS; i++)
		snprintf(hosts[i], sizeof(hosts[i]), "host%d.example.com", i);
	printf("median of %d runs of %ld calls; ns of CPU per call\n", runs,
	    ncalls);
	printf("%-34s %10s %10s\n", "", "request", "small");
	if ((root = metrics_new(0)) == NULL)
		return 1;
	row("root, 1 thread", med(run_requests, root), med(run_small, root));
#ifndef BENCH_BASE
	{
		struct metrics *s = metrics_shard_new(root);
		double req, small;

		if (s == NULL)
			return 1;
		row("shard, 1 thread", med(run_requests, s), med(run_small, s));
		run_shards(root, &req, &small);
		snprintf(
		    name, sizeof(name), "shards, %d threads at once", nthreads);
		row(name, req, small);
		snprintf(
		    name, sizeof(name), "own counter, %d threads", nthreads);
		row(name, 0, run_counter(0));
		snprintf(name, sizeof(name), "one atomic_fetch_add, %d threads",
		    nthreads);
		row(name, 0, run_counter(1));
	}
#else
	(void)name;
#endif
	metrics_free(root);
	return 0;
}
