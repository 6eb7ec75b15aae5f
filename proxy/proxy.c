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
 */
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
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

static struct pipepool *pool_new(void);
static struct uppool *upool_new(struct event_base *base);
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
};

struct proxy {
	struct session_ctx ctx;
	LIST_HEAD(, listener) listeners;
	struct event *resume; /* re-enables accept after EMFILE */
	unsigned max_sessions;
	int full; /* paused at the session limit */
	int starved; /* accept failed: said so once */
	int stopping;
	struct event *grace;
	struct event *flush; /* writes the count of folded denials */
	void (*done)(void *);
	void *done_arg;
	uint64_t next_conn;
	unsigned max_per_client; /* 0: no limit */
	struct hmap *clients; /* NULL without a per-client limit */
	/*
	 * Clients with no session left that were told about on stderr less
	 * than CLIENT_SAY_S ago: kept until then (on_flush), so that one
	 * coming back at once is not told about again.
	 */
	TAILQ_HEAD(, client) lingering;
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
client_say(struct proxy *px, struct client *c, int force)
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
		    c->name, px->max_per_client);
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

/* C goes: what was not said yet is said now. */
static void
client_drop(struct proxy *px, struct client *c)
{
	client_say(px, c, 1);
	hmap_remove(px->clients, &c->link);
	if (c->lingering)
		TAILQ_REMOVE(&px->lingering, c, linger);
	free(c);
}

/*
 * One of C's sessions ended: C goes with its last one, or lingers if it
 * was told about lately.
 */
static void
client_release(struct proxy *px, struct client *c)
{
	struct timespec now;

	if (c == NULL || --c->n > 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (said_lately(c, &now)) {
		c->lingering = 1;
		TAILQ_INSERT_TAIL(&px->lingering, c, linger);
	} else {
		client_drop(px, c);
	}
}

/* Lets go of the lingering clients told about over CLIENT_SAY_S ago. */
static void
clients_sweep(struct proxy *px, int all)
{
	struct client *c, *next;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	for (c = TAILQ_FIRST(&px->lingering); c != NULL; c = next) {
		next = TAILQ_NEXT(c, linger);
		if (all || !said_lately(c, &now))
			client_drop(px, c);
	}
}

/*
 * Answers FD, a client over its limit, 503 and closes it.  What it sent
 * already is read first: closing a socket with unread bytes resets the
 * connection, and the client might never see why.
 */
static void
refuse(struct proxy *px, struct client *c, int fd, uint64_t conn,
    enum proxy_via via)
{
	char why[160], buf[4096], reply[512];
	size_t got = 0;
	ssize_t n;
	int len;
	struct audit_rec r;
	struct linger lg = {1, 0};

	snprintf(why, sizeof(why),
	    "per-client limit: client %s has %u connections open", c->name,
	    c->n);
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
	c->unsaid++;
	client_say(px, c, 0);
}

/*
 * The client entry a new connection from SA counts against; NULL when it
 * is not counted, or (*OVER set) when the client is at its limit or no
 * entry could be made.
 */
static struct client *
client_get(struct proxy *px, const struct sockaddr *sa, int len, int *over)
{
	uint8_t key[9];
	char name[INET6_ADDRSTRLEN + 4] = "";
	struct client *c;

	*over = 0;
	if (px->clients == NULL || client_key(sa, len, key, name, sizeof(name)))
		return NULL;
	c = HMAP_ITEM(
	    hmap_find(px->clients, key, sizeof(key)), struct client, link);
	if (c == NULL) {
		if ((c = calloc(1, sizeof(*c))) == NULL) {
			*over = 1;
			return NULL;
		}
		memcpy(c->key, key, sizeof(c->key));
		memcpy(c->name, name, sizeof(c->name));
		hmap_insert(px->clients, &c->link, c->key, sizeof(c->key));
	} else if (c->lingering) {
		c->lingering = 0;
		TAILQ_REMOVE(&px->lingering, c, linger);
	}
	*over = c->n >= px->max_per_client;
	return c;
}

static int
clients_new(struct proxy *px, unsigned max_sessions)
{
	size_t want = max_sessions / 2 > 16 ? max_sessions / 2 : 16;

	/* Seeded per map: clients choose their addresses. */
	TAILQ_INIT(&px->lingering);
	px->clients = hmap_new(want < 65536 ? want : 65536);
	return px->clients != NULL ? 0 : -1;
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

/* A session ended: there is room again, or the shutdown is over. */
static void
session_ended(void *arg, void *owner)
{
	struct proxy *px = arg;

	client_release(px, owner);
	if (px->stopping) {
		if (px->ctx.nsessions == 0 && px->done != NULL)
			finish_stop(px);
		return;
	}
	if (px->full && px->ctx.nsessions < px->max_sessions) {
		px->full = 0;
		accepting(px, 1);
	}
}

/* FD, arrived from SA as VIA, becomes a session (or is refused). */
static void
take(struct proxy *px, int fd, const struct sockaddr *sa, int len,
    enum proxy_via via)
{
	uint64_t conn = ++px->next_conn;
	struct client *c;
	struct session *s;
	int over;

	c = client_get(px, sa, len, &over);
	if (over && c != NULL) {
		refuse(px, c, fd, conn, via);
		return;
	}
	if (over || (s = front_start(px, fd, conn, via)) == NULL) {
		if (over) /* no entry for its client: fail closed */
			close(fd);
		log_warnx(
		    "connection %llu: out of memory", (unsigned long long)conn);
		if (c != NULL && c->n == 0) {
			c->n = 1;
			client_release(px, c);
		}
		return;
	}
	if (c != NULL) {
		c->n++;
		session_set_owner(s, c);
	}
	if (px->ctx.nsessions >= px->max_sessions && !px->full) {
		px->full = 1;
		accepting(px, 0);
	}
}

static void
on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
    int len, void *arg)
{
	struct listener *l = arg;

	(void)lev;
	l->px->starved = 0;
	take(l->px, fd, sa, len, l->via);
}

int
proxy_take_fd(struct proxy *px, int fd, enum proxy_via via,
    const struct sockaddr *sa, int len)
{
	/* Past its session limit or stopping, it is the caller's to refuse. */
	if (px->stopping || px->ctx.nsessions >= px->max_sessions ||
	    evutil_make_socket_nonblocking(fd) != 0)
		return -1;
	take(px, fd, sa, len, via);
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
	if (px->clients != NULL)
		clients_sweep(px, 0);
}

static struct proxy_policy *
wrap_policy(struct policy *p)
{
	struct proxy_policy *pp = calloc(1, sizeof(*pp));

	if (pp == NULL)
		return NULL;
	pp->p = p;
	pp->refs = 1; /* the proxy's own */
	return pp;
}

struct proxy *
proxy_new(struct event_base *base, const struct proxy_config *cf)
{
	static const struct timeval flush_tv = {FLUSH_S, 0};
	struct proxy *px;

	if ((px = calloc(1, sizeof(*px))) == NULL)
		return NULL;
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
	px->max_sessions =
	    cf->max_sessions ? cf->max_sessions : SESSIONS_DEFAULT;
	px->max_per_client = cf->max_per_client;
	if (px->max_per_client > 0 && clients_new(px, px->max_sessions) != 0) {
		policy_free(cf->policy);
		free(px);
		return NULL;
	}
	px->ctx.head_budget = cf->head_memory ? cf->head_memory : HEADS_DEFAULT;
	px->ctx.buf_budget =
	    cf->buffer_memory ? cf->buffer_memory : BUFFERS_DEFAULT;
	px->resume = evtimer_new(base, on_resume, px);
	px->flush = event_new(base, -1, EV_PERSIST, on_flush, px);
	px->ctx.policy = wrap_policy(cf->policy);
	px->ctx.pipes = pool_new();
	px->ctx.upool = upool_new(base);
	if (px->resume == NULL || px->flush == NULL || px->ctx.policy == NULL ||
	    px->ctx.pipes == NULL || px->ctx.upool == NULL) {
		if (px->ctx.policy == NULL)
			policy_free(cf->policy);
		proxy_free(px);
		return NULL;
	}
	if (px->ctx.audit != NULL || px->clients != NULL)
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
	lev = evconnlistener_new_bind(l->px->ctx.base, on_accept, l,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC | LEV_OPT_REUSEABLE,
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

void
proxy_set_policy(struct proxy *px, struct policy *p)
{
	struct proxy_policy *old = px->ctx.policy, *pp = wrap_policy(p);

	if (pp == NULL) {
		log_warnx("reload: out of memory; the old policy stays");
		policy_free(p);
		return;
	}
	px->ctx.policy = pp;
	/* Connections made under the old policy serve none under the new. */
	uppool_flush(px->ctx.upool);
	if (--old->refs == 0) {
		scan_free(old->scan);
		policy_free(old->p);
		free(old);
	}
	request_policy_reloaded(&px->ctx);
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
	session_close_all(&px->ctx);
	if (px->ctx.policy != NULL && --px->ctx.policy->refs == 0) {
		scan_free(px->ctx.policy->scan);
		policy_free(px->ctx.policy->p);
		free(px->ctx.policy);
	}
	if (px->resume != NULL)
		event_free(px->resume);
	if (px->grace != NULL)
		event_free(px->grace);
	if (px->flush != NULL)
		event_free(px->flush);
	if (px->clients != NULL)
		clients_sweep(px, 1);
	hmap_free(px->clients); /* empty: every session is closed */
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

/* A proxy's pipe pool, bounded by the pipes' share of the limit. */
static struct pipepool *
pool_new(void)
{
	struct rlimit rl;
	unsigned sessions, pipes = 16, kept;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		fd_share(rl.rlim_cur, &sessions, &pipes, &kept);
	return pipepool_new(pipes, POOL_IDLE);
}

/* A proxy's idle upstream connections, bounded by their share too. */
static struct uppool *
upool_new(struct event_base *base)
{
	struct rlimit rl;
	unsigned sessions, pipes, kept = 4;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		fd_share(rl.rlim_cur, &sessions, &pipes, &kept);
	return uppool_new(base, kept, UPPOOL_PER_KEY, UPPOOL_IDLE_MS);
}
