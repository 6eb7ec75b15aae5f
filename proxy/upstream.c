/*
 * upstream.c: resolve, check, connect (see upstream.h).
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/util.h>

#include "policy/policy.h"
#include "proxy/addr.h"
#include "proxy/dns.h"
#include "proxy/metrics.h"
#include "proxy/session.h"
#include "proxy/upstream.h"

struct upstream {
	struct session_ctx *ctx;
	upstream_cb *cb;
	void *arg;
	char host[TARGET_HOST_MAX];
	uint16_t port;
	int allow_private;
	unsigned connect_ms;
	struct dns_query *query;
	struct event *defer; /* runs the next step from the loop */
	struct dns_addr addrs[DNS_ADDRS_MAX];
	size_t naddrs, next;
	struct bufferevent *bev; /* the attempt under way */
	unsigned timeouts, attempts;
	int status;
	char reason[256];
	char addr[64];
	struct timespec start; /* of the connect (metrics) */
	int dns_failed; /* a DNS error, not an upstream's (metrics) */
};

static void try_next(struct upstream *);

static void
addr_text(const struct dns_addr *a, uint16_t port, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	inet_ntop(a->family == 4 ? AF_INET : AF_INET6, a->addr, ip, sizeof(ip));
	snprintf(buf, len, a->family == 4 ? "%s:%u" : "[%s]:%u", ip, port);
}

/* Counts how U ended: connected after how long, or why not. */
static void
count(const struct upstream *u, const struct bufferevent *bev)
{
	struct metrics *m = u->ctx->metrics;
	struct timespec now;

	if (m == NULL)
		return;
	if (bev != NULL) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		metrics_connected(m,
		    (int64_t)(now.tv_sec - u->start.tv_sec) * 1000000 +
		        (now.tv_nsec - u->start.tv_nsec) / 1000);
	} else if (u->dns_failed)
		metrics_dns_error(m);
	else if (u->status == 504)
		metrics_upstream_error(m, METRICS_UP_TIMEOUT);
	else if (u->status == 502)
		metrics_upstream_error(m, METRICS_UP_CONNECT);
}

/* Hands the result to the owner; U is freed. */
static void
finish(struct upstream *u, struct bufferevent *bev)
{
	upstream_cb *cb = u->cb;
	void *arg = u->arg;
	char reason[sizeof(u->reason)], addr[sizeof(u->addr)];
	int status = u->status;

	memcpy(reason, u->reason, sizeof(reason));
	memcpy(addr, u->addr, sizeof(addr));
	count(u, bev);
	if (bev == u->bev)
		u->bev = NULL; /* handed over */
	upstream_cancel(u);
	cb(arg, bev, status, reason, addr);
}

static void fail(struct upstream *u, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
fail(struct upstream *u, int status, const char *fmt, ...)
{
	va_list ap;

	u->status = status;
	va_start(ap, fmt);
	vsnprintf(u->reason, sizeof(u->reason), fmt, ap);
	va_end(ap);
	finish(u, NULL);
}

/*
 * Keeps the addresses the decision allows.  The first refused one names
 * the reason when none is left: the user learns which rule to widen.
 */
static void
filter(struct upstream *u)
{
	char first[64] = "";
	enum addr_class c, first_class = ADDR_GLOBAL;
	size_t i, n = 0;

	for (i = 0; i < u->naddrs; i++) {
		c = addr_classify(u->addrs[i].family, u->addrs[i].addr);
		if (c == ADDR_GLOBAL || u->allow_private) {
			u->addrs[n++] = u->addrs[i];
			continue;
		}
		if (first[0] == '\0') {
			addr_text(&u->addrs[i], u->port, first, sizeof(first));
			first_class = c;
		}
	}
	u->naddrs = n;
	if (n > 0)
		try_next(u);
	else if (first[0] != '\0')
		fail(u, 403,
		    "%s resolves to %s (%s): not allowed without "
		    "'private' in the rule",
		    u->host, first, addr_class_name(first_class));
	else
		fail(u, 502, "%s has no address", u->host);
}

static void
on_dns(void *arg, enum dns_status st, const struct dns_addr *addrs, size_t n)
{
	struct upstream *u = arg;

	u->query = NULL;
	if (st != DNS_OK) {
		u->dns_failed = 1;
		fail(u, 502, "DNS lookup of %s failed: %s", u->host,
		    dns_strerror(st));
		return;
	}
	u->naddrs = n < DNS_ADDRS_MAX ? n : DNS_ADDRS_MAX;
	memcpy(u->addrs, addrs, u->naddrs * sizeof(*addrs));
	filter(u);
}

static void
on_defer(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	filter(arg);
}

static void
attempt_failed(struct upstream *u, int timeout, int err)
{
	char where[64];

	addr_text(&u->addrs[u->next - 1], u->port, where, sizeof(where));
	if (timeout) {
		u->timeouts++;
		snprintf(u->reason, sizeof(u->reason),
		    "connect to %s timed out after %u ms", where,
		    u->connect_ms);
	} else
		snprintf(u->reason, sizeof(u->reason), "connect to %s: %s",
		    where, evutil_socket_error_to_string(err));
	bufferevent_free(u->bev);
	u->bev = NULL;
	try_next(u);
}

static void
on_connect(struct bufferevent *bev, short what, void *arg)
{
	struct upstream *u = arg;
	int err = EVUTIL_SOCKET_ERROR(), one = 1;

	if (what & BEV_EVENT_CONNECTED) {
		/* Small requests and replies: no Nagle delay on either hop. */
		setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY,
		    &one, sizeof(one));
		addr_text(
		    &u->addrs[u->next - 1], u->port, u->addr, sizeof(u->addr));
		bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
		bufferevent_set_timeouts(bev, NULL, NULL);
		u->status = 0;
		finish(u, bev);
	} else
		attempt_failed(u, (what & BEV_EVENT_TIMEOUT) != 0, err);
}

static socklen_t
make_sockaddr(
    const struct dns_addr *a, uint16_t port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (a->family == 4) {
		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, a->addr, 4);
		return sizeof(*sin);
	}
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons(port);
	memcpy(&sin6->sin6_addr, a->addr, 16);
	return sizeof(*sin6);
}

/* Connects to the next address, or reports the last failure. */
static void
try_next(struct upstream *u)
{
	struct sockaddr_storage ss;
	struct timeval tv;
	socklen_t len;

	if (u->next == u->naddrs) {
		/* 504 only when every attempt timed out: then no one answered. */
		u->status = u->timeouts == u->attempts ? 504 : 502;
		finish(u, NULL);
		return;
	}
	len = make_sockaddr(&u->addrs[u->next++], u->port, &ss);
	u->attempts++;
	u->bev =
	    bufferevent_socket_new(u->ctx->base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (u->bev == NULL) {
		fail(u, 502, "out of memory");
		return;
	}
	tv.tv_sec = u->connect_ms / 1000;
	tv.tv_usec = (u->connect_ms % 1000) * 1000;
	bufferevent_set_timeouts(u->bev, NULL, &tv);
	bufferevent_setcb(u->bev, NULL, NULL, on_connect, u);
	if (bufferevent_socket_connect(u->bev, (struct sockaddr *)&ss, len) !=
	    0)
		attempt_failed(u, 0, EVUTIL_SOCKET_ERROR());
}

static void
host_addr(const struct target_host *h, struct dns_addr *a)
{
	a->family = h->kind == TARGET_V4 ? 4 : 6;
	memcpy(a->addr, h->addr, sizeof(a->addr));
}

struct upstream *
upstream_open(struct session_ctx *ctx, const struct policy *p,
    const struct policy_decision *d, const struct target_host *host,
    uint16_t port, upstream_cb *cb, void *arg)
{
	struct target_host over[DNS_ADDRS_MAX];
	struct upstream *u;
	size_t i, n;

	if ((u = calloc(1, sizeof(*u))) == NULL)
		return NULL;
	u->ctx = ctx;
	u->cb = cb;
	u->arg = arg;
	memcpy(u->host, host->name, host->len + 1);
	u->port = port;
	u->allow_private = d->allow_private;
	u->connect_ms = policy_timeout(p, POLICY_TIMEOUT_CONNECT);
	clock_gettime(CLOCK_MONOTONIC, &u->start);
	if (host->kind != TARGET_NAME) {
		host_addr(host, &u->addrs[0]);
		u->naddrs = 1;
	} else if ((n = policy_resolve(p, host->name, over, DNS_ADDRS_MAX)) >
	    0) {
		for (i = 0; i < n && i < DNS_ADDRS_MAX; i++)
			host_addr(&over[i], &u->addrs[i]);
		u->naddrs = i;
	} else {
		if ((u->query = dns_resolve(ctx->dns, u->host, on_dns, u)) ==
		    NULL)
			goto fail;
		return u;
	}
	/* Known addresses: go on from the loop, never from inside here. */
	if ((u->defer = evtimer_new(ctx->base, on_defer, u)) == NULL)
		goto fail;
	event_active(u->defer, EV_TIMEOUT, 0);
	return u;
fail:
	upstream_cancel(u);
	return NULL;
}

void
upstream_cancel(struct upstream *u)
{
	if (u == NULL)
		return;
	if (u->query != NULL)
		dns_cancel(u->query);
	if (u->defer != NULL)
		event_free(u->defer);
	if (u->bev != NULL)
		bufferevent_free(u->bev);
	free(u);
}
