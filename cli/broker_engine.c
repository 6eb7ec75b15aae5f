/*
 * broker_engine.c: one client of the broker, in its own process
 * (broker.h): the REQUEST, the grant, then a run's engine for its
 * sandbox.
 *
 *   client                      broker_engine_main (forked per client)
 *     REQUEST [its copy]  ->      read by the deadline, checked (view.c)
 *                                 the peer: getpwuid, getgrouplist
 *                                 grant_find, grant_admits_user
 *                 <- ERROR        refused: a "client" record, deny
 *                 <- HELLO ..     granted: run_engine_serve, a run's
 *                                 engine with the broker's hooks
 *                                 (run_setup.c) and NOTE for its words
 *
 * The parent never reads a client's bytes; this process does, and so
 * keeps nothing of the parent's but the client's socket and the metrics
 * relay.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pthread.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BROKER_ENGINE_INTERNAL
#include "cli/broker.h"
#include "cli/run.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "audit/audit.h"
#include "policy/grant.h"
#include "policy/policy.h"
#include "proxy/metrics.h"
#include "proxy/view.h"

#define PEER_GROUPS_MAX 256 /* groups of one user looked at */

static int deadline_ms = BROKER_REQUEST_MS;

void
broker_engine_set_deadline(int ms)
{
	deadline_ms = ms > 0 ? ms : BROKER_REQUEST_MS;
}

/* The client's user, as the grants see it (grant.h). */
struct peer {
	char name[256]; /* "": no passwd entry */
	gid_t gids[PEER_GROUPS_MAX]; /* SO_PEERCRED's first */
	char *gnames[PEER_GROUPS_MAX]; /* NULL: no name */
	size_t ngids;
};

/* What one client's conversation needs besides the broker's options. */
struct client {
	const struct broker_client *c;
	struct metrics *m; /* the relay, or NULL */
	const char *log; /* the central log, or NULL */
	struct view_order order; /* the client's messages so far */
	struct view_request rq;
	char who[300]; /* "uid 1001 (alice)" */
	int copy; /* the client's copy of its records, or -1 */
};

/* --- the process ---------------------------------------------------------- */

/*
 * The parent's handlers are no use here.  SIGTERM and SIGINT end this
 * engine (the broker stopping), SIGHUP is the parent's (a reload), and
 * the parent's end ends it (its sandbox then fails closed).
 */
static void
child_signals(void)
{
	static const int dfl[] = {SIGINT, SIGTERM, SIGQUIT, SIGCHLD, SIGALRM};
	static const int ign[] = {SIGHUP, SIGPIPE, SIGUSR1, SIGUSR2};
	sigset_t none;
	size_t i;

	for (i = 0; i < sizeof(dfl) / sizeof(dfl[0]); i++)
		signal(dfl[i], SIG_DFL);
	for (i = 0; i < sizeof(ign) / sizeof(ign[0]); i++)
		signal(ign[i], SIG_IGN);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
}

static void
close_between(int lo, int hi)
{
	int fd;

	if (lo > hi)
		return;
	if (close_range((unsigned)lo, (unsigned)hi, 0) == 0)
		return;
	/* No close_range (before Linux 5.9): one by one, to a bound. */
	if (hi > 65535)
		hi = 65535;
	for (fd = lo; fd <= hi; fd++)
		(void)close(fd);
}

/*
 * The parent's other descriptors (its listening socket, other clients'
 * connections) are not this sandbox's business: closed, but for the
 * standard streams, the client's socket and the relay.
 */
static void
close_others(const struct broker_client *c)
{
	int keep[2] = {c->conn, c->relay}, lo = 3, i, t;

	if (keep[0] > keep[1]) {
		t = keep[0];
		keep[0] = keep[1];
		keep[1] = t;
	}
	for (i = 0; i < 2; i++)
		if (keep[i] >= lo) {
			close_between(lo, keep[i] - 1);
			lo = keep[i] + 1;
		}
	close_between(lo, INT_MAX);
}

/* --- the request ---------------------------------------------------------- */

static int
elapsed_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int)((t.tv_sec - t0->tv_sec) * 1000 +
	    (t.tv_nsec - t0->tv_nsec) / 1000000);
}

static void
set_rcvtimeo(int fd, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

	(void)setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

/*
 * Waits for the REQUEST until the deadline, then reads it with each read
 * bounded by what is left; a client that sends part of it and stops is
 * ended by the timer (SIGALRM, at twice the deadline).  Returns
 * VIEW_OK, or a VIEW_E_* code (VIEW_E_SYS with errno EAGAIN: too late).
 */
static int
recv_request(
    int fd, struct view_order *o, unsigned char *buf, struct view_msg *m)
{
	struct pollfd p = {fd, POLLIN, 0};
	struct itimerval it;
	struct timespec t0;
	int n, left, rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		n = poll(&p, 1,
		    (left = deadline_ms - elapsed_ms(&t0)) > 0 ? left : 0);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		errno = n == 0 ? EAGAIN : errno;
		return VIEW_E_SYS;
	}
	memset(&it, 0, sizeof(it));
	it.it_value.tv_sec = 2 * deadline_ms / 1000;
	it.it_value.tv_usec = 2 * deadline_ms % 1000 * 1000;
	(void)setitimer(ITIMER_REAL, &it, NULL);
	set_rcvtimeo(fd, left > 0 ? left : 1);
	rc = view_recv(fd, o, buf, m);
	n = errno;
	memset(&it, 0, sizeof(it));
	(void)setitimer(ITIMER_REAL, &it, NULL);
	set_rcvtimeo(fd, 0); /* the sandbox's conversation has no deadline */
	errno = n;
	return rc;
}

/* ERROR REASON to the client (who may be gone). */
static void
refuse(int fd, const char *reason)
{
	(void)view_send(fd, VIEW_ERROR, reason, strlen(reason) + 1, NULL, 0);
}

/*
 * The client's REQUEST into CL, its descriptor (its copy of the log)
 * kept.  Returns 0, or -1: refused as malformed, said and counted.
 */
static int
read_request(struct client *cl)
{
	static unsigned char buf[VIEW_MSG_MAX];
	struct view_msg m;
	char why[VIEW_NOTE_MAX];
	int rc, fd = cl->c->conn;

	view_order_init(&cl->order, VIEW_FROM_CLIENT);
	rc = recv_request(fd, &cl->order, buf, &m);
	if (rc == VIEW_E_SYS && (errno == EAGAIN || errno == EWOULDBLOCK))
		snprintf(why, sizeof(why),
		    "malformed request: none came within "
		    "%d ms",
		    deadline_ms);
	else if (rc != VIEW_OK)
		snprintf(why, sizeof(why), "malformed request: %s",
		    view_strerror(rc));
	else if (m.type != VIEW_REQUEST) {
		snprintf(why, sizeof(why),
		    "malformed request: the first message must be REQUEST");
		while (m.nfds > 0)
			(void)close(m.fds[--m.nfds]);
	} else {
		view_get_request(&m, &cl->rq);
		cl->copy = m.nfds == 1 ? m.fds[0] : -1;
		return 0;
	}
	/* A client that went away is told nothing; it is counted all the
	 * same (a broken client, or someone probing). */
	if (rc != VIEW_E_TRUNC)
		refuse(fd, why);
	log_warnx("broker: uid %u pid %u: %s", (unsigned)cl->c->uid,
	    (unsigned)cl->c->pid, why);
	if (cl->m != NULL)
		metrics_refused(cl->m, METRICS_REF_PROTOCOL);
	return -1;
}

/* --- the grant ------------------------------------------------------------ */

static void
add_gid(struct peer *p, gid_t g)
{
	size_t i;

	for (i = 0; i < p->ngids; i++)
		if (p->gids[i] == g)
			return;
	if (p->ngids < PEER_GROUPS_MAX)
		p->gids[p->ngids++] = g;
}

/*
 * The client's user: its name, and its groups -- the gid the kernel
 * gave, then the password database's (getgrouplist), with names.
 */
static void
resolve_peer(const struct broker_client *c, struct peer *p)
{
	gid_t list[PEER_GROUPS_MAX];
	int n = PEER_GROUPS_MAX, i;
	struct passwd *pw;
	struct group *gr;
	size_t k;

	memset(p, 0, sizeof(*p));
	add_gid(p, c->gid);
	if ((pw = getpwuid(c->uid)) != NULL) {
		snprintf(p->name, sizeof(p->name), "%s", pw->pw_name);
		/* Too many: glibc fills what fits and says how many. */
		if (getgrouplist(pw->pw_name, pw->pw_gid, list, &n) < 0 ||
		    n > PEER_GROUPS_MAX)
			n = PEER_GROUPS_MAX;
		for (i = 0; i < n; i++)
			add_gid(p, list[i]);
	}
	for (k = 0; k < p->ngids; k++)
		if ((gr = getgrgid(p->gids[k])) != NULL)
			p->gnames[k] = xstrdup(gr->gr_name);
}

/*
 * The policy CL asked for, if CONFIG grants it to its user: its index,
 * or -1 with the reason for the user in WHY.  A name that exists is not
 * hidden from a user refused it; the others are never listed.
 */
static long
find_grant(
    const struct policy *config, struct client *cl, char *why, size_t len)
{
	const struct grant_set *g = policy_grants(config);
	struct grant_user u;
	struct peer p;
	long i = g != NULL ? grant_find(g, cl->rq.policy) : -1;
	size_t k;

	resolve_peer(cl->c, &p);
	if (p.name[0] != '\0')
		snprintf(cl->who, sizeof(cl->who), "uid %u (%s)",
		    (unsigned)cl->c->uid, p.name);
	else
		snprintf(
		    cl->who, sizeof(cl->who), "uid %u", (unsigned)cl->c->uid);
	u.uid = cl->c->uid;
	u.name = p.name[0] != '\0' ? p.name : NULL;
	u.gids = p.gids;
	u.gnames = (const char *const *)p.gnames;
	u.ngids = p.ngids;
	if (i < 0)
		snprintf(why, len, "no policy %s here; ask your administrator",
		    cl->rq.policy);
	else if (!grant_admits_user(g, (size_t)i, &u)) {
		snprintf(why, len, "policy %s is not granted to %s",
		    cl->rq.policy, cl->who);
		i = -1;
	}
	for (k = 0; k < p.ngids; k++)
		free(p.gnames[k]);
	return i;
}

/*
 * The refusal in the central log: one "client" record (deny, the reason,
 * the policy asked for), in the client's copy too.  The client is told
 * whether or not it could be written.
 */
static void
log_refusal(struct client *cl, const char *reason)
{
	struct audit_rec rec;
	struct audit *a;
	char err[256];
	int copy = cl->copy;

	cl->copy = -1;
	if (cl->log == NULL ||
	    (a = audit_open(cl->log, NULL, err, sizeof(err))) == NULL) {
		log_warnx("broker: audit log %s: %s",
		    cl->log != NULL ? cl->log : "(none)",
		    cl->log != NULL ? err : "none given");
		if (copy >= 0)
			(void)close(copy);
		return;
	}
	(void)audit_set_client(
	    a, (unsigned)cl->c->uid, (unsigned)cl->c->pid, cl->rq.cmd);
	if (copy >= 0)
		(void)audit_add_copy(a, copy); /* closed if refused */
	audit_rec_init(&rec, "client", 0);
	rec.decision = "deny";
	rec.reason = reason;
	rec.policy = cl->rq.policy;
	if (audit_write(a, &rec) < 0)
		log_warn("broker: audit log %s", cl->log);
	audit_close(a);
}

/* --- the sandbox ---------------------------------------------------------- */

/* The engine for CL's sandbox, with policy I's files.  Never returns. */
static void __attribute__((noreturn)) serve(const struct broker_opts *o,
    const struct policy *config, struct client *cl, size_t i)
{
	static struct run r;
	static char limit[32];
	const char *const *files;
	char why[VIEW_NOTE_MAX];
	size_t n, k;

	files = grant_files(policy_grants(config), i, &n);
	if (files == NULL || n == 0 || n > RUN_POLICIES_MAX) {
		log_warnx("broker: policy %s: %zu files (1 to %d)",
		    cl->rq.policy, n, RUN_POLICIES_MAX);
		snprintf(why, sizeof(why),
		    "policy %s did not load; the broker's log says why",
		    cl->rq.policy);
		refuse(cl->c->conn, why);
		if (cl->m != NULL)
			metrics_refused(cl->m, METRICS_REF_SETUP);
		_exit(1);
	}
	memset(&r, 0, sizeof(r));
	/* Never destroyed: the process ends with the run (_exit). */
	pthread_mutex_init(&r.lock, NULL);
	for (k = 0; k < n; k++)
		r.policies[k] = files[k];
	r.npolicies = n;
	r.esock = cl->c->conn;
	r.sfd = -1;
	r.broker_engine = 1;
	r.client_uid = cl->c->uid;
	r.client_pid = cl->c->pid;
	snprintf(r.client_cmd, sizeof(r.client_cmd), "%s", cl->rq.cmd);
	snprintf(r.client_policy, sizeof(r.client_policy), "%s", cl->rq.policy);
	r.log = cl->log;
	if (o->log_limit > 0) {
		snprintf(limit, sizeof(limit), "%llu",
		    (unsigned long long)o->log_limit);
		r.log_limit = limit;
	}
	r.dns = o->dns;
	r.no_capture = (cl->rq.flags & VIEW_REQ_NO_CAPTURE) != 0;
	r.verbose = o->verbose;
	r.client_copy = cl->copy;
	r.metrics = cl->m;
	r.eorder = cl->order; /* REQUEST came: the user's messages next */
	log_info("broker: %s pid %u (%s): policy %s", cl->who,
	    (unsigned)cl->c->pid, cl->rq.cmd, cl->rq.policy);
	_exit(run_engine_serve(&r));
}

void
broker_engine_main(const struct broker_opts *o, const struct policy *config,
    const struct broker_client *c)
{
	struct client cl;
	char why[VIEW_NOTE_MAX];
	long i;

	child_signals();
	close_others(c);
	memset(&cl, 0, sizeof(cl));
	cl.c = c;
	cl.copy = -1;
	cl.m = c->relay >= 0 ? metrics_relay_new(c->relay) : NULL;
	cl.log = o->log != NULL ? o->log : policy_log_path(config);
	if (read_request(&cl) != 0)
		_exit(1);
	if ((i = find_grant(config, &cl, why, sizeof(why))) < 0) {
		refuse(c->conn, why);
		log_warnx("broker: %s pid %u: refused: %s", cl.who,
		    (unsigned)c->pid, why);
		log_refusal(&cl, why);
		if (cl.m != NULL)
			metrics_refused(cl.m, METRICS_REF_POLICY);
		_exit(1);
	}
	serve(o, config, &cl, (size_t)i);
}
