/*
 * uppool.h: idle upstream connections of one proxy (one event loop),
 * kept for the next request that would connect to the same place under
 * the same terms.  Internal to proxy/.
 *
 * A connection is parked whole (its bufferevent, however it was built:
 * a socket, or TLS over one) with the address it is connected to; the
 * pool watches it while parked and closes it when the server speaks or
 * closes, when it has been idle for the pool's idle time, when its key
 * has too many, or when the pool is full (the oldest goes first).  A
 * policy reload empties the pool (uppool_flush) and bumps its
 * generation: a connection made under an older generation is never
 * parked again.  Never shared between pools, so never between proxies.
 */
#ifndef PH_UPPOOL_H
#define PH_UPPOOL_H

#include <stddef.h>
#include <stdint.h>

struct bufferevent;
struct event_base;
struct uppool;

/* Everything that made a connection acceptable for a request. */
struct uppool_key {
	const char *host; /* the name (or literal) connected to and verified */
	uint16_t port;
	int tls; /* 1: TLS to the upstream (intercepted), 0: plain HTTP */
	int allow_private; /* checked under a rule with "private" */
	const char *ca; /* the rule's upstream-ca; NULL: the system store */
	uint64_t gen; /* uppool_gen() when the connection was decided */
	/*
	 * Whose it is (session.h: session_client): a connection made for one
	 * client is never handed to another, so two sandboxes served by one
	 * proxy never share one.  "" only for tests.
	 */
	const char *client;
};

/* Bounds of a pool: the idle time, per key, and in all. */
#define UPPOOL_IDLE_MS 4000
#define UPPOOL_PER_KEY 4
#define UPPOOL_MAX 64
#define UPPOOL_CLIENT_MAX 64 /* bytes of a key's client, its NUL included */

/*
 * A pool on BASE holding at most MAX connections, PER_KEY of one key,
 * each for IDLE_MS at most.  NULL when out of memory.
 */
struct uppool *uppool_new(
    struct event_base *base, unsigned max, unsigned per_key, unsigned idle_ms);

/* Closes every parked connection and frees P.  NULL does nothing. */
void uppool_free(struct uppool *p);

/* The generation keys must carry to be parked now. */
uint64_t uppool_gen(const struct uppool *p);

/* Closes every parked connection; older generations are refused from now. */
void uppool_flush(struct uppool *p);

/*
 * Parks BEV (taken over in every case) under KEY, connected to ADDR.
 * BEV must be idle: no request in flight, nothing buffered either way.
 * Returns 1 when parked, 0 when closed instead (another generation,
 * bytes waiting, a pool of size 0, out of memory).
 */
int uppool_put(struct uppool *p, const struct uppool_key *key,
    struct bufferevent *bev, const char *addr);

/*
 * Takes the most recently parked connection under KEY that is still
 * quiet, with its callbacks and timeouts cleared and reading disabled,
 * and copies its address into ADDR (ADDRLEN bytes).  NULL when there is
 * none.
 */
struct bufferevent *uppool_take(
    struct uppool *p, const struct uppool_key *key, char *addr, size_t addrlen);

/* Connections parked now. */
unsigned uppool_count(const struct uppool *p);

#endif /* PH_UPPOOL_H */
