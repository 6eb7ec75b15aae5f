/*
 * proxy.c: listeners, the session limit, policy reloads and shutdown.
 *
 * Accepting pauses -- it does not spin -- in two cases: at the session
 * limit (resumed when a session ends), and when accept() fails for want of
 * descriptors or memory (resumed by a timer, as relayd does).
 *
 * The per-client limit (proxy.h) is kept by a hash map (common/hmap.h) of
 * the clients that have sessions open: an entry lives while its client
 * has one (and up to CLIENT_SAY_S more if its refusals were just said on
 * stderr), so the table holds about max_sessions entries whatever
 * clients do.  A client over its limit is not paused (that would stall
 * everyone) but answered 503 at once and closed, with no session.
 *
 * Both limits belong to a group (proxy.h) that the proxies of several
 * event loops may share, each in its own thread (workers.h): the session
 * count is an atomic reserved at accept and given back at close, the
 * client table is kept under the group's mutex, taken at accept and close
 * only.  A proxy that finds the group full parks the one connection it
 * accepted, stops accepting and waits; a session that ends anywhere wakes
 * the waiting proxies (their own loop's eventfd), which take their parked
 * connection if a slot is free and accept again.  Alone in its group, a
 * proxy stops accepting when it takes the last slot, so it parks nothing.
 */
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <sys/eventfd.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "common/hmap.h"
#include "common/log.h"
#include "policy/policy.h"
#include "audit/audit.h"
#define PROXY_INTERNAL
#include "proxy/proxy.h"
#include "proxy/metrics.h"
#include "proxy/pipepool.h"
#include "proxy/capture.h"
#include "proxy/scan.h"
#include "proxy/request.h"
#include "proxy/session.h"
#include "proxy/socks.h"
#include "proxy/socksconn.h"
#include "proxy/uppool.h"

#define LISTEN_BACKLOG 512
#define ACCEPT_PAUSE_MS 100
#define SESSIONS_DEFAULT 4096
#define HEADS_DEFAULT (16 * 1024 * 1024) /* unfinished heads, in all */
#define BUFFERS_DEFAULT (64 * 1024 * 1024) /* relay buffers, in all */
#define FD_RESERVE 64 /* descriptors kept for all but sessions and pipes */
#define POOL_IDLE 32 /* empty splice pipes kept for the next tunnel */

static struct pipepool *pool_new(unsigned loops);
static struct uppool *upool_new(struct event_base *base, unsigned loops);
#define FLUSH_S 1 /* folded denials are counted in the log this often */
#define CLIENT_SAY_S 10 /* a client's refusals on stderr at most this often */
#define DRAIN_MAX 65536 /* bytes of a refused client's request read first */

/*
 * A client address with sessions open: an IPv4 address, or the /64 of an
 * IPv6 one (one host is given a whole /64 and may use any address in it).
 */
struct client {
	struct hmap_entry link; /* in the proxy's clients */
	TAILQ_ENTRY(client) linger; /* n == 0, said lately: kept a while */
	uint8_t key[9]; /* family (4 or 6), then 4 or 8 bytes */
	unsigned n; /* sessions open */
	uint64_t unsaid; /* refusals not yet said on stderr */
	struct timespec said; /* when they were last said */
	int have_said; /* ...if ever */
	int lingering; /* on the proxy's lingering list */
	char name[INET6_ADDRSTRLEN + 4]; /* "192.0.2.1", "2001:db8::/64" */
};

/*
 * One listening socket and how its connections arrive.  A list, not an
 * array: capture makes one per policy port, which may be hundreds.
 */
struct listener {
	LIST_ENTRY(listener) entry;
	struct proxy *px;
	struct evconnlistener *lev;
	enum proxy_via via;
	int spread; /* its connections may be handed to other loops */
};

struct proxy_group {
	unsigned n; /* proxies that divide the process's descriptors */
	unsigned max_sessions;
	unsigned max_per_client; /* 0: no limit */
	/*
	 * The session count (shared.sessions: reserved at accept, given
	 * back at close) and the memory budgets of the process, which every
	 * proxy's sessions use as they are (session.h).
	 */
	struct session_shared shared;
	atomic_ullong next_conn;
	atomic_uint nwaiting; /* proxies paused at the limit */
	pthread_mutex_t lock; /* all below; at accept and close only */
	struct proxy *members[PROXY_GROUP_MAX];
	struct hmap *clients; /* NULL without a per-client limit */
	/*
	 * Clients with no session left that were told about on stderr less
	 * than CLIENT_SAY_S ago: kept until then (on_flush), so that one
	 * coming back at once is not told about again.
	 */
	TAILQ_HEAD(, client) lingering;
};

/* A connection accepted while the group was full, served when it is not. */
struct parked {
	int fd; /* -1: none */
	struct sockaddr_storage sa;
	int len;
	enum proxy_via via;
	int spread; /* from a listener whose connections are handed off */
};

struct proxy {
	struct session_ctx ctx;
	LIST_HEAD(, listener) listeners;
	struct event *resume; /* re-enables accept after EMFILE */
	struct proxy_group *g;
	int own_group; /* G is this proxy's alone, freed with it */
	int full; /* paused at the session limit */
	atomic_int waiting; /* ...and counted in g->nwaiting */
	struct parked parked;
	int bell; /* eventfd: woken from another loop; -1 alone */
	struct event *bell_ev;
	int starved; /* accept failed: said so once */
	int stopping;
	int reuseport;
	int (*handoff)(void *arg, const struct proxy_handoff *h);
	void *handoff_arg;
	struct event *grace;
	struct event *flush; /* writes the count of folded denials */
	void (*done)(void *);
	void *done_arg;
};

/* --- the per-client limit -------------------------------------------------- */

/*
 * The key of the client at SA: 0, or -1 for a client not counted (a Unix
 * socket's: every client there has the same address).  An IPv4-mapped
 * IPv6 address is the IPv4 client it is.
 */
static int
client_key(const struct sockaddr *sa, int len, uint8_t key[9], char *name,
    size_t namelen)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
	const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
	struct in6_addr net = IN6ADDR_ANY_INIT;

	memset(key, 0, 9);
	if (sa->sa_family == AF_INET && len >= (int)sizeof(*s4)) {
		key[0] = 4;
		memcpy(key + 1, &s4->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6 && len >= (int)sizeof(*s6) &&
	    IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		key[0] = 4;
		memcpy(key + 1, s6->sin6_addr.s6_addr + 12, 4);
	} else if (sa->sa_family == AF_INET6 && len >= (int)sizeof(*s6)) {
		key[0] = 6;
		memcpy(key + 1, s6->sin6_addr.s6_addr, 8);
		memcpy(net.s6_addr, key + 1, 8);
		inet_ntop(AF_INET6, &net, name, namelen);
		strncat(name, "/64", namelen - strlen(name) - 1);
		return 0;
	} else {
		return -1;
	}
	inet_ntop(AF_INET, key + 1, name, namelen);
	return 0;
}

int
proxy_client_name(
    const struct sockaddr *sa, int len, char *name, size_t namelen)
{
	uint8_t key[9];

	return client_key(sa, len, key, name, namelen);
}

/* Says a client's refusals not said yet: once per CLIENT_SAY_S at most. */
static void
client_say(struct proxy_group *g, struct client *c, int force)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (c->unsaid == 0 ||
	    (!force && c->have_said &&
	        now.tv_sec - c->said.tv_sec < CLIENT_SAY_S))
		return;
	if (!c->have_said)
		log_warnx("proxy: client %s reached its limit of %u "
		          "connections (--max-per-client); refusing more with "
		          "503",
		    c->name, g->max_per_client);
	else
		log_warnx("proxy: client %s: %llu more connections refused "
		          "with 503 (--max-per-client)",
		    c->name, (unsigned long long)c->unsaid);
	c->unsaid = 0;
	c->said = now;
	c->have_said = 1;
}

static int
said_lately(const struct client *c, const struct timespec *now)
{
	return c->have_said && now->tv_sec - c->said.tv_sec < CLIENT_SAY_S;
}

/* C goes: what was not said yet is said now.  Under G's lock. */
static void
client_drop(struct proxy_group *g, struct client *c)
{
	client_say(g, c, 1);
	hmap_remove(g->clients, &c->link);
	if (c->lingering)
		TAILQ_REMOVE(&g->lingering, c, linger);
	free(c);
}

/*
 * One of C's sessions ended: C goes with its last one, or lingers if it
 * was told about lately.  Under G's lock.
 */
static void
client_release_locked(struct proxy_group *g, struct client *c)
{
	struct timespec now;

	if (c == NULL || --c->n > 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (said_lately(c, &now)) {
		c->lingering = 1;
		TAILQ_INSERT_TAIL(&g->lingering, c, linger);
	} else {
		client_drop(g, c);
	}
}

static void
client_release(struct proxy_group *g, struct client *c)
{
	if (c == NULL)
		return;
	pthread_mutex_lock(&g->lock);
	client_release_locked(g, c);
	pthread_mutex_unlock(&g->lock);
}

/* Lets go of the lingering clients told about over CLIENT_SAY_S ago. */
static void
clients_sweep(struct proxy_group *g, int all)
{
	struct client *c, *next;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&g->lock);
	for (c = TAILQ_FIRST(&g->lingering); c != NULL; c = next) {
		next = TAILQ_NEXT(c, linger);
		if (all || !said_lately(c, &now))
			client_drop(g, c);
	}
	pthread_mutex_unlock(&g->lock);
}

/*
 * Answers FD, a client over its limit, 503 and closes it.  What it sent
 * already is read first: closing a socket with unread bytes resets the
 * connection, and the client might never see why.
 */
static void
refuse(struct proxy *px, const char *why, int fd, uint64_t conn,
    enum proxy_via via)
{
	char buf[4096], reply[512];
	size_t got = 0;
	ssize_t n;
	int len;
	struct audit_rec r;
	struct linger lg = {1, 0};

	while (got < DRAIN_MAX &&
	    (n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		got += (size_t)n;
	len = snprintf(reply, sizeof(reply),
	    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n"
	    "X-Pinhole-Reason: %s\r\n\r\n%s\n",
	    strlen(why) + 1, why, why);
	if (via == PROXY_VIA_SOCKS) { /* to its greeting: no method will do */
		reply[0] = SOCKS_VERSION;
		reply[1] = (char)SOCKS_METHOD_NONE;
		len = 2;
	}
	if (via == PROXY_VIA_CAPTURE) /* a reset, no byte: as session.c's */
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	else
		(void)send(fd, reply, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL);
	close(fd);
	if (px->ctx.audit != NULL) {
		audit_rec_init(&r, "request", conn);
		r.via = session_via_name(via);
		r.decision = "deny";
		r.reason = why;
		r.status = 503;
		/* Identical ones (one client at its limit) fold into one. */
		(void)audit_write(px->ctx.audit, &r);
	}
	metrics_request(px->ctx.metrics,
	    &(struct metrics_req){.decision = "deny",
	        .via = session_via_name(via),
	        .decision_us = -1});
}

/*
 * The client entry a new connection from SA counts against, its count
 * taken; NULL when it is not counted.  -1 when the client is at its limit
 * (WHY says so, for the 503) or no entry could be made (WHY empty).
 */
static int
client_get(struct proxy_group *g, const struct sockaddr *sa, int len,
    struct client **out, char *why, size_t whylen)
{
	uint8_t key[9];
	char name[INET6_ADDRSTRLEN + 4] = "";
	struct client *c;
	int r = 0;

	*out = NULL;
	why[0] = '\0';
	if (g->clients == NULL || client_key(sa, len, key, name, sizeof(name)))
		return 0;
	pthread_mutex_lock(&g->lock);
	c = HMAP_ITEM(
	    hmap_find(g->clients, key, sizeof(key)), struct client, link);
	if (c == NULL && (c = calloc(1, sizeof(*c))) != NULL) {
		memcpy(c->key, key, sizeof(c->key));
		memcpy(c->name, name, sizeof(c->name));
		hmap_insert(g->clients, &c->link, c->key, sizeof(c->key));
	} else if (c != NULL && c->lingering) {
		c->lingering = 0;
		TAILQ_REMOVE(&g->lingering, c, linger);
	}
	if (c == NULL) {
		r = -1; /* no entry for its client: fail closed */
	} else if (c->n >= g->max_per_client) {
		snprintf(why, whylen,
		    "per-client limit: client %s has %u connections open",
		    c->name, c->n);
		c->unsaid++;
		client_say(g, c, 0);
		r = -1;
	} else {
		c->n++;
		*out = c;
	}
	pthread_mutex_unlock(&g->lock);
	return r;
}

struct proxy_group *
proxy_group_new(unsigned n, const struct proxy_config *cf)
{
	struct proxy_group *g = calloc(1, sizeof(*g));
	size_t want;

	if (g == NULL)
		return NULL;
	g->n = n > 0 ? n : 1;
	g->max_sessions =
	    cf->max_sessions ? cf->max_sessions : SESSIONS_DEFAULT;
	g->max_per_client = cf->max_per_client;
	session_shared_init(&g->shared,
	    cf->head_memory ? cf->head_memory : HEADS_DEFAULT,
	    cf->buffer_memory ? cf->buffer_memory : BUFFERS_DEFAULT);
	want = g->max_sessions / 2 > 16 ? g->max_sessions / 2 : 16;
	pthread_mutex_init(&g->lock, NULL);
	TAILQ_INIT(&g->lingering);
	/* Seeded per map: clients choose their addresses. */
	if (g->max_per_client > 0 &&
	    (g->clients = hmap_new(want < 65536 ? want : 65536)) == NULL) {
		proxy_group_free(g);
		g = NULL;
	}
	return g;
}

void
proxy_group_free(struct proxy_group *g)
{
	if (g == NULL)
		return;
	if (g->clients != NULL)
		clients_sweep(g, 1);
	hmap_free(g->clients); /* empty: every session is closed */
	pthread_mutex_destroy(&g->lock);
	free(g);
}

size_t
proxy_group_sessions(struct proxy_group *g)
{
	return atomic_load(&g->shared.sessions);
}

/* A session slot of G, or -1 when all are taken. */
static int
slot_reserve(struct proxy_group *g)
{
	unsigned n = atomic_load(&g->shared.sessions);

	do {
		if (n >= g->max_sessions)
			return -1;
	} while (!atomic_compare_exchange_weak(&g->shared.sessions, &n, n + 1));
	return 0;
}

static int
group_full(struct proxy_group *g)
{
	return atomic_load(&g->shared.sessions) >= g->max_sessions;
}

static void
accepting(struct proxy *px, int on)
{
	struct listener *l;

	LIST_FOREACH(l, &px->listeners, entry)
	{
		if (on)
			evconnlistener_enable(l->lev);
		else
			evconnlistener_disable(l->lev);
	}
}

static void
listeners_free(struct proxy *px)
{
	struct listener *l;

	while ((l = LIST_FIRST(&px->listeners)) != NULL) {
		LIST_REMOVE(l, entry);
		evconnlistener_free(l->lev);
		free(l);
	}
}

/*
 * The session for FD, arrived as VIA: each front starts its own way.
 * NULL (FD closed) when out of memory.
 */
static struct session *
front_start(struct proxy *px, int fd, uint64_t conn, enum proxy_via via)
{
	switch (via) {
	case PROXY_VIA_SOCKS:
		return socksconn_new(&px->ctx, fd, conn);
	case PROXY_VIA_CAPTURE:
		return capture_start(&px->ctx, fd, conn);
	default:
		return request_new(&px->ctx, fd, conn, via);
	}
}

static void
finish_stop(struct proxy *px)
{
	void (*done)(void *) = px->done;

	px->done = NULL;
	if (px->grace != NULL)
		evtimer_del(px->grace);
	session_close_all(&px->ctx);
	if (done != NULL)
		done(px->done_arg);
}

/* Wakes PX, waiting in its group at the limit; from any loop. */
static void
ring(struct proxy *px)
{
	uint64_t one = 1;

	(void)!write(px->bell, &one, sizeof(one));
}

/*
 * PX waits at its group's limit: a session that ends in any proxy of the
 * group wakes it.  A slot freed before it was counted as waiting must
 * not be missed: it looks once more after.
 */
static void
wait_slot(struct proxy *px)
{
	struct proxy_group *g = px->g;

	if (!atomic_exchange(&px->waiting, 1))
		atomic_fetch_add(&g->nwaiting, 1);
	if (!group_full(g) && px->bell >= 0)
		ring(px);
}

/* Wakes the proxies of G waiting for a slot (SELF is the caller's). */
static void resume_full(struct proxy *px);

static void
wake_waiting(struct proxy_group *g, struct proxy *self)
{
	struct proxy *m;
	unsigned i;

	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->n; i++) {
		if ((m = g->members[i]) == NULL ||
		    !atomic_exchange(&m->waiting, 0))
			continue;
		atomic_fetch_sub(&g->nwaiting, 1);
		if (m == self)
			m->full = -1; /* resumed below, outside the lock */
		else
			ring(m);
	}
	pthread_mutex_unlock(&g->lock);
	if (self->full == -1)
		resume_full(self);
}

/* A slot of PX's group is given back (a session or a reservation). */
static void
slot_release(struct proxy *px)
{
	atomic_fetch_sub(&px->g->shared.sessions, 1);
	if (atomic_load(&px->g->nwaiting) > 0)
		wake_waiting(px->g, px);
}

/* PX's session count reached the group's limit: it stops accepting. */
static void
check_full(struct proxy *px)
{
	if (!px->full && group_full(px->g)) {
		px->full = 1;
		accepting(px, 0);
		wait_slot(px);
	}
}

/* A session ended: there is room again, or the shutdown is over. */
static void
session_ended(void *arg, void *owner)
{
	struct proxy *px = arg;

	client_release(px->g, owner);
	slot_release(px);
	if (px->stopping && px->ctx.nsessions == 0 && px->done != NULL)
		finish_stop(px);
}

/*
 * FD, arrived as VIA, with its slot and its client's count taken (OWNER),
 * becomes a session here; on failure both are given back.
 */
static void
serve(struct proxy *px, int fd, uint64_t conn, enum proxy_via via, void *owner)
{
	struct session *s;

	if (px->stopping) {
		close(fd);
		s = NULL;
	} else if ((s = front_start(px, fd, conn, via)) == NULL) {
		log_warnx(
		    "connection %llu: out of memory", (unsigned long long)conn);
	}
	if (s == NULL) {
		client_release(px->g, owner);
		slot_release(px);
		return;
	}
	session_set_owner(s, owner);
	check_full(px);
}

/*
 * FD, arrived from SA as VIA with a slot of the group reserved, is
 * counted against its client and served here, or handed to another loop
 * (SPREAD), or refused.
 */
static void
take_reserved(struct proxy *px, int fd, const struct sockaddr *sa, int len,
    enum proxy_via via, int spread)
{
	uint64_t conn = atomic_fetch_add(&px->g->next_conn, 1) + 1;
	struct proxy_handoff h = {fd, via, conn, NULL};
	struct client *c;
	char why[160];

	if (client_get(px->g, sa, len, &c, why, sizeof(why)) != 0) {
		slot_release(px);
		if (why[0] != '\0') {
			refuse(px, why, fd, conn, via);
			return;
		}
		close(fd); /* no entry for its client: fail closed */
		log_warnx(
		    "connection %llu: out of memory", (unsigned long long)conn);
		return;
	}
	h.client = c;
	if (spread && px->handoff != NULL &&
	    px->handoff(px->handoff_arg, &h) == 0) {
		check_full(px);
		return;
	}
	serve(px, fd, conn, via, c);
}

/*
 * FD, arrived from SA as VIA, becomes a session (or is refused); with the
 * group full, it waits parked until a slot is free.
 */
static void
take(struct proxy *px, int fd, const struct sockaddr *sa, int len,
    enum proxy_via via, int spread)
{
	struct parked *pk = &px->parked;

	if (slot_reserve(px->g) == 0) {
		take_reserved(px, fd, sa, len, via, spread);
		return;
	}
	if (pk->fd >= 0) { /* cannot be: accepting stops with the first */
		close(fd);
		return;
	}
	pk->fd = fd;
	memcpy(&pk->sa, sa,
	    (size_t)len < sizeof(pk->sa) ? (size_t)len : sizeof(pk->sa));
	pk->len = len;
	pk->via = via;
	pk->spread = spread;
	px->full = 1;
	accepting(px, 0);
	wait_slot(px);
}

/* Woken: a slot may be free for the parked connection, and for more. */
static void
resume_full(struct proxy *px)
{
	struct parked *pk = &px->parked;
	int fd = pk->fd;

	px->full = 0;
	if (px->stopping)
		return;
	if (fd >= 0) {
		if (slot_reserve(px->g) != 0) {
			px->full = 1;
			wait_slot(px);
			return;
		}
		pk->fd = -1;
		take_reserved(px, fd, (struct sockaddr *)&pk->sa, pk->len,
		    pk->via, pk->spread);
	}
	if (px->full)
		return;
	if (group_full(px->g)) {
		px->full = 1;
		wait_slot(px);
		return;
	}
	accepting(px, 1);
}

static void
on_bell(evutil_socket_t fd, short what, void *arg)
{
	struct proxy *px = arg;
	uint64_t n;

	(void)what;
	(void)!read(fd, &n, sizeof(n));
	if (px->full)
		resume_full(px);
}

void
proxy_serve_handoff(struct proxy *px, const struct proxy_handoff *h)
{
	/* Accepted non-blocking by the listener of another loop. */
	serve(px, h->fd, h->conn, h->via, h->client);
}

static void
on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
    int len, void *arg)
{
	struct listener *l = arg;

	(void)lev;
	l->px->starved = 0;
	take(l->px, fd, sa, len, l->via, l->spread);
}

int
proxy_take_fd(struct proxy *px, int fd, enum proxy_via via,
    const struct sockaddr *sa, int len)
{
	/* Past its session limit or stopping, it is the caller's to refuse. */
	if (px->stopping || evutil_make_socket_nonblocking(fd) != 0 ||
	    slot_reserve(px->g) != 0)
		return -1;
	take_reserved(px, fd, sa, len, via, 0);
	return 0;
}

static void
on_resume(evutil_socket_t fd, short what, void *arg)
{
	struct proxy *px = arg;

	(void)fd;
	(void)what;
	if (!px->stopping && !px->full)
		accepting(px, 1);
}

static void
on_accept_error(struct evconnlistener *lev, void *arg)
{
	struct proxy *px = ((struct listener *)arg)->px;
	struct timeval tv = {0, ACCEPT_PAUSE_MS * 1000};
	int err = EVUTIL_SOCKET_ERROR();

	(void)lev;
	if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
		/* Once per shortage, not ten times a second. */
		if (!px->starved)
			log_warnx("accept: %s; pausing until descriptors "
			          "are free",
			    strerror(err));
		px->starved = 1;
		accepting(px, 0);
		evtimer_add(px->resume, &tv);
	} else
		log_warnx("accept: %s", strerror(err));
}

/*
 * Identical denials are folded into one record with a count (audit.h):
 * the count is written at least once a second, not only at the next
 * different denial.
 */
static void
on_flush(evutil_socket_t fd, short what, void *arg)
{
	struct proxy *px = arg;

	(void)fd;
	(void)what;
	(void)audit_flush(px->ctx.audit);
	if (px->g->clients != NULL && px->g->members[0] == px)
		clients_sweep(px->g, 0);
}

/* P's wrapper for this proxy (SHARE: held with other loops). */
static struct proxy_policy *
wrap_policy(struct policy *p, struct proxy_policy_share *share)
{
	struct proxy_policy *pp = calloc(1, sizeof(*pp));

	if (pp == NULL)
		return NULL;
	pp->p = share != NULL ? share->p : p;
	pp->share = share;
	pp->refs = 1; /* the proxy's own */
	return pp;
}

struct proxy_policy_share *
proxy_policy_share_new(struct policy *p, unsigned n)
{
	struct proxy_policy_share *sh = calloc(1, sizeof(*sh));

	if (sh == NULL) {
		policy_free(p);
		return NULL;
	}
	sh->p = p;
	atomic_init(&sh->refs, n);
	return sh;
}

void
proxy_policy_share_drop(struct proxy_policy_share *sh)
{
	if (sh != NULL && atomic_fetch_sub(&sh->refs, 1) == 1) {
		policy_free(sh->p);
		free(sh);
	}
}

/* PX joins its group (G's own, or CF's): 0, or -1 (ENOMEM, full). */
static int
join_group(struct proxy *px, const struct proxy_config *cf)
{
	struct proxy_group *g = cf->group;
	unsigned i;
	int r = -1;

	if (g == NULL) {
		g = proxy_group_new(1, cf);
		px->own_group = 1;
	}
	if ((px->g = g) == NULL)
		return -1;
	/* Alone, it wakes itself by a call; with others, by its eventfd. */
	if (g->n > 1 &&
	    ((px->bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0 ||
	        (px->bell_ev = event_new(px->ctx.base, px->bell,
	             EV_READ | EV_PERSIST, on_bell, px)) == NULL ||
	        event_add(px->bell_ev, NULL) != 0))
		return -1;
	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->n && r != 0; i++)
		if (g->members[i] == NULL) {
			g->members[i] = px;
			r = 0;
		}
	pthread_mutex_unlock(&g->lock);
	return r;
}

static void
leave_group(struct proxy *px)
{
	unsigned i;

	if (px->g == NULL)
		return;
	pthread_mutex_lock(&px->g->lock);
	for (i = 0; i < px->g->n; i++)
		if (px->g->members[i] == px)
			px->g->members[i] = NULL;
	pthread_mutex_unlock(&px->g->lock);
	if (px->bell_ev != NULL)
		event_free(px->bell_ev);
	if (px->bell >= 0)
		close(px->bell);
	if (px->own_group)
		proxy_group_free(px->g);
}

struct proxy *
proxy_new(struct event_base *base, const struct proxy_config *cf)
{
	static const struct timeval flush_tv = {FLUSH_S, 0};
	struct proxy *px;
	unsigned n;

	if ((px = calloc(1, sizeof(*px))) == NULL) {
		policy_free(cf->policy);
		proxy_policy_share_drop(cf->policy_share);
		return NULL;
	}
	px->ctx.base = base;
	px->ctx.dns = cf->dns;
	px->ctx.audit = cf->audit;
	px->ctx.run_id = cf->run_id;
	px->ctx.denied = cf->denied;
	px->ctx.distrust = cf->distrust;
	px->ctx.denied_arg = cf->denied_arg;
	px->ctx.tls = cf->tls;
	px->ctx.standins = cf->standins;
	px->ctx.synth = cf->synth;
	px->ctx.metrics = cf->metrics;
	LIST_INIT(&px->listeners);
	px->ctx.ended = session_ended;
	px->ctx.ended_arg = px;
	TAILQ_INIT(&px->ctx.sessions);
	px->parked.fd = -1;
	px->bell = -1;
	px->reuseport = cf->reuseport;
	px->handoff = cf->handoff;
	px->handoff_arg = cf->handoff_arg;
	px->ctx.policy = wrap_policy(cf->policy, cf->policy_share);
	if (px->ctx.policy == NULL) {
		policy_free(cf->policy);
		proxy_policy_share_drop(cf->policy_share);
	}
	px->resume = evtimer_new(base, on_resume, px);
	px->flush = event_new(base, -1, EV_PERSIST, on_flush, px);
	if (px->ctx.policy == NULL || px->resume == NULL || px->flush == NULL ||
	    join_group(px, cf) != 0) {
		proxy_free(px);
		return NULL;
	}
	/* The process's budgets, whole; its descriptors, divided. */
	px->ctx.shared = &px->g->shared;
	n = px->g->n;
	if ((px->ctx.pipes = pool_new(n)) == NULL ||
	    (px->ctx.upool = upool_new(base, n)) == NULL) {
		proxy_free(px);
		return NULL;
	}
	if (px->ctx.audit != NULL || px->g->clients != NULL)
		evtimer_add(px->flush, &flush_tv);
	return px;
}

/* A listener of PX for connections arriving as VIA, not listening yet. */
static struct listener *
listener_new(struct proxy *px, enum proxy_via via)
{
	struct listener *l = calloc(1, sizeof(*l));

	if (l != NULL) {
		l->px = px;
		l->via = via;
	}
	return l;
}

/*
 * L takes LEV over and accepts like every other listener (paused if
 * due); without LEV, L is freed.  Returns 0 or -1.
 */
static int
add_listener(struct proxy *px, struct listener *l, struct evconnlistener *lev)
{
	if (lev == NULL) {
		free(l);
		return -1;
	}
	l->lev = lev;
	evconnlistener_set_error_cb(lev, on_accept_error);
	LIST_INSERT_HEAD(&px->listeners, l, entry);
	if (px->full || px->stopping)
		evconnlistener_disable(lev);
	return 0;
}

int
proxy_listen_fd(struct proxy *px, int fd, enum proxy_via via)
{
	struct listener *l;

	if (evutil_make_socket_nonblocking(fd) != 0 ||
	    (l = listener_new(px, via)) == NULL)
		return -1;
	l->spread = 1; /* one socket: its connections go round the loops */
	/* Backlog 0: the socket is listening already (maybe made elsewhere). */
	return add_listener(px, l,
	    evconnlistener_new(px->ctx.base, on_accept, l,
	        LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd));
}

/*
 * evutil_parse_sockaddr_port also takes a bare address (port 0) and an
 * unbracketed IPv6 one; --listen wants the port said, and "::1:0" is an
 * address, not ::1 port 0.
 */
static int
port_given(const char *spec, int family)
{
	const char *colon = strrchr(spec, ':');

	if (colon == NULL || colon[1] == '\0' ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1))
		return 0;
	return family == AF_INET ? spec[0] != '['
	                         : spec[0] == '[' && colon[-1] == ']';
}

/* Binds unix:PATH; a stale socket from an earlier run may go, nothing else. */
static struct evconnlistener *
bind_unix(struct listener *l, const char *path)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	struct evconnlistener *lev;
	struct stat sb;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_warnx("proxy: unix socket path too long: %s", path);
		return NULL;
	}
	strcpy(sun.sun_path, path);
	if (lstat(path, &sb) == 0 && S_ISSOCK(sb.st_mode))
		unlink(path);
	l->spread = 1; /* one socket: its connections go round the loops */
	lev = evconnlistener_new_bind(l->px->ctx.base, on_accept, l,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, LISTEN_BACKLOG,
	    (struct sockaddr *)&sun, sizeof(sun));
	if (lev == NULL)
		log_warn("proxy: listen on unix:%s", path);
	return lev;
}

/* Binds a literal IPV4:PORT or [IPV6]:PORT and says the port bound. */
static struct evconnlistener *
bind_inet(struct listener *l, const char *spec, unsigned *port)
{
	struct sockaddr_storage ss = {0};
	int len = sizeof(ss);
	socklen_t slen;
	struct evconnlistener *lev;
	char addr[INET6_ADDRSTRLEN + 8];
	size_t n = strlen(spec);

	/* libevent refuses port 0 (the kernel's pick): parse the rest alone. */
	if (n > 2 && strcmp(spec + n - 2, ":0") == 0)
		n -= 2;
	if (n < sizeof(addr)) {
		memcpy(addr, spec, n);
		addr[n] = '\0';
	}
	if (n >= sizeof(addr) ||
	    evutil_parse_sockaddr_port(addr, (struct sockaddr *)&ss, &len) !=
	        0 ||
	    !port_given(spec, ss.ss_family)) {
		errno = EINVAL;
		return NULL;
	}
	/* One socket per loop on the same port: the kernel spreads them. */
	lev = evconnlistener_new_bind(l->px->ctx.base, on_accept, l,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE |
	        (l->px->reuseport ? LEV_OPT_REUSEABLE_PORT : 0),
	    LISTEN_BACKLOG, (struct sockaddr *)&ss, len);
	slen = sizeof(ss);
	if (lev != NULL &&
	    getsockname(
	        evconnlistener_get_fd(lev), (struct sockaddr *)&ss, &slen) == 0)
		*port = ntohs(ss.ss_family == AF_INET
		        ? ((struct sockaddr_in *)&ss)->sin_port
		        : ((struct sockaddr_in6 *)&ss)->sin6_port);
	return lev;
}

int
proxy_listen(
    struct proxy *px, const char *spec, enum proxy_via via, unsigned *port)
{
	struct listener *l;
	struct evconnlistener *lev = NULL;
	int r = -1;

	*port = 0;
	if ((l = listener_new(px, via)) == NULL) {
		log_warnx("proxy: out of memory");
	} else if (strncmp(spec, "unix:", 5) == 0) {
		r = add_listener(px, l, bind_unix(l, spec + 5));
	} else if ((lev = bind_inet(l, spec, port)) == NULL) {
		if (errno == EINVAL)
			log_warnx("proxy: bad %s '%s': use IPV4:PORT, "
			          "[IPV6]:PORT or unix:PATH",
			    via == PROXY_VIA_SOCKS ? "--socks" : "--listen",
			    spec);
		else
			log_warn("proxy: listen on %s", spec);
		free(l);
	} else {
		r = add_listener(px, l, lev);
	}
	return r;
}

/* The new policy PP (NULL: out of memory) replaces the old one. */
static void
set_policy(struct proxy *px, struct proxy_policy *pp)
{
	struct proxy_policy *old = px->ctx.policy;

	if (pp == NULL) {
		log_warnx("reload: out of memory; the old policy stays");
		return;
	}
	px->ctx.policy = pp;
	/* Connections made under the old policy serve none under the new. */
	uppool_flush(px->ctx.upool);
	if (--old->refs == 0)
		session_policy_free(old);
	request_policy_reloaded(&px->ctx);
}

void
proxy_set_policy(struct proxy *px, struct policy *p)
{
	struct proxy_policy *pp = wrap_policy(p, NULL);

	if (pp == NULL)
		policy_free(p);
	set_policy(px, pp);
}

void
proxy_set_policy_shared(struct proxy *px, struct proxy_policy_share *sh)
{
	struct proxy_policy *pp = wrap_policy(NULL, sh);

	if (pp == NULL)
		proxy_policy_share_drop(sh);
	set_policy(px, pp);
}

/* A connection parked at the limit is closed unserved (stopping). */
static void
unpark(struct proxy *px)
{
	if (px->parked.fd >= 0)
		close(px->parked.fd);
	px->parked.fd = -1;
}

static void
on_grace(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	finish_stop(arg);
}

void
proxy_shutdown(
    struct proxy *px, unsigned grace_ms, void (*done)(void *), void *arg)
{
	struct timeval tv = {grace_ms / 1000, (grace_ms % 1000) * 1000};

	px->stopping = 1;
	px->done = done;
	px->done_arg = arg;
	listeners_free(px);
	/* Nothing is parked from now on: the loop may end. */
	uppool_free(px->ctx.upool);
	px->ctx.upool = NULL;
	unpark(px);
	if (px->ctx.nsessions == 0) {
		finish_stop(px);
		return;
	}
	if (px->grace == NULL)
		px->grace = evtimer_new(px->ctx.base, on_grace, px);
	if (px->grace == NULL)
		finish_stop(px);
	else
		evtimer_add(px->grace, &tv);
}

size_t
proxy_session_count(const struct proxy *px)
{
	return px->ctx.nsessions;
}

size_t
proxy_group_sessions_of(const struct proxy *px)
{
	return proxy_group_sessions(px->g);
}

void
proxy_free(struct proxy *px)
{
	if (px == NULL)
		return;
	px->stopping = 1;
	px->done = NULL;
	listeners_free(px);
	uppool_free(px->ctx.upool); /* first: closing sessions park no more */
	px->ctx.upool = NULL;
	unpark(px);
	session_close_all(&px->ctx);
	if (px->ctx.policy != NULL && --px->ctx.policy->refs == 0)
		session_policy_free(px->ctx.policy);
	if (px->resume != NULL)
		event_free(px->resume);
	if (px->grace != NULL)
		event_free(px->grace);
	if (px->flush != NULL)
		event_free(px->flush);
	leave_group(px); /* its own group's clients: none, all closed */
	pipepool_free(px->ctx.pipes); /* after the sessions: none is out */
	free(px);
}

/*
 * How a descriptor limit of LIMIT is shared: FD_RESERVE for the
 * listeners, the log, DNS, metrics and the rest of the process; of what
 * is left, a seventeenth for splice pipes (two descriptors each: one pipe
 * per 16 sessions, taken only while a tunnel direction has bytes in it,
 * the pool's idle ones included); a sixty-fourth, at most UPPOOL_MAX,
 * for idle upstream connections kept for reuse (uppool.h, one socket
 * each); and two per session (its two sockets, an upstream connect in
 * progress included).  So, with N = LIMIT - 64,
 *     pipes = N / 34,  kept = min(64, N / 64),
 *     sessions = (N - 2 pipes - kept) / 2,
 * about N / 2.125: 9,350 sessions, 586 pipes and 64 kept under 20,000.
 * A direction that finds no pipe copies instead (tunnel.c), so more bulk
 * directions at once than pipes is slower, never a failure.
 */
static void
fd_share(rlim_t limit, unsigned *sessions, unsigned *pipes, unsigned *kept)
{
	rlim_t n = limit == RLIM_INFINITY ? (rlim_t)65536 * 3 : limit;
	rlim_t p, k, sess;

	n = n > FD_RESERVE + 3 * 16 ? n - FD_RESERVE : 3 * 16;
	p = n / 34;
	k = n / 64 < UPPOOL_MAX ? n / 64 : UPPOOL_MAX;
	sess = (n - 2 * p - k) / 2;
	*sessions = sess > 65536 ? 65536 : (unsigned)sess;
	*pipes = p > 65536 ? 65536 : (unsigned)p;
	*kept = (unsigned)k;
}

unsigned
proxy_fd_budget(void)
{
	struct rlimit rl;
	unsigned sessions = 256, pipes, kept;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			(void)setrlimit(RLIMIT_NOFILE, &rl);
			(void)getrlimit(RLIMIT_NOFILE, &rl);
		}
		fd_share(rl.rlim_cur, &sessions, &pipes, &kept);
	}
	return sessions;
}

/*
 * A proxy's pipe pool, bounded by its share of the pipes' share of the
 * limit: the process's pipes are divided among its LOOPS.
 */
static struct pipepool *
pool_new(unsigned loops)
{
	struct rlimit rl;
	unsigned sessions, pipes = 16, kept, idle = POOL_IDLE / loops;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		fd_share(rl.rlim_cur, &sessions, &pipes, &kept);
	pipes = pipes / loops > 0 ? pipes / loops : 1;
	return pipepool_new(pipes, idle > 0 ? idle : 1);
}

/* A proxy's idle upstream connections, bounded by their share too. */
static struct uppool *
upool_new(struct event_base *base, unsigned loops)
{
	struct rlimit rl;
	unsigned sessions, pipes, kept = 4;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		fd_share(rl.rlim_cur, &sessions, &pipes, &kept);
	kept = kept / loops > 0 ? kept / loops : 1;
	return uppool_new(base, kept, UPPOOL_PER_KEY, UPPOOL_IDLE_MS);
}
