/*
 * engine.c: a proxy on what engine_load.c loaded, with its resolver; a
 * daemon's reloads (secrets loaded in a thread, the policy swapped when
 * complete) and its shutdown.  engine.h says the contract.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
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
#include "proxy/workers.h"

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
	/* With workers (cf.workers > 1): the threads' loops, the limits all
	 * loops share, and a reload on its way to every loop. */
	struct workers *ws;
	struct proxy_group *group;
	int applying; /* a policy is on its way to the threads */
	size_t applying_rules; /* ...its rule count, said when it arrived */
	struct policy *queued; /* a later one, sent when that one arrived */
	unsigned stops_left; /* loops still stopping */
	void (*stop_done)(void *);
	void *stop_arg;
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

/*
 * P goes to every loop: the caller's now, the threads' by mail; said once
 * all have it (on_applied), so that a reload said applies to every later
 * request whichever loop serves it.
 */
static void
distribute(struct engine *e, struct policy *p)
{
	struct proxy_policy_share *sh;

	e->applying_rules = policy_rule_count(p);
	if ((sh = proxy_policy_share_new(p, e->cf.workers)) == NULL) {
		log_warnx("reload: out of memory; the old policy stays");
		return;
	}
	e->applying = 1;
	proxy_set_policy_shared(e->px, sh);
	workers_set_policy(e->ws, sh);
}

/* Every thread has the policy distribute() sent. */
static void
on_applied(void *arg)
{
	struct engine *e = arg;
	struct policy *p = e->queued;

	e->applying = 0;
	log_warnx("reload: policy reloaded (%zu rules) in %u workers",
	    e->applying_rules, e->cf.workers);
	if (p != NULL) {
		e->queued = NULL;
		distribute(e, p);
	}
}

/* A reloaded policy P replaces the old one, in every loop. */
static void
reload_apply(struct engine *e, struct policy *p)
{
	if (e->ws != NULL) {
		if (e->applying) { /* the later one goes after */
			policy_free(e->queued);
			e->queued = p;
		} else
			distribute(e, p);
		return;
	}
	proxy_set_policy(e->px, p);
	/* The stub's next answer follows it.  (Out of memory,
	 * proxy_set_policy keeps the old one and frees P: a getter in
	 * proxy.h would let the stub ask the proxy itself.) */
	e->policy = p;
	log_warnx("reload: policy reloaded (%zu rules)", policy_rule_count(p));
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
	if ((p = reload_join(e)) != NULL)
		reload_apply(e, p);
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

/* One loop stopped; the caller is told when the last has. */
static void
loop_stopped(void *arg)
{
	struct engine *e = arg;

	if (--e->stops_left == 0 && e->stop_done != NULL)
		e->stop_done(e->stop_arg);
}

void
engine_stop(
    struct engine *e, unsigned grace_ms, void (*done)(void *), void *arg)
{
	reload_cancel(e);
	if (e->ws == NULL) {
		proxy_shutdown(e->px, grace_ms, done, arg);
		return;
	}
	e->stop_done = done;
	e->stop_arg = arg;
	e->stops_left = 2; /* the caller's loop, and the threads' */
	workers_stop(e->ws, grace_ms);
	proxy_shutdown(e->px, grace_ms, loop_stopped, e);
}

/*
 * The threads' loops (workers.h) and the limits shared with them; PC,
 * the caller's loop's proxy to be, shares P and hands off.  0, or -1
 * after saying why (P freed).
 */
static int
open_workers(struct engine *e, struct proxy_config *pc, struct policy *p)
{
	struct workers_config wc = {0};
	struct proxy_policy_share *sh;
	unsigned n = e->cf.workers;

	if ((e->group = proxy_group_new(n, pc)) == NULL ||
	    (sh = proxy_policy_share_new(p, n)) == NULL)
		fatalx("%s: out of memory", e->name);
	pc->group = e->group;
	pc->policy = NULL;
	pc->policy_share = sh;
	pc->reuseport = 1;
	wc.n = n;
	wc.dns = e->cf.dns;
	wc.dns_timeout_ms = policy_timeout(p, POLICY_TIMEOUT_CONNECT);
	wc.pc = *pc;
	wc.shard = e->cf.metrics_shard;
	wc.drain_turns = e->cf.drain_turns;
	wc.base_new = engine_base_new;
	wc.applied = on_applied;
	wc.arg = e;
	wc.stopped = loop_stopped;
	if ((e->ws = workers_new(e->base, &wc, sh)) == NULL) {
		proxy_policy_share_drop(sh); /* the caller's loop's */
		return -1;
	}
	pc->handoff = workers_handoff;
	pc->handoff_arg = e->ws;
	return 0;
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
	 * Each further loop holds about 8 descriptors of its own (epoll, its
	 * eventfd, its listeners, its resolver's sockets): the sessions' two
	 * each make room for them.
	 */
	if (e->cf.max_sessions == 0 && e->cf.workers > 1)
		pc.max_sessions = pc.max_sessions > 4 * e->cf.workers + 16
		    ? pc.max_sessions - 4 * (e->cf.workers - 1)
		    : 16;
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
	if (e->cf.workers > 1 && open_workers(e, &pc, p) != 0)
		return -1;
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

/*
 * glibc's heap, kept rather than given back at every free.  A TLS read of
 * up to 64 KiB reserves a chain of 128 KiB (libevent rounds up to a power
 * of two), freed when its response has gone: with glibc's defaults each
 * free above the trim threshold shrank the heap with brk() and the next
 * read grew it again, its pages faulted in and zeroed anew (bench/
 * README.md, "CPU per intercepted keep-alive request").  Setting the
 * trim threshold fixes the mmap threshold too (no more dynamic one): both
 * are set, so chains up to 1 MiB come from the heap and up to 8 MiB of
 * free heap stays mapped, per arena.
 */
static void
malloc_tune(void)
{
	(void)mallopt(M_MMAP_THRESHOLD, 1024 * 1024);
	(void)mallopt(M_TRIM_THRESHOLD, 8 * 1024 * 1024);
}

struct engine *
engine_new(struct event_base *base, const struct engine_config *cf,
    struct engine_load *l)
{
	struct engine *e;
	struct policy *p;

	malloc_tune();
	e = xcalloc(1, sizeof(*e));
	p = engine_load_take_policy(l);

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
		if (e->px == NULL && e->group == NULL) /* else shared, gone */
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

int
engine_listen(
    struct engine *e, const char *spec, enum proxy_via via, unsigned *port)
{
	if (proxy_listen(e->px, spec, via, port) != 0)
		return -1;
	return e->ws != NULL ? workers_listen(e->ws, spec, via, *port) : 0;
}

int
engine_start(struct engine *e)
{
	return e->ws != NULL ? workers_start(e->ws) : 0;
}

size_t
engine_sessions(struct engine *e)
{
	return proxy_group_sessions_of(e->px);
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
	workers_free(e->ws); /* joins the threads first */
	proxy_free(e->px);
	proxy_group_free(e->group); /* after every proxy of the group */
	policy_free(e->queued);
	dnsstub_free(e->stub); /* logs the names past its table */
	refused_free(e->refused); /* logs the refusals past its table */
	refused_notes_free(e->notes);
	dns_free(e->dns);
	engine_load_free(e->load); /* closes the log */
	synth_free(e->synth); /* after the proxy and the stub, its users */
	free(e);
}
