/*
 * run_engine.c: pinhole run's engine, the one process of the run that
 * reads the secret files, runs the secret helpers, makes or loads the CA
 * key and holds them, and runs the proxy; and the launcher's side of the
 * socket to it (proxy/view.h says the messages).
 *
 *   launcher                          engine (forked first)
 *     run_engine_start    fork  ->      run_setup_engine: the run's hooks
 *                                       for engine_load_new (proxy/):
 *                                       policy, secrets, log, CA; the
 *     run_setup_launcher  <- view       sink below: HELLO .. READY
 *     sandbox starts
 *     run_engine_listeners LISTENERS.. -> engine_new (proxy/engine.c) on
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

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "audit/logview.h"
#include "cli/run.h"
#include "common/log.h"
#include "common/xmalloc.h"
#include "netns/hostinfo.h"
#include "netns/net.h"
#include "netns/sandbox.h"
#include "proxy/dnsstub.h"
#include "proxy/engine.h"
#include "proxy/engine_load.h"
#include "proxy/metrics.h"
#include "proxy/proxy.h"
#include "proxy/view.h"

/* --- the engine ----------------------------------------------------------- */

/*
 * At the end, what the sandbox sent before it ended (a client's TLS
 * alert, a last request) is read and logged before its sessions close:
 * this many turns of each loop that do not wait (engine_serve for loop
 * 0, the threads' own when they stop: engine.h drain_turns).
 */
#define DRAIN_TURNS 4

static const char proxy_failed[] =
    "the proxy did not start on the sandbox's listeners; the broker's log "
    "says why";

void
run_engine_say(struct run *r, const char *fmt, ...)
{
	static const char prefix[] = "pinhole: ";
	char line[VIEW_NOTE_MAX], *text;
	va_list ap;
	size_t n, i;

	va_start(ap, fmt);
	(void)vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (!r->broker_engine) {
		pthread_mutex_lock(&r->lock);
		fputs(line, stderr);
		pthread_mutex_unlock(&r->lock);
		return;
	}
	/* A NOTE is one line, printable, without the "pinhole: " and the
	 * newline the client adds (run_broker.c). */
	n = strcspn(line, "\n");
	line[n] = '\0';
	for (i = 0; i < n; i++)
		if ((unsigned char)line[i] < 0x20 || line[i] == 0x7f)
			line[i] = '?';
	text = line;
	if (strncmp(line, prefix, sizeof(prefix) - 1) == 0)
		text += sizeof(prefix) - 1;
	/* The client gone: nothing to say it to, and its end ends us.  One
	 * message at a time on the socket, whichever loop speaks. */
	pthread_mutex_lock(&r->lock);
	if (*text != '\0')
		(void)view_send(
		    r->esock, VIEW_NOTE, text, strlen(text) + 1, NULL, 0);
	pthread_mutex_unlock(&r->lock);
}

static void
on_denied(void *arg, const char *host, unsigned port)
{
	struct run *r = arg;
	char what[300];
	size_t i;

	/* Port 0: no destination, only what it was ("ICMP", refused.h). */
	if (port == 0)
		snprintf(what, sizeof(what), "%s", host);
	else
		snprintf(what, sizeof(what),
		    strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
	/* Any loop's thread (run.h): the summary is one. */
	pthread_mutex_lock(&r->lock);
	r->denied_total++;
	for (i = 0; i < r->ndenied; i++)
		if (strcmp(r->denied[i].what, what) == 0)
			break;
	if (i < r->ndenied)
		r->denied[i].n++;
	else if (r->ndenied < RUN_DENIED_MAX) {
		snprintf(r->denied[r->ndenied].what, sizeof(what), "%s", what);
		r->denied[r->ndenied++].n = 1;
	}
	pthread_mutex_unlock(&r->lock);
}

/*
 * A program in the sandbox resolved NAME itself and the stub gave it no
 * address: without capture it refuses every name (the program ignores
 * the proxy variables); under capture NAME is one no rule allows
 * (NXDOMAIN).  Either way the program fails.  Said once per name, as it
 * happens, so the line comes right before the program's own error; at
 * most RUN_LOOKUPS_SAID names, then one line for the rest.
 */
static void
on_looked_up(void *arg, const char *name, const char *qtype)
{
	struct run *r = arg;
	char esc[4 * 256 + 1]; /* a DNS name, each byte maybe \xNN */
	unsigned said;

	(void)qtype;
	/* The stub is loop 0's; the count is taken under the lock all the
	 * same, and the line said after (run_engine_say takes it). */
	pthread_mutex_lock(&r->lock);
	said = r->lookups_said++;
	pthread_mutex_unlock(&r->lock);
	/* The stub takes label bytes only; escaped all the same. */
	logview_esc_buf(esc, sizeof(esc), name);
	if (said < RUN_LOOKUPS_SAID && !r->no_capture)
		run_engine_say(r,
		    "pinhole: a program looked up %s itself: no rule allows "
		    "it, so the sandbox's DNS says it does not exist "
		    "(NXDOMAIN); allow %s to let it through\n",
		    esc, esc);
	else if (said < RUN_LOOKUPS_SAID)
		run_engine_say(r,
		    "pinhole: a program looked up %s itself (port 53): it "
		    "probably ignores the proxy variables "
		    "(http_proxy/https_proxy); allow %s and use the proxy, or "
		    "see pinhole(1) ENVIRONMENT\n",
		    esc, esc);
	else if (said == RUN_LOOKUPS_SAID)
		run_engine_say(r,
		    "pinhole: more names were looked up directly; "
		    "see pinhole log\n");
}

/*
 * A capture listener.  One the proxy cannot take (its listener table is
 * full) is closed: connections to that port are refused, as for a port
 * no rule names, which fails closed; -v says so.
 */
static int
take_capture(struct run *r, int fd, unsigned port)
{
	if (proxy_listen_fd(engine_proxy(r->eng), fd, PROXY_VIA_CAPTURE) == 0)
		return 0;
	if (r->capture_dropped++ == 0)
		r->capture_first_dropped = port;
	(void)close(fd);
	return 0;
}

/* The supervisor's notes (sandbox.c): an AF_UNIX SOCK_SEQPACKET socket. */
static int
is_notes(int fd, const struct sockaddr_storage *ss)
{
	int type = 0;
	socklen_t len = sizeof(type);

	return ss->ss_family == AF_UNIX &&
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
	    type == SOCK_SEQPACKET;
}

/* A raw socket: the refusals' (netns/net.h). */
static int
is_raw(int fd)
{
	socklen_t len = sizeof(int);
	int type = -1;

	return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == 0 &&
	    type == SOCK_RAW;
}

/*
 * A listener from the sandbox, told apart by its type and address: the
 * refusals' raw sockets (first: one names its protocol as its port on
 * the wildcard, as a capture listener would look), the supervisor's
 * notes (AF_UNIX), the DNS stub's (port 53), the proxy's and SOCKS's
 * (loopback), a capture listener (the wildcard).  Anything else is
 * refused.
 */
static int
take_listener(struct run *r, int fd)
{
	struct sockaddr_storage ss;
	struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
	socklen_t len = sizeof(ss);
	unsigned port;
	int loop;

	if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
		return -1;
	if (is_raw(fd))
		return r->no_capture ? -1 : engine_listen_refused(r->eng, fd);
	if (is_notes(fd, &ss))
		return engine_listen_notes(r->eng, fd);
	if (dnsstub_is_stub_fd(fd))
		return engine_listen_dns(r->eng, fd);
	if (ss.ss_family == AF_INET) {
		port = ntohs(sin->sin_port);
		loop = sin->sin_addr.s_addr == htonl(INADDR_LOOPBACK);
		if (!loop && sin->sin_addr.s_addr != htonl(INADDR_ANY))
			return -1;
	} else if (ss.ss_family == AF_INET6) {
		port = ntohs(sin6->sin6_port);
		loop = IN6_IS_ADDR_LOOPBACK(&sin6->sin6_addr);
		if (!loop && !IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr))
			return -1;
	} else
		return -1;
	if (!loop)
		return r->no_capture ? -1 : take_capture(r, fd, port);
	if (port == NET_PROXY_PORT || port == NET_SOCKS_PORT)
		return proxy_listen_fd(engine_proxy(r->eng), fd,
		    port == NET_PROXY_PORT ? PROXY_VIA_PROXY : PROXY_VIA_SOCKS);
	return -1;
}

/* A client refused the run CA: counted for the launcher's last lines. */
static void
on_distrust(void *arg, const char *host, unsigned port)
{
	struct run *r = arg;

	/* Any loop's thread (run.h). */
	pthread_mutex_lock(&r->lock);
	if (r->distrust_total++ == 0)
		snprintf(r->distrust_first, sizeof(r->distrust_first),
		    strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
	pthread_mutex_unlock(&r->lock);
}

static int
start_proxy(struct run *r, const int *fds, int nfds)
{
	struct engine_config cf = {0};
	int i, rc = 0;

	if ((r->base = engine_base_new()) == NULL) {
		log_warnx("run: DNS: no event loop");
		return -1;
	}
	cf.name = "run";
	cf.dns = r->dns;
	cf.denied = on_denied;
	cf.distrust = on_distrust;
	cf.denied_arg = r;
	cf.looked_up = on_looked_up;
	cf.looked_up_arg = r;
	cf.own_name = HOSTINFO_HOSTNAME;
	cf.capture = !r->no_capture;
	cf.metrics = r->metrics; /* a broker's engine relays its counts */
	/* --workers: loop 0 here, the others threads (proxy/workers.h),
	 * started after the shedding (start_loops); a broker's engine: 0,
	 * one loop. */
	cf.workers = r->workers;
	cf.drain_turns = DRAIN_TURNS;
	if (cf.metrics != NULL)
		cf.metrics_shard = metrics_shard_new;
	/* What was loaded is the engine's now. */
	r->eng = engine_new(r->base, &cf, r->load);
	r->load = NULL;
	if (r->eng == NULL)
		return -1;
	for (i = 0; i < nfds; i++)
		if (rc == 0 && take_listener(r, fds[i]) != 0) {
			log_warnx(
			    "run: cannot accept on the sandbox's listener");
			rc = -1;
		} else if (rc != 0)
			(void)close(fds[i]);
	if (r->capture_dropped > 0 && r->verbose)
		run_engine_say(r,
		    "pinhole: run: capture: the proxy takes no more "
		    "listeners: %u ports not captured (the first: %u)\n",
		    r->capture_dropped, r->capture_first_dropped);
	return rc;
}

/*
 * What parses the sandbox's bytes keeps only what proxying needs: no
 * capability, no_new_privs, and (Landlock) reads of /etc, the trust store
 * and the libraries.  Everything else it needs is open already.  All of
 * this binds the calling thread only, and the threads it creates from
 * then on: the process has one thread here, and the other loops' threads
 * are made after (start_loops), so the ruleset covers all of them.
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

/*
 * The listeners, in LISTENERS batches until their total came (view.c
 * checks the count).  Returns how many in FDS (VIEW_LISTENERS_MAX), or
 * -1 (those that came closed).
 */
static int
recv_listeners(struct run *r, int *fds)
{
	static unsigned char buf[VIEW_MSG_MAX];
	struct view_msg m;
	int n = 0, i;

	do {
		if (view_recv(r->esock, &r->eorder, buf, &m) != VIEW_OK ||
		    m.type != VIEW_LISTENERS) {
			while (n > 0)
				(void)close(fds[--n]);
			return -1; /* the launcher said why, or ended */
		}
		for (i = 0; i < m.nfds; i++)
			fds[n++] = m.fds[i];
	} while (r->eorder.fds_got < r->eorder.fds_total);
	return n;
}

/*
 * The other loops' threads (engine_start), after shed(): capabilities,
 * no_new_privs and the Landlock domain are each thread's own, and a
 * thread gets them only from the thread that creates it, when it is
 * created; a thread made before the shedding would keep the engine's
 * privileges and read anything.  A loop that cannot start ends the run
 * (fail closed: a sandbox served by fewer loops than asked would work,
 * but not as asked, and a thread that cannot be made says the process
 * is short of something): said, and the launcher told, as when the
 * proxy does not start.  Returns 0 or -1.
 */
static int
start_loops(struct run *r)
{
	if (engine_start(r->eng) != 0) {
		log_warnx("run: proxy: cannot start its %u event loops; the "
		          "command is stopped",
		    r->workers);
		(void)view_send(r->esock, VIEW_ERROR, proxy_failed,
		    sizeof(proxy_failed), NULL, 0);
		return -1;
	}
	if (r->verbose)
		log_warnx("proxy: %u event loop%s", r->workers ? r->workers : 1,
		    r->workers > 1 ? "s, one thread each" : "");
	return 0;
}

/* The proxy on the listeners until the launcher says STOP. */
static int
engine_serve(struct run *r)
{
	static int fds[VIEW_LISTENERS_MAX];
	struct event *ev = NULL;
	int rc = -1, i, n;

	if (r->verbose)
		log_init(NULL, log_verbose() + 1);
	/* A broker's engine goes on from the client's REQUEST. */
	if (!r->broker_engine)
		view_order_init(&r->eorder, VIEW_FROM_USER);
	if ((n = recv_listeners(r, fds)) < 0)
		return -1;
	if (start_proxy(r, fds, n) != 0)
		/* Said: the launcher adds nothing (run_engine_said_why); a
		 * broker's client prints this. */
		(void)view_send(r->esock, VIEW_ERROR, proxy_failed,
		    sizeof(proxy_failed), NULL, 0);
	else {
		ev = event_new(r->base, r->esock, EV_READ, on_launcher, r);
		if (ev != NULL && event_add(ev, NULL) == 0) {
			shed(r);
			if ((rc = start_loops(r)) == 0)
				event_base_dispatch(r->base);
		}
	}
	if (ev != NULL)
		event_free(ev);
	/*
	 * What the sandbox sent before it ended is read and logged before
	 * its sessions close: loop 0's turns here (it may still hand a
	 * connection to a thread), then each thread's when engine_free
	 * stops it (drain_turns), before its sessions close.
	 */
	for (i = 0; rc == 0 && i < DRAIN_TURNS; i++)
		(void)event_base_loop(r->base, EVLOOP_NONBLOCK);
	/* Sessions of processes that ended with the sandbox, in every loop
	 * (the threads joined first): closed, logged; then the log (every
	 * record written).  The summary is read after: no thread is left. */
	engine_free(r->eng);
	r->eng = NULL;
	if (rc == 0)
		send_summary(r);
	return rc;
}

/* --- the view, to the launcher ------------------------------------------- */

static int
send_text(struct run *r, uint32_t type, const char *s)
{
	if (view_send(r->esock, type, s, strlen(s) + 1, NULL, 0) != 0) {
		log_warn("run: engine: cannot send the view");
		return -1;
	}
	return 0;
}

static int
on_hello(void *arg, const char *run_id)
{
	struct run *r = arg;
	unsigned char p[64];
	ssize_t n = view_put_hello(p, sizeof(p),
	    r->broker_engine ? VIEW_ROLE_BROKER : VIEW_ROLE_RUN, run_id);

	if (view_send(r->esock, VIEW_HELLO, p, (size_t)n, NULL, 0) != 0) {
		log_warn("run: engine: cannot send the view");
		return -1;
	}
	return 0;
}

/*
 * Environment secrets never enter the sandbox: --keep-env of one is an
 * error.  The values are in the engine's secret store by now; the
 * launcher is told the names first of all (ENVSECRET) and wipes its own
 * copies, so it and the sandbox's PID 1 (a copy of it) hold none.
 */
static int
on_envsecret(void *arg, const char *var, const char *name)
{
	struct run *r = arg;
	size_t k;

	for (k = 0; k < r->nkeep; k++)
		if (strcmp(r->keep[k], var) == 0) {
			log_warnx("run: --keep-env %s: that variable holds "
			          "secret '%s', which the sandbox must not see",
			    r->keep[k], name);
			return -1;
		}
	return send_text(r, VIEW_ENVSECRET, var);
}

static int
on_hide(void *arg, const char *path)
{
	return send_text(arg, VIEW_HIDE, path);
}

static int
on_standin(void *arg, const char *var, const char *value)
{
	struct run *r = arg;
	unsigned char p[VIEW_TEXT_MAX];
	ssize_t n = view_put_standin(p, sizeof(p), var, value);

	if (n < 0 ||
	    view_send(r->esock, VIEW_STANDIN, p, (size_t)n, NULL, 0) != 0) {
		log_warnx("run: engine: cannot send stand-in %s", var);
		return -1;
	}
	return 0;
}

static int
on_ca(void *arg, const char *pem)
{
	return send_text(arg, VIEW_CA, pem);
}

static int
on_trust(void *arg, const char *pem)
{
	return send_text(arg, VIEW_TRUST, pem);
}

static int
on_log(void *arg, const char *path)
{
	return send_text(arg, VIEW_LOG, path);
}

/*
 * The ports the sandbox captures (policy_capture_ports), for the launcher
 * to give PID 1; past VIEW_CAPTURE_MAX, counted as left out.
 */
static int
on_policy(void *arg, const struct policy *p)
{
	struct run *r = arg;
	uint16_t *ports = xcalloc(65536, sizeof(*ports));
	unsigned char *out = xmalloc(4 + 2 * VIEW_CAPTURE_MAX);
	size_t skipped = 0, n = policy_capture_ports(p, ports, 65536, &skipped);
	ssize_t len;
	int rc = -1;

	if (n > VIEW_CAPTURE_MAX) {
		skipped += n - VIEW_CAPTURE_MAX;
		n = VIEW_CAPTURE_MAX;
	}
	len = view_put_capture(out, 4 + 2 * VIEW_CAPTURE_MAX,
	    skipped > UINT32_MAX ? UINT32_MAX : (uint32_t)skipped, ports, n);
	if (len > 0 &&
	    view_send(r->esock, VIEW_CAPTURE, out, (size_t)len, NULL, 0) == 0)
		rc = 0;
	else
		log_warn("run: engine: cannot send the view");
	free(out);
	free(ports);
	return rc;
}

static int
on_ready(void *arg)
{
	struct run *r = arg;

	return view_send(r->esock, VIEW_READY, NULL, 0, NULL, 0);
}

/*
 * The setup failed (said on stderr).  A run's launcher adds nothing; a
 * broker's client gets a reason to print, the details staying in the
 * broker's log (they name its files), and the broker counts it.
 */
static void
setup_failed(struct run *r)
{
	char why[VIEW_NOTE_MAX];

	if (!r->broker_engine) {
		(void)view_send(
		    r->esock, VIEW_ERROR, "setup", sizeof("setup"), NULL, 0);
		return;
	}
	snprintf(why, sizeof(why),
	    "policy %s did not load; the broker's log says why",
	    r->client_policy);
	/* The lines above it name files, this one the client. */
	log_warnx("broker: uid %u pid %u: %s", (unsigned)r->client_uid,
	    (unsigned)r->client_pid, why);
	(void)view_send(r->esock, VIEW_ERROR, why, strlen(why) + 1, NULL, 0);
	if (r->metrics != NULL)
		metrics_refused(r->metrics, METRICS_REF_SETUP);
}

/*
 * The engine's work, in a run's forked engine and in a broker's: the
 * view, the listeners, the proxy, the summary.  Returns the exit status.
 */
static int
engine_run(struct run *r)
{
	const struct engine_load_sink sink = {on_hello, on_envsecret, on_hide,
	    on_standin, on_ca, on_trust, on_log, on_ready, r, on_policy};
	int rc;

	if ((rc = run_setup_engine(r, &sink)) != 0)
		setup_failed(r);
	else
		rc = engine_serve(r);
	engine_load_free(r->load); /* no listeners came: the log closed */
	r->load = NULL;
	return rc == 0 ? 0 : 1;
}

int
run_engine_serve(struct run *r)
{
	return engine_run(r);
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

	/* The launcher gone (killed at start-up): the engine and its
	 * secret helpers go too (proc.c cleans up when its caller dies). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 ||
	    getppid() != r->launcher)
		_exit(1);
	for (i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		signal(quiet[i], SIG_IGN);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	_exit(engine_run(r));
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
	int fds[VIEW_FDS_MAX], i, j, k, n = sbx_nlisteners(r->sbx), rc = 0;
	unsigned char p[8];

	/* In batches, each saying the total (view.h). */
	if (n < 1 || n > VIEW_LISTENERS_MAX)
		rc = -1;
	for (i = 0; rc == 0 && i < n; i += k) {
		k = n - i < VIEW_FDS_MAX ? n - i : VIEW_FDS_MAX;
		for (j = 0; j < k; j++)
			fds[j] = sbx_listener(r->sbx, i + j);
		(void)view_put_listeners(
		    p, sizeof(p), (uint32_t)n, (uint32_t)k);
		rc = view_send(r->esock, VIEW_LISTENERS, p, 8, fds, k);
	}
	/* The engine's now: the launcher keeps no way into the proxy. */
	for (i = 0; i < n; i++)
		(void)close(sbx_listener(r->sbx, i));
	sbx_release_listeners(r->sbx);
	if (rc != 0)
		log_warn("run: cannot hand the listeners to the engine");
	return rc;
}

int
run_engine_said_why(struct run *r)
{
	static unsigned char buf[VIEW_MSG_MAX];
	struct view_msg m;

	if (view_recv(r->esock, &r->lorder, buf, &m) != VIEW_OK)
		return 0;
	if (m.type == VIEW_NOTE) {
		run_broker_note(view_get_text(&m));
		return 2;
	}
	if (m.type == VIEW_ERROR && r->broker != NULL)
		run_broker_error(r, view_get_text(&m));
	return m.type == VIEW_ERROR;
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
			else if (m.type == VIEW_NOTE)
				run_broker_note(view_get_text(&m));
			else if (m.type == VIEW_ERROR && r->broker != NULL)
				run_broker_error(r, view_get_text(&m));
			if (m.type == VIEW_BYE || m.type == VIEW_ERROR) {
				rc = m.type == VIEW_BYE ? 0 : -1;
				break;
			}
		}
	close(r->esock);
	r->esock = -1;
	/* A broker's engine (r->engine 0) is no child of ours. */
	while (r->engine > 0 && waitpid(r->engine, &w, 0) < 0 && errno == EINTR)
		;
	r->engine = 0;
	return rc;
}
