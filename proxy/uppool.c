/*
 * uppool.c: idle upstream connections kept for reuse (uppool.h).
 *
 * A list, newest first: the pool holds UPPOOL_MAX (64) at most, so a
 * linear search costs less than keeping a hash table in step.  A take
 * prefers the newest (the least likely to have been closed by its
 * server); the pool's and a key's bounds drop the oldest.
 *
 * While parked, a connection reads: the server has nothing to say
 * between requests, so a byte or an end (its idle timeout, a reset)
 * means the connection is of no more use, and it is closed at once,
 * never handed to a request with stale bytes in it.  A take checks
 * again, with a peek at the socket, what the loop has not delivered yet.
 */
#include <sys/queue.h>
#include <sys/socket.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "proxy/uppool.h"

#define HOST_MAX 256

struct parked {
	TAILQ_ENTRY(parked) entry;
	struct uppool *pool;
	struct bufferevent *bev;
	struct event *timer; /* the idle time */
	char host[HOST_MAX];
	uint16_t port;
	int tls, allow_private;
	char *ca; /* NULL: the system store */
	char addr[64];
	char client[UPPOOL_CLIENT_MAX];
};

TAILQ_HEAD(parked_list, parked);

struct uppool {
	struct event_base *base;
	struct parked_list list; /* newest first */
	unsigned n, max, per_key;
	struct timeval idle;
	uint64_t gen;
};

struct uppool *
uppool_new(
    struct event_base *base, unsigned max, unsigned per_key, unsigned idle_ms)
{
	struct uppool *p = calloc(1, sizeof(*p));

	if (p == NULL)
		return NULL;
	p->base = base;
	TAILQ_INIT(&p->list);
	p->max = max;
	p->per_key = per_key;
	p->idle.tv_sec = idle_ms / 1000;
	p->idle.tv_usec = (idle_ms % 1000) * 1000;
	return p;
}

/* Unlinks E; its connection is closed (CLOSING), or the caller's. */
static void
drop(struct parked *e, int closing)
{
	struct uppool *p = e->pool;

	TAILQ_REMOVE(&p->list, e, entry);
	p->n--;
	event_free(e->timer);
	if (closing)
		bufferevent_free(e->bev);
	free(e->ca);
	free(e);
}

void
uppool_flush(struct uppool *p)
{
	if (p == NULL)
		return;
	while (!TAILQ_EMPTY(&p->list))
		drop(TAILQ_FIRST(&p->list), 1);
	p->gen++;
}

void
uppool_free(struct uppool *p)
{
	if (p == NULL)
		return;
	uppool_flush(p);
	free(p);
}

uint64_t
uppool_gen(const struct uppool *p)
{
	return p->gen;
}

unsigned
uppool_count(const struct uppool *p)
{
	return p->n;
}

static int
same_ca(const char *a, const char *b)
{
	return a == NULL || b == NULL ? a == b : strcmp(a, b) == 0;
}

/* The key's client; a key without one is "". */
static const char *
client_of(const struct uppool_key *k)
{
	return k->client != NULL ? k->client : "";
}

static int
matches(const struct parked *e, const struct uppool_key *k)
{
	return e->port == k->port && e->tls == k->tls &&
	    e->allow_private == k->allow_private &&
	    strcmp(e->host, k->host) == 0 && same_ca(e->ca, k->ca) &&
	    strcmp(e->client, client_of(k)) == 0;
}

/* Nothing buffered either way, in BEV or what it is built on. */
static int
empty(struct bufferevent *bev)
{
	struct bufferevent *under = bufferevent_get_underlying(bev);

	if (evbuffer_get_length(bufferevent_get_input(bev)) != 0 ||
	    evbuffer_get_length(bufferevent_get_output(bev)) != 0)
		return 0;
	return under == NULL || empty(under);
}

/*
 * Is BEV still quiet: nothing buffered, and nothing the loop has not
 * delivered yet (a byte or an end waiting on the socket)?
 */
static int
quiet(struct bufferevent *bev)
{
	evutil_socket_t fd = bufferevent_getfd(bev);
	char c;
	ssize_t n;

	if (!empty(bev))
		return 0;
	if (fd < 0)
		return 1;
	n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

/* The server spoke, closed, or the idle time is over: E goes. */
static void
on_read(struct bufferevent *bev, void *arg)
{
	(void)bev;
	drop(arg, 1);
}

static void
on_event(struct bufferevent *bev, short what, void *arg)
{
	(void)bev;
	(void)what;
	drop(arg, 1);
}

static void
on_idle(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	drop(arg, 1);
}

/* Makes room for one of KEY: the oldest of its key, or of all, goes. */
static void
make_room(struct uppool *p, const struct uppool_key *key)
{
	struct parked *e, *oldest = NULL;
	unsigned same = 0;

	TAILQ_FOREACH(e, &p->list, entry)
	{
		if (matches(e, key)) {
			same++;
			oldest = e;
		}
	}
	if (same >= p->per_key && oldest != NULL)
		drop(oldest, 1);
	else if (p->n >= p->max && !TAILQ_EMPTY(&p->list))
		drop(TAILQ_LAST(&p->list, parked_list), 1);
}

static struct parked *
parked_new(struct uppool *p, const struct uppool_key *key,
    struct bufferevent *bev, const char *addr)
{
	struct parked *e = calloc(1, sizeof(*e));

	if (e == NULL)
		return NULL;
	e->timer = evtimer_new(p->base, on_idle, e);
	if (key->ca != NULL)
		e->ca = strdup(key->ca);
	if (e->timer == NULL || (key->ca != NULL && e->ca == NULL)) {
		if (e->timer != NULL)
			event_free(e->timer);
		free(e->ca);
		free(e);
		return NULL;
	}
	e->pool = p;
	e->bev = bev;
	snprintf(e->host, sizeof(e->host), "%s", key->host);
	e->port = key->port;
	e->tls = key->tls;
	e->allow_private = key->allow_private;
	snprintf(e->addr, sizeof(e->addr), "%s", addr);
	snprintf(e->client, sizeof(e->client), "%s", client_of(key));
	return e;
}

int
uppool_put(struct uppool *p, const struct uppool_key *key,
    struct bufferevent *bev, const char *addr)
{
	struct parked *e = NULL;

	if (p != NULL && key->gen == p->gen && p->max > 0 && p->per_key > 0 &&
	    strlen(key->host) < HOST_MAX &&
	    strlen(client_of(key)) < UPPOOL_CLIENT_MAX && quiet(bev)) {
		make_room(p, key);
		e = parked_new(p, key, bev, addr);
	}
	if (e == NULL) {
		bufferevent_free(bev);
		return 0;
	}
	TAILQ_INSERT_HEAD(&p->list, e, entry);
	p->n++;
	bufferevent_setwatermark(bev, EV_READ | EV_WRITE, 0, 0);
	bufferevent_set_timeouts(bev, NULL, NULL);
	bufferevent_setcb(bev, on_read, NULL, on_event, e);
	bufferevent_enable(bev, EV_READ);
	evtimer_add(e->timer, &p->idle);
	return 1;
}

struct bufferevent *
uppool_take(
    struct uppool *p, const struct uppool_key *key, char *addr, size_t addrlen)
{
	struct bufferevent *bev = NULL;
	struct parked *e, *next;

	if (p == NULL || key->gen != p->gen)
		return NULL;
	for (e = TAILQ_FIRST(&p->list); e != NULL && bev == NULL; e = next) {
		next = TAILQ_NEXT(e, entry);
		if (!matches(e, key))
			continue;
		if (!quiet(e->bev)) {
			drop(e, 1);
			continue;
		}
		bev = e->bev;
		snprintf(addr, addrlen, "%s", e->addr);
		drop(e, 0);
	}
	if (bev != NULL) {
		bufferevent_disable(bev, EV_READ);
		bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
	}
	return bev;
}
