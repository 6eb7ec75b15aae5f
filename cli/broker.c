/*
 * broker.c: pinhole proxy --broker PATH, the parent (broker.h).
 *
 * The parent holds the configuration, the listening socket, the metrics
 * and the list of its children; it never reads a client's bytes.  Each
 * client it admits gets a process of its own (broker_engine_main), forked
 * with the configuration of that moment: a reload (SIGHUP) changes what
 * new clients get, never what a running sandbox has.  Signals come on a
 * signalfd, so a child starts with no handler of the parent's installed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <event2/event.h>

#include "cli/broker.h"
#include "cli/cli.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "policy/grant.h"
#include "policy/policy.h"
#include "proxy/metrics.h"
#include "proxy/view.h"

#define ACCEPT_BATCH 32 /* clients accepted per turn of the loop */
#define RELAY_BATCH 64 /* metrics datagrams absorbed per turn */
#define RELAY_DGRAM_MAX 4096 /* larger ones are malformed */
#define PAUSE_MS 100 /* accepting pauses this long on EMFILE */
#define STOP_GRACE_MS 5000 /* children get this long after SIGTERM */
#define SAY_EVERY_MS 1000 /* one refusal line per reason per second */

/* The reasons a client is refused here, each with its own line rate. */
enum refusal { REFUSE_USER, REFUSE_TOTAL, REFUSE_KINDS };

struct say_rate {
	struct broker *b;
	const char *what; /* for the summary line */
	int64_t last_ms;
	unsigned suppressed;
	struct event *flush;
};

struct child {
	pid_t pid;
	uid_t uid;
};

struct broker {
	const struct broker_opts *o;
	struct policy *config; /* what new clients get */
	struct event_base *base;
	pid_t self;
	int lfd; /* the listener, or -1 once stopping */
	int bound; /* PATH is ours to remove (not systemd's) */
	dev_t dev; /* PATH's socket, to remove only that */
	ino_t ino;
	int sigfd;
	int relay[2]; /* metrics: [0] read here, [1] the children's */
	struct metrics *metrics;
	struct event *accept_ev, *pause_ev, *sig_ev, *relay_ev, *kill_ev;
	struct child *kids;
	size_t nkids;
	int stopping;
	struct say_rate rate[REFUSE_KINDS];
};

static const int handled[] = {SIGCHLD, SIGHUP, SIGTERM, SIGINT};

static int64_t
now_ms(void)
{
	struct timespec ts;

	(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct timeval
ms_tv(int64_t ms)
{
	struct timeval tv;

	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	return tv;
}

/* The diagnostics of a load: all printed at the start, the first kept. */
struct load_diag {
	int print;
	struct cli_diag_count count;
	char first[512];
	unsigned errors;
};

static void
on_diag(void *arg, const struct policy_diag *d)
{
	struct load_diag *ld = arg;

	if (ld->print)
		cli_print_diag(&ld->count, d);
	if (d->warning)
		return;
	if (ld->errors++ == 0)
		(void)snprintf(ld->first, sizeof(ld->first), "%s:%u: %s",
		    d->file != NULL ? d->file : "?", d->line, d->msg);
}

/*
 * Loads the configuration (no secret value is read: the children load
 * the policies and secrets each serves).  Returns it, or NULL with WHY
 * filled.  PRINT: every diagnostic goes to stderr as it comes.
 */
static struct policy *
config_load(const struct broker_opts *o, int print, char *why, size_t len)
{
	struct load_diag ld;
	struct policy *p = NULL;
	const struct grant_set *g;

	memset(&ld, 0, sizeof(ld));
	ld.print = print;
	if (policy_load(&o->config, 1, on_diag, &ld, &p) != 0) {
		if (ld.errors > 1)
			(void)snprintf(why, len, "%s (and %u more error%s)",
			    ld.first, ld.errors - 1, ld.errors == 2 ? "" : "s");
		else
			(void)snprintf(why, len, "%s",
			    ld.errors ? ld.first : "cannot be loaded");
		goto fail;
	}
	g = policy_grants(p);
	if (g == NULL || grant_count(g) == 0) {
		(void)snprintf(why, len, "%s has no broker block", o->config);
		goto fail;
	}
	if (o->log == NULL && policy_log_path(p) == NULL) {
		(void)snprintf(why, len,
		    "no audit log: give --log FILE or a log line in %s",
		    o->config);
		goto fail;
	}
	return p;
fail:
	policy_free(p);
	return NULL;
}

/* Is a socket listening at SUN?  1 yes, 0 no (a stale one), -1 error. */
static int
someone_listens(const struct sockaddr_un *sun)
{
	int fd, r = -1;

	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) == 0)
		r = 1;
	else if (errno == ECONNREFUSED)
		r = 0;
	(void)close(fd);
	return r;
}

/* Removes a stale socket at PATH; anything else there is refused. */
static int
clear_path(const struct broker_opts *o, const struct sockaddr_un *sun)
{
	struct stat st;

	if (lstat(o->path, &st) == -1) {
		if (errno == ENOENT)
			return 0;
		log_warn("proxy: --broker %s", o->path);
		return -1;
	}
	if (!S_ISSOCK(st.st_mode)) {
		log_warnx("proxy: --broker %s: exists and is not a socket; "
		          "not replacing it",
		    o->path);
		return -1;
	}
	switch (someone_listens(sun)) {
	case 0:
		break;
	case 1:
		log_warnx("proxy: --broker %s: something listens there "
		          "already (another broker?)",
		    o->path);
		return -1;
	default:
		log_warn("proxy: --broker %s: cannot tell whether the socket "
		         "there is in use",
		    o->path);
		return -1;
	}
	if (unlink(o->path) == -1) {
		log_warn("proxy: --broker %s: cannot remove the stale socket",
		    o->path);
		return -1;
	}
	return 0;
}

/* Binds PATH (mode 0666: any local user may ask; the grants decide). */
static int
listen_path(struct broker *b)
{
	const char *path = b->o->path;
	struct sockaddr_un sun;
	struct stat st;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		log_warnx(
		    "proxy: --broker %s: too long for a socket path", path);
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path));
	if (clear_path(b->o, &sun) != 0)
		return -1;
	b->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (b->lfd == -1 ||
	    bind(b->lfd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		log_warn("proxy: --broker %s", path);
		return -1;
	}
	b->bound = 1;
	if (chmod(path, 0666) == -1 || lstat(path, &st) == -1 ||
	    listen(b->lfd, SOMAXCONN) == -1) {
		log_warn("proxy: --broker %s", path);
		return -1;
	}
	b->dev = st.st_dev;
	b->ino = st.st_ino;
	return 0;
}

/* Is FD an AF_UNIX stream socket that listens? */
static int
is_unix_listener(int fd)
{
	int v[3];
	socklen_t len;
	static const int opt[] = {SO_DOMAIN, SO_TYPE, SO_ACCEPTCONN};
	size_t i;

	for (i = 0; i < 3; i++) {
		len = sizeof(v[i]);
		if (getsockopt(fd, SOL_SOCKET, opt[i], &v[i], &len) == -1)
			return 0;
	}
	return v[0] == AF_UNIX && v[1] == SOCK_STREAM && v[2] == 1;
}

/*
 * Takes the socket systemd passed (sd_listen_fds(3): LISTEN_PID ours,
 * LISTEN_FDS 1, fd 3), the variables unset so children do not see them.
 * Returns 1 taken, 0 none passed, -1 after saying why.
 */
static int
listen_systemd(struct broker *b)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	char want[32];
	struct sockaddr_un sun;
	socklen_t len = sizeof(sun);
	int r = 0;

	(void)snprintf(want, sizeof(want), "%ld", (long)getpid());
	if (pid != NULL && strcmp(pid, want) == 0) {
		r = -1;
		if (fds == NULL || strcmp(fds, "1") != 0)
			log_warnx("proxy: --broker %s: systemd passed %s "
			          "sockets; the broker takes one",
			    b->o->path, fds != NULL ? fds : "no");
		else if (!is_unix_listener(3))
			log_warnx(
			    "proxy: --broker %s: what systemd passed "
			    "(fd 3) is not a listening Unix stream socket",
			    b->o->path);
		else
			r = 1;
	}
	(void)unsetenv("LISTEN_PID");
	(void)unsetenv("LISTEN_FDS");
	(void)unsetenv("LISTEN_FDNAMES");
	if (r != 1)
		return r;
	b->lfd = 3;
	if (fcntl(3, F_SETFD, FD_CLOEXEC) == -1 ||
	    fcntl(3, F_SETFL, fcntl(3, F_GETFL) | O_NONBLOCK) == -1) {
		log_warn("proxy: --broker %s: systemd's socket", b->o->path);
		return -1;
	}
	memset(&sun, 0, sizeof(sun));
	if (getsockname(3, (struct sockaddr *)&sun, &len) == 0 &&
	    strncmp(sun.sun_path, b->o->path, sizeof(sun.sun_path)) != 0)
		log_warnx("proxy: --broker %s: systemd's socket is %.*s",
		    b->o->path, (int)sizeof(sun.sun_path), sun.sun_path);
	return 1;
}

/* Removes PATH if it is still the socket bound here. */
static void
unlink_path(struct broker *b)
{
	struct stat st;

	if (b->bound && lstat(b->o->path, &st) == 0 && st.st_dev == b->dev &&
	    st.st_ino == b->ino)
		(void)unlink(b->o->path);
	b->bound = 0;
}

static size_t
uid_count(const struct broker *b, uid_t uid)
{
	size_t i, n = 0;

	for (i = 0; i < b->nkids; i++)
		n += b->kids[i].uid == uid;
	return n;
}

static void
on_say_flush(evutil_socket_t fd, short what, void *arg)
{
	struct say_rate *r = arg;

	(void)fd;
	(void)what;
	if (r->suppressed > 0)
		log_warnx("broker: refused %u more client%s in the last "
		          "second: %s",
		    r->suppressed, r->suppressed == 1 ? "" : "s", r->what);
	r->suppressed = 0;
	r->last_ms = now_ms();
}

/* Says MSG on stderr, at most once a second for its reason, then a count. */
static void
say_refusal(struct broker *b, enum refusal k, const char *msg, pid_t pid)
{
	struct say_rate *r = &b->rate[k];
	int64_t now = now_ms();
	struct timeval tv;

	if (now - r->last_ms >= SAY_EVERY_MS && r->suppressed == 0) {
		log_warnx("broker: refused client pid %ld: %s", (long)pid, msg);
		r->last_ms = now;
	} else if (r->suppressed++ == 0) {
		tv = ms_tv(r->last_ms + SAY_EVERY_MS - now);
		evtimer_add(r->flush, &tv);
	}
}

/* Tells the client why (one ERROR; never blocks) and closes it. */
static void
refuse(struct broker *b, int conn, enum refusal k, const char *msg, pid_t pid)
{
	if (fcntl(conn, F_SETFL, fcntl(conn, F_GETFL) | O_NONBLOCK) == 0)
		(void)view_send(
		    conn, VIEW_ERROR, msg, strlen(msg) + 1, NULL, 0);
	(void)close(conn);
	metrics_refused(b->metrics, METRICS_REF_LIMIT);
	say_refusal(b, k, msg, pid);
}

/* Closes every descriptor above 2 but A and B (-1: none). */
static void
close_all_but(int a, int b)
{
	int lo = a < b ? a : b, hi = a < b ? b : a;

	if (lo < 0)
		lo = hi;
	if (lo > 3)
		(void)close_range(3, (unsigned)lo - 1, 0);
	if (hi > lo + 1)
		(void)close_range((unsigned)lo + 1, (unsigned)hi - 1, 0);
	(void)close_range((unsigned)hi + 1, ~0U, 0);
}

/*
 * In the child: the parent's signals undone, the broker's death its
 * death (its sandbox's connections then fail closed), nothing of the
 * parent's kept but the client and the metrics relay.
 */
static void __attribute__((noreturn))
child_main(struct broker *b, int conn, const struct ucred *cr)
{
	struct broker_client c;
	sigset_t none;
	size_t i;

	for (i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		(void)signal(handled[i], SIG_DFL);
	(void)signal(SIGHUP, SIG_IGN); /* a reload is the parent's */
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != b->self)
		_exit(1);
	c.conn = conn;
	c.uid = cr->uid;
	c.gid = cr->gid;
	c.pid = cr->pid;
	c.relay = b->metrics != NULL ? b->relay[1] : -1;
	close_all_but(c.conn, c.relay);
	broker_engine_main(b->o, b->config, &c);
}

/* Forks the client's engine; the parent keeps its pid and uid only. */
static void
spawn(struct broker *b, int conn, const struct ucred *cr)
{
	pid_t pid = fork();

	if (pid == 0)
		child_main(b, conn, cr);
	if (pid == -1) {
		log_warn("broker: cannot fork for uid %ld", (long)cr->uid);
		(void)fcntl(conn, F_SETFL, fcntl(conn, F_GETFL) | O_NONBLOCK);
		(void)view_send(conn, VIEW_ERROR, "the broker cannot fork",
		    sizeof("the broker cannot fork"), NULL, 0);
		metrics_refused(b->metrics, METRICS_REF_SETUP);
	} else {
		b->kids[b->nkids].pid = pid;
		b->kids[b->nkids].uid = cr->uid;
		b->nkids++;
		metrics_sandbox(b->metrics, +1);
		log_debug("broker: uid %ld pid %ld: engine %ld", (long)cr->uid,
		    (long)cr->pid, (long)pid);
	}
	(void)close(conn);
}

/* One accepted connection: who it is, the limits, then its process. */
static void
admit(struct broker *b, int conn)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	char msg[128];

	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cr, &len) == -1) {
		log_warn("broker: SO_PEERCRED");
		(void)close(conn);
	} else if (b->nkids >= b->o->sandboxes) {
		(void)snprintf(msg, sizeof(msg),
		    "the broker serves its limit of %u sandboxes",
		    b->o->sandboxes);
		refuse(b, conn, REFUSE_TOTAL, msg, cr.pid);
	} else if (uid_count(b, cr.uid) >= b->o->per_user) {
		(void)snprintf(msg, sizeof(msg),
		    "too many sandboxes for uid %ld (limit %u)", (long)cr.uid,
		    b->o->per_user);
		refuse(b, conn, REFUSE_USER, msg, cr.pid);
	} else
		spawn(b, conn, &cr);
}

static void
on_accept(evutil_socket_t fd, short what, void *arg)
{
	struct broker *b = arg;
	struct timeval tv = ms_tv(PAUSE_MS);
	int i, conn;

	(void)what;
	for (i = 0; i < ACCEPT_BATCH && !b->stopping; i++) {
		if ((conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC)) != -1) {
			admit(b, conn);
			continue;
		}
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM) {
			/* Out of descriptors: try again a little later. */
			log_warn("broker: accept (pausing)");
			event_del(b->accept_ev);
			evtimer_add(b->pause_ev, &tv);
		} else if (errno != EAGAIN && errno != EWOULDBLOCK)
			log_warn("broker: accept");
		break;
	}
}

static void
on_resume(evutil_socket_t fd, short what, void *arg)
{
	struct broker *b = arg;

	(void)fd;
	(void)what;
	if (!b->stopping)
		event_add(b->accept_ev, NULL);
}

/* The children's counts (metrics.h relay), a bounded batch per turn. */
static void
on_relay(evutil_socket_t fd, short what, void *arg)
{
	struct broker *b = arg;
	unsigned char buf[RELAY_DGRAM_MAX];
	ssize_t n;
	int i;

	(void)what;
	for (i = 0; i < RELAY_BATCH; i++) {
		n = recv(fd, buf, sizeof(buf), MSG_TRUNC | MSG_DONTWAIT);
		if (n < 0)
			break;
		/* One too large is malformed: absorbed as nothing. */
		(void)metrics_absorb(
		    b->metrics, buf, (size_t)n > sizeof(buf) ? 0 : (size_t)n);
	}
}

static void
reap(struct broker *b)
{
	pid_t pid;
	int st;
	size_t i;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		for (i = 0; i < b->nkids && b->kids[i].pid != pid; i++)
			;
		if (i == b->nkids)
			continue;
		log_debug("broker: engine %ld (uid %ld) ended: %s %d",
		    (long)pid, (long)b->kids[i].uid,
		    WIFSIGNALED(st) ? "signal" : "status",
		    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		b->kids[i] = b->kids[--b->nkids];
		metrics_sandbox(b->metrics, -1);
	}
	if (b->stopping && b->nkids == 0)
		event_base_loopexit(b->base, NULL);
}

static void
reload(struct broker *b)
{
	char why[640];
	struct policy *p = config_load(b->o, 0, why, sizeof(why));

	if (p == NULL) {
		log_warnx("broker: SIGHUP: %s; keeping the configuration in "
		          "use",
		    why);
		return;
	}
	policy_free(b->config);
	b->config = p;
	log_warnx("broker: reloaded %s: %zu polic%s", b->o->config,
	    grant_count(policy_grants(p)),
	    grant_count(policy_grants(p)) == 1 ? "y" : "ies");
}

/* Stops accepting, tells the children to end, and waits a while. */
static void
stop(struct broker *b, int sig)
{
	struct timeval tv = ms_tv(STOP_GRACE_MS);
	size_t i;

	if (b->stopping)
		return;
	b->stopping = 1;
	log_warnx("signal %d: stopping; %zu sandbox%s told to end", sig,
	    b->nkids, b->nkids == 1 ? "" : "es");
	event_del(b->accept_ev);
	event_del(b->pause_ev);
	(void)close(b->lfd);
	b->lfd = -1;
	unlink_path(b);
	for (i = 0; i < b->nkids; i++)
		(void)kill(b->kids[i].pid, SIGTERM);
	if (b->nkids == 0)
		event_base_loopexit(b->base, NULL);
	else
		evtimer_add(b->kill_ev, &tv);
}

static void
on_grace_over(evutil_socket_t fd, short what, void *arg)
{
	struct broker *b = arg;
	size_t i;

	(void)fd;
	(void)what;
	log_warnx("broker: %zu sandbox%s still there: killed", b->nkids,
	    b->nkids == 1 ? "" : "es");
	for (i = 0; i < b->nkids; i++)
		(void)kill(b->kids[i].pid, SIGKILL);
	for (i = 0; i < b->nkids; i++)
		(void)waitpid(b->kids[i].pid, NULL, 0);
	b->nkids = 0;
	event_base_loopexit(b->base, NULL);
}

static void
on_signal(evutil_socket_t fd, short what, void *arg)
{
	struct broker *b = arg;
	struct signalfd_siginfo si;
	int chld = 0;

	(void)what;
	while (read(fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			chld = 1;
		else if (si.ssi_signo == SIGHUP && !b->stopping)
			reload(b);
		else if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
			stop(b, (int)si.ssi_signo);
	}
	if (chld || b->stopping)
		reap(b);
}

/* The signals on a descriptor: none is delivered to a handler. */
static int
signals_open(struct broker *b)
{
	sigset_t set;
	size_t i;

	sigemptyset(&set);
	for (i = 0; i < sizeof(handled) / sizeof(handled[0]); i++)
		sigaddset(&set, handled[i]);
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1 ||
	    (b->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) == -1) {
		log_warn("broker: signalfd");
		return -1;
	}
	return 0;
}

/* --metrics: the endpoint, and the relay the children count through. */
static int
metrics_open(struct broker *b)
{
	const char *spec = b->o->metrics;
	unsigned port;

	if (spec == NULL)
		return 0;
	if ((b->metrics = metrics_new(0)) == NULL)
		fatalx("broker: out of memory");
	metrics_sandbox(b->metrics, 0); /* a broker's: its series at 0 */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
	        0, b->relay) == -1) {
		log_warn("broker: metrics relay");
		return -1;
	}
	if (metrics_listen(b->metrics, b->base, spec, &port) != 0)
		return -1;
	/* The host as given (tests read the port picked for ":0"). */
	if (strncmp(spec, "unix:", 5) != 0 && strrchr(spec, ':') != NULL)
		fprintf(stderr, "pinhole: metrics on %.*s:%u\n",
		    (int)(strrchr(spec, ':') - spec), spec, port);
	b->relay_ev =
	    event_new(b->base, b->relay[0], EV_READ | EV_PERSIST, on_relay, b);
	if (b->relay_ev == NULL || event_add(b->relay_ev, NULL) != 0)
		fatalx("broker: cannot watch the metrics relay");
	return 0;
}

/* The listener: systemd's socket if it passed one, else PATH bound. */
static int
listener_open(struct broker *b)
{
	int r = listen_systemd(b);

	if (r == 0)
		r = listen_path(b) == 0 ? 1 : -1;
	if (r < 0)
		return -1;
	b->accept_ev =
	    event_new(b->base, b->lfd, EV_READ | EV_PERSIST, on_accept, b);
	b->pause_ev = evtimer_new(b->base, on_resume, b);
	if (b->accept_ev == NULL || b->pause_ev == NULL ||
	    event_add(b->accept_ev, NULL) != 0)
		fatalx("broker: cannot watch the listener");
	return 0;
}

static void
events_open(struct broker *b)
{
	static const char *const what[REFUSE_KINDS] = {
	    "too many sandboxes for their uid",
	    "the broker serves its limit of sandboxes"};
	size_t i;

	if ((b->base = event_base_new()) == NULL)
		fatalx("broker: cannot create the event loop");
	b->sig_ev =
	    event_new(b->base, b->sigfd, EV_READ | EV_PERSIST, on_signal, b);
	b->kill_ev = evtimer_new(b->base, on_grace_over, b);
	if (b->sig_ev == NULL || b->kill_ev == NULL ||
	    event_add(b->sig_ev, NULL) != 0)
		fatalx("broker: cannot watch the signals");
	for (i = 0; i < REFUSE_KINDS; i++) {
		b->rate[i].b = b;
		b->rate[i].what = what[i];
		b->rate[i].last_ms = INT64_MIN / 2;
		if ((b->rate[i].flush = evtimer_new(
		         b->base, on_say_flush, &b->rate[i])) == NULL)
			fatalx("broker: out of memory");
	}
}

static void
broker_close(struct broker *b)
{
	size_t i;

	unlink_path(b);
	if (b->lfd >= 0)
		(void)close(b->lfd);
	for (i = 0; i < REFUSE_KINDS; i++)
		if (b->rate[i].flush != NULL)
			event_free(b->rate[i].flush);
	if (b->accept_ev != NULL)
		event_free(b->accept_ev);
	if (b->pause_ev != NULL)
		event_free(b->pause_ev);
	if (b->relay_ev != NULL)
		event_free(b->relay_ev);
	if (b->sig_ev != NULL)
		event_free(b->sig_ev);
	if (b->kill_ev != NULL)
		event_free(b->kill_ev);
	metrics_free(b->metrics);
	if (b->base != NULL)
		event_base_free(b->base);
	for (i = 0; i < 2; i++)
		if (b->relay[i] >= 0)
			(void)close(b->relay[i]);
	if (b->sigfd >= 0)
		(void)close(b->sigfd);
	policy_free(b->config);
	free(b->kids);
}

/* Descriptors 0-2 open (to /dev/null) so no socket lands there. */
static void
std_fds(void)
{
	int fd;

	while ((fd = open("/dev/null", O_RDWR)) >= 0 && fd <= 2)
		;
	if (fd > 2)
		(void)close(fd);
}

int
broker_main(const struct broker_opts *o)
{
	struct broker b;
	char why[640];
	int r = 1;

	memset(&b, 0, sizeof(b));
	b.o = o;
	b.self = getpid();
	b.lfd = b.sigfd = b.relay[0] = b.relay[1] = -1;
	std_fds();
	if ((b.config = config_load(o, 1, why, sizeof(why))) == NULL) {
		log_warnx("proxy: %s", why);
		goto out;
	}
	b.kids = xcalloc(o->sandboxes, sizeof(*b.kids));
	(void)signal(SIGPIPE, SIG_IGN);
	if (signals_open(&b) != 0)
		goto out;
	events_open(&b);
	if (metrics_open(&b) != 0 || listener_open(&b) != 0)
		goto out;
	log_info("broker: serving %zu polic%s on %s",
	    grant_count(policy_grants(b.config)),
	    grant_count(policy_grants(b.config)) == 1 ? "y" : "ies", o->path);
	event_base_dispatch(b.base);
	r = 0;
out:
	broker_close(&b);
	return r;
}
