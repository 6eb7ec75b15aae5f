/*
 * proxy.c: listeners, the session limit, policy reloads and shutdown.
 *
 * Accepting pauses -- it does not spin -- in two cases: at the session
 * limit (resumed when a session ends), and when accept() fails for want of
 * descriptors or memory (resumed by a timer, as relayd does).
 */
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/listener.h>

#include "common/log.h"
#include "policy/policy.h"
#include "audit/audit.h"
#include "proxy/proxy.h"
#include "proxy/scan.h"
#include "proxy/request.h"
#include "proxy/session.h"

#define LISTENERS_MAX 8
#define LISTEN_BACKLOG 512
#define ACCEPT_PAUSE_MS 100
#define SESSIONS_DEFAULT 4096
#define HEADS_DEFAULT (16 * 1024 * 1024) /* unfinished heads, in all */
#define BUFFERS_DEFAULT (64 * 1024 * 1024) /* relay buffers, in all */
#define FLUSH_S 1 /* folded denials are counted in the log this often */

struct proxy {
	struct session_ctx ctx;
	struct evconnlistener *lev[LISTENERS_MAX];
	size_t nlev;
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
};

static void
accepting(struct proxy *px, int on)
{
	size_t i;

	for (i = 0; i < px->nlev; i++) {
		if (on)
			evconnlistener_enable(px->lev[i]);
		else
			evconnlistener_disable(px->lev[i]);
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
session_ended(void *arg)
{
	struct proxy *px = arg;

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

static void
on_accept(struct evconnlistener *lev, evutil_socket_t fd, struct sockaddr *sa,
    int len, void *arg)
{
	struct proxy *px = arg;

	(void)lev;
	(void)sa;
	(void)len;
	px->starved = 0;
	if (request_new(&px->ctx, fd, ++px->next_conn) == NULL)
		log_warnx("connection %llu: out of memory",
		    (unsigned long long)px->next_conn);
	if (px->ctx.nsessions >= px->max_sessions && !px->full) {
		px->full = 1;
		accepting(px, 0);
	}
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
	struct proxy *px = arg;
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
	px->ctx.ended = session_ended;
	px->ctx.ended_arg = px;
	TAILQ_INIT(&px->ctx.sessions);
	px->max_sessions =
	    cf->max_sessions ? cf->max_sessions : SESSIONS_DEFAULT;
	px->ctx.head_budget = cf->head_memory ? cf->head_memory : HEADS_DEFAULT;
	px->ctx.buf_budget =
	    cf->buffer_memory ? cf->buffer_memory : BUFFERS_DEFAULT;
	px->resume = evtimer_new(base, on_resume, px);
	px->flush = event_new(base, -1, EV_PERSIST, on_flush, px);
	px->ctx.policy = wrap_policy(cf->policy);
	if (px->resume == NULL || px->flush == NULL || px->ctx.policy == NULL) {
		if (px->ctx.policy == NULL)
			policy_free(cf->policy);
		proxy_free(px);
		return NULL;
	}
	if (px->ctx.audit != NULL)
		evtimer_add(px->flush, &flush_tv);
	return px;
}

/* Takes LEV over: it accepts like every other listener (paused if due). */
static int
add_listener(struct proxy *px, struct evconnlistener *lev)
{
	if (lev == NULL)
		return -1;
	evconnlistener_set_error_cb(lev, on_accept_error);
	px->lev[px->nlev++] = lev;
	if (px->full || px->stopping)
		evconnlistener_disable(lev);
	return 0;
}

int
proxy_listen_fd(struct proxy *px, int fd)
{
	if (px->nlev == LISTENERS_MAX ||
	    evutil_make_socket_nonblocking(fd) != 0)
		return -1;
	/* Backlog 0: the socket is listening already (maybe made elsewhere). */
	return add_listener(px,
	    evconnlistener_new(px->ctx.base, on_accept, px,
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
bind_unix(struct proxy *px, const char *path)
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
	lev = evconnlistener_new_bind(px->ctx.base, on_accept, px,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, LISTEN_BACKLOG,
	    (struct sockaddr *)&sun, sizeof(sun));
	if (lev == NULL)
		log_warn("proxy: listen on unix:%s", path);
	return lev;
}

/* Binds a literal IPV4:PORT or [IPV6]:PORT and says the port bound. */
static struct evconnlistener *
bind_inet(struct proxy *px, const char *spec, unsigned *port)
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
	lev = evconnlistener_new_bind(px->ctx.base, on_accept, px,
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
proxy_listen(struct proxy *px, const char *spec, unsigned *port)
{
	struct evconnlistener *lev = NULL;
	int r = -1;

	*port = 0;
	if (px->nlev == LISTENERS_MAX) {
		log_warnx("proxy: too many listeners");
	} else if (strncmp(spec, "unix:", 5) == 0) {
		r = add_listener(px, bind_unix(px, spec + 5));
	} else if ((lev = bind_inet(px, spec, port)) == NULL) {
		if (errno == EINVAL)
			log_warnx("proxy: bad --listen '%s': use IPV4:PORT, "
			          "[IPV6]:PORT or unix:PATH",
			    spec);
		else
			log_warn("proxy: listen on %s", spec);
	} else {
		r = add_listener(px, lev);
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
	size_t i;

	px->stopping = 1;
	px->done = done;
	px->done_arg = arg;
	for (i = 0; i < px->nlev; i++)
		evconnlistener_free(px->lev[i]);
	px->nlev = 0;
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
	size_t i;

	if (px == NULL)
		return;
	px->stopping = 1;
	px->done = NULL;
	for (i = 0; i < px->nlev; i++)
		evconnlistener_free(px->lev[i]);
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
	free(px);
}

/*
 * A spliced tunnel holds up to six descriptors (two sockets, two pipes),
 * and a session refused at accept is better than a tunnel that fails on
 * its first bytes for want of a pipe.
 */
unsigned
proxy_fd_budget(void)
{
	struct rlimit rl;
	rlim_t n;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
		return 256;
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
		(void)getrlimit(RLIMIT_NOFILE, &rl);
	}
	n = rl.rlim_cur == RLIM_INFINITY ? 65536 * 6 : rl.rlim_cur;
	n = n > 64 + 6 * 16 ? (n - 64) / 6 : 16;
	return n > 65536 ? 65536 : (unsigned)n;
}
