/*
 * dns.c: c-ares inside the libevent loop, with a bounded cache and one
 * shared lookup per name.
 *
 * c-ares says through its socket-state callback which sockets it wants
 * watched; each gets one persistent event, and one timer follows
 * ares_timeout() after every step that may change it.  A lookup is one
 * ares_getaddrinfo() (A and AAAA together) and serves every query for its
 * name that arrives while it runs.  Answers reach callers only through the
 * "ready" list, drained by a zero-timeout event: so a callback never runs
 * inside dns_resolve() or inside c-ares (which may complete a lookup
 * synchronously), and cancelling a query only takes it off the list that
 * holds it.
 */
#include <sys/queue.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ares.h>
#include <event2/event.h>

#include "common/hmap.h"

#define DNS_INTERNAL
#include "dns.h"

#define NBUCKETS 1024 /* hash buckets of the cache and of the lookups */
#define CACHE_MAX 4096 /* cached names */
#define TTL_MIN_MS 1000
#define TTL_MAX_MS (300 * 1000)
#define NEG_TTL_MS (5 * 1000) /* NXDOMAIN and NODATA */
#define NAME_MAXLEN 253 /* presentation form, without the final dot */
#define TRIES 2
#define SERVERS_MAX 16

struct dns_result {
	enum dns_status status;
	size_t n;
	struct dns_addr addrs[DNS_ADDRS_MAX];
};

enum qstate {
	Q_WAITING, /* on lookup->waiters */
	Q_READY, /* on dns->ready */
	Q_CALLING, /* its callback is running */
};

struct dns_query {
	TAILQ_ENTRY(dns_query) entry;
	struct dns *dns;
	struct lookup *lookup; /* while Q_WAITING */
	enum qstate state;
	unsigned round; /* delivery round it was queued in */
	dns_cb *cb;
	void *arg;
	struct dns_result res;
};
TAILQ_HEAD(query_list, dns_query);

struct lookup {
	LIST_ENTRY(lookup) all; /* dns->lookups, until c-ares is done */
	struct hmap_entry link; /* dns->pending, while new queries join */
	struct dns *dns;
	struct query_list waiters;
	struct event *deadline;
	int joinable;
	char name[];
};
LIST_HEAD(lookup_list, lookup);

struct centry {
	struct hmap_entry link; /* dns->cache */
	TAILQ_ENTRY(centry) age; /* oldest first */
	uint64_t expires; /* monotonic ms */
	struct dns_result res;
	char name[];
};

struct dns_sock {
	LIST_ENTRY(dns_sock) entry;
	ares_socket_t fd;
	struct event *ev;
};

struct dns {
	struct event_base *base;
	ares_channel channel;
	int lib_init;
	unsigned timeout_ms;
	struct event *timer; /* c-ares retransmissions and timeouts */
	struct event *deliver; /* drains ready */
	LIST_HEAD(, dns_sock) socks;
	struct lookup_list lookups;
	struct hmap *pending; /* joinable lookups by name */
	struct hmap *cache; /* centry by name */
	TAILQ_HEAD(, centry) age;
	size_t ncache;
	struct query_list ready;
	unsigned round;
	int *freed; /* set by dns_free() while delivering */
	unsigned long nlookups;
};

static void rearm(struct dns *);

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- delivery ------------------------------------------------------ */

/* A zero timeout, not event_active(): I/O gets its turn between rounds. */
static void
deliver_soon(struct dns *d)
{
	struct timeval zero = {0, 0};

	evtimer_add(d->deliver, &zero);
}

static void
make_ready(struct dns *d, struct dns_query *q)
{
	q->state = Q_READY;
	q->lookup = NULL;
	q->round = d->round;
	TAILQ_INSERT_TAIL(&d->ready, q, entry);
	deliver_soon(d);
}

/*
 * Runs the callbacks of the queries queued before this round began; ones
 * queued by those callbacks wait for the next round, so a callback that
 * resolves a cached name again cannot keep us here.  A callback may call
 * dns_free(): FREED tells us to stop touching D.
 */
static void
on_deliver(evutil_socket_t fd, short what, void *arg)
{
	struct dns *d = arg;
	struct dns_query *q;
	unsigned round = ++d->round;
	int freed = 0;

	(void)fd;
	(void)what;
	d->freed = &freed;
	while ((q = TAILQ_FIRST(&d->ready)) != NULL && q->round != round) {
		TAILQ_REMOVE(&d->ready, q, entry);
		q->state = Q_CALLING;
		q->cb(q->arg, q->res.status, q->res.addrs, q->res.n);
		free(q);
		if (freed)
			return;
	}
	d->freed = NULL;
	if (q != NULL)
		deliver_soon(d);
}

/* ---- results ------------------------------------------------------- */

static enum dns_status
map_status(int status)
{
	switch (status) {
	case ARES_SUCCESS:
		return DNS_OK;
	case ARES_ENOTFOUND:
		return DNS_NXDOMAIN;
	case ARES_ENODATA:
		return DNS_NODATA;
	case ARES_ETIMEOUT:
		return DNS_TIMEOUT;
	case ARES_EREFUSED:
	case ARES_ESERVFAIL:
	case ARES_ECONNREFUSED:
		return DNS_REFUSED;
	default:
		return DNS_ERROR;
	}
}

/* Adds ADDR unless R is full or has it already. */
static void
add_addr(struct dns_result *r, int family, const void *addr)
{
	size_t i, len = family == 4 ? 4 : 16;

	for (i = 0; i < r->n; i++)
		if (r->addrs[i].family == family &&
		    memcmp(r->addrs[i].addr, addr, len) == 0)
			break;
	if (i == r->n && r->n < DNS_ADDRS_MAX) {
		memset(&r->addrs[r->n], 0, sizeof(r->addrs[r->n]));
		r->addrs[r->n].family = family;
		memcpy(r->addrs[r->n].addr, addr, len);
		r->n++;
	}
}

/* Appends the FAMILY addresses of AI to R; returns their lowest TTL. */
static int
collect(struct dns_result *r, const struct ares_addrinfo *ai, int family)
{
	const struct ares_addrinfo_node *n;
	const struct sockaddr_in *sin;
	const struct sockaddr_in6 *sin6;
	int ttl = INT32_MAX;

	for (n = ai->nodes; n != NULL; n = n->ai_next) {
		if (n->ai_family != family)
			continue;
		if (family == AF_INET) {
			sin = (const struct sockaddr_in *)(void *)n->ai_addr;
			add_addr(r, 4, &sin->sin_addr);
		} else {
			sin6 = (const struct sockaddr_in6 *)(void *)n->ai_addr;
			add_addr(r, 6, &sin6->sin6_addr);
		}
		if (n->ai_ttl < ttl)
			ttl = n->ai_ttl;
	}
	return ttl;
}

/* Appends all addresses of AI to R, IPv4 first; returns the lowest TTL. */
static int
collect_all(struct dns_result *r, const struct ares_addrinfo *ai)
{
	const struct ares_addrinfo_cname *c;
	int ttl4, ttl6, ttl;

	ttl4 = collect(r, ai, AF_INET);
	ttl6 = collect(r, ai, AF_INET6);
	ttl = ttl4 < ttl6 ? ttl4 : ttl6;
	for (c = ai->cnames; c != NULL; c = c->next)
		if (c->ttl < ttl)
			ttl = c->ttl;
	return ttl;
}

/* Fills R from a c-ares answer; returns how long to cache it, 0: not. */
static uint64_t
make_result(struct dns_result *r, int status, const struct ares_addrinfo *ai)
{
	uint64_t ms = 0;
	int ttl = 0;

	memset(r, 0, sizeof(*r));
	r->status = map_status(status);
	if (r->status == DNS_OK && ai != NULL)
		ttl = collect_all(r, ai);
	if (r->status == DNS_OK && r->n == 0)
		r->status = DNS_NODATA;
	if (r->status == DNS_NXDOMAIN || r->status == DNS_NODATA)
		ms = NEG_TTL_MS;
	else if (r->status == DNS_OK && ttl <= TTL_MIN_MS / 1000)
		ms = TTL_MIN_MS;
	else if (r->status == DNS_OK && ttl >= TTL_MAX_MS / 1000)
		ms = TTL_MAX_MS;
	else if (r->status == DNS_OK)
		ms = (uint64_t)ttl * 1000;
	return ms;
}

/* An address literal needs no lookup (and c-ares 1.18 would query it). */
static int
literal(const char *name, struct dns_result *r)
{
	uint8_t buf[16];
	int family = 0;

	if (inet_pton(AF_INET, name, buf) == 1)
		family = 4;
	else if (inet_pton(AF_INET6, name, buf) == 1)
		family = 6;
	if (family != 0) {
		memset(r, 0, sizeof(*r));
		r->status = DNS_OK;
		add_addr(r, family, buf);
	}
	return family != 0;
}

/* ---- cache --------------------------------------------------------- */

static void
cache_remove(struct dns *d, struct centry *e)
{
	hmap_remove(d->cache, &e->link);
	TAILQ_REMOVE(&d->age, e, age);
	d->ncache--;
	free(e);
}

/* Returns the live entry for NAME, dropping an expired one. */
static struct centry *
cache_find(struct dns *d, const char *name)
{
	struct centry *e;

	e = HMAP_ITEM(
	    hmap_find(d->cache, name, strlen(name)), struct centry, link);
	if (e != NULL && e->expires <= now_ms()) {
		cache_remove(d, e);
		e = NULL;
	}
	return e;
}

/* Stores R for NAME; when full, the oldest entry makes room. */
static void
cache_put(struct dns *d, const char *name, const struct dns_result *r,
    uint64_t ttl_ms)
{
	struct centry *e;
	size_t len = strlen(name) + 1;

	if ((e = cache_find(d, name)) != NULL)
		cache_remove(d, e);
	if (d->ncache >= CACHE_MAX)
		cache_remove(d, TAILQ_FIRST(&d->age));
	if ((e = malloc(sizeof(*e) + len)) == NULL)
		return; /* only a cache */
	memcpy(e->name, name, len);
	e->res = *r;
	e->expires = now_ms() + ttl_ms;
	hmap_insert(d->cache, &e->link, e->name, len - 1);
	TAILQ_INSERT_TAIL(&d->age, e, age);
	d->ncache++;
}

static void
cache_clear(struct dns *d)
{
	struct centry *e;

	while ((e = TAILQ_FIRST(&d->age)) != NULL)
		cache_remove(d, e);
}

/* ---- lookups ------------------------------------------------------- */

/* New queries for the name start a lookup of their own from now on. */
static void
detach(struct lookup *l)
{
	if (l->joinable)
		hmap_remove(l->dns->pending, &l->link);
	l->joinable = 0;
}

static void
finish_waiters(struct lookup *l, const struct dns_result *r)
{
	struct dns_query *q;

	while ((q = TAILQ_FIRST(&l->waiters)) != NULL) {
		TAILQ_REMOVE(&l->waiters, q, entry);
		q->res = *r;
		make_ready(l->dns, q);
	}
}

static void
lookup_free(struct lookup *l)
{
	detach(l);
	LIST_REMOVE(l, all);
	if (l->deadline != NULL)
		event_free(l->deadline);
	free(l);
}

/*
 * c-ares's answer: may come from inside ares_getaddrinfo(), from
 * ares_process_fd(), or from ares_destroy() with ARES_EDESTRUCTION, when
 * dns_free() has already dropped the waiters.
 */
static void
on_addrinfo(void *arg, int status, int timeouts, struct ares_addrinfo *ai)
{
	struct lookup *l = arg;
	struct dns_result r;
	uint64_t ttl;

	(void)timeouts;
	if (status != ARES_EDESTRUCTION) {
		ttl = make_result(&r, status, ai);
		if (ttl != 0)
			cache_put(l->dns, l->name, &r, ttl);
		finish_waiters(l, &r);
	}
	if (ai != NULL)
		ares_freeaddrinfo(ai);
	lookup_free(l);
}

/*
 * TIMEOUT_MS bounds the whole lookup even where c-ares's own retries
 * (doubling per round, one round per server) would take longer: the
 * waiters get DNS_TIMEOUT and the lookup runs on to fill the cache.
 */
static void
on_deadline(evutil_socket_t fd, short what, void *arg)
{
	struct lookup *l = arg;
	struct dns_result r;

	(void)fd;
	(void)what;
	memset(&r, 0, sizeof(r));
	r.status = DNS_TIMEOUT;
	finish_waiters(l, &r);
	detach(l);
}

static struct lookup *
find_lookup(struct dns *d, const char *name)
{
	return HMAP_ITEM(
	    hmap_find(d->pending, name, strlen(name)), struct lookup, link);
}

static struct lookup *
lookup_new(struct dns *d, const char *name)
{
	struct lookup *l;
	struct timeval tv;
	size_t len = strlen(name) + 1;

	if ((l = calloc(1, sizeof(*l) + len)) == NULL)
		goto fail;
	if ((l->deadline = evtimer_new(d->base, on_deadline, l)) == NULL)
		goto fail;
	memcpy(l->name, name, len);
	l->dns = d;
	l->joinable = 1;
	TAILQ_INIT(&l->waiters);
	LIST_INSERT_HEAD(&d->lookups, l, all);
	hmap_insert(d->pending, &l->link, l->name, len - 1);
	tv.tv_sec = d->timeout_ms / 1000;
	tv.tv_usec = (d->timeout_ms % 1000) * 1000;
	evtimer_add(l->deadline, &tv);
	return l;
fail:
	free(l);
	return NULL;
}

/* Starts a lookup of NAME for Q.  Returns 0, or -1 on ENOMEM. */
static int
start_lookup(struct dns *d, const char *name, struct dns_query *q)
{
	struct ares_addrinfo_hints hints;
	struct lookup *l;
	int r = -1;

	if ((l = lookup_new(d, name)) == NULL)
		goto out;
	TAILQ_INSERT_TAIL(&l->waiters, q, entry);
	q->lookup = l;
	/* NOSORT: sorting would connect() a UDP socket to each address. */
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_flags = ARES_AI_NOSORT;
	d->nlookups++;
	ares_getaddrinfo(d->channel, name, NULL, &hints, on_addrinfo, l);
	/* L may be gone: c-ares can answer before returning. */
	rearm(d);
	r = 0;
out:
	return r;
}

/* ---- c-ares sockets and timer -------------------------------------- */

static void
rearm(struct dns *d)
{
	struct timeval tv, *tvp;

	if ((tvp = ares_timeout(d->channel, NULL, &tv)) == NULL)
		evtimer_del(d->timer);
	else
		evtimer_add(d->timer, tvp);
}

static void
on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct dns *d = arg;

	(void)fd;
	(void)what;
	ares_process_fd(d->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	rearm(d);
}

/* D, not the dns_sock, is the argument: c-ares may close FD meanwhile. */
static void
on_sock(evutil_socket_t fd, short what, void *arg)
{
	struct dns *d = arg;

	ares_process_fd(d->channel, (what & EV_READ) ? fd : ARES_SOCKET_BAD,
	    (what & EV_WRITE) ? fd : ARES_SOCKET_BAD);
	rearm(d);
}

static void
sock_free(struct dns_sock *s)
{
	LIST_REMOVE(s, entry);
	event_free(s->ev);
	free(s);
}

static struct dns_sock *
sock_find(struct dns *d, ares_socket_t fd)
{
	struct dns_sock *s = LIST_FIRST(&d->socks);

	while (s != NULL && s->fd != fd)
		s = LIST_NEXT(s, entry);
	return s;
}

static struct dns_sock *
sock_new(struct dns *d, ares_socket_t fd)
{
	struct dns_sock *s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		goto fail;
	if ((s->ev = event_new(d->base, fd, 0, on_sock, d)) == NULL)
		goto fail;
	s->fd = fd;
	LIST_INSERT_HEAD(&d->socks, s, entry);
	return s;
fail:
	free(s);
	return NULL;
}

/*
 * c-ares's socket-state callback.  Should we fail to watch a socket, the
 * timer still runs c-ares's timeouts, so its queries fail, not hang.
 */
static void
sock_state(void *arg, ares_socket_t fd, int readable, int writable)
{
	struct dns *d = arg;
	struct dns_sock *s = sock_find(d, fd);
	short what = EV_PERSIST;

	if (readable)
		what |= EV_READ;
	if (writable)
		what |= EV_WRITE;
	if (what == EV_PERSIST) {
		if (s != NULL)
			sock_free(s);
	} else if (s != NULL || (s = sock_new(d, fd)) != NULL) {
		event_del(s->ev);
		event_assign(s->ev, d->base, fd, what, on_sock, d);
		event_add(s->ev, NULL);
	}
}

/* ---- set-up -------------------------------------------------------- */

static size_t
server_count(ares_channel channel)
{
	struct ares_addr_port_node *list = NULL, *n;
	size_t count = 0;

	if (ares_get_servers_ports(channel, &list) == ARES_SUCCESS)
		for (n = list; n != NULL; n = n->next)
			count++;
	ares_free_data(list);
	return count;
}

/* "53": decimal, 1 to 65535.  Returns 0 or -1. */
static int
parse_port(const char *s, int *port)
{
	unsigned long v = 0;
	size_t len = strlen(s);

	if (len == 0 || len > 5 || strspn(s, "0123456789") != len)
		goto fail;
	if ((v = strtoul(s, NULL, 10)) == 0 || v > 65535)
		goto fail;
	*port = (int)v;
	return 0;
fail:
	return -1;
}

/*
 * One server of LEN bytes at S: "A.B.C.D", "A.B.C.D:PORT", "ADDR6",
 * "[ADDR6]" or "[ADDR6]:PORT".  Returns 0 or -1.
 */
static int
parse_server(const char *s, size_t len, struct ares_addr_port_node *n)
{
	char buf[INET6_ADDRSTRLEN + 8], *host = buf, *port = NULL, *p;

	if (len == 0 || len >= sizeof(buf))
		goto fail;
	memcpy(buf, s, len);
	buf[len] = '\0';
	if (buf[0] == '[') {
		if ((p = strchr(buf, ']')) == NULL ||
		    (p[1] != '\0' && p[1] != ':'))
			goto fail;
		host = buf + 1;
		*p++ = '\0';
		port = *p == ':' ? p + 1 : NULL;
	} else if ((p = strchr(buf, ':')) != NULL &&
	    strchr(p + 1, ':') == NULL) {
		*p = '\0';
		port = p + 1;
	}
	memset(n, 0, sizeof(*n));
	if (strchr(host, ':') == NULL && buf[0] != '[' &&
	    inet_pton(AF_INET, host, &n->addr.addr4) == 1)
		n->family = AF_INET;
	else if (inet_pton(AF_INET6, host, &n->addr.addr6) == 1)
		n->family = AF_INET6;
	else
		goto fail;
	if (port != NULL && parse_port(port, &n->udp_port) == -1)
		goto fail;
	n->tcp_port = n->udp_port; /* 0: c-ares's default, 53 */
	return 0;
fail:
	return -1;
}

/*
 * Our own parser: c-ares 1.18's ares_set_servers_ports_csv() takes
 * "127.1" for 127.1.255.255, wraps port 99999 to 34463 and leaves the
 * system's servers in place for "".
 */
static int
set_servers(ares_channel channel, const char *csv)
{
	struct ares_addr_port_node nodes[SERVERS_MAX];
	const char *s = csv, *comma;
	size_t i = 0, len;
	int r = -1;

	for (;;) {
		comma = strchr(s, ',');
		len = comma != NULL ? (size_t)(comma - s) : strlen(s);
		if (i == SERVERS_MAX || parse_server(s, len, &nodes[i]) == -1)
			goto out;
		nodes[i].next = NULL;
		if (i > 0)
			nodes[i - 1].next = &nodes[i];
		i++;
		if (comma == NULL)
			break;
		s = comma + 1;
	}
	r = ares_set_servers_ports(channel, nodes) == ARES_SUCCESS ? 0 : -1;
out:
	return r;
}

/*
 * The proxy resolves the very name the policy matched: no search domains
 * (which would turn "github" into "github.corp.example"), set here so that
 * resolv.conf, LOCALDOMAIN and RES_OPTIONS cannot add any; NDOTS 1 makes
 * any dotted name absolute as well; no HOSTALIASES.  With an explicit
 * server list, only DNS is asked; otherwise the system order applies
 * (hosts file, then DNS), as getaddrinfo() would.  EDNS keeps answers
 * with many addresses in one UDP datagram.
 */
static int
init_channel(struct dns *d, const char *servers, char *err, size_t errlen)
{
	static char dns_only[] = "b";
	struct ares_options o;
	int mask, r;

	memset(&o, 0, sizeof(o));
	o.flags = ARES_FLAG_EDNS | ARES_FLAG_NOSEARCH | ARES_FLAG_NOALIASES;
	o.timeout = (int)(d->timeout_ms / (1 + TRIES)); /* t + 2t */
	o.tries = TRIES;
	o.ndots = 1;
	o.ndomains = 0;
	o.sock_state_cb = sock_state;
	o.sock_state_cb_data = d;
	mask = ARES_OPT_FLAGS | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES |
	    ARES_OPT_NDOTS | ARES_OPT_DOMAINS | ARES_OPT_SOCK_STATE_CB;
	if (servers != NULL) {
		o.lookups = dns_only;
		mask |= ARES_OPT_LOOKUPS;
	}
	if ((r = ares_init_options(&d->channel, &o, mask)) != ARES_SUCCESS) {
		d->channel = NULL;
		snprintf(err, errlen, "c-ares: %s", ares_strerror(r));
		goto fail;
	}
	if (servers != NULL && set_servers(d->channel, servers) == -1) {
		snprintf(err, errlen,
		    "bad DNS server list \"%s\" (want ADDR[:PORT] or "
		    "[ADDR6][:PORT], comma-separated, at most %d)",
		    servers, SERVERS_MAX);
		goto fail;
	}
	if (server_count(d->channel) == 0) {
		snprintf(err, errlen, "no DNS server configured");
		goto fail;
	}
	return 0;
fail:
	return -1;
}

static int
init_events(struct dns *d, char *err, size_t errlen)
{
	d->timer = evtimer_new(d->base, on_timer, d);
	d->deliver = evtimer_new(d->base, on_deliver, d);
	if (d->timer != NULL && d->deliver != NULL)
		return 0;
	snprintf(err, errlen, "cannot create DNS events");
	return -1;
}

/* The maps hash with a seed of their own: names come from the sandbox. */
static int
init_lists(struct dns *d)
{
	LIST_INIT(&d->socks);
	LIST_INIT(&d->lookups);
	TAILQ_INIT(&d->age);
	TAILQ_INIT(&d->ready);
	d->pending = hmap_new(NBUCKETS);
	d->cache = hmap_new(NBUCKETS);
	return d->pending != NULL && d->cache != NULL ? 0 : -1;
}

struct dns *
dns_new(struct event_base *base, const char *servers, unsigned timeout_ms,
    char *err, size_t errlen)
{
	struct dns *d;
	int r;

	if ((d = calloc(1, sizeof(*d))) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	d->base = base;
	d->timeout_ms = timeout_ms;
	if (init_lists(d) == -1) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (timeout_ms < 1 + TRIES) {
		snprintf(err, errlen, "DNS timeout of %u ms is too short",
		    timeout_ms);
		goto fail;
	}
	if ((r = ares_library_init(ARES_LIB_INIT_ALL)) != ARES_SUCCESS) {
		snprintf(err, errlen, "c-ares: %s", ares_strerror(r));
		goto fail;
	}
	d->lib_init = 1;
	if (init_events(d, err, errlen) == -1 ||
	    init_channel(d, servers, err, errlen) == -1)
		goto fail;
	return d;
fail:
	dns_free(d);
	return NULL;
}

static void
drop_queries(struct query_list *list)
{
	struct dns_query *q;

	while ((q = TAILQ_FIRST(list)) != NULL) {
		TAILQ_REMOVE(list, q, entry);
		free(q);
	}
}

void
dns_free(struct dns *d)
{
	struct lookup *l;
	struct dns_sock *s;

	if (d == NULL)
		return;
	if (d->freed != NULL)
		*d->freed = 1;
	drop_queries(&d->ready);
	for (l = LIST_FIRST(&d->lookups); l != NULL; l = LIST_NEXT(l, all))
		drop_queries(&l->waiters);
	/* Calls on_addrinfo(ARES_EDESTRUCTION) and sock_state(fd, 0, 0). */
	if (d->channel != NULL)
		ares_destroy(d->channel);
	while ((l = LIST_FIRST(&d->lookups)) != NULL)
		lookup_free(l);
	while ((s = LIST_FIRST(&d->socks)) != NULL)
		sock_free(s);
	cache_clear(d);
	hmap_free(d->cache);
	hmap_free(d->pending);
	if (d->timer != NULL)
		event_free(d->timer);
	if (d->deliver != NULL)
		event_free(d->deliver);
	if (d->lib_init)
		ares_library_cleanup();
	free(d);
}

/* ---- queries ------------------------------------------------------- */

/* Lower case, one final dot dropped.  Returns -1 if not a usable name. */
static int
normalise(const char *host, char *out, size_t outlen)
{
	size_t i, len = strlen(host);

	if (len > 0 && host[len - 1] == '.')
		len--;
	if (len == 0 || len > NAME_MAXLEN || len >= outlen)
		goto fail;
	for (i = 0; i < len; i++)
		out[i] = (char)tolower((unsigned char)host[i]);
	out[len] = '\0';
	return 0;
fail:
	return -1;
}

/* Answers Q from what is known without asking: 1, or 0 to ask. */
static int
answer_now(struct dns *d, const char *host, char *name, size_t namelen,
    struct dns_query *q)
{
	struct centry *e;
	int known = 0;

	if (normalise(host, name, namelen) == -1) {
		q->res.status = DNS_ERROR;
		known = 1;
	} else if (literal(name, &q->res)) {
		known = 1;
	} else if ((e = cache_find(d, name)) != NULL) {
		q->res = e->res;
		known = 1;
	}
	return known;
}

struct dns_query *
dns_resolve(struct dns *d, const char *host, dns_cb *cb, void *arg)
{
	struct dns_query *q;
	struct lookup *l;
	char name[NAME_MAXLEN + 1];

	if ((q = calloc(1, sizeof(*q))) == NULL)
		goto out;
	q->dns = d;
	q->cb = cb;
	q->arg = arg;
	q->state = Q_WAITING;
	if (answer_now(d, host, name, sizeof(name), q))
		make_ready(d, q);
	else if ((l = find_lookup(d, name)) != NULL) {
		q->lookup = l;
		TAILQ_INSERT_TAIL(&l->waiters, q, entry);
	} else if (start_lookup(d, name, q) == -1) {
		free(q);
		q = NULL;
	}
out:
	return q;
}

/*
 * The lookup runs on without its last waiter: its answer still fills the
 * cache.  Cancelling from the query's own callback does nothing: the
 * query is freed when the callback returns.
 */
void
dns_cancel(struct dns_query *q)
{
	if (q == NULL || q->state == Q_CALLING)
		return;
	if (q->state == Q_WAITING)
		TAILQ_REMOVE(&q->lookup->waiters, q, entry);
	else
		TAILQ_REMOVE(&q->dns->ready, q, entry);
	free(q);
}

const char *
dns_strerror(enum dns_status status)
{
	switch (status) {
	case DNS_OK:
		return "resolved";
	case DNS_NXDOMAIN:
		return "no such domain (NXDOMAIN)";
	case DNS_NODATA:
		return "no address for the name (NODATA)";
	case DNS_TIMEOUT:
		return "DNS timeout";
	case DNS_REFUSED:
		return "DNS server refused or failed";
	case DNS_ERROR:
		break;
	}
	return "DNS error";
}

unsigned long
dns_lookup_count(const struct dns *d)
{
	return d->nlookups;
}

size_t
dns_cache_count(const struct dns *d)
{
	return d->ncache;
}
