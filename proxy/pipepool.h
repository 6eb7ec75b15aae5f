/*
 * pipepool.h: the splice pipes of one event loop (tunnel.c), taken by a
 * tunnel direction while bytes are in it and given back once it is empty,
 * so that an idle tunnel holds its two sockets only (issue 15).
 *
 * A pool keeps at most MAX_IDLE empty pipes for the next taker and closes
 * the others, and never has more than MAX_PIPES open at once (handed out
 * plus idle): the proxy sizes its session limit for that many (proxy.c,
 * proxy_fd_budget).  Pipes keep the kernel's default size (64 KiB): the
 * tunnel does not set F_SETPIPE_SZ, so a pipe from the pool is like a new
 * one.  No locks: one pool per event loop, used from that loop only.
 * A leaf: it includes nothing of pinhole's.
 */
#ifndef PH_PIPEPOOL_H
#define PH_PIPEPOOL_H

struct pipepool;

/* An empty pool; NULL when out of memory. */
struct pipepool *pipepool_new(unsigned max_pipes, unsigned max_idle);

/* Closes the idle pipes and frees POOL (handed out pipes are the
 * takers').  NULL does nothing. */
void pipepool_free(struct pipepool *pool);

/*
 * Sets FD to an empty non-blocking pipe (FD[0] the read end): an idle one,
 * else a new one.  Returns 0, or -1 with errno: EMFILE when MAX_PIPES are
 * open, else pipe2()'s (EMFILE, ENFILE).  A NULL pool makes a new pipe
 * each time, without a bound.
 */
int pipepool_take(struct pipepool *pool, int fd[2]);

/*
 * Takes back a pipe from pipepool_take(): kept idle when EMPTY is
 * non-zero and fewer than MAX_IDLE are, else closed.  FD is set to -1s.
 */
void pipepool_give(struct pipepool *pool, int fd[2], int empty);

/* Pipes handed out, and idle ones held (0 for NULL). */
unsigned pipepool_busy(const struct pipepool *pool);
unsigned pipepool_idle(const struct pipepool *pool);

#endif
