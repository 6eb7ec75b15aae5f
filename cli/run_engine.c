/*
 * run_engine.c: pinhole run's engine, the one process of the run that
 * reads the secret files, runs the secret helpers, makes or loads the CA
 * key and holds them, and runs the proxy; and the launcher's side of the
 * socket to it (proxy/view.h says the messages).
 *
 *   launcher                          engine (forked first)
 *     run_engine_start    fork  ->      run_setup_engine: policy, secrets,
 *     run_setup_launcher  <- view       log, CA; HELLO .. READY
 *     sandbox starts
 *     run_engine_listeners LISTENERS -> engine_new (proxy/engine.c) on
 *                                       them, sheds privilege
 *     the command ends
 *     run_engine_stop     STOP  ->      engine_free (sessions logged)
 *                         <- DENIED, DENIED_ITEM.., DISTRUST, BYE
 *
 * The launcher never holds a secret or the CA key, so the sandbox's
 * first process, a copy of it, has nothing to wipe.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "cli/run.h"
#include "common/log.h"
#include "netns/sandbox.h"
#include "policy/policy.h"
#include "audit/audit.h"
#include "proxy/ca.h"
#include "proxy/engine.h"
#include "proxy/inject.h"
#include "proxy/proxy.h"
#include "proxy/tls.h"
#include "proxy/view.h"

/* --- the engine ----------------------------------------------------------- */

static void
on_denied(void *arg, const char *host, unsigned port)
{
	struct run *r = arg;
	char what[300];
	size_t i;

	snprintf(what, sizeof(what), strchr(host, ':') ? "[%s]:%u" : "%s:%u",
	    host, port);
	r->denied_total++;
	for (i = 0; i < r->ndenied; i++)
		if (strcmp(r->denied[i].what, what) == 0) {
			r->denied[i].n++;
			return;
		}
	if (r->ndenied < RUN_DENIED_MAX) {
		snprintf(r->denied[r->ndenied].what, sizeof(what), "%s", what);
		r->denied[r->ndenied++].n = 1;
	}
}

/* A client refused the run CA: counted for the launcher's last lines. */
static void
on_distrust(void *arg, const char *host, unsigned port)
{
	struct run *r = arg;

	if (r->distrust_total++ == 0)
		snprintf(r->distrust_first, sizeof(r->distrust_first),
		    strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
}

static int
start_proxy(struct run *r, const struct view_msg *m)
{
	struct engine_config cf = {0};
	int i, rc = 0;

	if ((r->base = event_base_new()) == NULL) {
		log_warnx("run: DNS: no event loop");
		return -1;
	}
	cf.name = "run";
	cf.audit = r->audit;
	cf.run_id = r->run_id;
	cf.dns = r->dns;
	cf.denied = on_denied;
	cf.distrust = on_distrust;
	cf.denied_arg = r;
	cf.tls = r->tls;
	cf.standins = r->standins;
	/* The log and the policy are the engine's now. */
	r->audit = NULL;
	r->eng = engine_new(r->base, &cf, r->policy);
	r->policy = NULL;
	if (r->eng == NULL)
		return -1;
	for (i = 0; i < m->nfds; i++)
		if (rc == 0 &&
		    proxy_listen_fd(engine_proxy(r->eng), m->fds[i]) != 0) {
			log_warnx(
			    "run: cannot accept on the sandbox's listener");
			rc = -1;
		}
	return rc;
}

/*
 * What parses the sandbox's bytes keeps only what proxying needs: no
 * capability, no_new_privs, and (Landlock) reads of /etc, the trust store
 * and the libraries.  Everything else it needs is open already.  The
 * process has one thread, so the ruleset covers all of it.
 */
static void
shed(const struct run *r)
{
	char report[256];

	if (sbx_shed((const char *const *)r->readable, r->nreadable, 1, report,
	        sizeof(report)) != 0)
		log_warnx("run: proxy: %s", report);
	else if (r->verbose)
		log_warnx("proxy: %s", report);
}

/* STOP, an error, or the launcher gone: the run is over. */
static void
on_launcher(evutil_socket_t fd, short what, void *arg)
{
	static unsigned char buf[VIEW_MSG_MAX];
	struct run *r = arg;
	struct view_msg m;

	(void)fd;
	(void)what;
	(void)view_recv(r->esock, &r->eorder, buf, &m);
	event_base_loopbreak(r->base);
}

/* The summary for the launcher's last line. */
static void
send_summary(const struct run *r)
{
	unsigned char p[VIEW_TEXT_MAX];
	uint64_t total = r->denied_total;
	ssize_t n;
	size_t i;

	if (view_send(r->esock, VIEW_DENIED, &total, sizeof(total), NULL, 0) !=
	    0)
		return;
	for (i = 0; i < r->ndenied; i++) {
		n = view_put_item(
		    p, sizeof(p), r->denied[i].n, r->denied[i].what);
		if (n < 0 ||
		    view_send(
		        r->esock, VIEW_DENIED_ITEM, p, (size_t)n, NULL, 0) != 0)
			return;
	}
	if (r->distrust_total > 0) {
		n = view_put_item(p, sizeof(p),
		    r->distrust_total > UINT32_MAX
		        ? UINT32_MAX
		        : (uint32_t)r->distrust_total,
		    r->distrust_first);
		if (n < 0 ||
		    view_send(r->esock, VIEW_DISTRUST, p, (size_t)n, NULL, 0) !=
		        0)
			return;
	}
	(void)view_send(r->esock, VIEW_BYE, NULL, 0, NULL, 0);
}

#define DRAIN_TURNS 4

/* The proxy on the listeners until the launcher says STOP. */
static int
engine_serve(struct run *r)
{
	static unsigned char buf[VIEW_MSG_MAX];
	struct view_msg m;
	struct event *ev = NULL;
	int rc = -1, i;

	if (r->verbose)
		log_init(NULL, log_verbose() + 1);
	view_order_init(&r->eorder, VIEW_FROM_USER);
	if (view_recv(r->esock, &r->eorder, buf, &m) != VIEW_OK ||
	    m.type != VIEW_LISTENERS)
		return -1; /* the launcher said why, or ended */
	if (start_proxy(r, &m) == 0) {
		ev = event_new(r->base, r->esock, EV_READ, on_launcher, r);
		if (ev != NULL && event_add(ev, NULL) == 0) {
			shed(r);
			event_base_dispatch(r->base);
			rc = 0;
		}
	}
	if (ev != NULL)
		event_free(ev);
	/*
	 * What the sandbox sent before it ended (a client's TLS alert, a
	 * last request) is read and logged before its sessions close: a
	 * few turns of the loop that do not wait.
	 */
	for (i = 0; rc == 0 && i < DRAIN_TURNS; i++)
		(void)event_base_loop(r->base, EVLOOP_NONBLOCK);
	/* Sessions of processes that ended with the sandbox: close, log;
	 * then the log (every record written). */
	engine_free(r->eng);
	r->eng = NULL;
	if (rc == 0)
		send_summary(r);
	return rc;
}

/*
 * The engine's life.  The terminal's signals are the launcher's to
 * handle (the command gets them, and its end ends the engine); the
 * engine ends on STOP or when the launcher is gone.
 */
static void __attribute__((noreturn)) engine_main(struct run *r)
{
	static const int quiet[] = {
	    SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE};
	sigset_t none;
	size_t i;
	int rc;

	/* The launcher gone (killed at start-up): the engine and its
	 * secret helpers go too (proc.c cleans up when its caller dies). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 ||
	    getppid() != r->launcher)
		_exit(1);
	for (i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		signal(quiet[i], SIG_IGN);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	if ((rc = run_setup_engine(r)) != 0)
		(void)view_send(
		    r->esock, VIEW_ERROR, "setup", sizeof("setup"), NULL, 0);
	else
		rc = engine_serve(r);
	audit_close(r->audit); /* a start that failed is logged too */
	_exit(rc == 0 ? 0 : 1);
}

int
run_engine_start(struct run *r)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
		log_warn("run: engine socket");
		return -1;
	}
	r->launcher = getpid();
	/* Whatever the launcher buffered must not be written twice. */
	fflush(NULL);
	if ((r->engine = fork()) < 0) {
		log_warn("run: fork");
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (r->engine == 0) {
		close(sv[0]);
		r->esock = sv[1];
		engine_main(r);
	}
	close(sv[1]);
	r->esock = sv[0];
	return 0;
}

/* --- the launcher's side -------------------------------------------------- */

int
run_engine_listeners(struct run *r)
{
	int fds[VIEW_FDS_MAX], i, n = sbx_nlisteners(r->sbx);
	uint32_t count = (uint32_t)n;
	int rc;

	for (i = 0; i < n && i < VIEW_FDS_MAX; i++)
		fds[i] = sbx_listener(r->sbx, i);
	rc = n <= VIEW_FDS_MAX
	    ? view_send(r->esock, VIEW_LISTENERS, &count, 4, fds, n)
	    : -1;
	/* The engine's now: the launcher keeps no way into the proxy. */
	for (i = 0; i < n; i++)
		(void)close(sbx_listener(r->sbx, i));
	sbx_release_listeners(r->sbx);
	if (rc != 0)
		log_warn("run: cannot hand the listeners to the engine");
	return rc;
}

/* One DENIED_ITEM into R's summary. */
static void
take_item(struct run *r, const struct view_msg *m)
{
	uint32_t n;
	const char *what = view_get_item(m, &n);

	if (r->ndenied < RUN_DENIED_MAX) {
		snprintf(r->denied[r->ndenied].what,
		    sizeof(r->denied[r->ndenied].what), "%s", what);
		r->denied[r->ndenied++].n = n;
	}
}

/* DISTRUST into R's summary. */
static void
take_distrust(struct run *r, const struct view_msg *m)
{
	uint32_t n;
	const char *what = view_get_item(m, &n);

	r->distrust_total = n;
	snprintf(r->distrust_first, sizeof(r->distrust_first), "%s", what);
}

int
run_engine_stop(struct run *r)
{
	static unsigned char buf[VIEW_MSG_MAX];
	struct view_order o;
	struct view_msg m;
	uint32_t status = (uint32_t)r->status;
	int rc = -1, w;

	/* The order checker continues from READY: DENIED comes next. */
	o = r->lorder;
	if (view_send(r->esock, VIEW_STOP, &status, 4, NULL, 0) == 0)
		while (view_recv(r->esock, &o, buf, &m) == VIEW_OK) {
			if (m.type == VIEW_DENIED)
				r->denied_total = view_get_u64(&m);
			else if (m.type == VIEW_DENIED_ITEM)
				take_item(r, &m);
			else if (m.type == VIEW_DISTRUST)
				take_distrust(r, &m);
			if (m.type == VIEW_BYE || m.type == VIEW_ERROR) {
				rc = m.type == VIEW_BYE ? 0 : -1;
				break;
			}
		}
	close(r->esock);
	r->esock = -1;
	while (waitpid(r->engine, &w, 0) < 0 && errno == EINTR)
		;
	r->engine = 0;
	return rc;
}
