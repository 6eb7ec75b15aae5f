/*
 * test_pipepool.c: proxy/pipepool.c.  Take and give (an idle pipe is
 * handed out again, not a new one), the bound on pipes open and on idle
 * ones, a pipe given back with bytes in it closed, the NULL pool, and a
 * real EMFILE from pipe2() under a low RLIMIT_NOFILE: take fails, the
 * counts stay right, and it works again once descriptors are free.
 */
#include <sys/resource.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "proxy/pipepool.h"

static int
is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

/* An empty pipe given back is kept and handed out again. */
static void
test_take_give(void **state)
{
	struct pipepool *pool = pipepool_new(4, 2);
	int a[2], b[2];

	(void)state;
	assert_non_null(pool);
	assert_int_equal(pipepool_take(pool, a), 0);
	assert_true(is_open(a[0]) && is_open(a[1]));
	assert_true(fcntl(a[0], F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(a[1], F_GETFD) & FD_CLOEXEC);
	assert_int_equal(write(a[1], "x", 1), 1); /* the read end is a[0] */
	assert_int_equal(read(a[0], (char[1]){0}, 1), 1);
	assert_int_equal(pipepool_busy(pool), 1);
	b[0] = a[0];
	b[1] = a[1];
	pipepool_give(pool, a, 1);
	assert_int_equal(a[0], -1);
	assert_int_equal(a[1], -1);
	assert_int_equal(pipepool_busy(pool), 0);
	assert_int_equal(pipepool_idle(pool), 1);
	assert_true(is_open(b[0]));
	assert_int_equal(pipepool_take(pool, a), 0);
	assert_int_equal(a[0], b[0]); /* the same pipe */
	assert_int_equal(a[1], b[1]);
	assert_int_equal(pipepool_idle(pool), 0);
	pipepool_give(pool, a, 1);
	pipepool_free(pool); /* closes the idle one */
	assert_false(is_open(b[0]));
	assert_false(is_open(b[1]));
}

/* At most MAX_PIPES open, at most MAX_IDLE kept; a full pipe is closed. */
static void
test_bounds(void **state)
{
	struct pipepool *pool = pipepool_new(3, 1);
	int p[4][2], keep[2];
	int i;

	(void)state;
	for (i = 0; i < 3; i++)
		assert_int_equal(pipepool_take(pool, p[i]), 0);
	errno = 0;
	assert_int_equal(pipepool_take(pool, p[3]), -1);
	assert_int_equal(errno, EMFILE);
	assert_int_equal(p[3][0], -1);
	assert_int_equal(pipepool_busy(pool), 3);
	keep[0] = p[0][0];
	keep[1] = p[1][0];
	assert_int_equal(write(p[2][1], "x", 1), 1);
	pipepool_give(pool, p[0], 1); /* kept */
	pipepool_give(pool, p[1], 1); /* over MAX_IDLE: closed */
	assert_true(is_open(keep[0]));
	assert_false(is_open(keep[1]));
	keep[1] = p[2][0];
	pipepool_give(pool, p[2], 0); /* not empty: closed */
	assert_false(is_open(keep[1]));
	assert_int_equal(pipepool_busy(pool), 0);
	assert_int_equal(pipepool_idle(pool), 1);
	pipepool_free(pool);
	assert_false(is_open(keep[0]));
}

/* A pool of 0 never hands out a pipe; a NULL pool always makes one. */
static void
test_zero_and_null(void **state)
{
	struct pipepool *pool = pipepool_new(0, 8);
	int p[2], keep;

	(void)state;
	assert_non_null(pool);
	errno = 0;
	assert_int_equal(pipepool_take(pool, p), -1);
	assert_int_equal(errno, EMFILE);
	pipepool_free(pool);
	assert_int_equal(pipepool_take(NULL, p), 0);
	keep = p[0];
	assert_int_equal(pipepool_busy(NULL), 0);
	pipepool_give(NULL, p, 1);
	assert_false(is_open(keep));
	assert_int_equal(p[0], -1);
	pipepool_free(NULL);
}

/* pipe2() fails with EMFILE: take says so and nothing is counted. */
static void
test_emfile(void **state)
{
	struct pipepool *pool = pipepool_new(16, 4);
	struct rlimit old, low;
	int fill[64], nfill = 0, p[2], q[2], fd;

	(void)state;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(pipepool_take(pool, q), 0); /* one busy before */
	fd = dup(0);
	assert_true(fd >= 0);
	close(fd);
	low = old;
	low.rlim_cur = (rlim_t)fd + 2; /* room for two more: one pipe */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	while (nfill < 64 && (fd = dup(0)) >= 0)
		fill[nfill++] = fd;
	assert_int_equal(errno, EMFILE);
	errno = 0;
	assert_int_equal(pipepool_take(pool, p), -1);
	assert_int_equal(errno, EMFILE);
	assert_int_equal(p[0], -1);
	assert_int_equal(pipepool_busy(pool), 1);
	close(fill[--nfill]); /* one free: still not enough for a pipe */
	assert_int_equal(pipepool_take(pool, p), -1);
	pipepool_give(pool, q, 1); /* idle now: handed out without pipe2 */
	assert_int_equal(pipepool_take(pool, p), 0);
	assert_int_equal(pipepool_busy(pool), 1);
	while (nfill > 0)
		close(fill[--nfill]);
	assert_int_equal(pipepool_take(pool, q), 0); /* room again */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	pipepool_give(pool, p, 1);
	pipepool_give(pool, q, 1);
	assert_int_equal(pipepool_idle(pool), 2);
	pipepool_free(pool);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_take_give),
	    cmocka_unit_test(test_bounds),
	    cmocka_unit_test(test_zero_and_null),
	    cmocka_unit_test(test_emfile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
