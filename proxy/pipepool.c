/*
 * pipepool.c: the splice pipes of one event loop (see pipepool.h).
 *
 * The idle pipes are a stack of descriptor pairs, allocated once at
 * MAX_IDLE entries: take and give are a pop and a push, with no system
 * call, which is what a bulk tunnel does on every read (it gives its pipe
 * back each time the pipe drains).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "proxy/pipepool.h"

struct pipepool {
	unsigned max_pipes, max_idle;
	unsigned busy; /* handed out */
	unsigned nidle;
	int (*idle)[2]; /* max_idle entries */
};

struct pipepool *
pipepool_new(unsigned max_pipes, unsigned max_idle)
{
	struct pipepool *pool = calloc(1, sizeof(*pool));

	if (pool == NULL)
		return NULL;
	pool->max_pipes = max_pipes;
	pool->max_idle = max_idle < max_pipes ? max_idle : max_pipes;
	if (pool->max_idle > 0 &&
	    (pool->idle = calloc(pool->max_idle, sizeof(*pool->idle))) ==
	        NULL) {
		free(pool);
		return NULL;
	}
	return pool;
}

static void
close_pair(int fd[2])
{
	if (fd[0] >= 0)
		close(fd[0]);
	if (fd[1] >= 0)
		close(fd[1]);
	fd[0] = fd[1] = -1;
}

void
pipepool_free(struct pipepool *pool)
{
	if (pool == NULL)
		return;
	while (pool->nidle > 0)
		close_pair(pool->idle[--pool->nidle]);
	free(pool->idle);
	free(pool);
}

int
pipepool_take(struct pipepool *pool, int fd[2])
{
	int rc = -1;

	if (pool == NULL)
		return pipe2(fd, O_NONBLOCK | O_CLOEXEC);
	if (pool->nidle > 0) {
		pool->nidle--;
		fd[0] = pool->idle[pool->nidle][0];
		fd[1] = pool->idle[pool->nidle][1];
		rc = 0;
	} else if (pool->busy >= pool->max_pipes) {
		errno = EMFILE;
	} else {
		rc = pipe2(fd, O_NONBLOCK | O_CLOEXEC);
	}
	if (rc == 0)
		pool->busy++;
	else
		fd[0] = fd[1] = -1;
	return rc;
}

void
pipepool_give(struct pipepool *pool, int fd[2], int empty)
{
	if (pool != NULL && pool->busy > 0)
		pool->busy--;
	if (pool != NULL && empty && pool->nidle < pool->max_idle) {
		pool->idle[pool->nidle][0] = fd[0];
		pool->idle[pool->nidle][1] = fd[1];
		pool->nidle++;
		fd[0] = fd[1] = -1;
	}
	close_pair(fd); /* nothing when kept */
}

unsigned
pipepool_busy(const struct pipepool *pool)
{
	return pool != NULL ? pool->busy : 0;
}

unsigned
pipepool_idle(const struct pipepool *pool)
{
	return pool != NULL ? pool->nidle : 0;
}
