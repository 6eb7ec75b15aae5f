/*
 * engine.c: a proxy on what engine_load.c loaded, with its resolver; a
 * daemon's reloads (secrets loaded in a thread, the policy swapped when
 * complete) and its shutdown.  engine.h says the contract.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "common/log.h"
#include "common/xmalloc.h"
#include "policy/policy.h"
#include "policy/secret.h"
#include "proxy/dns.h"
#include "proxy/dnsstub.h"
#include "proxy/engine.h"
#include "proxy/engine_load.h"
#include "proxy/proxy.h"
#include "proxy/refused.h"
#include "proxy/synth.h"

struct engine {
	struct engine_config cf;
	struct event_base *base;
	struct proxy *px;
	struct dns *dns;
	struct dnsstub *stub; /* the sandbox's DNS stub, once it has a socket */
	struct refused *refused; /* the sandbox's refusals (capture) */
	struct refused_notes *notes; /* its supervisor's refused sockets */
	/* Capture: the synthetic addresses the stub answers with and the
	 * proxy maps back (synth.h); NULL without capture.  Freed last. */
	struct synth *synth;
	/* The proxy's policy now, for the stub (the proxy owns it). */
	const struct policy *policy;
	struct engine_load *load; /* its log and TLS outlive the proxy */
	const char *name;
	/* A reload whose secrets load in a thread; see engine.h. */
	struct policy *pending; /* owned by the thread until it is joined */
	int pending_r; /* secret_store_load's result */
	pthread_t thread;
	int done_pipe[2]; /* thread -> loop: finished */
	int cancel_pipe[2]; /* loop -> thread: stop (never reset) */
	struct event *done_ev;
	int again; /* a reload was asked for while one was pending */
	int stopping;
};

/* The reload thread: only the pending policy's secret store is its own. */
static void *
reload_thread(void *arg)
{
	struct engine *e = arg;

	e->pending_r =
	    secret_store_load(policy_secrets(e->pending), NULL, NULL);
	(void)!write(e->done_pipe[1], "x", 1);
	return NULL;
}

/* Parses the policy and starts loading its secrets off the loop. */
static void
reload_start(struct engine *e)
{
	sigset_t all, old;
	struct policy *p;
	int err;

	if ((p = e->cf.parse(e->cf.parse_arg)) == NULL) {
		log_warnx("reload: the policy has errors; the old one stays");
		return;
	}
	secret_store_set_cancel_fd(policy_secrets(p), e->cancel_pipe[0]);
	e->pending = p;
	/* Signals stay with the loop's thread (it inherits this mask). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&e->thread, NULL, reload_thread, e);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != 0) {
		e->pending = NULL;
		policy_free(p);
		log_warnx("reload: cannot start a thread: %s; the old policy "
		          "stays",
		    strerror(err));
	}
}

/* Joins the reload thread; returns its policy if it may be used. */
static struct policy *
reload_join(struct engine *e)
{
	struct policy *p = e->pending;
	char c;

	(void)pthread_join(e->thread, NULL);
	(void)!read(e->done_pipe[0], &c, 1);
	e->pending = NULL;
	if (e->pending_r == 0 && !e->stopping)
		return p;
	log_warnx(e->stopping
	        ? "reload: cancelled; stopping"
	        : "reload: the policy's secrets could not be loaded; the old "
	          "policy stays");
	policy_free(p);
	return NULL;
}

static void
on_reload_done(evutil_socket_t fd, short what, void *arg)
{
	struct engine *e = arg;
	struct policy *p;

	(void)fd;
	(void)what;
	if (e->pending == NULL)
		return;
	if ((p = reload_join(e)) != NULL) {
		proxy_set_policy(e->px, p);
		/* The stub's next answer follows it.  (Out of memory,
		 * proxy_set_policy keeps the old one and frees P: a getter
		 * in proxy.h would let the stub ask the proxy itself.) */
		e->policy = p;
		log_warnx("reload: policy reloaded (%zu rules)",
		    policy_rule_count(p));
	}
	if (e->again && !e->stopping) {
		e->again = 0;
		reload_start(e);
	}
}

void
engine_reload(struct engine *e)
{
	if (e->stopping || e->cf.parse == NULL)
		return;
	if (e->pending != NULL) {
		/* The files may have changed again: reload once more after. */
		e->again = 1;
		log_warnx("reload: one is still loading secrets; will reload "
		          "again when it ends");
		return;
	}
	reload_start(e);
}

/* A pending reload is cancelled (its helper killed); none starts. */
static void
reload_cancel(struct engine *e)
{
	e->stopping = 1;
	if (e->pending != NULL)
		(void)!write(e->cancel_pipe[1], "x", 1);
}

void
engine_stop(
    struct engine *e, unsigned grace_ms, void (*done)(void *), void *arg)
{
	reload_cancel(e);
	proxy_shutdown(e->px, grace_ms, done, arg);
}

/* The resolver and the proxy; 0 or -1 after saying why. */
static int
open_all(struct engine *e, struct policy *p)
{
	struct proxy_config pc = {0};
	char err[256];

	if ((e->dns = dns_new(e->base, e->cf.dns,
	         policy_timeout(p, POLICY_TIMEOUT_CONNECT), err,
	         sizeof(err))) == NULL) {
		log_warnx("%s: DNS: %s", e->name, err);
		return -1;
	}
	pc.policy = p;
	pc.audit = engine_load_audit(e->load);
	pc.dns = e->dns;
	pc.run_id = engine_load_run_id(e->load);
	pc.max_sessions =
	    e->cf.max_sessions ? e->cf.max_sessions : proxy_fd_budget();
	/*
	 * A quarter: one client (or four together) cannot hold every slot
	 * with slow heads, and a busy one still gets many; at least 1.
	 */
	if (e->cf.max_per_client == ENGINE_PER_CLIENT_DEFAULT)
		pc.max_per_client =
		    pc.max_sessions / 4 > 0 ? pc.max_sessions / 4 : 1;
	else if (e->cf.max_per_client > 0)
		pc.max_per_client = (unsigned)e->cf.max_per_client;
	pc.head_memory = e->cf.head_memory;
	pc.buffer_memory = e->cf.buffer_memory;
	pc.denied = e->cf.denied;
	pc.distrust = e->cf.distrust;
	pc.denied_arg = e->cf.denied_arg;
	pc.tls = engine_load_tls(e->load);
	pc.standins = engine_load_standins(e->load);
	pc.synth = e->synth;
	pc.metrics = e->cf.metrics;
	if ((e->px = proxy_new(e->base, &pc)) == NULL)
		fatalx("%s: out of memory", e->name);
	e->policy = p;
	return 0;
}

/* A daemon's reloads finish on the loop: the thread writes a pipe. */
static void
watch_reloads(struct engine *e)
{
	if (pipe2(e->done_pipe, O_CLOEXEC) != 0 ||
	    pipe2(e->cancel_pipe, O_CLOEXEC) != 0)
		fatal("%s: pipe", e->name);
	e->done_ev = event_new(
	    e->base, e->done_pipe[0], EV_READ | EV_PERSIST, on_reload_done, e);
	if (e->done_ev == NULL || event_add(e->done_ev, NULL) != 0)
		fatalx("%s: cannot watch reloads", e->name);
}

/*
 * Each request on an intercepted keep-alive connection turns reading and
 * writing on its four bufferevents off and on again, and each turn was
 * an epoll_ctl() of its own (8 a request, 11% of the engine's time).
 * With the changelist, libevent applies the net change of a whole loop
 * iteration at once, before waiting: a disable and enable in the same
 * callback cost nothing.  Its caveat (libevent's documentation): a
 * descriptor that shares its open file with another (dup(), or one
 * passed by SCM_RIGHTS while the sender keeps its copy) may stay
 * registered after its close.  The engine registers none such: the
 * sandbox closes its copies of the listeners once sent (netns/sandbox.c),
 * and every other descriptor is the engine's own.
 */
struct event_base *
engine_base_new(void)
{
	struct event_config *cfg = event_config_new();
	struct event_base *base = NULL;

	if (cfg == NULL)
		return NULL;
	(void)event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
	base = event_base_new_with_config(cfg);
	event_config_free(cfg);
	return base;
}

struct engine *
engine_new(struct event_base *base, const struct engine_config *cf,
    struct engine_load *l)
{
	struct engine *e = xcalloc(1, sizeof(*e));
	struct policy *p = engine_load_take_policy(l);

	e->cf = *cf;
	e->base = base;
	e->name = cf->name ? cf->name : "proxy";
	e->load = l;
	e->done_pipe[0] = e->done_pipe[1] = -1;
	e->cancel_pipe[0] = e->cancel_pipe[1] = -1;
	if (cf->parse != NULL)
		watch_reloads(e);
	if (cf->capture && (e->synth = synth_new()) == NULL)
		fatalx("%s: out of memory", e->name);
	if (open_all(e, p) != 0) {
		if (e->px == NULL)
			policy_free(p);
		engine_free(e);
		e = NULL;
	}
	return e;
}

/* The stub asks at each query: a reload takes effect at once. */
static const struct policy *
policy_now(void *arg)
{
	struct engine *e = arg;

	return e->policy;
}

int
engine_listen_dns(struct engine *e, int fd)
{
	struct dnsstub_config sc = {0};

	if (e->stub == NULL) {
		sc.audit = engine_load_audit(e->load);
		sc.looked_up = e->cf.looked_up;
		sc.arg = e->cf.looked_up_arg;
		sc.own_name = e->cf.own_name;
		sc.synth = e->synth;
		sc.policy = policy_now;
		sc.policy_arg = e;
		if ((e->stub = dnsstub_new(e->base, &sc)) == NULL) {
			close(fd);
			return -1;
		}
	}
	if (dnsstub_listen_fd(e->stub, fd) != 0) {
		close(fd);
		return -1;
	}
	return 0;
}

int
engine_listen_refused(struct engine *e, int fd)
{
	struct refused_config rc = {0};

	/* One watcher for the sandbox's sockets: a destination once. */
	if (e->refused == NULL) {
		rc.audit = engine_load_audit(e->load);
		rc.synth = e->synth; /* NULL without capture */
		rc.denied = e->cf.denied;
		rc.denied_arg = e->cf.denied_arg;
		if ((e->refused = refused_new(e->base, &rc)) == NULL) {
			close(fd);
			return -1;
		}
	}
	return refused_watch(e->refused, fd);
}

int
engine_listen_notes(struct engine *e, int fd)
{
	struct refused_config rc = {0};

	if (e->notes != NULL) { /* one sandbox, one supervisor */
		log_warnx("%s: a second notes' socket", e->name);
		close(fd);
		return -1;
	}
	rc.audit = engine_load_audit(e->load);
	rc.denied = e->cf.denied;
	rc.denied_arg = e->cf.denied_arg;
	e->notes = refused_notes_new(e->base, &rc, fd);
	return e->notes != NULL ? 0 : -1;
}

struct proxy *
engine_proxy(struct engine *e)
{
	return e->px;
}

void
engine_free(struct engine *e)
{
	size_t i;

	if (e == NULL)
		return;
	reload_cancel(e);
	if (e->pending != NULL)
		(void)reload_join(e);
	if (e->done_ev != NULL)
		event_free(e->done_ev);
	for (i = 0; i < 2; i++) {
		if (e->done_pipe[i] >= 0)
			close(e->done_pipe[i]);
		if (e->cancel_pipe[i] >= 0)
			close(e->cancel_pipe[i]);
	}
	proxy_free(e->px);
	dnsstub_free(e->stub); /* logs the names past its table */
	refused_free(e->refused); /* logs the refusals past its table */
	refused_notes_free(e->notes);
	dns_free(e->dns);
	engine_load_free(e->load); /* closes the log */
	synth_free(e->synth); /* after the proxy and the stub, its users */
	free(e);
}
